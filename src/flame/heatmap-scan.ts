/**
 * The heat map's parser of plain "DIGITS DIGITS" lines (heatmap-input.ts) as a WebAssembly function, built here from
 * its instructions (the WebAssembly binary format, https://webassembly.github.io/spec/core/binary/; ~550 bytes).
 * Why: in JavaScript the same loop runs in V8's interpreter until the optimizing compiler has compiled it (the
 * earlier JavaScript version spent most of its time on the first 1 MiB read), while V8 compiles WebAssembly to
 * machine code (Liftoff) at its first call. Measured on the 1,000,000-line bench trace (14.4 MB, 1 MiB reads, 8
 * alternated fresh processes, load ~15 on 2 CPUs): parse CPU time median 142 -> 125 ms.
 *
 * Memory layout (one exported memory, grown to fit the input): bytes 0-3 the number of pairs written (i32), 8-15
 * the largest time offset and 16-23 the largest latency (f64), OUT_BASE on the (time offset, latency) pairs (f64,
 * at most BLOCK_PAIRS), IN_BASE on the input bytes.
 */

/** Where the parsed (time offset, latency) f64 pairs start in the module's memory. */
export const OUT_BASE = 64;
/** The most pairs one call writes (heatmap-input.ts's block size). */
export const BLOCK_PAIRS = 1 << 16;
/** Where the input bytes go in the module's memory. */
export const IN_BASE = OUT_BASE + 16 * BLOCK_PAIRS;

/**
 * `scan(pos, limit, start, fill, stop)`: parses lines of plain "DIGITS DIGITS[ anything]" (each number at most 15
 * digits, no leading zero; blanks or tabs between; further fields ignored; "\r\n" accepted) from memory
 * [pos, limit) (`limit` just after a "\n"), writing pairs (time - start, latency) from pair `fill` on and updating
 * the pair count and the two maxima in memory; stops at `limit`, when `stop` pairs are written or at the start of
 * a line of any other form, and returns that position (always a line start). Numbers are built as doubles, digit
 * by digit (`x * 10 + d`), and compared with `f64.max`: the same values, in the same order, as the JavaScript
 * version (exact for up to 15 digits).
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
const F64_ADD = 0xa0;
const F64_SUB = 0xa1;
const F64_MUL = 0xa2;
const F64_MAX = 0xa5;
const F64_CONVERT_I32_U = 0xb8;
const VOID = 0x40;
const I32 = 0x7f;
const F64 = 0x7c;

// Locals: the parameters, then four i32 and five f64 locals.
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

/** Unsigned LEB128. */
function uleb(n: number): number[] {
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
 * leave (block, if) or repeat (loop), and the relative depth is computed from the open labels.
 */
class Body {
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
  /** while (c is a digit) { n = n * 10 + (c - 48); c = memory[++i]; } */
  digits(n: number, label: string): this {
    return this.op(F64_CONST, 0, 0, 0, 0, 0, 0, 0, 0)
      .set(n)
      .open(BLOCK, `${label}-out`)
      .open(LOOP, label)
      .get(C)
      .i32(48)
      .op(I32_SUB)
      .i32(10)
      .op(I32_GE_U)
      .br(BR_IF, `${label}-out`)
      .get(n)
      .op(F64_CONST, ...f64Bytes(10), F64_MUL)
      .get(C)
      .i32(48)
      .op(I32_SUB, F64_CONVERT_I32_U, F64_ADD)
      .set(n)
      .nextC()
      .br(BR, label)
      .end()
      .end();
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

function scanBody(): number[] {
  const b = new Body();
  b.i32(0).op(F64_LOAD, 3, 8).set(MAXREL);
  b.i32(0).op(F64_LOAD, 3, 16).set(LARGEST);
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
  b.get(FILL).i32(1).op(I32_ADD).set(FILL);
  b.get(I).i32(1).op(I32_ADD).set(POS);
  b.br(BR, 'line');
  b.end().end();
  b.i32(0).get(FILL).op(I32_STORE, 2, 0);
  b.i32(0).get(MAXREL).op(F64_STORE, 3, 8);
  b.i32(0).get(LARGEST).op(F64_STORE, 3, 16);
  b.get(POS).op(RETURN, END);
  // Locals after the parameters: 4 x i32, 5 x f64.
  return [2, 4, I32, 5, F64, ...b.code];
}

function section(id: number, content: number[]): number[] {
  return [id, ...uleb(content.length), ...content];
}

function name(s: string): number[] {
  return [...uleb(s.length), ...[...s].map((c) => c.charCodeAt(0))];
}

/** The module's bytes: one type, one function ("scan"), one memory ("memory"). */
export function plainScanModule(): Uint8Array {
  const body = scanBody();
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, [1, 0x60, 5, I32, I32, F64, I32, I32, 1, I32]),
    ...section(3, [1, 0]),
    ...section(5, [1, 0, ...uleb(Math.ceil((IN_BASE + (1 << 20)) / 65536))]),
    ...section(7, [2, ...name('scan'), 0x00, 0, ...name('memory'), 0x02, 0]),
    ...section(10, [1, ...uleb(body.length), ...body]),
  ]);
}

/** The slice of WebAssembly's memory object used here (TypeScript's ES2022 lib has no WebAssembly types). */
export interface ScanMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

/** The compiled module's scan function and memory (compiled once, on first use). */
export interface PlainScanner {
  scan: PlainScan;
  memory: ScanMemory;
}

/** The slice of the WebAssembly JS API used here. */
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: { scan: PlainScan; memory: ScanMemory } };
}

let scanner: PlainScanner | undefined;

/** The scanner, compiled and instantiated synchronously (the module is ~550 bytes) the first time. */
export function plainScanner(): PlainScanner {
  if (!scanner) {
    const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
    const { exports } = new wasm.Instance(new wasm.Module(plainScanModule()));
    scanner = { scan: exports.scan, memory: exports.memory };
  }
  return scanner;
}
