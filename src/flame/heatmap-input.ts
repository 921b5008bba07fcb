/**
 * The input side of heat maps (heatmap.ts): "TIME LATENCY" lines parsed straight from bytes into blocks of events,
 * and the error type every heat map step throws. The format and its edge behaviour are described in heatmap.ts.
 */
import { BLOCK_PAIRS, type CountLayout, type PlainScanner, plainScanner } from './heatmap-scan.js';

/** Bad input or options: `message` is one sentence for the user. */
export class HeatMapError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HeatMapError';
  }
}

/** Events per storage block of HeatMapInput (the most the scanner writes in one call). */
const BLOCK_EVENTS = BLOCK_PAIRS;

/**
 * Where a HeatMapInput made with one sends its events instead of storing them: `pairs` holds (time offset, latency)
 * pairs, events `from` to `to` (exclusive) are new. `pairs` is only valid during the call (it is reused).
 */
export type HeatMapSink = (pairs: Float64Array, from: number, to: number) => void;

/**
 * Where a HeatMapInput made with one has its events counted (heatmap.ts's HeatMapCounter): plain lines by the
 * WebAssembly `count` function of `scanner` (the input is copied into its memory, or scanned where it is when it
 * was read there: PlainScanner.inputArea), between `beforeCount()` and
 * `afterCount()` (which throws HeatMapError for an event the counting refuses); other lines' events by `add`.
 */
export interface PlainCounting {
  readonly scanner: PlainScanner;
  beforeCount(): void;
  afterCount(): void;
  add(pairs: Float64Array, from: number, to: number): void;
}

/** No call stops for a full block. */
const NO_STOP = 0x7fffffff;

/**
 * The most input bytes one call of the WebAssembly parser takes. V8 runs a WebAssembly function's first calls in
 * baseline code (Liftoff) while it compiles optimized code in the background, and a call in progress never
 * switches: in calls of 64 KiB rather than 1 MiB, the optimized code takes over after a few calls (measured on the
 * bench trace at load 4-8: the first two 1 MiB calls took ~4-18 ms, the later ones ~1-1.5 ms; in calls of 64 KiB,
 * the second MiB took ~1.4 ms).
 */
const PIECE = 1 << 16;

/** A layout for PlainScanner.count that counts no event (no latency is at least +Infinity). */
const SKIP_ALL: CountLayout = {
  minLat: Infinity,
  maxLat: -Infinity,
  stepLat: 1,
  divisor: 1,
  stepSec: 1,
  maxCol: -1,
  stride: 0,
};

/**
 * Collects events from lines as they arrive (a pipe can feed it). Times are kept relative to the first event, exactly
 * when both are integers (nanosecond epochs exceed 2^53), latencies as numbers. Made with a `sink`, it stores no
 * events (`blockList()` is empty) and hands each batch to the sink instead; `count` and the maxima are kept either
 * way, so a first pass over a file with a sink that does nothing gives what the heat map's layout needs.
 */
export class HeatMapInput {
  /** Events so far. */
  count = 0;
  /**
   * The events in blocks of BLOCK_EVENTS (time offset, latency) pairs: full blocks, then `block`, filled up to
   * `fill` pairs. Blocks, not one array that doubles: no copying, and no array twice the data while it grows.
   */
  private readonly blocks: Float64Array[] = [];
  private block: Float64Array;
  private fill = 0;
  /** With a sink or counting: one event of the general path, handed to it. */
  private readonly one = new Float64Array(2);
  private readonly sink: HeatMapSink | undefined;
  private readonly counting: PlainCounting | undefined;
  /** Nothing stored, nothing handed on (`'totals'`). */
  private readonly totalsOnly: boolean;
  /** The WebAssembly instance that parses plain lines (else the shared one). */
  private readonly scanner: PlainScanner | undefined;
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
  private readonly decoder = new TextDecoder('utf-8');

  /**
   * `to`: where events go instead of being stored (see the class comment): a sink, a PlainCounting, or `'totals'`
   * (nowhere: only the count and the maxima are kept, as with a sink that does nothing, but plain lines are not
   * even turned into pairs).
   */
  constructor(to?: HeatMapSink | PlainCounting | 'totals', scanner?: PlainScanner) {
    this.totalsOnly = to === 'totals';
    this.sink = typeof to === 'function' ? to : undefined;
    this.counting = typeof to === 'object' ? to : undefined;
    this.scanner = this.counting?.scanner ?? scanner;
    // Not storing: no 1 MiB block (fresh memory costs ~4 ms a MiB in page faults on this VM).
    this.block = new Float64Array(to ? 0 : 2 * BLOCK_EVENTS);
  }

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
    // Plain "DIGITS DIGITS[ anything]" lines are parsed by a WebAssembly function (heatmap-scan.ts says why) from a
    // copy of the chunk's whole lines in its memory; any other line goes to line().
    // Only whole lines: every scan stops at their "\n", so no read goes past them.
    const limit = chunk.lastIndexOf(10) + 1;
    let delta = -1; // where chunk[0] would be in the scanner's memory, once the lines are copied there
    while (pos < limit) {
      // The first event's time when it is a plain integer of at most 15 digits (else every line goes to line()).
      if (this.start !== undefined && this.startText.length <= 15) {
        const { counting } = this;
        const s = this.scanner ?? plainScanner();
        if (delta < 0 && chunk.buffer === s.memory.buffer) {
          delta = chunk.byteOffset; // read into the scanner's memory (PlainScanner.inputArea): scanned in place
        } else if (delta < 0) {
          s.load(chunk.subarray(pos, limit));
          delta = s.inBase - pos;
        }
        const storing = !this.sink && !counting && !this.totalsOnly;
        if (this.fill === BLOCK_EVENTS && storing) {
          this.blocks.push(this.block);
          this.block = new Float64Array(2 * BLOCK_EVENTS);
          this.fill = 0;
        }
        s.setMaxima(this.maxRel, this.largestLatency);
        // At most PIECE bytes a call (up to a "\n" in them, if any).
        let end = limit;
        if (limit - pos > PIECE) {
          const nl = chunk.lastIndexOf(10, pos + PIECE - 1);
          if (nl >= pos) end = nl + 1;
        }
        let at: number;
        if (counting) {
          counting.beforeCount();
          at = s.count(pos + delta, end + delta, this.start, 0, NO_STOP) - delta;
          counting.afterCount();
        } else if (this.totalsOnly) {
          // `count` with a layout that leaves every event out: the pass that follows (counting) then runs code
          // V8 has already optimized.
          s.setCount(SKIP_ALL, 0, 0);
          at = s.count(pos + delta, end + delta, this.start, 0, NO_STOP) - delta;
        } else {
          at = s.scan(pos + delta, end + delta, this.start, 0, BLOCK_EVENTS - (storing ? this.fill : 0)) - delta;
        }
        const added = s.added;
        if (this.sink) {
          if (added > 0) this.sink(s.pairs(), 0, added);
        } else if (storing) {
          this.block.set(s.pairs(), 2 * this.fill);
          this.fill += added;
        }
        this.count += added;
        this.lineNo += added;
        this.maxRel = s.maxRel;
        const largest = s.largestLatency;
        if (largest > this.largestLatency) {
          this.largestLatency = largest;
          // A plain integer of at most 15 digits, no leading zero: its text is String() of its value.
          this.largestLatencyText = String(largest);
        }
        // Stopped before the limit at a line of another form, or with the block full (the same line then still
        // parses as plain: go on).
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
    if (this.totalsOnly) {
      this.count++;
      return;
    }
    const to = this.sink ?? this.counting;
    if (to) {
      this.one[0] = rel;
      this.one[1] = latency;
      this.count++;
      if (typeof to === 'function') to(this.one, 0, 1);
      else to.add(this.one, 0, 1);
      return;
    }
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

  /** Each block of (time offset, latency) pairs with the number of pairs in it, in input order (none with a sink). */
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
