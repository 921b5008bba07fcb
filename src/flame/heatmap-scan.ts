/**
 * The heat map's parser of plain "DIGITS DIGITS" lines (heatmap-input.ts) as WebAssembly functions, built here from
 * their instructions (the WebAssembly binary format, https://webassembly.github.io/spec/core/binary/; ~1.2 KB):
 * `scan` stores the events, `count` counts them into the heat map's cells (the heat map command's second pass: no
 * event goes through JavaScript) or, with a layout that leaves every event out, keeps only what the layout needs (its
 * first pass: so the second runs code V8 has already optimized).
 * Why: in JavaScript the same loop runs in V8's interpreter until the optimizing compiler has compiled it (the
 * earlier JavaScript version spent most of its time on the first 1 MiB read), while V8 compiles WebAssembly to
 * machine code (Liftoff) at its first call. Measured on the 1,000,000-line bench trace (14.4 MB, 1 MiB reads, 8
 * alternated fresh processes, load ~15 on 2 CPUs): parse CPU time median 142 -> 125 ms. The figures for `count`
 * are in bench/results/flame-issue14.md, section heat9.
 *
 * Memory layout (one memory per instance, grown to fit the input): the state at 0-127 (S_* below: the pair count
 * and the two maxima that every call updates, the count parameters and results), OUT_BASE on the (time offset,
 * latency) pairs `scan` writes (f64, at most BLOCK_PAIRS), then (a counting instance only) the cell counts, then the
 * input bytes from the instance's `inBase` on.
 */

import { PLAIN_SCAN_WASM } from './heatmap-wasm.js';

/** Where the parsed (time offset, latency) f64 pairs start in the module's memory. */
export const OUT_BASE = 128;
/** The most pairs one call writes (heatmap-input.ts's block size). */
export const BLOCK_PAIRS = 1 << 16;
/** Where the input bytes go in the memory of an instance without counts. */
export const IN_BASE = OUT_BASE + 16 * BLOCK_PAIRS;

// The state's slots (byte offsets). Every call: pairs parsed (i32), largest time offset, largest latency (f64).
const S_ADDED = 0;
const S_MAXREL = 8;
const S_LARGEST = 16;
// `count`'s parameters (f64: minLat, maxLat, stepLat, the time unit's divisor, stepSec, maxCol; i32: where the
// counts start, rows a column), its running results (i32: largest column, largest count) and its error (i32 flag,
// f64 time offset of the event before the first line's time).
const S_MINLAT = 24;
const S_MAXLAT = 32;
const S_STEPLAT = 40;
const S_DIVISOR = 48;
const S_STEPSEC = 56;
const S_MAXCOL = 64;
const S_COUNTS = 72;
const S_STRIDE = 76;
const S_LARGEST_COL = 80;
const S_LARGEST_COUNT = 84;
const S_BAD = 88;
const S_BAD_REL = 96;

/**
 * `scan(pos, limit, start, fill, stop)`: parses lines of plain "DIGITS DIGITS[ anything]" (each number at most 15
 * digits, no leading zero; blanks or tabs between; further fields ignored; "\r\n" accepted) from memory
 * [pos, limit) (`limit` just after a "\n"), writing pairs (time - start, latency) from pair `fill` on and updating
 * the pair count and the two maxima in memory; stops at `limit`, when `stop` pairs are written or at the start of
 * a line of any other form, and returns that position (always a line start). Numbers are built as 64-bit integers,
 * digit by digit, converted to doubles (exact for up to 15 digits: the JavaScript version's values) and compared with
 * `f64.max`, in the same order as the JavaScript version. `count` takes the same arguments (it stops, too, at an
 * event before the first line's time: see countEvent).
 */
export type PlainScan = (pos: number, limit: number, start: number, fill: number, stop: number) => number;

// Opcodes (binary format, section 5.4).
const BLOCK = 0x02;
const LOOP = 0x03;
const IF = 0x04;
const ELSE = 0x05;
const END = 0x0b;
const BR = 0x0c;
const BR_IF = 0x0d;
const RETURN = 0x0f;
const LOCAL_GET = 0x20;
const LOCAL_SET = 0x21;
const LOCAL_TEE = 0x22;
const F64_LOAD = 0x2b;
const I32_LOAD8_U = 0x2d;
const I32_STORE = 0x36;
const F64_STORE = 0x39;
const I32_CONST = 0x41;
const F64_CONST = 0x44;
const I32_EQZ = 0x45;
const I32_EQ = 0x46;
const I32_NE = 0x47;
const I32_GT_U = 0x4b;
const I32_GE_S = 0x4e;
const I32_GE_U = 0x4f;
const I32_ADD = 0x6a;
const I32_SUB = 0x6b;
const I32_MUL = 0x6c;
const I32_AND = 0x71;
const I32_OR = 0x72;
const F64_SUB = 0xa1;
const F64_MAX = 0xa5;
const SELECT = 0x1b;
const I32_LOAD = 0x28;
const I32_GT_S = 0x4a;
const I32_SHL = 0x74;
const F64_LT = 0x63;
const F64_GT = 0x64;
const F64_LE = 0x65;
const F64_DIV = 0xa3;
const I64_CONST = 0x42;
const I64_ADD = 0x7c;
const I64_MUL = 0x7e;
const I64_EXTEND_I32_U = 0xad;
const F64_CONVERT_I32_S = 0xb7;
const F64_CONVERT_I64_S = 0xb9;
/** i32.trunc_sat_f64_s: truncation toward zero, as `x | 0` for the values here (no trap). */
const I32_TRUNC_SAT_F64_S = [0xfc, 0x02];
const VOID = 0x40;
const I32 = 0x7f;
const I64 = 0x7e;
const F64 = 0x7c;

// Locals: the parameters, then four i32, five f64, one i64, seven i32 and seven f64 locals (lineBody's header).
const POS = 0;
const LIMIT = 1;
const START = 2;
const FILL = 3;
const STOP = 4;
const I = 5;
const C = 6;
const T0 = 7;
const L0 = 8;
const TIME = 9;
const LAT = 10;
const MAXREL = 11;
const LARGEST = 12;
const R = 13;
const N = 14;
const COL = 15;
const K = 16;
const CNT = 17;
const COUNTS = 18;
const STRIDE = 19;
const LCOL = 20;
const LCOUNT = 21;
const MINLAT = 22;
const MAXLAT = 23;
const STEPLAT = 24;
const DIV = 25;
const STEPSEC = 26;
const MAXCOL = 27;
const T = 28;

/** Unsigned LEB128. */
export function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
}

/** Signed LEB128 of a 32-bit integer. */
function sleb(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
}

/**
 * A function body under construction. Structured instructions take a label name; `br`/`br_if` name the label they
 * leave (block, if) or repeat (loop), and the relative depth is computed from the open labels. (heatmap-cells.ts
 * builds its module with it too.)
 */
export class Body {
  readonly code: number[] = [];
  private readonly labels: string[] = [];
  op(...bytes: number[]): this {
    this.code.push(...bytes);
    return this;
  }
  get(l: number): this {
    return this.op(LOCAL_GET, l);
  }
  set(l: number): this {
    return this.op(LOCAL_SET, l);
  }
  i32(n: number): this {
    return this.op(I32_CONST, ...sleb(n));
  }
  open(kind: number, label: string): this {
    this.labels.push(label);
    return this.op(kind, VOID);
  }
  end(): this {
    this.labels.pop();
    return this.op(END);
  }
  br(kind: number, label: string): this {
    const depth = this.labels.length - 1 - this.labels.lastIndexOf(label);
    if (depth >= this.labels.length) throw new Error(`no label ${label}`);
    return this.op(kind, ...uleb(depth));
  }
  /** c = memory[i] (a byte). */
  loadC(): this {
    return this.get(I).op(I32_LOAD8_U, 0, 0).set(C);
  }
  /** c = memory[++i]. */
  nextC(): this {
    return this.get(I).i32(1).op(I32_ADD, LOCAL_TEE, I).op(I32_LOAD8_U, 0, 0).set(C);
  }
  /** Pushes (c === 32 || c === 9). */
  isBlank(): this {
    return this.get(C).i32(32).op(I32_EQ).get(C).i32(9).op(I32_EQ, I32_OR);
  }
  /** while (c is a blank) c = memory[++i]. */
  skipBlanks(label: string): this {
    return this.open(BLOCK, `${label}-out`)
      .open(LOOP, label)
      .isBlank()
      .op(I32_EQZ)
      .br(BR_IF, `${label}-out`)
      .nextC()
      .br(BR, label)
      .end()
      .end();
  }
  /**
   * while (c is a digit) { v = v * 10 + (c - 48); c = memory[++i]; } n = v: v an i64 (longer numbers wrap, but
   * checkNumber refuses them), so n is exact up to 15 digits, the same double the JavaScript parser makes.
   */
  digits(n: number, label: string): this {
    return this.op(I64_CONST, 0)
      .set(N)
      .open(BLOCK, `${label}-out`)
      .open(LOOP, label)
      .get(C)
      .i32(48)
      .op(I32_SUB)
      .i32(10)
      .op(I32_GE_U)
      .br(BR_IF, `${label}-out`)
      .get(N)
      .op(I64_CONST, 10, I64_MUL)
      .get(C)
      .i32(48)
      .op(I32_SUB, I64_EXTEND_I32_U, I64_ADD)
      .set(N)
      .nextC()
      .br(BR, label)
      .end()
      .end()
      .get(N)
      .op(F64_CONVERT_I64_S)
      .set(n);
  }
  /** Leaves `out` when the number from `from` to i is empty, longer than 15 digits or has a leading zero. */
  checkNumber(from: number, out: string): this {
    return this.get(I)
      .get(from)
      .op(I32_EQ)
      .br(BR_IF, out)
      .get(I)
      .get(from)
      .op(I32_SUB)
      .i32(15)
      .op(I32_GT_U)
      .br(BR_IF, out)
      .get(I)
      .get(from)
      .op(I32_SUB)
      .i32(1)
      .op(I32_GT_U)
      .get(from)
      .op(I32_LOAD8_U, 0, 0)
      .i32(48)
      .op(I32_EQ, I32_AND)
      .br(BR_IF, out);
  }
}

function f64Bytes(x: number): number[] {
  return [...new Uint8Array(new Float64Array([x]).buffer)];
}

/** What a line function does with each plain line: store its pair or count it. */
type Mode = 'scan' | 'count';

/**
 * The body of a line function. Both parse a line the same way (times and latencies as integers, then converted to
 * doubles: the same values as the JavaScript parser's, exact for up to 15 digits) and keep the pair count and the
 * two maxima in memory; `scan` stores each (time offset, latency) pair at OUT_BASE, `count` counts each event into
 * the heat map's cells as heatmap.ts's countSlice does (same arithmetic, same order).
 */
function lineBody(mode: Mode): number[] {
  const b = new Body();
  b.i32(0)
    .op(F64_LOAD, 3, ...uleb(S_MAXREL))
    .set(MAXREL);
  b.i32(0)
    .op(F64_LOAD, 3, ...uleb(S_LARGEST))
    .set(LARGEST);
  if (mode === 'count') {
    for (const [local, at] of [
      [MINLAT, S_MINLAT],
      [MAXLAT, S_MAXLAT],
      [STEPLAT, S_STEPLAT],
      [DIV, S_DIVISOR],
      [STEPSEC, S_STEPSEC],
      [MAXCOL, S_MAXCOL],
    ] as const) {
      b.i32(0)
        .op(F64_LOAD, 3, ...uleb(at))
        .set(local);
    }
    for (const [local, at] of [
      [COUNTS, S_COUNTS],
      [STRIDE, S_STRIDE],
      [LCOL, S_LARGEST_COL],
      [LCOUNT, S_LARGEST_COUNT],
    ] as const) {
      b.i32(0)
        .op(I32_LOAD, 2, ...uleb(at))
        .set(local);
    }
  }
  b.open(BLOCK, 'done').open(LOOP, 'line');
  b.get(POS).get(LIMIT).op(I32_GE_U).br(BR_IF, 'done');
  b.get(FILL).get(STOP).op(I32_GE_S).br(BR_IF, 'done');
  b.get(POS).set(I).loadC();
  b.skipBlanks('blanks1');
  b.get(I).set(T0).digits(TIME, 'time').checkNumber(T0, 'done');
  b.isBlank().op(I32_EQZ).br(BR_IF, 'done');
  b.skipBlanks('blanks2');
  b.get(I).set(L0).digits(LAT, 'lat').checkNumber(L0, 'done');
  // After the latency: "\n", "\r\n", or blanks (or "\r") and further fields up to the "\n"; else not plain.
  b.get(C).i32(10).op(I32_NE).open(IF, 'notnl');
  {
    b.get(C).i32(13).op(I32_EQ).get(I).op(I32_LOAD8_U, 0, 1).i32(10).op(I32_EQ, I32_AND);
    b.open(IF, 'crlf').get(I).i32(1).op(I32_ADD).set(I).op(ELSE);
    {
      b.isBlank().get(C).i32(13).op(I32_EQ, I32_OR, I32_EQZ).br(BR_IF, 'done');
      b.open(BLOCK, 'eol-out').open(LOOP, 'eol');
      b.get(I).op(I32_LOAD8_U, 0, 0).i32(10).op(I32_EQ).br(BR_IF, 'eol-out');
      b.get(I).i32(1).op(I32_ADD).set(I).br(BR, 'eol');
      b.end().end();
    }
    b.end();
  }
  b.end();
  // i is at the "\n".
  b.get(TIME).get(START).op(F64_SUB).set(R);
  b.get(MAXREL).get(R).op(F64_MAX).set(MAXREL);
  b.get(LARGEST).get(LAT).op(F64_MAX).set(LARGEST);
  if (mode === 'scan') {
    b.get(FILL)
      .i32(16)
      .op(I32_MUL)
      .get(R)
      .op(F64_STORE, 3, ...uleb(OUT_BASE));
    b.get(FILL)
      .i32(16)
      .op(I32_MUL)
      .get(LAT)
      .op(F64_STORE, 3, ...uleb(OUT_BASE + 8));
  }
  if (mode === 'count') countEvent(b);
  b.get(FILL).i32(1).op(I32_ADD).set(FILL);
  b.get(I).i32(1).op(I32_ADD).set(POS);
  b.br(BR, 'line');
  b.end().end();
  b.i32(0)
    .get(FILL)
    .op(I32_STORE, 2, ...uleb(S_ADDED));
  b.i32(0)
    .get(MAXREL)
    .op(F64_STORE, 3, ...uleb(S_MAXREL));
  b.i32(0)
    .get(LARGEST)
    .op(F64_STORE, 3, ...uleb(S_LARGEST));
  if (mode === 'count') {
    b.i32(0)
      .get(LCOL)
      .op(I32_STORE, 2, ...uleb(S_LARGEST_COL));
    b.i32(0)
      .get(LCOUNT)
      .op(I32_STORE, 2, ...uleb(S_LARGEST_COUNT));
  }
  b.get(POS).op(RETURN, END);
  return [5, 4, I32, 5, F64, 1, I64, 7, I32, 7, F64, ...b.code];
}

/**
 * Counts the event (R, LAT) into the cells (inside the line loop, before `fill` and `pos` move on), as countSlice:
 * latencies outside [minLat, maxLat] and columns past maxCol are left out; an event before the first line's time
 * (column before truncation <= -1) stores its time offset and a flag and leaves the loop at its line.
 */
function countEvent(b: Body): void {
  b.open(BLOCK, 'skip');
  b.get(LAT).get(MINLAT).op(F64_LT).get(LAT).get(MAXLAT).op(F64_GT, I32_OR).br(BR_IF, 'skip');
  b.get(R).get(DIV).op(F64_DIV).get(STEPSEC).op(F64_DIV).set(T);
  b.get(T)
    .op(F64_CONST, ...f64Bytes(-1), F64_LE)
    .open(IF, 'early');
  {
    b.i32(0)
      .get(R)
      .op(F64_STORE, 3, ...uleb(S_BAD_REL));
    b.i32(0)
      .i32(1)
      .op(I32_STORE, 2, ...uleb(S_BAD));
    b.br(BR, 'done');
  }
  b.end();
  b.get(T)
    .op(...I32_TRUNC_SAT_F64_S)
    .set(COL);
  b.get(COL).op(F64_CONVERT_I32_S).get(MAXCOL).op(F64_GT).br(BR_IF, 'skip');
  // k = col * stride + trunc((latency - minLat) / stepLat); the count at counts + 4k, incremented (wrapping as a
  // Uint32Array's element does).
  b.get(COL).get(STRIDE).op(I32_MUL);
  b.get(LAT)
    .get(MINLAT)
    .op(F64_SUB)
    .get(STEPLAT)
    .op(F64_DIV, ...I32_TRUNC_SAT_F64_S, I32_ADD);
  b.i32(2).op(I32_SHL).get(COUNTS).op(I32_ADD).set(K);
  b.get(K).get(K).op(I32_LOAD, 2, 0).i32(1).op(I32_ADD, LOCAL_TEE, CNT).op(I32_STORE, 2, 0);
  b.get(COL).get(LCOL).get(COL).get(LCOL).op(I32_GT_S, SELECT).set(LCOL);
  b.get(CNT).get(LCOUNT).get(CNT).get(LCOUNT).op(I32_GT_U, SELECT).set(LCOUNT);
  b.end();
}

/** A module section: id, size, content. */
export function section(id: number, content: number[]): number[] {
  return [id, ...uleb(content.length), ...content];
}

/** A name (ASCII) as the binary format writes it. */
export function name(s: string): number[] {
  return [...uleb(s.length), ...[...s].map((c) => c.charCodeAt(0))];
}

/** The module's bytes (~1.2 KB): one type, two functions ("scan", "count"), one memory ("memory"). */
export function plainScanModule(): Uint8Array {
  const bodies = (['scan', 'count'] as const).map(lineBody);
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, [1, 0x60, 5, I32, I32, F64, I32, I32, 1, I32]),
    ...section(3, [2, 0, 0]),
    ...section(5, [1, 0, ...uleb(Math.ceil((IN_BASE + (1 << 20)) / 65536))]),
    ...section(7, [3, ...name('scan'), 0x00, 0, ...name('count'), 0x00, 1, ...name('memory'), 0x02, 0]),
    ...section(10, [2, ...bodies.flatMap((body) => [...uleb(body.length), ...body])]),
  ]);
}

/** The slice of WebAssembly's memory object used here (TypeScript's ES2022 lib has no WebAssembly types). */
export interface ScanMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

interface ScanExports {
  scan: PlainScan;
  count: PlainScan;
  memory: ScanMemory;
}

/** The slice of the WebAssembly JS API used here. */
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: ScanExports };
}

/** What `count` needs besides the lines: the heat map's layout (heatmap.ts's HeatMapCounter). */
export interface CountLayout {
  minLat: number;
  maxLat: number;
  stepLat: number;
  /** The time unit's divisor to seconds. */
  divisor: number;
  stepSec: number;
  /** Last column counted (Infinity: all). */
  maxCol: number;
  /** Rows a column in the counts (column-major). */
  stride: number;
}

let compiled: object | undefined;

/**
 * One instance of the module (compiled once, on first use, synchronously: it is ~1.2 KB): its functions (both
 * `PlainScan`s: `scan` stores pairs, `count` counts into the cells), its memory, where the input goes (from
 * IN_BASE on, or after the counts when it does not fit below them) and, once reserved, the cell counts (Uint32,
 * above every input loaded before). One instance can serve both passes of a heat map (`inputArea` to read into,
 * then `reserveCounts`): its memory is then touched once (fresh memory costs ~4-8 ms a MiB in page faults on this
 * VM). Growing the memory (`load`, `inputArea`, `reserveCounts`) detaches every view made before it.
 */
export class PlainScanner {
  readonly scan: PlainScan;
  readonly count: PlainScan;
  readonly memory: ScanMemory;
  /** Where `load` put the input last. */
  inBase = IN_BASE;
  /** Cell counts reserved. */
  cells = 0;
  private countsBase = IN_BASE;
  /** The end of the highest input loaded or handed out from IN_BASE. */
  private inputEnd = IN_BASE;
  /** The end of everything placed so far (inputs, counts, `reserveTop`). */
  private top = IN_BASE;
  /** The end of the last `reserveTop` region. */
  private reservedEnd = 0;

  constructor() {
    const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
    // The module's bytes as scripts/heatmap-wasm.mjs saved them (building them here is ~8-13 ms of cold JavaScript).
    compiled ??= new wasm.Module(Buffer.from(PLAIN_SCAN_WASM, 'base64'));
    const { exports } = new wasm.Instance(compiled);
    this.scan = exports.scan;
    this.count = exports.count;
    this.memory = exports.memory;
  }

  /** Grows the memory to reach `end` (detaching every view made before, if it grows). */
  room(end: number): void {
    const need = end - this.memory.buffer.byteLength;
    if (need > 0) this.memory.grow(Math.ceil(need / 65536));
  }

  /** Where `bytes` input bytes go: IN_BASE, unless counts are reserved there (then after them). */
  private place(bytes: number): number {
    if (this.cells === 0 || IN_BASE + bytes <= this.countsBase) {
      this.inputEnd = Math.max(this.inputEnd, IN_BASE + bytes);
      this.top = Math.max(this.top, IN_BASE + bytes);
      return IN_BASE;
    }
    // Above the counts, and above what reserveTop handed out (a rendered heat map's bytes).
    const at = Math.ceil(Math.max(this.countsBase + 4 * this.cells, this.reservedEnd) / 16) * 16;
    this.top = Math.max(this.top, at + bytes);
    return at;
  }

  /**
   * `bytes` bytes of memory above everything placed so far (inputs, counts, earlier reservations), 16-aligned, the
   * memory grown to hold them; returns their address. Nothing placed later overlaps them.
   */
  reserveTop(bytes: number): number {
    const at = Math.ceil(this.top / 16) * 16;
    this.room(at + bytes);
    this.top = at + bytes;
    this.reservedEnd = this.top;
    return at;
  }

  /** Makes the last `reserveTop` region end at `end` instead (growing the memory; nothing was placed after it). */
  extendTop(end: number): void {
    this.room(end);
    this.top = Math.max(this.top, end);
    this.reservedEnd = this.top;
  }

  /** Copies `bytes` to a place for input (`inBase` then says where; growing the memory to fit). */
  load(bytes: Uint8Array): void {
    this.inBase = this.place(bytes.length);
    this.room(this.inBase + bytes.length);
    new Uint8Array(this.memory.buffer, this.inBase, bytes.length).set(bytes);
  }

  /**
   * A place for `bytes` bytes of input in the memory, to read into: a chunk of it handed to HeatMapInput.bytes is
   * scanned where it is (no copy). Valid until the memory grows.
   */
  inputArea(bytes: number): Uint8Array {
    const at = this.place(bytes);
    this.room(at + bytes);
    return new Uint8Array(this.memory.buffer, at, bytes);
  }

  /** Reserves `cells` zeroed cell counts above every input so far (once; `counts()` is their view). */
  reserveCounts(cells: number): void {
    if (this.cells !== 0) throw new Error('PlainScanner: counts already reserved');
    this.countsBase = Math.ceil(this.inputEnd / 16) * 16;
    this.room(this.countsBase + 4 * cells);
    this.cells = cells;
    this.top = Math.max(this.top, this.countsBase + 4 * cells);
  }

  /** The memory the state views below were made on (growing the memory detaches them). */
  private stateOf: ArrayBuffer | undefined;
  private stateF64 = new Float64Array(0);
  private stateI32 = new Int32Array(0);

  /**
   * Views of the state slots (bytes 0-127), made again only after the memory grew: the calls below run once per
   * 64 KiB of input, and a view made per call (~100 bytes each, several a call) filled V8's young generation on the
   * bench trace (~0.7 MB over the two passes: one scavenge, and its second semi-space's page faults).
   */
  private state(): void {
    const b = this.memory.buffer;
    if (b === this.stateOf) return;
    this.stateOf = b;
    this.stateF64 = new Float64Array(b, 0, OUT_BASE / 8);
    this.stateI32 = new Int32Array(b, 0, OUT_BASE / 4);
  }

  /** Pairs parsed by the last call. */
  get added(): number {
    this.state();
    return this.stateI32[S_ADDED / 4]!;
  }

  /** The (time offset, latency) pairs the last `scan` call wrote (a view, valid until the memory grows). */
  pairs(): Float64Array {
    return new Float64Array(this.memory.buffer, OUT_BASE, 2 * this.added);
  }

  /** The largest time offset so far (the calls update it). */
  get maxRel(): number {
    this.state();
    return this.stateF64[S_MAXREL / 8]!;
  }

  /** The largest latency so far (the calls update it). */
  get largestLatency(): number {
    this.state();
    return this.stateF64[S_LARGEST / 8]!;
  }

  /** Sets the largest time offset and latency so far (before a call). */
  setMaxima(maxRel: number, largestLatency: number): void {
    this.state();
    this.stateF64[S_MAXREL / 8] = maxRel;
    this.stateF64[S_LARGEST / 8] = largestLatency;
  }

  /** Sets `count`'s layout and running results (before a call). */
  setCount(l: CountLayout, largestCol: number, largestCount: number): void {
    this.state();
    const f = this.stateF64;
    f[S_MINLAT / 8] = l.minLat;
    f[S_MAXLAT / 8] = l.maxLat;
    f[S_STEPLAT / 8] = l.stepLat;
    f[S_DIVISOR / 8] = l.divisor;
    f[S_STEPSEC / 8] = l.stepSec;
    f[S_MAXCOL / 8] = l.maxCol;
    const i = this.stateI32;
    i[S_COUNTS / 4] = this.countsBase;
    i[S_STRIDE / 4] = l.stride;
    i[S_LARGEST_COL / 4] = largestCol;
    i[S_LARGEST_COUNT / 4] = largestCount;
    i[S_BAD / 4] = 0;
  }

  /** `count`'s largest column so far (after a call). */
  get largestCol(): number {
    this.state();
    return this.stateI32[S_LARGEST_COL / 4]!;
  }

  /** `count`'s largest cell count so far (after a call). */
  get largestCount(): number {
    this.state();
    return this.stateI32[S_LARGEST_COUNT / 4]! >>> 0;
  }

  /** The time offset of the event before the first line's time that stopped the last `count` call, if one did. */
  get badRel(): number | undefined {
    this.state();
    return this.stateI32[S_BAD / 4] !== 0 ? this.stateF64[S_BAD_REL / 8]! : undefined;
  }

  /** The cell counts (a view, valid until the memory grows). */
  counts(): Uint32Array {
    return new Uint32Array(this.memory.buffer, this.countsBase, this.cells);
  }
}

let shared: PlainScanner | undefined;

/** The instance without cells that every HeatMapInput shares (calls are synchronous; the state is passed in). */
export function plainScanner(): PlainScanner {
  shared ??= new PlainScanner();
  return shared;
}
