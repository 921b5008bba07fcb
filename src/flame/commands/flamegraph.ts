/**
 * `bpfscope flamegraph [options] [FILE...]`: folded stacks to an interactive SVG flame graph, with
 * flamegraph.pl's options (FlameGraph commit 41fee1f). Reads the files in order, or stdin; writes the SVG to
 * stdout. With no valid input it still writes an SVG saying so, and exits 2, as flamegraph.pl does.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { BpfscopeError } from '../../errors.js';
import { PALETTES } from '../color.js';
import { stacksToPprof } from '../export/pprof.js';
import { type SpeedscopeUnit, stacksToSpeedscope } from '../export/speedscope.js';
import { ExportError, readFoldedStacks } from '../export/stacks.js';
import {
  FlameGraphOptionError,
  type FlameGraphOptions,
  parseNameAttr,
  renderFlameGraph,
  renderFlameGraphFiles,
} from '../flamegraph.js';
import { readInputs, Utf8LineReader } from '../input.js';
import { floatOption, intOption, parseCommandArgs, warnTo, writeOut } from './common.js';

const NAME = 'flamegraph';

export const USAGE = `USAGE: bpfscope ${NAME} [options] [infile...] > outfile.svg

Render folded stacks ("frame;frame;frame count" lines, e.g. from stackcollapse-perf) as an
interactive SVG flame graph, as FlameGraph's flamegraph.pl does. A second count column makes a
differential flame graph (see difffolded).

    --title TEXT      change title text
    --subtitle TEXT   second level title (optional)
    --width NUM       width of image (default 1200)
    --height NUM      height of each frame (default 16)
    --minwidth NUM    omit smaller functions. In pixels or use "%" for
                      percentage of time (default 0.1 pixels)
    --fonttype FONT   font type (default "Verdana")
    --fontsize NUM    font size (default 12)
    --fontwidth NUM   average character width relative to font size (default 0.59)
    --countname TEXT  count type label (default "samples")
    --nametype TEXT   name type label (default "Function:")
    --colors PALETTE  set color palette. choices are: hot (default), mem,
                      io, wakeup, chain, java, js, perl, red, green, blue,
                      aqua, yellow, purple, orange
    --bgcolors COLOR  set background colors. gradient choices are yellow
                      (default), blue, green, grey; flat colors use "#rrggbb"
    --hash            colors are keyed by function name hash
    --random          colors are randomly generated (output then differs run to run)
    --cp              use consistent palette (palette.map in the current directory)
    --reverse         generate stack-reversed flame graph
    --inverted        icicle graph
    --flamechart      produce a flame chart (sort by time, do not merge stacks)
    --negate          switch differential hues (blue<->red)
    --notes TEXT      add notes comment in SVG (for debugging)
    --total NUM       width of the graph in counts (default: the input's total)
    --factor NUM      factor to scale counts by in labels (default 1)
    --nameattr FILE   per-function attributes: "name<TAB>attr=value<TAB>..." lines
    --encoding NAME   XML encoding declaration
    --format FORMAT   svg (default), pprof (profile.proto) or speedscope (JSON)
    -o, --output FILE write to FILE instead of standard output
    --kind KIND       pprof/speedscope: what the counts are: cpu (samples, default) or
                      offcpu (time, in --unit)
    --hz NUM          pprof cpu: sampling frequency (the sample period is 1e9/NUM ns)
    --period NS       pprof cpu: sample period in nanoseconds (instead of --hz)
    --unit UNIT       offcpu counts' unit: ns, us (default, as bcc's offcputime -f), ms or s
    -h, --help        this message

    eg,
    bpfscope ${NAME} --title="Flame Graph: malloc()" trace.txt > graph.svg
`;

/** Command entry point: returns the exit status (2 when the input has no valid counts). */
export async function main(argv: string[]): Promise<number> {
  const { values: v, positionals } = parseCommandArgs(NAME, argv, {
    title: { type: 'string' },
    subtitle: { type: 'string' },
    width: { type: 'string' },
    height: { type: 'string' },
    minwidth: { type: 'string' },
    fonttype: { type: 'string' },
    fontsize: { type: 'string' },
    fontwidth: { type: 'string' },
    countname: { type: 'string' },
    nametype: { type: 'string' },
    colors: { type: 'string' },
    color: { type: 'string' },
    bgcolors: { type: 'string' },
    hash: { type: 'boolean' },
    random: { type: 'boolean' },
    cp: { type: 'boolean' },
    reverse: { type: 'boolean' },
    inverted: { type: 'boolean' },
    flamechart: { type: 'boolean' },
    negate: { type: 'boolean' },
    notes: { type: 'string' },
    total: { type: 'string' },
    factor: { type: 'string' },
    nameattr: { type: 'string' },
    encoding: { type: 'string' },
    format: { type: 'string' },
    output: { type: 'string', short: 'o' },
    kind: { type: 'string' },
    hz: { type: 'string' },
    period: { type: 'string' },
    unit: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  if (v.help) {
    await writeOut(USAGE);
    return 0;
  }
  const str = (k: string): string | undefined => v[k] as string | undefined;
  const format = str('format') ?? 'svg';
  if (!['svg', 'pprof', 'speedscope'].includes(format)) {
    throw new BpfscopeError(`${NAME}: unknown --format "${format}"`, { hint: 'choices are: svg, pprof, speedscope' });
  }
  const output = str('output');
  if (format !== 'svg') return convert(format as 'pprof' | 'speedscope', str, positionals, output);
  const colors = str('colors') ?? str('color') ?? 'hot';
  if (!(PALETTES as readonly string[]).includes(colors)) {
    throw new BpfscopeError(`${NAME}: unknown palette "${colors}"`, { hint: `choices are: ${PALETTES.join(', ')}` });
  }
  const opts: Partial<FlameGraphOptions> = {
    title: str('title') ?? '',
    subtitle: str('subtitle') ?? '',
    width: intOption(NAME, 'width', str('width'), 1200),
    height: intOption(NAME, 'height', str('height'), 16),
    minwidth: str('minwidth') ?? '0.1',
    fonttype: str('fonttype') ?? 'Verdana',
    fontsize: floatOption(NAME, 'fontsize', str('fontsize'), 12),
    fontwidth: floatOption(NAME, 'fontwidth', str('fontwidth'), 0.59),
    countname: str('countname') ?? 'samples',
    nametype: str('nametype') ?? 'Function:',
    colors,
    bgcolors: str('bgcolors') ?? '',
    hash: !!v.hash,
    random: !!v.random,
    reverse: !!v.reverse,
    inverted: !!v.inverted,
    flamechart: !!v.flamechart,
    negate: !!v.negate,
    notes: str('notes') ?? '',
    total: str('total'),
    factor: floatOption(NAME, 'factor', str('factor'), 1),
    encoding: str('encoding'),
  };
  if (opts.width! <= 20) throw new BpfscopeError(`${NAME}: --width must be more than 20 pixels`);
  const nameattrFile = str('nameattr');
  if (nameattrFile !== undefined) {
    let text: string;
    try {
      text = readFileSync(nameattrFile, 'utf8');
    } catch (err) {
      throw new BpfscopeError(`${NAME}: Can't read ${nameattrFile}: ${(err as Error).message}`);
    }
    opts.nameattr = guard(() => parseNameAttr(text, nameattrFile));
  }
  const paletteFile = 'palette.map';
  if (v.cp) opts.paletteMap = existsSync(paletteFile) ? readPalette(paletteFile) : new Map();

  // The SVG goes out piece by piece as it is made (stdout writes to files and pipes complete at once on Linux).
  const writes: Promise<void>[] = [];
  const chunks: Buffer[] = [];
  const sink =
    output === undefined
      ? (chunk: Buffer) => void writes.push(writeOut(chunk))
      : (chunk: Buffer) => void chunks.push(Buffer.from(chunk));
  // Sorted ASCII files are merged as they are read (flamegraph.ts, renderFlameGraphFiles); anything else is read
  // into lines first. Input is UTF-8 text (flamegraph.pl reads it with the :utf8 layer).
  let result = guard(() => renderFlameGraphFiles(positionals, opts, sink));
  if (result === null) {
    const { lines, astral, ascii } = await readLines(positionals);
    opts.bmpOnly = !astral;
    opts.asciiOnly = ascii;
    result = guard(() => renderFlameGraph(lines, opts, sink));
  }
  const warn = warnTo(NAME);
  for (const w of result.warnings) warn(w);
  await Promise.all(writes);
  if (output !== undefined) writeFile(output, Buffer.concat(chunks));
  if (opts.paletteMap) writePalette(paletteFile, opts.paletteMap);
  if (result.error) throw new BpfscopeError(`${NAME}: ${result.error}`, { exitCode: 2 });
  return 0;
}

/**
 * Reads the input as text lines (UTF-8); `astral`: whether the bytes may encode a character beyond U+FFFF (hold a
 * 4-byte sequence's lead byte, 0xF0-0xF4; else the decoded text has no surrogate pairs); `ascii`: whether they are
 * all ASCII (a byte-order mark aside).
 */
async function readLines(files: string[]): Promise<{ lines: string[]; astral: boolean; ascii: boolean }> {
  const lines: string[] = [];
  const reader = new Utf8LineReader((text, start, end) => {
    lines.push(text.slice(start, end));
  });
  await readInputs(
    files,
    (chunk) => reader.push(chunk),
    () => reader.end(),
  );
  return { lines, astral: reader.astral, ascii: reader.ascii };
}

function writeFile(file: string, data: string | Uint8Array): void {
  try {
    writeFileSync(file, data);
  } catch (err) {
    throw new BpfscopeError(`${NAME}: cannot write ${file}: ${(err as Error).message}`);
  }
}

const UNIT_NS: Record<string, number> = { ns: 1, us: 1e3, ms: 1e6, s: 1e9 };
const SPEEDSCOPE_UNIT: Record<string, SpeedscopeUnit> = {
  ns: 'nanoseconds',
  us: 'microseconds',
  ms: 'milliseconds',
  s: 'seconds',
};

/** --format pprof|speedscope: folded input converted by src/flame/export/. */
async function convert(
  format: 'pprof' | 'speedscope',
  str: (k: string) => string | undefined,
  files: string[],
  output: string | undefined,
): Promise<number> {
  const kind = str('kind') ?? 'cpu';
  if (kind !== 'cpu' && kind !== 'offcpu') {
    throw new BpfscopeError(`${NAME}: unknown --kind "${kind}"`, { hint: 'choices are: cpu, offcpu' });
  }
  const unit = str('unit') ?? 'us';
  if (!(unit in UNIT_NS))
    throw new BpfscopeError(`${NAME}: unknown --unit "${unit}"`, { hint: 'choices are: ns, us, ms, s' });
  let periodNs: number | undefined;
  if (str('hz') !== undefined && str('period') !== undefined) {
    throw new BpfscopeError(`${NAME}: give --hz or --period, not both`);
  }
  if (str('hz') !== undefined) {
    const hz = floatOption(NAME, 'hz', str('hz'), 0);
    if (!(hz > 0)) throw new BpfscopeError(`${NAME}: --hz must be a positive number`);
    periodNs = Math.round(1e9 / hz);
  }
  if (str('period') !== undefined) {
    periodNs = intOption(NAME, 'period', str('period'), 0);
    if (periodNs <= 0) throw new BpfscopeError(`${NAME}: --period must be a positive number of nanoseconds`);
  }
  const { lines } = await readLines(files);
  let data: string | Uint8Array;
  try {
    const folded = readFoldedStacks(lines);
    if (folded.invalidLines) warnTo(NAME)(`Ignored ${folded.invalidLines} lines with invalid format`);
    if (folded.stacks.length === 0) throw new ExportError('no stack counts found in the input');
    if (format === 'pprof') {
      data = stacksToPprof(folded, { kind, periodNs, unitNs: UNIT_NS[unit] });
    } else {
      const doc = stacksToSpeedscope(folded, {
        name: files.length === 1 ? files[0]! : 'bpfscope',
        unit: kind === 'cpu' ? 'none' : SPEEDSCOPE_UNIT[unit]!,
        exporter: 'bpfscope',
      });
      data = `${JSON.stringify(doc)}\n`;
    }
  } catch (err) {
    if (err instanceof ExportError) throw new BpfscopeError(`${NAME}: ${err.message}`);
    throw err;
  }
  if (output !== undefined) writeFile(output, data);
  else await writeOut(data);
  return 0;
}

function guard<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof FlameGraphOptionError) throw new BpfscopeError(`${NAME}: ${err.message}`);
    throw err;
  }
}

/** palette.map: "name->rgb(r,g,b)" lines (flamegraph.pl --cp). */
function readPalette(file: string): Map<string, string> {
  const map = new Map<string, string>();
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new BpfscopeError(`${NAME}: can't open file ${file}: ${(err as Error).message}`);
  }
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const [key, value] = line.split('->');
    map.set(key!, value ?? '');
  }
  return map;
}

function writePalette(file: string, map: Map<string, string>): void {
  const keys = [...map.keys()].sort();
  try {
    writeFileSync(file, keys.map((k) => `${k}->${map.get(k)}\n`).join(''));
  } catch (err) {
    throw new BpfscopeError(`${NAME}: cannot write ${file}: ${(err as Error).message}`);
  }
}
