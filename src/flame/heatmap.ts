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

/** Bad input or options: `message` is one sentence for the user. */
export class HeatMapError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HeatMapError';
  }
}

const MIN_WIDTH = 500;
/** Events per storage block of HeatMapInput. */
const BLOCK_EVENTS = 1 << 16;
const XPAD = 10;

/**
 * Collects events from lines as they arrive (a pipe can feed it). Times are kept relative to the first event, exactly
 * when both are integers (nanosecond epochs exceed 2^53), latencies as numbers.
 */
export class HeatMapInput {
  /** Events so far. */
  count = 0;
  /**
   * The events in blocks of BLOCK_EVENTS (time offset, latency) pairs: full blocks, then `block`, filled up to
   * `fill` pairs. Blocks, not one array that doubles: no copying, and no array twice the data while it grows.
   */
  private readonly blocks: Float64Array[] = [];
  private block = new Float64Array(2 * BLOCK_EVENTS);
  private fill = 0;
  private lineNo = 0;
  private start: number | undefined;
  private startText = '';
  private startDigits = false;
  private sawLine = false;
  /** Largest time offset from the first event (for the column limit). */
  maxRel = 0;
  /** Largest latency (0 when none is positive) and its text as written (the grid prints it). */
  largestLatency = 0;
  largestLatencyText = '0';

  private carry: Uint8Array | null = null;
  /** scanPlain's in/out state (ST_* slots): doubles only, so its representation never changes. */
  private readonly scanState = new Float64Array(3);
  /** Calls of scanPlain so far (the first ones get a small quota of lines). */
  private scans = 0;
  private readonly decoder = new TextDecoder('utf-8');

  /**
   * Takes raw input (UTF-8 text) as it arrives, in pieces of any size; call `end()` after each file. Lines of plain
   * "DIGITS DIGITS" are parsed from the bytes; anything else goes through `line()`.
   */
  bytes(chunk: Uint8Array): void {
    let pos = 0;
    const n = chunk.length;
    if (this.carry) {
      const nl = chunk.indexOf(10);
      if (nl < 0) {
        this.carry = concat(this.carry, chunk);
        return;
      }
      const joined = concat(this.carry, chunk.subarray(0, nl));
      this.carry = null;
      this.slowLine(joined, 0, joined.length);
      pos = nl + 1;
    }
    if (this.lineNo === 0 && pos < n) {
      // The first line (maybe a header) takes the general path.
      const nl = chunk.indexOf(10, pos);
      if (nl < 0) {
        this.carry = Uint8Array.prototype.slice.call(chunk, pos); // a copy (Buffer#slice is a view)
        return;
      }
      this.slowLine(chunk, pos, nl);
      pos = nl + 1;
    }
    // Plain "DIGITS DIGITS[ anything]" lines go through scanPlain (a small function of its own, so V8 optimizes it
    // once: state kept here in fields changed representation inside the loop and made V8 recompile it 4-5 times);
    // any other line goes to line().
    const st = this.scanState;
    // Only whole lines: every scan stops at their "\n", so no read goes past the chunk.
    const limit = chunk.lastIndexOf(10) + 1;
    while (pos < limit) {
      // The first event's time when it is a plain integer of at most 15 digits (else every line goes to line()).
      if (this.start !== undefined && this.startText.length <= 15) {
        if (this.fill === BLOCK_EVENTS) {
          this.blocks.push(this.block);
          this.block = new Float64Array(2 * BLOCK_EVENTS);
          this.fill = 0;
        }
        st[ST_FILL] = this.fill;
        st[ST_MAXREL] = this.maxRel;
        st[ST_LARGEST] = this.largestLatency;
        // The first calls take a few lines each: they run in the interpreter and record type feedback for every
        // statement, the function's exit included, before V8 optimizes it (an optimized loop whose exit had never
        // run was thrown away at its first return and compiled again, ~10 ms of compiling each time).
        const quota = this.scans < 32 ? 64 : 4096;
        this.scans++;
        const at = scanPlain(chunk, pos, limit, this.start, this.block, st, quota);
        const added = st[ST_FILL]! - this.fill;
        this.fill += added;
        this.count += added;
        this.lineNo += added;
        this.maxRel = st[ST_MAXREL]!;
        if (st[ST_LARGEST]! > this.largestLatency) {
          this.largestLatency = st[ST_LARGEST]!;
          // A plain integer of at most 15 digits, no leading zero: its text is String() of its value.
          this.largestLatencyText = String(this.largestLatency);
        }
        // Stopped before the limit at a line of another form, or after its quota of lines (the same line then
        // still parses as plain: go on).
        if (at > pos || pos >= limit) {
          pos = at;
          continue;
        }
      }
      const nl = chunk.indexOf(10, pos);
      this.slowLine(chunk, pos, nl);
      pos = nl + 1;
    }
    if (pos < n) this.carry = Uint8Array.prototype.slice.call(chunk, pos); // a copy (Buffer#slice is a view)
  }

  private slowLine(b: Uint8Array, s: number, e: number): void {
    this.line(this.decoder.decode(b.subarray(s, e)));
  }

  /** End of one input: a last line without "\n" counts. */
  end(): void {
    if (this.carry) {
      const c = this.carry;
      this.carry = null;
      this.slowLine(c, 0, c.length);
    }
  }

  private push(rel: number, latency: number): void {
    if (this.fill === BLOCK_EVENTS) {
      this.blocks.push(this.block);
      this.block = new Float64Array(2 * BLOCK_EVENTS);
      this.fill = 0;
    }
    this.block[2 * this.fill] = rel;
    this.block[2 * this.fill + 1] = latency;
    this.fill++;
    this.count++;
  }

  /** Takes one line (without "\n"): `text.slice(start, end)`. */
  line(text: string, start = 0, end = text.length): void {
    const n = ++this.lineNo;
    // Fields as Perl's split ' ': runs of whitespace separate, leading whitespace ignored.
    let i = start;
    while (i < end && isSpace(text.charCodeAt(i))) i++;
    const t0 = i;
    while (i < end && !isSpace(text.charCodeAt(i))) i++;
    const t1 = i;
    while (i < end && isSpace(text.charCodeAt(i))) i++;
    const l0 = i;
    while (i < end && !isSpace(text.charCodeAt(i))) i++;
    const l1 = i;
    if (n === 1 && hasLetter(text, start, end)) return; // header
    const first = !this.sawLine;
    this.sawLine = true;
    if (l0 === l1) {
      // Fewer than two fields: skipped, as the Perl script does, unless it is a word (a message in the stream).
      if (t0 < t1 && parseDecimal(text, t0, t1) === undefined) this.notNumbers(text, start, end, n);
      if (first && t0 < t1) this.setStart(text, t0, t1);
      return;
    }
    const time = parseDecimal(text, t0, t1);
    const latency = parseDecimal(text, l0, l1);
    if (time === undefined || latency === undefined) this.notNumbers(text, start, end, n);
    if (this.start === undefined) this.setStart(text, t0, t1);
    let rel = time! - this.start!;
    if ((t1 - t0 > 15 || this.startText.length > 15) && this.startDigits && isDigits(text, t0, t1)) {
      // Integers past 2^53 (nanosecond epochs): the difference exactly, as Perl's integer subtraction.
      rel = Number(BigInt(text.slice(t0, t1)) - BigInt(this.startText));
    }
    if (latency! > this.largestLatency) {
      this.largestLatency = latency!;
      this.largestLatencyText = text.slice(l0, l1);
    }
    if (rel > this.maxRel) this.maxRel = rel;
    this.push(rel, latency!);
  }

  private setStart(text: string, t0: number, t1: number): void {
    this.start = parseDecimal(text, t0, t1);
    this.startText = text.slice(t0, t1);
    this.startDigits = isDigits(text, t0, t1);
  }

  private notNumbers(text: string, start: number, end: number, n: number): never {
    let shown = text.slice(start, end);
    if (shown.length > 60) shown = `${shown.slice(0, 57)}...`;
    throw new HeatMapError(`line ${n} is not "TIME LATENCY" (two numbers): ${JSON.stringify(shown)}`);
  }

  /** Time offsets from the first event, in the input's time unit (a copy). */
  times(): Float64Array {
    return this.column(0);
  }

  /** Latencies (a copy). */
  latencies(): Float64Array {
    return this.column(1);
  }

  private column(k: number): Float64Array {
    const out = new Float64Array(this.count);
    let at = 0;
    this.forEachBlock((b, n) => {
      for (let i = 0; i < n; i++) out[at++] = b[2 * i + k]!;
    });
    return out;
  }

  /** Calls `f` with each block of (time offset, latency) pairs and the number of pairs in it, in input order. */
  forEachBlock(f: (pairs: Float64Array, n: number) => void): void {
    for (const [b, n] of this.blockList()) f(b, n);
  }

  /** Each block of (time offset, latency) pairs with the number of pairs in it, in input order. */
  blockList(): [Float64Array, number][] {
    const list: [Float64Array, number][] = this.blocks.map((b) => [b, BLOCK_EVENTS]);
    // `| 0`: the field may hold the count as a double, which would make optimized loops over `n` start again.
    if (this.fill > 0) list.push([this.block, this.fill | 0]);
    return list;
  }

  /** The line number an event came from is not kept; lines read so far. */
  get lines(): number {
    return this.lineNo;
  }
}

/** Slots of scanPlain's state array. */
const ST_FILL = 0;
const ST_MAXREL = 1;
const ST_LARGEST = 2;

/**
 * Parses lines of plain "DIGITS DIGITS[ anything]" (each number at most 15 digits, no leading zero; blanks or tabs
 * between; further fields ignored; "\r\n" accepted) from `b[pos, limit)` (`limit` just after a "\n") into `block`
 * as (time - start, latency) pairs from pair `st[ST_FILL]` on, keeping `st[ST_MAXREL]` (largest time offset) and
 * `st[ST_LARGEST]` (largest latency) up to date. Stops at `limit`, after `quota` lines, when the block is full, or at
 * the start of a line of any other form; returns where it stopped (always a line start).
 */
function scanPlain(
  b: Uint8Array,
  pos: number,
  limit: number,
  start: number,
  block: Float64Array,
  st: Float64Array,
  quota: number,
): number {
  // Slot numbers and the block size as literals: module constants would be context loads with a hole check here.
  let fill = st[0]! | 0;
  let maxRel = st[1]!;
  let largest = st[2]!;
  // At most `quota` lines a call: the first calls return while still interpreted, so every statement has type
  // feedback when V8 optimizes it (an on-stack replacement in a long first call deoptimized at its end).
  const stop = Math.min(fill + quota, 65536);
  while (pos < limit && fill < stop) {
    let i = pos;
    let c = b[i]!;
    while (c === 32 || c === 9) c = b[++i]!;
    const t0 = i;
    let time = 0;
    while (c >= 48 && c <= 57) {
      time = time * 10 + (c - 48);
      c = b[++i]!;
    }
    const tl = i - t0;
    if (tl === 0 || tl > 15 || (tl > 1 && b[t0] === 48) || (c !== 32 && c !== 9)) break;
    while (c === 32 || c === 9) c = b[++i]!;
    const l0 = i;
    let latency = 0;
    while (c >= 48 && c <= 57) {
      latency = latency * 10 + (c - 48);
      c = b[++i]!;
    }
    const ll = i - l0;
    if (ll === 0 || ll > 15 || (ll > 1 && b[l0] === 48)) break;
    if (c !== 10) {
      if (c === 13 && b[i + 1] === 10) i++;
      else if (c === 32 || c === 9 || c === 13)
        i = b.indexOf(10, i); // further fields are ignored
      else break;
    }
    // i is at the newline.
    const r = time - start;
    // Math.max, not `>`: a comparison's feedback says "small integers" while offsets are below 2^30 (18 minutes in
    // microseconds), and optimized code speculating so was thrown away when a larger one came.
    maxRel = Math.max(maxRel, r);
    largest = Math.max(largest, latency);
    block[2 * fill] = r;
    block[2 * fill + 1] = latency;
    fill++;
    pos = i + 1;
  }
  st[0] = fill;
  st[1] = maxRel;
  st[2] = largest;
  return pos;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const r = new Uint8Array(a.length + b.length);
  r.set(a);
  r.set(b, a.length);
  return r;
}

function isSpace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13);
}

function hasLetter(s: string, a: number, b: number): boolean {
  for (let i = a; i < b; i++) {
    const c = s.charCodeAt(i) | 32;
    if (c >= 97 && c <= 122) return true;
  }
  return false;
}

function isDigits(s: string, a: number, b: number): boolean {
  for (let i = a; i < b; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

const DECIMAL = /^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/;

/** A decimal number (optionally signed, fraction, exponent) spanning s[a, b), or undefined. */
function parseDecimal(s: string, a: number, b: number): number | undefined {
  if (b - a <= 15) {
    // Fast path: plain digits.
    let v = 0;
    let i = a;
    for (; i < b; i++) {
      const c = s.charCodeAt(i) - 48;
      if (c < 0 || c > 9) break;
      v = v * 10 + c;
    }
    if (i === b && b > a) return v;
  }
  const t = s.slice(a, b);
  return DECIMAL.test(t) ? Number(t) : undefined;
}

/** What `renderHeatMap` drew, besides the SVG text. */
export interface HeatMapResult {
  svg: string;
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
  const o: HeatMapOptions = { ...DEFAULT_HEATMAP_OPTIONS, ...opts };
  checkHeatMapOptions(o);
  if (input.count === 0) throw new HeatMapError('no events in the input (expected "TIME LATENCY" lines)');
  const timeFactor = TIME_UNITS[o.unitsTime]!;
  if (input.maxRel / timeFactor / o.stepSec > MAX_COLUMNS) {
    throw new HeatMapError(`Too many columns (>${MAX_COLUMNS}); try setting --unitstime ?`);
  }
  const minLat = o.minLat;
  const maxLat = o.maxLat || input.largestLatency;
  if (maxLat <= minLat) {
    throw new HeatMapError(
      `no latency above --minlat (${perlNum(minLat)}): the largest is ${input.largestLatencyText}`,
    );
  }
  const stepLat = o.stepLat || Math.trunc((maxLat - minLat) / o.rows);
  if (stepLat === 0) throw new HeatMapError('Row resolution too high');
  const largestRow = Math.trunc((maxLat - minLat) / stepLat);
  if (largestRow > MAX_ROWS) throw new HeatMapError(`Too many rows (>${MAX_ROWS}); try a larger --steplat`);

  // Counting: dense, column-major with a stride of largestRow + 1 (latency == maxLat lands in row largestRow).
  const stride = largestRow + 1;
  let maxColumns = Math.trunc(input.maxRel / timeFactor / o.stepSec) + 1;
  if (o.maxCol !== undefined && o.maxCol + 1 < maxColumns) maxColumns = o.maxCol + 1;
  const counts = new Uint32Array(maxColumns * stride);
  const { largestCol, largestCount } = countCells(input, counts, stride, {
    minLat,
    maxLat,
    stepLat,
    divisor: timeFactor,
    stepSec: o.stepSec,
    maxCol: o.maxCol ?? Infinity,
    unit: o.unitsTime,
  });
  const drawnRows = o.drawAll ? largestRow + 1 : largestRow;
  const rangeLabels: string[] = [];
  for (let l = 0; l < drawnRows; l++) {
    rangeLabels.push(`${perlNum(minLat + l * stepLat)}-${perlNum(minLat + (l + 1) * stepLat)}${o.unitsLabel}`);
  }
  const svg = drawHeatMap(o, {
    counts,
    stride,
    columns: o.drawAll ? largestCol + 1 : largestCol,
    rows: drawnRows,
    largestCount,
    rangeLabels,
    firstColumn: 0,
    minLabel: perlNum(minLat) + o.unitsLabel,
    maxLabel: (o.maxLat ? perlNum(o.maxLat) : input.largestLatencyText) + o.unitsLabel,
  });
  return { svg: svg.text, columns: largestCol + 1, rows: largestRow + 1, cells: svg.cells, largestCount };
}

/** What {@link drawHeatMap} draws: a grid of counts and its labels. */
interface HeatMapGrid {
  /** Column-major counts, `stride` rows a column. */
  counts: Uint32Array | Float64Array;
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
function drawHeatMap(o: HeatMapOptions, g: HeatMapGrid): { text: string; cells: number } {
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

  const out: string[] = [];
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
  const cells = drawCells(out, g, rowY, rangeLabels, cFixed(box, 1), box, stepSec);
  if (o.grid) {
    const labelColor = 'rgb(60,60,60)';
    text(labelColor, fs, XPAD + 5, ybot - fs + 4, escapeText(g.minLabel));
    text(labelColor, fs, XPAD + 5, ytop + fs + 4, escapeText(g.maxLabel));
  }
  out.push('</svg>\n');
  return { text: out.join(''), cells };
}

/**
 * Appends the cells of columns [0, g.columns) and rows [0, g.rows) with a non-zero count to `out`, as rect() would
 * print them with their hover; returns how many. A function of its own: V8 optimizes this loop alone, not all of
 * drawHeatMap (whose compilation took ~18 ms).
 */
function drawCells(
  out: string[],
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
  const colors = new Map<number, string>();
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
    const head = `<rect x="${xs1}" y="`;
    const mid = `" width="${w}" height="${heightText}" fill="`;
    const t = first + s;
    let tr = perlNum(t * stepSec);
    if (stepSec > 1) tr += `-${perlNum(t * stepSec - 1 + stepSec)}`;
    const hover = `" onmouseover="s(${jsString(tr)},`;
    for (let l = 0; l < largestRow; l++) {
      const c = counts[base + l]!;
      if (c === 0) continue;
      acc += c;
      let color = colors.get(c);
      if (color === undefined) {
        color = cellColor(c / largestCount);
        colors.set(c, color);
      }
      out.push(`${head}${rowY[l]}${mid}${color}${hover}${rangeLabels[l]},${c},${acc},${total})" onmouseout="c()" />\n`);
      cells++;
    }
  }
  return cells;
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
  return { svg: svg.text, columns: nCols, rows: nRows, cells: svg.cells, largestCount };
}

/** Counts events into `counts` (column-major, `stride` rows a column); the largest column and cell count. */
function countCells(
  input: HeatMapInput,
  counts: Uint32Array,
  stride: number,
  o: {
    minLat: number;
    maxLat: number;
    stepLat: number;
    divisor: number;
    stepSec: number;
    maxCol: number;
    unit: string;
  },
): { largestCol: number; largestCount: number } {
  const { minLat, maxLat, stepLat, divisor, stepSec, maxCol } = o;
  // [largest column, largest count, index of an event before the first line's time or -1]: countSlice's results.
  const st = new Float64Array(3);
  st[2] = -1;
  // countSlice takes at most 4096 events a call, the first calls 64: they run in the interpreter and record type
  // feedback for the whole function, its exit included, before V8 optimizes it (a loop optimized while its exit
  // had never run was thrown away at the end of the first block and compiled again).
  let calls = 0;
  const blocks = input.blockList();
  for (let b = 0; b < blocks.length; b++) {
    const [pairs, n] = blocks[b]!;
    for (let from = 0; from < n;) {
      const to = Math.min(n, from + (calls++ < 32 ? 64 : 4096));
      countSlice(pairs, from, to, counts, stride, minLat, maxLat, stepLat, divisor, stepSec, maxCol, st);
      if (st[2]! >= 0) {
        throw new HeatMapError(
          `an event is ${perlNum(-pairs[2 * st[2]!]!)} ${o.unit} before the first line's time: the input must be in time order`,
        );
      }
      from = to;
    }
  }
  return { largestCol: st[0]!, largestCount: st[1]! };
}

/**
 * Counts the events `from` to `to` of a block of (time offset, latency) pairs into `counts` (see countCells);
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
