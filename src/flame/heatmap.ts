/**
 * Latency heat maps: "time latency" events to an interactive SVG, compatible with trace2heatmap.pl (Brendan Gregg's
 * HeatMap, commit c7f5b8f): same options, same geometry, colours and hover text, so a heat map made here matches one
 * made by the Perl script cell for cell.
 *
 * Input (`HeatMapInput`): one event a line, "TIME LATENCY", whitespace-separated, further fields ignored. TIME is in
 * `unitsTime` (s, ms, us or ns); LATENCY in any unit (`unitsLabel` names it). A first line holding a letter is a
 * header and is skipped; lines with fewer than two fields are skipped; a line whose first two fields are not
 * decimal numbers is an error (the Perl script would silently count it as time 0).
 *
 * Layout (as trace2heatmap.pl): column = int((time - the first event's time) / time factor / stepSec), row =
 * int((latency - minLat) / stepLat) with stepLat = int((maxLat - minLat) / rows) unless given, and maxLat the largest
 * latency unless given. Latencies outside [minLat, maxLat] and columns past maxCol are left out. The largest column
 * and the top row are counted but not drawn (the Perl script's loops stop before them; kept for compatibility).
 * A cell's colour is rgb(255, 240 - 240r, 220 - 220r), r = its count / the largest count; empty cells are not drawn.
 * Errors are `HeatMapError`s with one sentence (the Perl script's wording where it has one).
 */
import { escapeAttr, escapeText } from './svg/document.js';
import { cFixed, perlNum } from './perl.js';
import { HeatMapError, HeatMapInput, type HeatMapSink, type PlainCounting } from './heatmap-input.js';
import { type CountLayout, PlainScanner } from './heatmap-scan.js';
import { writeCells } from './heatmap-cells.js';

export { HeatMapError, HeatMapInput, type HeatMapSink, type PlainCounting };

/** Most columns a heat map may have (trace2heatmap.pl's limit). */
export const MAX_COLUMNS = 10000;
/** Most rows a heat map may have (ours: the Perl script has no limit and would draw an image miles high). */
export const MAX_ROWS = 10000;

/** Time units of the first column and their divisor to seconds. */
export const TIME_UNITS: Readonly<Record<string, number>> = { s: 1, ms: 1e3, us: 1e6, ns: 1e9 };

export interface HeatMapOptions {
  /** Heading (default "Latency Heat Map"). */
  title: string;
  /** Unit of the time column: "s" (default), "ms", "us" or "ns". */
  unitsTime: string;
  /** Unit label appended to latency ranges (default none). */
  unitsLabel: string;
  /** Smallest latency included (default 0). */
  minLat: number;
  /** Largest latency included (default, or 0: the largest in the input). */
  maxLat?: number;
  /** Number of latency rows (default 50); ignored when `stepLat` is given. */
  rows: number;
  /** Latency per row (default: int((maxLat - minLat) / rows)); must be positive. */
  stepLat?: number;
  /** Seconds per column (default 1; fractions allowed). */
  stepSec: number;
  /** Last column counted (columns after it are left out). */
  maxCol?: number;
  /** Cell width and height in pixels (default 8). */
  boxSize: number;
  /** Font family (default "Verdana"). */
  fontType: string;
  /** Font size in pixels (default 12). */
  fontSize: number;
  /** Hover text adds the accumulated count and percentage of the column below the cell. */
  accStats: boolean;
  /** Grid lines every 10 columns, with time labels and the minLat/maxLat labels. */
  grid: boolean;
  /**
   * Also draw the largest column and the top row (trace2heatmap.pl counts them but does not draw them; the tools'
   * `--heatmap` draws every event). Not a trace2heatmap.pl option.
   */
  drawAll?: boolean;
}

export const DEFAULT_HEATMAP_OPTIONS: HeatMapOptions = {
  title: 'Latency Heat Map',
  unitsTime: 's',
  unitsLabel: '',
  minLat: 0,
  rows: 50,
  stepSec: 1,
  boxSize: 8,
  fontType: 'Verdana',
  fontSize: 12,
  accStats: false,
  grid: false,
};

const MIN_WIDTH = 500;
const XPAD = 10;

/** What `renderHeatMap` drew, besides the SVG text. */
export interface HeatMapResult {
  /** The SVG document (made from `bytes` when first read). */
  readonly svg: string;
  /** The SVG document as UTF-8 bytes (what the heat map command writes). */
  bytes: Uint8Array;
  /** Columns and rows of the map (the largest of each is not drawn). */
  columns: number;
  rows: number;
  /** Cells drawn, and the largest count of any cell. */
  cells: number;
  largestCount: number;
}

/** Checks option values that would make no picture; throws HeatMapError. */
export function checkHeatMapOptions(o: HeatMapOptions): void {
  if (!(o.unitsTime in TIME_UNITS)) {
    throw new HeatMapError(`Can't parse time units "${o.unitsTime}". Try "ms" etc.`);
  }
  if (o.stepLat !== undefined && o.stepLat <= 0) throw new HeatMapError('--steplat must be a positive number');
  if (!(o.rows > 0)) throw new HeatMapError('--rows must be a positive number');
  if (!(o.stepSec > 0)) throw new HeatMapError('--stepsec must be a positive number');
  if (!(o.boxSize > 0)) throw new HeatMapError('--boxsize must be a positive number');
  if (!(o.fontSize > 0)) throw new HeatMapError('--fontsize must be a positive number');
  if (o.maxCol !== undefined && o.maxCol < 0) throw new HeatMapError('--maxcol must not be negative');
  if (o.maxLat !== undefined && o.maxLat !== 0 && o.maxLat <= o.minLat) {
    throw new HeatMapError('--maxlat must be larger than --minlat');
  }
}

/** The heat map of `input` as an SVG document. Throws HeatMapError for no events or impossible dimensions. */
export function renderHeatMap(input: HeatMapInput, opts: Partial<HeatMapOptions> = {}): HeatMapResult {
  const counter = new HeatMapCounter(input, opts);
  for (const [pairs, n] of input.blockList()) counter.add(pairs, 0, n);
  return counter.render();
}

/** What a heat map's layout depends on: HeatMapInput's totals (of all the events, before any is counted). */
export type HeatMapTotals = Pick<HeatMapInput, 'count' | 'maxRel' | 'largestLatency' | 'largestLatencyText'>;

/**
 * A heat map's cell counts, with the layout fixed from the totals of the events before they are counted: so a file
 * can be read twice, first by a `new HeatMapInput('totals')` (for the totals), then by a `new HeatMapInput(counter)`
 * (the heat map command does this for regular files: no event is stored, and plain lines are counted in
 * WebAssembly as they are parsed, heatmap-scan.ts). The second pass must then see the same events as the first;
 * `render()` draws the map. The counts live in the memory of the counter's own WebAssembly instance.
 */
export class HeatMapCounter implements PlainCounting {
  private readonly o: HeatMapOptions;
  private readonly timeFactor: number;
  private readonly minLat: number;
  private readonly maxLat: number;
  private readonly stepLat: number;
  private readonly largestRow: number;
  private readonly stride: number;
  /** Holds the counts (column-major, `stride` rows a column) and counts plain lines (PlainCounting). */
  readonly scanner: PlainScanner;
  private readonly layout: CountLayout;
  /** [largest column, largest count, index of an event before the first line's time or -1]: countSlice's results. */
  private readonly st = new Float64Array(3);
  private calls = 0;
  /** Events seen so far, counted or left out (passed to `add` or counted by the scanner's `count`). */
  added = 0;

  /**
   * `scanner`: the WebAssembly instance to keep the counts in and count with (one the first pass read into, so that
   * both passes use the same memory; it must have no counts yet); by default a new one. Throws HeatMapError for bad
   * options, no events or impossible dimensions.
   */
  constructor(
    private readonly totals: HeatMapTotals,
    opts: Partial<HeatMapOptions> = {},
    scanner?: PlainScanner,
  ) {
    const o: HeatMapOptions = { ...DEFAULT_HEATMAP_OPTIONS, ...opts };
    this.o = o;
    checkHeatMapOptions(o);
    if (totals.count === 0) throw new HeatMapError('no events in the input (expected "TIME LATENCY" lines)');
    const timeFactor = TIME_UNITS[o.unitsTime]!;
    this.timeFactor = timeFactor;
    if (totals.maxRel / timeFactor / o.stepSec > MAX_COLUMNS) {
      throw new HeatMapError(`Too many columns (>${MAX_COLUMNS}); try setting --unitstime ?`);
    }
    const minLat = o.minLat;
    const maxLat = o.maxLat || totals.largestLatency;
    if (maxLat <= minLat) {
      throw new HeatMapError(
        `no latency above --minlat (${perlNum(minLat)}): the largest is ${totals.largestLatencyText}`,
      );
    }
    const stepLat = o.stepLat || Math.trunc((maxLat - minLat) / o.rows);
    if (stepLat === 0) throw new HeatMapError('Row resolution too high');
    const largestRow = Math.trunc((maxLat - minLat) / stepLat);
    if (largestRow > MAX_ROWS) throw new HeatMapError(`Too many rows (>${MAX_ROWS}); try a larger --steplat`);
    this.minLat = minLat;
    this.maxLat = maxLat;
    this.stepLat = stepLat;
    this.largestRow = largestRow;
    // Counting: dense, column-major with a stride of largestRow + 1 (latency == maxLat lands in row largestRow).
    this.stride = largestRow + 1;
    let maxColumns = Math.trunc(totals.maxRel / timeFactor / o.stepSec) + 1;
    if (o.maxCol !== undefined && o.maxCol + 1 < maxColumns) maxColumns = o.maxCol + 1;
    this.scanner = scanner ?? new PlainScanner();
    this.scanner.reserveCounts(maxColumns * this.stride);
    this.layout = {
      minLat,
      maxLat,
      stepLat,
      divisor: timeFactor,
      stepSec: o.stepSec,
      maxCol: o.maxCol ?? Infinity,
      stride: this.stride,
    };
    this.st[2] = -1;
  }

  /** PlainCounting: before the scanner's `count` runs. */
  beforeCount(): void {
    this.scanner.setCount(this.layout, this.st[0]!, this.st[1]!);
  }

  /** PlainCounting: after the scanner's `count` ran; throws HeatMapError as `add`. */
  afterCount(): void {
    const s = this.scanner;
    this.st[0] = s.largestCol;
    this.st[1] = s.largestCount;
    const badRel = s.badRel;
    if (badRel !== undefined) this.early(badRel);
    this.added += s.added;
  }

  private early(rel: number): never {
    throw new HeatMapError(
      `an event is ${perlNum(-rel)} ${this.o.unitsTime} before the first line's time: the input must be in time order`,
    );
  }

  /**
   * Counts the events `from` to `to` of `pairs` ((time offset, latency) pairs). Throws HeatMapError for an event
   * before the first line's time.
   */
  add(pairs: Float64Array, from: number, to: number): void {
    const { o, st } = this;
    this.added += to - from;
    const counts = this.scanner.counts();
    // countSlice takes at most 4096 events a call, the first calls 64: they run in the interpreter and record type
    // feedback for the whole function, its exit included, before V8 optimizes it (a loop optimized while its exit
    // had never run was thrown away at the end of the first block and compiled again).
    for (let at = from; at < to;) {
      const end = Math.min(to, at + (this.calls++ < 32 ? 64 : 4096));
      countSlice(
        pairs,
        at,
        end,
        counts,
        this.stride,
        this.minLat,
        this.maxLat,
        this.stepLat,
        this.timeFactor,
        o.stepSec,
        o.maxCol ?? Infinity,
        st,
      );
      if (st[2]! >= 0) this.early(pairs[2 * st[2]!]!);
      at = end;
    }
  }

  /** The heat map of the events counted so far. */
  render(): HeatMapResult {
    const { o, minLat, stepLat, largestRow } = this;
    const largestCol = this.st[0]!;
    const largestCount = this.st[1]!;
    const drawnRows = o.drawAll ? largestRow + 1 : largestRow;
    const rangeLabels: string[] = [];
    for (let l = 0; l < drawnRows; l++) {
      rangeLabels.push(`${perlNum(minLat + l * stepLat)}-${perlNum(minLat + (l + 1) * stepLat)}${o.unitsLabel}`);
    }
    const svg = drawHeatMap(o, {
      counts: this.scanner.counts(),
      scanner: this.scanner,
      stride: this.stride,
      columns: o.drawAll ? largestCol + 1 : largestCol,
      rows: drawnRows,
      largestCount,
      rangeLabels,
      firstColumn: 0,
      minLabel: perlNum(minLat) + o.unitsLabel,
      maxLabel: (o.maxLat ? perlNum(o.maxLat) : this.totals.largestLatencyText) + o.unitsLabel,
    });
    return result(svg, largestCol + 1, largestRow + 1, largestCount);
  }
}

/** What {@link drawHeatMap} draws: a grid of counts and its labels. */
interface HeatMapGrid {
  /** Column-major counts, `stride` rows a column. */
  counts: Uint32Array | Float64Array;
  /** The instance whose memory `counts` is (its `counts()`): heatmap-cells.ts then writes the cells there. */
  scanner?: PlainScanner;
  stride: number;
  /** Columns and rows drawn (from column 0 and row 0, bottom up). */
  columns: number;
  rows: number;
  /** The count that gets the full colour. */
  largestCount: number;
  /** Each drawn row's range text for the hover (the unit included). */
  rangeLabels: string[];
  /** The index of column 0 in time steps (the hover and grid times count from it). */
  firstColumn: number;
  /** The grid's bottom and top latency labels (the unit included). */
  minLabel: string;
  maxLabel: string;
}

/**
 * The SVG of a heat map grid with trace2heatmap.pl's geometry, colours, texts and hover script (see the module
 * comment); options as {@link renderHeatMap}'s (`stepSec`: seconds per column, for the time labels).
 */
function drawHeatMap(o: HeatMapOptions, g: HeatMapGrid): { bytes: Uint8Array; cells: number } {
  const largestCol = g.columns;
  const largestRow = g.rows;
  const stepSec = o.stepSec;
  const fs = o.fontSize;
  const box = o.boxSize;
  const ypad1 = fs * 3;
  let ypad2 = fs * 4.5;
  if (o.grid) ypad2 += fs * 1.2;
  let width = largestCol * box + XPAD * 2;
  if (width < MIN_WIDTH) width = MIN_WIDTH;
  const height = largestRow * box + ypad1 + ypad2;

  let out = new ByteOut();
  out.push(
    '<?xml version="1.0" standalone="no"?>\n',
    '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n',
    `<svg version="1.1" width="${perlNum(width)}" height="${perlNum(height)}" onload="init(evt)" viewBox="0 0 ${perlNum(width)} ${perlNum(height)}" xmlns="http://www.w3.org/2000/svg" >\n`,
    '<!-- Latency heat map made by bpfscope heatmap (trace2heatmap.pl-compatible). Hover a cell for its counts. -->\n',
    '<style type="text/css">\n\trect[onmouseover]:hover { stroke:black; stroke-width:0.5; }\n</style>\n',
    `<script type="text/ecmascript">\n<![CDATA[\n${heatMapScript(o.accStats)}]]>\n</script>\n`,
  );
  const white = 'rgb(255,255,255)';
  const black = 'rgb(0,0,0)';
  const font = escapeAttr(o.fontType);
  const text = (color: string, size: number, x: number, y: number, str: string, anchor = 'left', extra = ''): void => {
    out.push(
      `<text text-anchor="${anchor}" x="${perlNum(x)}" y="${perlNum(y)}" font-size="${perlNum(size)}" font-family="${font}" fill="${color}" ${extra} >${str}</text>\n`,
    );
  };
  const line = (x1: number, y1: number, x2: number, y2: number): void => {
    out.push(
      `<line x1="${perlNum(x1)}" y1="${perlNum(y1)}" x2="${perlNum(x2)}" y2="${perlNum(y2)}" stroke="rgb(230,230,230)" stroke-width="1" />\n`,
    );
  };
  out.push(rect(0, 0, width, height, white, 'id="bkg"'));
  text(black, fs + 5, Math.trunc(width / 2), fs * 2, escapeText(o.title), 'middle');
  text(black, fs, Math.trunc(width / 2), height - fs - 1, 'Time');
  text(black, fs, XPAD, height - 2.5 * fs, ' ', '', 'id="details"');

  let ytop = 0;
  let ybot = 0;
  const first = g.firstColumn;
  if (o.grid) {
    ytop = height - (ypad2 + largestRow * box - box);
    ybot = height - ypad2 + box;
    line(XPAD, ybot, XPAD + largestCol * box, ybot);
    line(XPAD, ytop, XPAD + largestCol * box, ytop);
    for (let s = 0; s < largestCol; s += 10) {
      const x = XPAD + s * box;
      line(x, ybot, x, ytop);
      text('rgb(190,190,190)', fs, x, ybot + fs, `${perlNum((first + s) * stepSec)}s`);
    }
  }

  // The hover's JavaScript string quoting of the row labels, computed once; so are each row's y, each column's x and
  // width, and each count's colour: a cell is then a join of ready pieces (as rect() would print it).
  const rangeLabels = g.rangeLabels.map(jsString);
  const rowY: string[] = [];
  for (let l = 0; l < largestRow; l++) rowY.push(perlNum(height - (ypad2 + l * box)));
  const head = out.bytes();
  let cells = 0;
  if (g.scanner) out = new ByteOut(1 << 12);
  else cells = drawCells(out, g, rowY, rangeLabels, cFixed(box, 1), box, stepSec);
  if (o.grid) {
    const labelColor = 'rgb(60,60,60)';
    text(labelColor, fs, XPAD + 5, ybot - fs + 4, escapeText(g.minLabel));
    text(labelColor, fs, XPAD + 5, ytop + fs + 4, escapeText(g.maxLabel));
  }
  out.push('</svg>\n');
  if (!g.scanner) return { bytes: out.bytes(), cells };
  const grid = {
    countsBase: g.counts.byteOffset,
    stride: g.stride,
    columns: largestCol,
    rows: largestRow,
    largestCount: g.largestCount,
    rowY,
    rangeLabels,
    heightText: cFixed(box, 1),
    // As drawCells's pieces; the time label needs no escaping (perlNum prints digits, ".", "-", "+", "e").
    columnPieces: (s: number): [string, string, string] => {
      const x1 = XPAD + s * box;
      const xs1 = cFixed(x1, 1);
      const t = first + s;
      let tr = perlNum(t * stepSec);
      if (stepSec > 1) tr += `-${perlNum(t * stepSec - 1 + stepSec)}`;
      return [xs1, cFixed(Number(cFixed(x1 + box, 1)) - Number(xs1), 1), `'${tr}'`];
    },
  };
  return writeCells(g.scanner, grid, head, out.bytes());
}

/**
 * Appends the cells of columns [0, g.columns) and rows [0, g.rows) with a non-zero count to `out`, as rect() would
 * print them with their hover; returns how many. Each cell is copied from ready pieces (per column, row and count)
 * into `out`'s bytes: no string per cell (5,127 cells of ~140 bytes on the bench trace: the strings and the young
 * generation collections they caused took ~25-35 ms of a ~230 ms run). A function of its own: V8 optimizes this
 * loop alone, not all of drawHeatMap (whose compilation took ~18 ms).
 */
function drawCells(
  out: ByteOut,
  g: HeatMapGrid,
  rowY: string[],
  rangeLabels: string[],
  heightText: string,
  box: number,
  stepSec: number,
): number {
  const { counts, stride, largestCount } = g;
  const largestCol = g.columns;
  const largestRow = g.rows;
  const first = g.firstColumn;
  const colors = new Map<number, Uint8Array>();
  // Per row: `${rowY}` and `${rangeLabel},` as bytes.
  const rowYBytes = rowY.map((y) => Buffer.from(y));
  const labelBytes = rangeLabels.map((l) => Buffer.from(`${l},`));
  const tail = Buffer.from(')" onmouseout="c()" />\n');
  let cells = 0;
  for (let s = 0; s < largestCol; s++) {
    const base = s * stride;
    let total = 0;
    for (let l = 0; l < largestRow; l++) total += counts[base + l]!;
    if (total === 0) continue;
    let acc = 0;
    const x1 = XPAD + s * box;
    const xs1 = cFixed(x1, 1);
    const w = cFixed(Number(cFixed(x1 + box, 1)) - Number(xs1), 1);
    const head = Buffer.from(`<rect x="${xs1}" y="`);
    const mid = Buffer.from(`" width="${w}" height="${heightText}" fill="`);
    const t = first + s;
    let tr = perlNum(t * stepSec);
    if (stepSec > 1) tr += `-${perlNum(t * stepSec - 1 + stepSec)}`;
    const hover = Buffer.from(`" onmouseover="s(${jsString(tr)},`);
    const totalBytes = Buffer.from(`,${total}`);
    for (let l = 0; l < largestRow; l++) {
      const c = counts[base + l]!;
      if (c === 0) continue;
      acc += c;
      let color = colors.get(c);
      if (color === undefined) {
        color = Buffer.from(cellColor(c / largestCount));
        colors.set(c, color);
      }
      out.add(head);
      out.add(rowYBytes[l]!);
      out.add(mid);
      out.add(color);
      out.add(hover);
      out.add(labelBytes[l]!);
      out.num(c);
      out.comma();
      out.num(acc);
      out.add(totalBytes);
      out.add(tail);
      cells++;
    }
  }
  return cells;
}

/**
 * The SVG's bytes as they are written: strings (UTF-8), byte pieces and numbers, into one buffer that doubles when
 * full. Its first 1 MiB is reserved, not touched: pages the output does not reach cost nothing.
 */
class ByteOut {
  private buf: Buffer;
  private n = 0;

  /** `size`: the bytes reserved at first. */
  constructor(size = 1 << 20) {
    this.buf = Buffer.allocUnsafeSlow(size);
  }

  private room(more: number): void {
    if (this.n + more <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.n + more) size *= 2;
    const bigger = Buffer.allocUnsafeSlow(size);
    this.buf.copy(bigger, 0, 0, this.n);
    this.buf = bigger;
  }

  /** Strings, as UTF-8. */
  push(...strs: string[]): void {
    for (const s of strs) {
      this.room(3 * s.length);
      this.n += this.buf.write(s, this.n, 'utf8');
    }
  }

  add(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.n);
    this.n += b.length;
  }

  comma(): void {
    this.room(1);
    this.buf[this.n++] = 44;
  }

  /** `${v}`: non-negative integers below 2^53 digit by digit, others through String(). */
  num(v: number): void {
    if (!(v >= 0 && v <= Number.MAX_SAFE_INTEGER && Math.floor(v) === v)) {
      this.push(String(v));
      return;
    }
    this.room(16);
    let digits = 1;
    for (let p = 10; p <= v && digits < 16; p *= 10) digits++;
    const end = this.n + digits;
    for (let i = end - 1; i >= this.n; i--) {
      const q = Math.floor(v / 10);
      this.buf[i] = 48 + v - q * 10;
      v = q;
    }
    this.n = end;
  }

  /** What was written (a view of the buffer). */
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.n);
  }
}

/** A HeatMapResult whose `svg` is decoded from the bytes when first read. */
function result(
  svg: { bytes: Uint8Array; cells: number },
  columns: number,
  rows: number,
  largestCount: number,
): HeatMapResult {
  let text: string | undefined;
  return {
    get svg() {
      text ??= Buffer.from(svg.bytes.buffer, svg.bytes.byteOffset, svg.bytes.length).toString('utf8');
      return text;
    },
    bytes: svg.bytes,
    columns,
    rows,
    cells: svg.cells,
    largestCount,
  };
}

/**
 * Per-interval histograms as a heat map (`--heatmap` of the histogram tools, `bpfscope heatmap --hist`): one
 * column per interval, one row per histogram bucket, bottom up in bucket order. Rows are the buckets themselves, so
 * with log2 buckets the y axis is logarithmic: each row is labelled with its range as the histogram prints it (e.g.
 * `64-127 usecs`), and the hover shows it. Unlike {@link renderHeatMap}, every column and row is drawn. Colours,
 * geometry, texts and hover script are trace2heatmap.pl's (as renderHeatMap's).
 */
export interface HistHeatMap {
  /** Row labels, bottom row first (the unit included, e.g. `64-127 usecs`). */
  rows: string[];
  /** Per column (interval, oldest first), the count of each row (length rows.length). */
  columns: ArrayLike<number>[];
  /** Index of the first column in intervals since the start (columns dropped before it: see the tools' bound). */
  firstColumn?: number;
}

/**
 * The heat map of `map` as an SVG document; `opts.stepSec` is the interval (seconds per column, default 1).
 * Row-related options (minLat, maxLat, rows, stepLat, unitsLabel) do not apply: the rows are the buckets.
 * @throws HeatMapError when there are no rows, no columns, more than MAX_ROWS rows or MAX_COLUMNS columns
 */
export function renderHistHeatMap(map: HistHeatMap, opts: Partial<HeatMapOptions> = {}): HeatMapResult {
  const o: HeatMapOptions = { ...DEFAULT_HEATMAP_OPTIONS, ...opts };
  checkHeatMapOptions(o);
  const nRows = map.rows.length;
  const nCols = map.columns.length;
  if (nRows === 0 || nCols === 0) throw new HeatMapError('no histogram counts to draw');
  if (nRows > MAX_ROWS) throw new HeatMapError(`Too many rows (>${MAX_ROWS})`);
  if (nCols > MAX_COLUMNS) throw new HeatMapError(`Too many columns (>${MAX_COLUMNS})`);
  const counts = new Float64Array(nCols * nRows);
  let largestCount = 0;
  map.columns.forEach((col, s) => {
    if (col.length !== nRows) throw new HeatMapError(`column ${s} has ${col.length} rows, not ${nRows}`);
    for (let l = 0; l < nRows; l++) {
      const c = col[l]!;
      counts[s * nRows + l] = c;
      if (c > largestCount) largestCount = c;
    }
  });
  const svg = drawHeatMap(o, {
    counts,
    stride: nRows,
    columns: nCols,
    rows: nRows,
    largestCount,
    rangeLabels: map.rows,
    firstColumn: map.firstColumn ?? 0,
    minLabel: map.rows[0]!,
    maxLabel: map.rows[nRows - 1]!,
  });
  return result(svg, nCols, nRows, largestCount);
}

/**
 * Counts the events `from` to `to` of a block of (time offset, latency) pairs into `counts` (column-major, `stride`
 * rows a column);
 * keeps st[0] (largest column) and st[1] (largest count) up to date; sets
 * st[2] to the index of an event before the first line's time and stops there. Time offsets are divided by `divisor`
 * (the time unit's) and then by `stepSec`, in that order, as trace2heatmap.pl does (the rounding can differ).
 */
function countSlice(
  pairs: Float64Array,
  from: number,
  to: number,
  counts: Uint32Array,
  stride: number,
  minLat: number,
  maxLat: number,
  stepLat: number,
  divisor: number,
  stepSec: number,
  maxCol: number,
  st: Float64Array,
): void {
  let largestCol = st[0]!;
  let largestCount = st[1]!;
  for (let i = from; i < to; i++) {
    const latency = pairs[2 * i + 1]!;
    if (latency < minLat || latency > maxLat) continue;
    // The column before truncation. Compared as such rather than the time offset: an offset read from a
    // Float64Array is a small integer to V8 until it passes 2^30 (18 minutes in microseconds), where optimized code
    // comparing it as one was thrown away; `t` is a fraction from the second event on. trunc(t) < 0 iff t <= -1.
    const t = pairs[2 * i]! / divisor / stepSec;
    if (t <= -1) {
      st[2] = i;
      break;
    }
    // Columns are at most MAX_COLUMNS + 1 and rows MAX_ROWS + 1 here, so int32 truncation is exact.
    const col = t | 0;
    if (col > maxCol) continue;
    const k = col * stride + (((latency - minLat) / stepLat) | 0);
    const c = ++counts[k]!;
    largestCol = Math.max(largestCol, col);
    largestCount = Math.max(largestCount, c);
  }
  st[0] = largestCol;
  st[1] = largestCount;
}

/** A rectangle as trace2heatmap.pl prints it: x and sizes with one decimal, y as a plain number. */
function rect(x1: number, y1: number, x2: number, y2: number, fill: string, extra: string): string {
  const xs1 = cFixed(x1, 1);
  const xs2 = cFixed(x2, 1);
  const w = cFixed(Number(xs2) - Number(xs1), 1);
  const h = cFixed(y2 - y1, 1);
  return `<rect x="${xs1}" y="${perlNum(y1)}" width="${w}" height="${h}" fill="${fill}" ${extra} />\n`;
}

/** White (ratio 0) to red (ratio 1): rgb(255, 240 - 240r, 220 - 220r), rounded as C's %.0f. */
export function cellColor(ratio: number): string {
  if (ratio === 0) return 'rgb(255,255,255)';
  return `rgb(255,${cFixed(240 - 240 * ratio, 0)},${cFixed(220 - 220 * ratio, 0)})`;
}

/** A JavaScript single-quoted string literal, escaped for an XML attribute. */
function jsString(s: string): string {
  const js = s.replace(/[\\']/g, (c) => `\\${c}`);
  return `'${escapeAttr(js)}'`;
}

/**
 * The hover script: `s(time, range, count, acc, total)` (each cell's onmouseover) writes the cell's description
 * into the "details" text, `c()` clears it. Percentages are floored, computed as count / total * 100.
 */
function heatMapScript(accStats: boolean): string {
  return `var details;
function init(evt) {
	details = document.getElementById("details").firstChild;
}
function percent(part, whole) {
	return Math.floor(part / whole * 100) + "%";
}
function s(time, range, count, acc, total) {
	var parts = ["time " + time + "s", "range " + range, "count: " + count, "colpct: " + percent(count, total)];
	if (${accStats ? 'true' : 'false'}) parts.push("acc: " + acc, "acc pct: " + percent(acc, total));
	details.nodeValue = parts.join(", ");
}
function c() {
	details.nodeValue = " ";
}
`;
}
