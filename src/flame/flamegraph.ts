/**
 * Flame graph rendering: folded stacks in, an interactive SVG out, with flamegraph.pl's options and geometry
 * (FlameGraph commit 41fee1f): every frame's rectangle (x, y, width, height), sample count, percentage and label
 * are what flamegraph.pl prints for the same input and options. Differences, all deliberate: frames are written in
 * a fixed order instead of Perl's hash order; colours never depend on chance unless `random` is
 * set; titles and notes are XML-escaped; the embedded JavaScript is our own (see svg/script.ts).
 * Frames are written in the order they close while merging (children before their parents), which depends only on
 * the input lines and options.
 */
import { backgroundColors, type ColorMode, defaultBackground, deltaColor, frameColor } from './color.js';
import { type Frames, mergeFrames, parseStacks } from './merge.js';
import { mergeFolded } from './merge-stream.js';
import { cFixed, cFixedValue, commas, perlNum, perlNumify } from './perl.js';
import { documentHead, errorDocument, escapeAttr, escapeText } from './svg/document.js';

/** Options of flamegraph.pl, with its defaults. Sizes are in pixels. */
export interface FlameGraphOptions {
  /** --title (default "Flame Graph", "Icicle Graph" when inverted, "Flame Chart" for flame charts). */
  title: string;
  /** --subtitle: second title line (default none). */
  subtitle: string;
  /** --width: image width (default 1200). */
  width: number;
  /** --height: frame height (default 16). */
  height: number;
  /** --minwidth: omit frames narrower than this: pixels ("0.1", the default) or percent of the total ("0.5%"). */
  minwidth: string;
  /** --fonttype (default "Verdana"). */
  fonttype: string;
  /** --fontsize (default 12). */
  fontsize: number;
  /** --fontwidth: average character width relative to the font size (default 0.59). */
  fontwidth: number;
  /** --countname: what the counts are (default "samples"). */
  countname: string;
  /** --nametype: what the names are (default "Function:"). */
  nametype: string;
  /** --colors: palette (default "hot"; see color.ts). */
  colors: string;
  /** --bgcolors: yellow, blue, green, grey or "#rrggbb" (default: by palette). */
  bgcolors: string;
  /** --hash: colour by name hash. */
  hash: boolean;
  /** --random: random colours (the only non-deterministic option). */
  random: boolean;
  /** --cp: consistent palette: colours come from / are added to this map (the CLI keeps it in palette.map). */
  paletteMap?: Map<string, string>;
  /** --reverse: reverse each stack before merging. */
  reverse: boolean;
  /** --inverted: icicle graph (root at the top). */
  inverted: boolean;
  /** --flamechart: keep input order, x is time. */
  flamechart: boolean;
  /** --negate: swap differential hues. */
  negate: boolean;
  /** --notes: text in an XML comment (no "<" or ">"). */
  notes: string;
  /** --total: width of the graph in counts, when larger than the input's total (default: the total). */
  total?: string;
  /** --factor: multiply counts in the labels by this (default 1). */
  factor: number;
  /** --nameattr: per-function attributes of the frame's `<g>`/`<a>` (title, href, target, id, class, g_extra, a_extra). */
  nameattr?: Map<string, Record<string, string>>;
  /** --encoding: XML encoding declaration. */
  encoding?: string;
  /**
   * The caller knows that no line holds a character beyond U+FFFF (a surrogate pair), e.g. from the input bytes:
   * sorting then skips the scan for them. Not a flamegraph.pl option.
   */
  bmpOnly?: boolean;
  /**
   * The caller knows that every line is ASCII (e.g. from the input bytes): merging then compares the stacks' bytes.
   * Not a flamegraph.pl option.
   */
  asciiOnly?: boolean;
}

export const DEFAULT_OPTIONS: FlameGraphOptions = {
  title: '',
  subtitle: '',
  width: 1200,
  height: 16,
  minwidth: '0.1',
  fonttype: 'Verdana',
  fontsize: 12,
  fontwidth: 0.59,
  countname: 'samples',
  nametype: 'Function:',
  colors: 'hot',
  bgcolors: '',
  hash: false,
  random: false,
  reverse: false,
  inverted: false,
  flamechart: false,
  negate: false,
  notes: '',
  factor: 1,
};

export interface FlameGraphResult {
  /** The SVG document as UTF-8 pieces, in order (also for errors: an SVG saying there was no input). */
  chunks: Buffer[];
  /** The SVG document as one string (joins `chunks`). */
  readonly svg: string;
  /** Warnings flamegraph.pl would print to stderr. */
  warnings: string[];
  /** Set when there were no valid counts (flamegraph.pl exits 2). */
  error?: string;
}

/** An option value flamegraph.pl rejects. */
export class FlameGraphOptionError extends Error {}

const XPAD = 10; // left and right padding
const FRAMEPAD = 1; // vertical padding between frames
const SEARCH_COLOR = 'rgb(230,0,230)';
const ANNOTATION = /_\[[kwij]\]$/;

/**
 * Renders folded stack lines (each "stack count" or "stack count1 count2", without "\n") as a flame graph SVG.
 * With `sink`, the document's UTF-8 pieces (about 256 KiB each) go to it as they are made, in order, and the
 * result's `chunks` stay empty: a large graph is then never held whole in memory.
 * Throws FlameGraphOptionError for invalid options (a bad --minwidth, --bgcolors, or notes with "<" / ">").
 */
export function renderFlameGraph(
  lines: string[],
  options: Partial<FlameGraphOptions> = {},
  sink?: (chunk: Buffer) => void,
): FlameGraphResult {
  const s = setup(options);
  const o = s.o;
  const parsed = parseStacks(lines, {
    reverse: o.reverse,
    order: o.flamechart ? 'input' : 'sorted',
    chain: o.colors === 'chain',
    bmpOnly: o.bmpOnly,
  });
  return renderMerged(s, parsed, (minTime) => mergeFrames(parsed, minTime, { ascii: !!o.asciiOnly }), sink);
}

/**
 * `renderFlameGraph` over the folded stack files `files` (read in order as one input, UTF-8), by merge-stream.ts's
 * path, which reads them through one small buffer: same document, same warnings. Returns null, having written
 * nothing, when that path does not apply (standard input, --reverse, the chain palette, or input that is not
 * ASCII, has a line without a count, or is not sorted): the caller then reads the lines and calls
 * `renderFlameGraph`. Throws FlameGraphOptionError as `renderFlameGraph` does, and BpfscopeError when a file cannot
 * be read.
 */
export function renderFlameGraphFiles(
  files: readonly string[],
  options: Partial<FlameGraphOptions> = {},
  sink?: (chunk: Buffer) => void,
): FlameGraphResult | null {
  const s = setup(options);
  const o = s.o;
  if (files.length === 0 || files.includes('-') || o.reverse || o.colors === 'chain') return null;
  const merged = mergeFolded(files, !o.flamechart, (total) => minTimeOf(s, timemaxOf(o, total)));
  if (!merged) return null;
  return renderMerged(s, merged, (minTime) => merged.frames(minTime), sink);
}

/** Checked options and the values derived from them alone. */
interface Setup {
  o: FlameGraphOptions;
  title: string;
  /** --minwidth's number (pixels, or percent when it ends in "%"). */
  minwidth: number;
  background: [string, string];
}

function setup(options: Partial<FlameGraphOptions>): Setup {
  const o: FlameGraphOptions = { ...DEFAULT_OPTIONS, ...options };
  let title = o.title;
  if (title === '') title = o.flamechart ? 'Flame Chart' : o.inverted ? 'Icicle Graph' : 'Flame Graph';
  if (/[<>]/.test(o.notes)) throw new FlameGraphOptionError("Notes string can't contain < or >");
  const mw = /^([0-9.]+)%?$/.exec(o.minwidth);
  if (!mw) throw new FlameGraphOptionError(`Value '${o.minwidth}' is invalid for minwidth, expected a float.`);
  const minwidth = perlNumify(mw[1]!);
  const bg = backgroundColors(o.bgcolors === '' ? defaultBackground(o.colors) : o.bgcolors);
  if (!bg) throw new FlameGraphOptionError(`Unrecognized bgcolor option "${o.bgcolors}"`);
  return { o, title, minwidth, background: bg };
}

/** The graph's width in counts: the input's total, or --total when larger (never decreases as `time` grows). */
function timemaxOf(o: FlameGraphOptions, time: number): number {
  if (o.total !== undefined && o.total !== '' && o.total !== '0') {
    const t = perlNumify(o.total);
    if (t >= time) return t;
  }
  return time;
}

/** The narrowest frame drawn, in count units (never decreases as `timemax` grows). */
function minTimeOf(s: Setup, timemax: number): number {
  const widthPerTime = (s.o.width - 2 * XPAD) / timemax;
  return s.o.minwidth.endsWith('%') ? (timemax * s.minwidth) / 100 : s.minwidth / widthPerTime;
}

/** The document, from the input's totals and its frames at least `minTime` count units wide. */
function renderMerged(
  s: Setup,
  parsed: { total: number; ignored: number; maxDelta: number },
  framesFor: (minTime: number) => Frames,
  sink?: (chunk: Buffer) => void,
): FlameGraphResult {
  const o = s.o;
  const warnings: string[] = [];
  const fontsize = o.fontsize;
  const ypad1 = fontsize * 3; // top, with title
  const ypad2 = fontsize * 2 + 10; // bottom, with labels
  const ypad3 = fontsize * 2; // extra top for a subtitle
  const time = parsed.total;
  if (o.countname === 'samples' && time < 100)
    warnings.push(`Stack count is low (${perlNum(time)}). Did something go wrong?`);
  if (parsed.ignored) warnings.push(`Ignored ${parsed.ignored} lines with invalid format`);
  if (!time) {
    const doc = new ChunkWriter(sink);
    doc.add(errorDocument(o.width, fontsize, 'ERROR: No valid input provided to flamegraph.'));
    return result(doc.finish(), warnings, 'no stack counts found in the input');
  }
  const timemax = timemaxOf(o, time);
  if (timemax === time && o.total !== undefined && o.total !== '' && o.total !== '0') {
    const t = perlNumify(o.total);
    if (t < time && t / time > 0.02) {
      warnings.push(`Specified --total ${o.total} is less than actual total ${perlNum(time)}, so ignored`);
    }
  }
  const widthPerTime = (o.width - 2 * XPAD) / timemax;
  const frames = framesFor(minTimeOf(s, timemax));

  let imageHeight = (frames.depthMax + 1) * o.height + ypad1 + ypad2;
  if (o.subtitle !== '') imageHeight += ypad3;
  const head = documentHead({
    width: o.width,
    height: imageHeight,
    encoding: o.encoding,
    notes: o.notes,
    background: s.background,
    fontType: o.fonttype,
    fontSize: fontsize,
    title: s.title,
    subtitle: o.subtitle,
    xpad: XPAD,
    ypad2,
    script: {
      width: o.width,
      xpad: XPAD,
      fontSize: fontsize,
      fontWidth: o.fontwidth,
      inverted: o.inverted,
      nameType: o.nametype,
      searchColor: SEARCH_COLOR,
    },
  });
  const out = new ChunkWriter(sink);
  out.add(head);
  out.add('<g id="frames">\n');
  renderFrames(out, frames, o, {
    timemax,
    widthPerTime,
    imageHeight,
    ypad1,
    ypad2,
    maxDelta: parsed.maxDelta,
  });
  out.add('</g>\n</svg>\n');
  return result(out.finish(), warnings);
}

function result(chunks: Buffer[], warnings: string[], error?: string): FlameGraphResult {
  const r: FlameGraphResult = {
    chunks,
    get svg(): string {
      return Buffer.concat(chunks).toString('utf8');
    },
    warnings,
  };
  if (error !== undefined) r.error = error;
  return r;
}

/** Size of the output pieces: large enough that writes are few, small enough that memory stays bounded. */
const PIECE_BYTES = 1 << 18;

/**
 * Writes output text straight into UTF-8 byte pieces of about 256 KiB (no joined strings to flatten and encode):
 * short ASCII strings are copied by a loop, anything else by the native UTF-8 encoder. Each finished piece is a new
 * Buffer, handed to the sink (or kept), never reused.
 */
class ChunkWriter {
  private buf: Buffer = Buffer.allocUnsafe(PIECE_BYTES);
  private pos = 0;
  private readonly chunks: Buffer[] = [];
  /** `sink`: where finished pieces go (default: kept, and returned by `finish`). */
  constructor(private readonly sink?: (chunk: Buffer) => void) {}

  private emit(piece: Buffer): void {
    if (this.sink) this.sink(piece);
    else this.chunks.push(piece);
  }

  /** Makes room for `n` more bytes, starting a new piece when needed. */
  private room(n: number): Buffer {
    if (this.pos + n > this.buf.length) {
      if (this.pos > 0) this.emit(this.buf.subarray(0, this.pos));
      this.buf = Buffer.allocUnsafe(Math.max(PIECE_BYTES, n));
      this.pos = 0;
    }
    return this.buf;
  }

  /** Appends `s` as UTF-8 (at most 3 bytes per UTF-16 unit). */
  add(s: string): void {
    const n = s.length;
    const buf = this.room(3 * n);
    let pos = this.pos;
    if (n < 64) {
      for (let i = 0; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) {
          pos += buf.write(i === 0 ? s : s.slice(i), pos, 'utf8');
          break;
        }
        buf[pos++] = c;
      }
    } else {
      pos += buf.write(s, pos, 'utf8');
    }
    this.pos = pos;
  }

  /** Appends bytes (UTF-8 made once, e.g. per frame name). */
  bytes(b: Uint8Array, n = b.length): void {
    const buf = this.room(n);
    let pos = this.pos;
    if (n < 64) for (let i = 0; i < n; i++) buf[pos++] = b[i]!;
    else {
      buf.set(n === b.length ? b : b.subarray(0, n), pos);
      pos += n;
    }
    this.pos = pos;
  }

  finish(): Buffer[] {
    if (this.pos > 0) this.emit(this.buf.subarray(0, this.pos));
    this.pos = 0;
    this.buf = Buffer.allocUnsafe(0);
    return this.chunks;
  }
}

interface Layout {
  timemax: number;
  widthPerTime: number;
  imageHeight: number;
  ypad1: number;
  ypad2: number;
  maxDelta: number;
}

/** What a frame's name contributes to its `<g>`, computed once per distinct name. */
interface NameParts {
  /** The name as a title: XML-escaped, without a "_[k]"-style annotation. */
  title: string;
  /** `title` as UTF-8. */
  titleBytes: Buffer;
  /** `label` as UTF-8 when it is plain ASCII (truncation then cuts bytes), else null. */
  asciiLabel: Buffer | null;
  /** The name as label text (annotation removed; escaped after truncation). */
  label: string;
  /** Whether the label has no characters to escape and no surrogate pairs (truncation then works on units). */
  plain: boolean;
  /** Its fill colour by palette ("" until first needed: differential and --random frames are coloured apart). */
  color: string;
}

/** The `<g>` element of every frame, in the order the frames closed (deterministic for the same input). */
function renderFrames(out: ChunkWriter, f: Frames, o: FlameGraphOptions, l: Layout): void {
  const byName = new Map<string, NameParts>();
  const rows: RowText[] = [];
  const mode: ColorMode = o.hash ? 'hash' : o.random ? 'random' : 'name';
  const charWidth = o.fontsize * o.fontwidth;
  const countDiv = l.timemax * o.factor;
  const countName = o.countname;
  const countNameBytes = Buffer.from(` ${countName}, `, 'utf8');
  for (let i = 0; i < f.count; i++) {
    const func = f.names[i]!;
    const depth = f.depth[i]!;
    const stime = f.stime[i]!;
    const isRoot = func === '' && depth === 0;
    const etime = isRoot ? l.timemax : f.etime[i]!;
    const delta = f.delta[i]!;
    let parts = byName.get(func);
    if (parts === undefined) {
      parts = nameParts(func);
      byName.set(func, parts);
    }
    const x1 = XPAD + stime * l.widthPerTime;
    const x2 = XPAD + etime * l.widthPerTime;
    let rowY = rows[depth];
    if (rowY === undefined) rowY = rows[depth] = rowText(depth, o, l);
    const samplesValue = (etime - stime) * o.factor;
    const samplesTxt = commas(cFixed(samplesValue, 0));
    let pct = '100';
    let deltaTxt = ''; // "; +1.23%" for differential frames
    if (!isRoot) {
      pct = cFixed((100 * cFixedValue(samplesValue, 0)) / countDiv, 2);
      if (!Number.isNaN(delta)) {
        const d = (o.negate ? -delta : delta) + 0; // + 0: no "-0.00" (Perl negates integer 0 to 0)
        deltaTxt = `; ${d > 0 ? '+' : ''}${cFixed((100 * d) / countDiv, 2)}%`;
      }
    }

    let color: string;
    if (func === '--') color = 'rgb(160,160,160)';
    else if (func === '-') color = 'rgb(200,200,200)';
    else if (!Number.isNaN(delta)) color = deltaColor(delta, l.maxDelta, o.negate);
    else if (mode === 'random' && !o.paletteMap) color = frameColor(o.colors, func, mode);
    else {
      if (parts.color === '') parts.color = nameColor(func, o, mode);
      color = parts.color;
    }

    const chars = Math.trunc((x2 - x1) / charWidth);
    const x1s = cFixed(x1, 1);
    const w = cFixed(cFixedValue(x2, 1) - cFixedValue(x1, 1), 1);
    const attrs = o.nameattr?.get(func);
    if (attrs === undefined) {
      // The common case, written piece by piece into the output bytes.
      out.add('<g>\n<title>');
      if (isRoot) out.add('all');
      else out.bytes(parts.titleBytes);
      out.add(' (');
      out.add(samplesTxt);
      out.bytes(countNameBytes);
      out.add(pct);
      out.add('%');
      if (deltaTxt !== '') out.add(deltaTxt);
      out.add(')</title><rect x="');
      out.add(x1s);
      out.bytes(rowY.beforeWidth);
      out.add(w);
      out.bytes(rowY.beforeFill);
      out.add(color);
      out.add('" rx="2" ry="2" />\n<text x="');
      out.add(cFixed(x1 + 3, 2));
      out.bytes(rowY.beforeText);
      if (chars >= 3) {
        const ascii = parts.asciiLabel;
        if (ascii === null) out.add(labelText(parts, chars));
        else if (chars < ascii.length) {
          out.bytes(ascii, chars - 2);
          out.add('..');
        } else out.bytes(ascii);
      }
      out.add('</text>\n</g>\n');
    } else {
      const info = `${isRoot ? 'all' : parts.title} (${samplesTxt} ${countName}, ${pct}%${deltaTxt})`;
      const title = attrs.title || info;
      const text = chars >= 3 ? labelText(parts, chars) : '';
      out.add(
        `${groupOpen(attrs)}\n<title>${title}</title><rect x="${x1s}" y="${rowY.y}" width="${w}" height="${rowY.h}" fill="${color}" rx="2" ry="2" />\n<text x="${cFixed(x1 + 3, 2)}" y="${rowY.textY}">${text}</text>\n${attrs.href ? '</a>' : '</g>'}\n`,
      );
    }
  }
}

/** The label of a frame `chars` characters wide (at least 3), truncated with ".." and XML-escaped. */
function labelText(parts: NameParts, chars: number): string {
  const label = parts.label;
  if (!parts.plain) return escapeText(truncate(label, chars));
  return chars < label.length ? `${label.slice(0, chars - 2)}..` : label;
}

/** The printed vertical geometry of the frames at one depth: rect y and height, label baseline. */
interface RowText {
  y: string;
  h: string;
  textY: string;
  /** `" y="Y" width="`, `" height="H" fill="` and `" y="TEXTY">` as bytes. */
  beforeWidth: Buffer;
  beforeFill: Buffer;
  beforeText: Buffer;
}

function rowText(depth: number, o: FlameGraphOptions, l: Layout): RowText {
  let y1: number;
  let y2: number;
  if (!o.inverted) {
    y1 = l.imageHeight - l.ypad2 - (depth + 1) * o.height + FRAMEPAD;
    y2 = l.imageHeight - l.ypad2 - depth * o.height;
  } else {
    y1 = l.ypad1 + depth * o.height;
    y2 = l.ypad1 + (depth + 1) * o.height - FRAMEPAD;
  }
  const y = perlNum(y1);
  const h = cFixed(y2 - y1, 1);
  const textY = perlNum(3 + (y1 + y2) / 2);
  return {
    y,
    h,
    textY,
    beforeWidth: Buffer.from(`" y="${y}" width="`, 'latin1'),
    beforeFill: Buffer.from(`" height="${h}" fill="`, 'latin1'),
    beforeText: Buffer.from(`" y="${textY}">`, 'latin1'),
  };
}

/** Title and label text of the frames named `func`; the colour is filled in when first needed. */
function nameParts(func: string): NameParts {
  const annotated = func.endsWith(']');
  const label = annotated ? func.replace(ANNOTATION, '') : func;
  const title = annotated ? escapeAttr(func).replace(ANNOTATION, '') : escapeAttr(func);
  const plain = !/[&<>\ud800-\udfff]/.test(label);
  const titleBytes = Buffer.from(title, 'utf8');
  const asciiLabel = plain && /^[\x00-\x7f]*$/.test(label) ? Buffer.from(label, 'latin1') : null;
  return { title, titleBytes, label, asciiLabel, plain, color: '' };
}

/** The colour of frames named `func` by palette (through --cp's map, which gains new names, when given). */
function nameColor(func: string, o: FlameGraphOptions, mode: ColorMode): string {
  if (!o.paletteMap) return frameColor(o.colors, func, mode);
  let c = o.paletteMap.get(func);
  if (c === undefined) {
    c = frameColor(o.colors, func, mode);
    o.paletteMap.set(func, c);
  }
  return c;
}

/** The first `chars` characters (code points), the last two replaced by ".." when the name is longer. */
function truncate(name: string, chars: number): string {
  if (!/[\ud800-\udfff]/.test(name)) {
    return chars < name.length ? `${name.slice(0, chars - 2)}..` : name;
  }
  const cps = Array.from(name);
  return chars < cps.length ? `${cps.slice(0, chars - 2).join('')}..` : name;
}

/** flamegraph.pl's group_start with --nameattr attributes: `<a ...>` when there is an href, else `<g ...>`. */
function groupOpen(a: Record<string, string>): string {
  const g: string[] = [];
  if (a.id !== undefined) g.push(`id="${a.id}"`);
  if (a.class !== undefined) g.push(`class="${a.class}"`);
  if (a.g_extra) g.push(a.g_extra);
  if (a.href) {
    const link = [`xlink:href="${a.href}"`, `target="${a.target || '_top'}"`];
    if (a.a_extra) link.push(a.a_extra);
    return `<a ${[...link, ...g].join(' ')}>`;
  }
  return g.length ? `<g ${g.join(' ')}>` : '<g>';
}

/** Parses a --nameattr file: "function<TAB>name=value<TAB>name=value..." per line. Throws on a line without a tab. */
export function parseNameAttr(text: string, fileName: string): Map<string, Record<string, string>> {
  const map = new Map<string, Record<string, string>>();
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  for (const line of lines) {
    const tab = line.indexOf('\t');
    if (tab < 0) throw new FlameGraphOptionError(`Invalid format in ${fileName}`);
    const attrs: Record<string, string> = {};
    for (const pair of line.slice(tab + 1).split('\t')) {
      const eq = pair.indexOf('=');
      if (eq < 0) attrs[pair] = '';
      else attrs[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
    map.set(line.slice(0, tab), attrs);
  }
  return map;
}
