/**
 * The fixed parts of a flame graph SVG document: XML prologue, background gradient, style sheet, embedded script,
 * and the title/details/button texts. Geometry values are formatted the way flamegraph.pl prints them (see
 * ../perl.ts), so frame positions match its output to the printed digit.
 */
import { cFixed, perlNum } from '../perl.js';
import { FLAMEGRAPH_SCRIPT } from './script.js';

/** Escapes text content for XML (& < >). */
export function escapeText(s: string): string {
  if (!/[&<>]/.test(s)) return s;
  return s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/** Escapes an attribute value or title for XML (& < > "). */
export function escapeAttr(s: string): string {
  if (!/[&<>"]/.test(s)) return s;
  return escapeText(s).replaceAll('"', '&quot;');
}

/** Settings the embedded script reads (as `fg`). */
export interface ScriptSettings {
  width: number;
  xpad: number;
  fontSize: number;
  fontWidth: number;
  inverted: boolean;
  nameType: string;
  searchColor: string;
}

/** A `<text>` element: x printed with two decimals, y as a Perl number (flamegraph.pl's stringTTF). */
export function textElement(id: string | null, x: number, y: number, content: string, extra = ''): string {
  return `<text${id ? ` id="${id}"` : ''} x="${cFixed(x, 2)}" y="${perlNum(y)}"${extra ? ` ${extra}` : ''}>${content}</text>\n`;
}

/** Everything before the frames: prologue, defs, style, script, background, title and controls. */
export function documentHead(o: {
  width: number;
  height: number;
  encoding?: string;
  notes: string;
  background: [string, string];
  fontType: string;
  fontSize: number;
  title: string;
  subtitle: string;
  xpad: number;
  ypad2: number;
  script: ScriptSettings;
}): string {
  const enc = o.encoding !== undefined ? ` encoding="${escapeAttr(o.encoding)}"` : '';
  const w = perlNum(o.width);
  const h = perlNum(o.height);
  // JSON is valid JavaScript; "<" and ">" are escaped so that nothing can end the CDATA section.
  const settings = JSON.stringify(o.script).replaceAll('<', '\\u003c').replaceAll('>', '\\u003e');
  const fs = o.fontSize;
  const parts = [
    `<?xml version="1.0"${enc} standalone="no"?>\n`,
    '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n',
    `<svg version="1.1" width="${w}" height="${h}" onload="init(evt)" viewBox="0 0 ${w} ${h}" xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">\n`,
    '<!-- Flame graph made by bpfscope flamegraph, after FlameGraph by Brendan Gregg (github.com/brendangregg/FlameGraph). Open it in a browser: hover for details, click to zoom, Ctrl-F to search. -->\n',
    `<!-- NOTES: ${o.notes} -->\n`,
    '<defs>\n',
    '\t<linearGradient id="background" y1="0" y2="1" x1="0" x2="0" >\n',
    `\t\t<stop stop-color="${escapeAttr(o.background[0])}" offset="5%" />\n`,
    `\t\t<stop stop-color="${escapeAttr(o.background[1])}" offset="95%" />\n`,
    '\t</linearGradient>\n',
    '</defs>\n',
    '<style type="text/css">\n',
    `\ttext { font-family:${escapeText(o.fontType)}; font-size:${perlNum(fs)}px; fill:rgb(0,0,0); }\n`,
    '\t#search, #ignorecase { opacity:0.1; cursor:pointer; }\n',
    '\t#search:hover, #search.show, #ignorecase:hover, #ignorecase.show { opacity:1; }\n',
    '\t#subtitle { text-anchor:middle; fill:rgb(160,160,160); }\n',
    `\t#title { text-anchor:middle; font-size:${perlNum(fs + 5)}px; }\n`,
    '\t#unzoom { cursor:pointer; }\n',
    '\t#frames > *:hover { stroke:black; stroke-width:0.5; cursor:pointer; }\n',
    '\t.hide { display:none; }\n',
    '\t.parent { opacity:0.5; }\n',
    '</style>\n',
    '<script type="text/ecmascript">\n<![CDATA[\n',
    `var fg = ${settings};\n`,
    FLAMEGRAPH_SCRIPT,
    ']]>\n</script>\n',
    `<rect x="0.0" y="0" width="${cFixed(o.width, 1)}" height="${cFixed(o.height, 1)}" fill="url(#background)" />\n`,
    textElement('title', Math.trunc(o.width / 2), fs * 2, escapeText(o.title)),
  ];
  if (o.subtitle !== '') parts.push(textElement('subtitle', Math.trunc(o.width / 2), fs * 4, escapeText(o.subtitle)));
  parts.push(
    textElement('details', o.xpad, o.height - o.ypad2 / 2, ' '),
    textElement('unzoom', o.xpad, fs * 2, 'Reset Zoom', 'class="hide"'),
    textElement('search', o.width - o.xpad - 100, fs * 2, 'Search'),
    textElement('ignorecase', o.width - o.xpad - 16, fs * 2, 'ic'),
    textElement('matched', o.width - o.xpad - 100, o.height - o.ypad2 / 2, ' ', 'class="hide"'),
  );
  return parts.join('');
}

/** The document flamegraph.pl prints when there is no valid input (an SVG saying so, for automated callers). */
export function errorDocument(width: number, fontSize: number, message: string): string {
  const h = fontSize * 5;
  return [
    '<?xml version="1.0" standalone="no"?>\n',
    '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n',
    `<svg version="1.1" width="${perlNum(width)}" height="${perlNum(h)}" viewBox="0 0 ${perlNum(width)} ${perlNum(h)}" xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">\n`,
    textElement(null, Math.trunc(width / 2), fontSize * 2, escapeText(message), 'text-anchor="middle"'),
    '</svg>\n',
  ].join('');
}
