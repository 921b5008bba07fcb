/**
 * `bpfscope heatmap [options] [FILE...]`: "time latency" lines to an interactive SVG latency heat map, with
 * trace2heatmap.pl's options (HeatMap commit c7f5b8f). Reads the files in order, or stdin (so a tracing tool's
 * output can be piped in as it runs); writes the SVG to stdout. Bad input or options: one sentence, exit status 1.
 * `--hist [--map @name]`: the input is a bpftrace program's `-f json` output instead, each printed hist()/lhist()
 * one column (see histjson.ts).
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { BpfscopeError } from '../../errors.js';
import {
  checkHeatMapOptions,
  DEFAULT_HEATMAP_OPTIONS,
  HeatMapError,
  HeatMapCounter,
  HeatMapInput,
  type HeatMapOptions,
  type HeatMapResult,
  renderHeatMap,
  renderHistHeatMap,
} from '../heatmap.js';
import { PlainScanner } from '../heatmap-scan.js';
import { HistJsonInput } from '../histjson.js';
import { readInputs } from '../input.js';
import { floatOption, intOption, parseCommandArgs, writeOut } from './common.js';
import { writeOutDirect } from './write-direct.js';

const NAME = 'heatmap';

export const USAGE = `USAGE: bpfscope ${NAME} [options] [infile...] > outfile.svg

Render "TIME LATENCY" lines (one event a line, e.g. I/O completion time and latency) as an
interactive SVG latency heat map, as HeatMap's trace2heatmap.pl does. A first line holding
letters is taken as a header and skipped. Reads standard input when no file is named.

    --title TEXT      change title text (default "Latency Heat Map")
    --unitstime UNIT  column 1 units: "s" (default), "ms", "us", or "ns"
    --unitslabel TEXT column 2 units (any string; used for labels)
    --minlat NUM      minimum latency to include (default 0)
    --maxlat NUM      maximum latency to include (default: the largest)
    --rows NUM        number of heat map rows (default 50)
    --steplat NUM     instead of --rows, a latency step per row (row count follows)
    --stepsec NUM     seconds per column (fractions ok, default 1)
    --maxcol NUM      maximum number of columns to draw (truncate)
    --fonttype FONT   font type (default "Verdana")
    --fontsize NUM    font size (default 12)
    --boxsize NUM     heat map box size in pixels (default 8)
    --accstats        show per-column accumulated statistics
    --grid            draw grid lines
    --hist            the input is a bpftrace program's "-f json" output: each
                      printed hist() or lhist() is one column, its buckets the rows
    --map NAME        with --hist, the histogram map to draw (e.g. @us; needed
                      when the input has several)
    -h, --help        this message

    eg,
    bpfscope ${NAME} --unitstime=us --unitslabel=us --minlat=2000 --maxlat=10000 trace.txt > heatmap.svg
    bpfscope -f json -e 'tracepoint:block:block_rq_issue { @b = hist(args.bytes); }
        interval:s:1 { print(@b); clear(@b); } END { clear(@b); }' -c ./work.sh |
        bpfscope ${NAME} --hist --unitslabel=bytes > sizes.svg
`;

/** Command entry point: returns the exit status. */
export async function main(argv: string[]): Promise<number> {
  const { values: v, positionals } = parseCommandArgs(NAME, argv, {
    title: { type: 'string' },
    unitstime: { type: 'string' },
    unitslabel: { type: 'string' },
    minlat: { type: 'string' },
    maxlat: { type: 'string' },
    rows: { type: 'string' },
    steplat: { type: 'string' },
    stepsec: { type: 'string' },
    maxcol: { type: 'string' },
    fonttype: { type: 'string' },
    fontsize: { type: 'string' },
    boxsize: { type: 'string' },
    accstats: { type: 'boolean' },
    grid: { type: 'boolean' },
    hist: { type: 'boolean' },
    map: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  if (v.help) {
    await writeOut(USAGE);
    return 0;
  }
  const str = (k: string): string | undefined => v[k] as string | undefined;
  const int = (k: string): number | undefined => {
    const s = str(k);
    return s === undefined ? undefined : intOption(NAME, k, s, 0);
  };
  const opts: Partial<HeatMapOptions> = {
    accStats: !!v.accstats,
    grid: !!v.grid,
    stepSec: floatOption(NAME, 'stepsec', str('stepsec'), 1),
  };
  if (str('title') !== undefined) opts.title = str('title');
  if (str('unitstime') !== undefined) opts.unitsTime = str('unitstime');
  if (str('unitslabel') !== undefined) opts.unitsLabel = str('unitslabel');
  if (str('fonttype') !== undefined) opts.fontType = str('fonttype');
  if (int('minlat') !== undefined) opts.minLat = int('minlat');
  if (int('maxlat') !== undefined) opts.maxLat = int('maxlat');
  if (int('rows') !== undefined) opts.rows = int('rows');
  if (int('steplat') !== undefined) opts.stepLat = int('steplat');
  if (int('maxcol') !== undefined) opts.maxCol = int('maxcol');
  if (int('fontsize') !== undefined) opts.fontSize = int('fontsize');
  if (int('boxsize') !== undefined) opts.boxSize = int('boxsize');

  if (v.hist) return histMain(opts, str('map'), positionals, v);
  if (v.map !== undefined) throw new BpfscopeError(`${NAME}: --map needs --hist`);

  try {
    checkHeatMapOptions({ ...DEFAULT_HEATMAP_OPTIONS, ...opts }); // before waiting on the input
    const { bytes } = regularFiles(positionals) ? twoPasses(positionals, opts) : await onePass(positionals, opts);
    await writeOutDirect(bytes);
  } catch (err) {
    if (err instanceof HeatMapError) throw new BpfscopeError(`${NAME}: ${err.message}`);
    throw err;
  }
  return 0;
}

/** Whether `files` are all named regular files (which can be read twice), and there is at least one. */
function regularFiles(files: string[]): boolean {
  if (files.length === 0) return false;
  for (const f of files) {
    if (f === '-') return false;
    try {
      if (!statSync(f).isFile()) return false;
    } catch {
      return false; // readInputs reports it
    }
  }
  return true;
}

/** Standard input or other streams: the events are stored, then counted. */
async function onePass(files: string[], opts: Partial<HeatMapOptions>): Promise<HeatMapResult> {
  const input = new HeatMapInput();
  // Perl's <> reads all the files as one stream: the header check applies to the first line of the first file.
  await readInputs(
    files,
    (chunk) => input.bytes(chunk),
    () => input.end(),
  );
  return renderHeatMap(input, opts);
}

/**
 * The bytes a read of the two passes takes (the parser takes 64 KiB a call anyway): 256 KiB rather than input.ts's
 * 1 MiB, so that the read area's first touch costs 64 pages instead of 256 (fresh memory costs ~5.6 ms a MiB in page
 * faults on the bench VM), for 4x the reads (~60 a pass on the 14.4 MB bench trace).
 */
const READ_BYTES = 1 << 18;

/**
 * Regular files are read twice instead of storing the events (16 bytes each: 16 MiB of fresh memory for a
 * million, whose page faults alone took ~65 ms of CPU here, more than a second parse): the first pass keeps only
 * the totals the layout needs, the second counts each event as it is parsed. Both read into the same place in the
 * parser's WebAssembly memory, which also holds the counts (heatmap-scan.ts: no copy, little fresh memory). The
 * second pass reads the bytes the first one read, so a file that grows meanwhile (a trace still being written)
 * gives the same events twice.
 */
function twoPasses(files: string[], opts: Partial<HeatMapOptions>): HeatMapResult {
  const scanner = new PlainScanner();
  const totals = new HeatMapInput('totals', scanner);
  const sizes = files.map((f) => {
    const size = readFileRange(f, scanner.inputArea(READ_BYTES), Infinity, (chunk) => totals.bytes(chunk));
    totals.end();
    return size;
  });
  const counter = new HeatMapCounter(totals, opts, scanner);
  const input = new HeatMapInput(counter);
  files.forEach((f, i) => {
    // The area again: reserving the counts may have grown the memory (detaching views made before).
    readFileRange(f, scanner.inputArea(READ_BYTES), sizes[i]!, (chunk) => input.bytes(chunk));
    input.end();
  });
  if (input.count !== totals.count) {
    throw new HeatMapError(`the input changed while it was read (${totals.count} events, then ${input.count})`);
  }
  return counter.render();
}

/** Calls `onChunk` with the first `limit` bytes of file `name` (or all), read into `buf`; returns how many. */
function readFileRange(name: string, buf: Uint8Array, limit: number, onChunk: (chunk: Uint8Array) => void): number {
  let fd: number;
  try {
    fd = openSync(name, 'r');
  } catch (err) {
    throw new HeatMapError(`cannot open ${name}: ${(err as Error).message}`);
  }
  let at = 0;
  try {
    while (at < limit) {
      let n: number;
      try {
        n = readSync(fd, buf, 0, Math.min(buf.length, limit - at), null);
      } catch (err) {
        throw new HeatMapError(`cannot read ${name}: ${(err as Error).message}`);
      }
      if (n === 0) break;
      at += n;
      onChunk(n === buf.length ? buf : buf.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
  return at;
}

/** Row options of the event heat map, which `--hist` (rows = buckets) refuses. */
const NOT_WITH_HIST = ['unitstime', 'minlat', 'maxlat', 'rows', 'steplat'];

/** `--hist`: per-interval histograms of `-f json` output as columns. */
async function histMain(
  opts: Partial<HeatMapOptions>,
  map: string | undefined,
  files: string[],
  v: Record<string, unknown>,
): Promise<number> {
  for (const k of NOT_WITH_HIST) {
    if (v[k] !== undefined)
      throw new BpfscopeError(`${NAME}: --${k} does not apply to --hist (the rows are the histogram's buckets)`);
  }
  try {
    checkHeatMapOptions({ ...DEFAULT_HEATMAP_OPTIONS, ...opts });
    const input = new HistJsonInput();
    await readInputs(
      files,
      (chunk) => input.bytes(chunk),
      () => input.end(),
    );
    const name = map === undefined || map.startsWith('@') ? map : `@${map}`;
    const hist = input.heatMap(name, opts.unitsLabel ?? '');
    if (opts.maxCol !== undefined) hist.columns = hist.columns.slice(0, opts.maxCol + 1);
    const { bytes } = renderHistHeatMap(hist, opts);
    await writeOutDirect(bytes);
  } catch (err) {
    if (err instanceof HeatMapError) throw new BpfscopeError(`${NAME}: ${err.message}`);
    throw err;
  }
  return 0;
}
