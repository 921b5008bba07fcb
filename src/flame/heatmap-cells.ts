/**
 * The heat map command's cells written by a WebAssembly function (`cells`, ~0.6 KB, built here with heatmap-scan.ts's
 * Body and saved as bytes in heatmap-wasm.ts) straight from the cell counts in the counting instance's memory
 * (heatmap-scan.ts's PlainScanner), into that same memory: each drawn cell is copied from ready pieces (per column,
 * per row and constant, prepared by JavaScript) with its colour and numbers formatted in WebAssembly. The output is
 * the same bytes as heatmap.ts's drawCells gives for the same grid.
 * Why: the JavaScript loop that did this (5,127 cells of ~140 bytes on the 1,000,000-line bench trace) ran once per
 * run, mostly before V8 had optimized it, and made V8 compile ~10 functions (ByteOut's, Buffer.from's) and collect
 * its young generation once: ~25-50 ms of CPU and ~800 page faults a run on the bench VM; here it is ~2-4 ms and
 * the faults of the output's own pages (bench/results/flame-issue14.md, section heat10).
 *
 * Piece table (Int32 pairs of byte address and length, at `tab`): 6 constant pieces (K0-K5 below), then 2 a row
 * (its y, its range label as a JavaScript string literal), then 3 a column (x, width, time label as a literal).
 * A cell is K0 x K1 y K2 width K3 G "," B K4 time "," range "," count "," acc "," total K5, where
 * rgb(255,G,B) is cellColor's colour: G = 240 - 240r and B = 220 - 220r rounded to the nearest integer, ties to
 * even (`f64.nearest`, which is what cFixed(v, 0) prints for v in [0, 240]), r = count / largest count.
 */
import { Body, name, section, uleb, type PlainScanner, type ScanMemory } from './heatmap-scan.js';
import { PLAIN_CELLS_WASM } from './heatmap-wasm.js';

// Opcodes (binary format, section 5.4).
const BLOCK = 0x02;
const LOOP = 0x03;
const IF = 0x04;
const BR = 0x0c;
const BR_IF = 0x0d;
const RETURN = 0x0f;
const I32_LOAD = 0x28;
const I64_LOAD32_U = 0x35;
const F64_LOAD = 0x2b;
const I32_STORE = 0x36;
const I32_STORE8 = 0x3a;
const I64_CONST = 0x42;
const F64_CONST = 0x44;
const I32_EQZ = 0x45;
const I32_GT_U = 0x4b;
const I32_GE_U = 0x4f;
const I64_EQZ = 0x50;
const I64_LT_U = 0x54;
const I32_ADD = 0x6a;
const I32_SUB = 0x6b;
const I32_MUL = 0x6c;
const I32_SHL = 0x74;
const I64_ADD = 0x7c;
const I64_MUL = 0x7e;
const I64_DIV_U = 0x80;
const I64_REM_U = 0x82;
const F64_NEAREST = 0x9e;
const F64_SUB = 0xa1;
const F64_MUL = 0xa2;
const F64_DIV = 0xa3;
const I32_WRAP_I64 = 0xa7;
const I64_TRUNC_F64_S = 0xb0;
const I64_EXTEND_I32_U = 0xad;
const F64_CONVERT_I32_U = 0xb8;
const MEMORY_COPY = [0xfc, 0x0a, 0, 0];
const I32 = 0x7f;
const I64 = 0x7e;
const F64 = 0x7c;

// `cells(params, from)`: the parameters at `params` (P_* byte offsets: i32 unless said), the first column to draw.
const P_COUNTS = 0;
const P_STRIDE = 4;
const P_COLUMNS = 8;
const P_ROWS = 12;
const P_TAB = 16;
/** Where the next byte goes (read at the call, written back at its end). */
const P_OUT = 20;
const P_LIMIT = 24;
/** The most bytes one column can take: a column starts only when they fit below P_LIMIT. */
const P_PERCOL = 28;
/** f64. */
const P_LARGEST = 32;
/** Cells drawn (added to). */
const P_CELLS = 40;
const PARAM_BYTES = 48;

// Locals: the two parameters, 18 i32, 4 i64, 2 f64.
const P = 0;
const FROM = 1;
const S = 2;
const L = 3;
const BASE = 4;
const C = 5;
const OUT = 6;
const ROWS = 7;
const COLUMNS = 8;
const TAB = 9;
const COLTAB = 10;
const ROWTAB = 11;
const LIMIT = 12;
const PERCOL = 13;
const I = 14;
const D = 15;
const COUNTS = 16;
const STRIDE4 = 17;
const ROWA = 18;
const COLA = 19;
const TOTAL = 20;
const ACC = 21;
const V = 22;
const PW = 23;
const LARGEST = 24;
const R = 25;

/** Copies the piece whose (address, length) pair is at `addr` + `imm` to the output. */
function copy(b: Body, addr: number, imm: number): void {
  b.get(OUT)
    .get(addr)
    .op(I32_LOAD, 2, ...uleb(imm))
    .get(addr)
    .op(I32_LOAD, 2, ...uleb(imm + 4), ...MEMORY_COPY);
  b.get(OUT)
    .get(addr)
    .op(I32_LOAD, 2, ...uleb(imm + 4), I32_ADD)
    .set(OUT);
}

function byte(b: Body, c: number): void {
  b.get(OUT).i32(c).op(I32_STORE8, 0, 0);
  b.get(OUT).i32(1).op(I32_ADD).set(OUT);
}

/** Writes V (an unsigned integer below 10^19) in decimal, as `${v}` prints it. */
function num(b: Body): void {
  b.i32(1).set(D).op(I64_CONST, 10).set(PW);
  b.open(BLOCK, 'len-out').open(LOOP, 'len');
  b.get(V).get(PW).op(I64_LT_U).br(BR_IF, 'len-out');
  b.get(D).i32(19).op(I32_GE_U).br(BR_IF, 'len-out');
  b.get(PW).op(I64_CONST, 10, I64_MUL).set(PW);
  b.get(D).i32(1).op(I32_ADD).set(D);
  b.br(BR, 'len').end().end();
  b.get(OUT).get(D).op(I32_ADD).set(I);
  b.open(LOOP, 'digit');
  b.get(I).i32(1).op(I32_SUB).set(I);
  b.get(I).get(V).op(I64_CONST, 10, I64_REM_U, I32_WRAP_I64).i32(48).op(I32_ADD, I32_STORE8, 0, 0);
  b.get(V).op(I64_CONST, 10, I64_DIV_U).set(V);
  b.get(I).get(OUT).op(I32_GT_U).br(BR_IF, 'digit');
  b.end();
  b.get(OUT).get(D).op(I32_ADD).set(OUT);
}

function f64Bytes(x: number): number[] {
  return [...new Uint8Array(new Float64Array([x]).buffer)];
}

/** V = nearest(top - top * R): a colour component. */
function component(b: Body, top: number): void {
  b.op(F64_CONST, ...f64Bytes(top), F64_CONST, ...f64Bytes(top))
    .get(R)
    .op(F64_MUL, F64_SUB, F64_NEAREST);
  b.op(I64_TRUNC_F64_S).set(V);
}

function cellsBody(): number[] {
  const b = new Body();
  const param = (local: number, at: number): void => {
    b.get(P)
      .op(I32_LOAD, 2, ...uleb(at))
      .set(local);
  };
  param(COUNTS, P_COUNTS);
  param(STRIDE4, P_STRIDE);
  b.get(STRIDE4).i32(2).op(I32_SHL).set(STRIDE4);
  param(COLUMNS, P_COLUMNS);
  param(ROWS, P_ROWS);
  param(TAB, P_TAB);
  param(OUT, P_OUT);
  param(LIMIT, P_LIMIT);
  param(PERCOL, P_PERCOL);
  b.get(P)
    .op(F64_LOAD, 3, ...uleb(P_LARGEST))
    .set(LARGEST);
  b.get(TAB).i32(48).op(I32_ADD).set(ROWTAB);
  b.get(ROWTAB).get(ROWS).i32(16).op(I32_MUL, I32_ADD).set(COLTAB);
  b.get(FROM).set(S);
  b.open(BLOCK, 'done').open(LOOP, 'column');
  b.get(S).get(COLUMNS).op(I32_GE_U).br(BR_IF, 'done');
  b.get(OUT).get(PERCOL).op(I32_ADD).get(LIMIT).op(I32_GT_U).br(BR_IF, 'done');
  b.get(COUNTS).get(S).get(STRIDE4).op(I32_MUL, I32_ADD).set(BASE);
  // The column's total over the drawn rows; an empty column draws nothing.
  b.op(I64_CONST, 0).set(TOTAL).i32(0).set(L);
  b.open(BLOCK, 'sum-out').open(LOOP, 'sum');
  b.get(L).get(ROWS).op(I32_GE_U).br(BR_IF, 'sum-out');
  b.get(BASE).get(L).i32(2).op(I32_SHL, I32_ADD, I64_LOAD32_U, 2, 0).get(TOTAL).op(I64_ADD).set(TOTAL);
  b.get(L).i32(1).op(I32_ADD).set(L).br(BR, 'sum');
  b.end().end();
  b.get(TOTAL).op(I64_EQZ, I32_EQZ).open(IF, 'drawn');
  {
    b.op(I64_CONST, 0).set(ACC).i32(0).set(L);
    b.get(COLTAB).get(S).i32(24).op(I32_MUL, I32_ADD).set(COLA);
    b.open(BLOCK, 'row-out').open(LOOP, 'row');
    b.get(L).get(ROWS).op(I32_GE_U).br(BR_IF, 'row-out');
    b.get(BASE).get(L).i32(2).op(I32_SHL, I32_ADD, I32_LOAD, 2, 0).set(C);
    b.get(C).open(IF, 'cell');
    {
      b.get(ACC).get(C).op(I64_EXTEND_I32_U, I64_ADD).set(ACC);
      b.get(P)
        .get(P)
        .op(I32_LOAD, 2, ...uleb(P_CELLS))
        .i32(1)
        .op(I32_ADD, I32_STORE, 2, ...uleb(P_CELLS));
      b.get(ROWTAB).get(L).i32(4).op(I32_SHL, I32_ADD).set(ROWA);
      copy(b, TAB, 0);
      copy(b, COLA, 0);
      copy(b, TAB, 8);
      copy(b, ROWA, 0);
      copy(b, TAB, 16);
      copy(b, COLA, 8);
      copy(b, TAB, 24);
      b.get(C).op(F64_CONVERT_I32_U).get(LARGEST).op(F64_DIV).set(R);
      component(b, 240);
      num(b);
      byte(b, 44);
      component(b, 220);
      num(b);
      copy(b, TAB, 32);
      copy(b, COLA, 16);
      byte(b, 44);
      copy(b, ROWA, 8);
      byte(b, 44);
      b.get(C).op(I64_EXTEND_I32_U).set(V);
      num(b);
      byte(b, 44);
      b.get(ACC).set(V);
      num(b);
      byte(b, 44);
      b.get(TOTAL).set(V);
      num(b);
      copy(b, TAB, 40);
    }
    b.end();
    b.get(L).i32(1).op(I32_ADD).set(L).br(BR, 'row');
    b.end().end();
  }
  b.end();
  b.get(S).i32(1).op(I32_ADD).set(S).br(BR, 'column');
  b.end().end();
  b.get(P)
    .get(OUT)
    .op(I32_STORE, 2, ...uleb(P_OUT));
  b.get(S).op(RETURN, 0x0b);
  return [3, 18, I32, 4, I64, 2, F64, ...b.code];
}

/** The module's bytes: one function ("cells") on an imported memory ("env" "memory", the counting instance's). */
export function plainCellsModule(): Uint8Array {
  const body = cellsBody();
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, [1, 0x60, 2, I32, I32, 1, I32]),
    ...section(2, [1, ...name('env'), ...name('memory'), 0x02, 0x00, 0]),
    ...section(3, [1, 0]),
    ...section(7, [1, ...name('cells'), 0x00, 0]),
    ...section(10, [1, ...uleb(body.length), ...body]),
  ]);
}

/** What {@link writeCells} draws. Strings are what drawCells prints for the same grid. */
export interface CellsGrid {
  /** Where the column-major Uint32 counts are in the scanner's memory, and rows a column there. */
  countsBase: number;
  stride: number;
  /** Columns and rows drawn (from 0). */
  columns: number;
  rows: number;
  largestCount: number;
  /** Per drawn row: its y, and its range label as a JavaScript string literal (XML-escaped). */
  rowY: string[];
  rangeLabels: string[];
  /** Per drawn column: x, width and the time label's literal. */
  columnPieces: (s: number) => [x: string, width: string, time: string];
  /** The cell height as printed. */
  heightText: string;
}

interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: { cells: (params: number, from: number) => number } };
}

let compiled: object | undefined;

/**
 * The SVG bytes `head`, the drawn cells of `g` and `tail`, written into `scanner`'s memory above everything in it
 * (PlainScanner.reserveTop): the returned bytes are a view of that memory (valid until it grows again).
 */
export function writeCells(
  scanner: PlainScanner,
  g: CellsGrid,
  head: Uint8Array,
  tail: Uint8Array,
): { bytes: Uint8Array; cells: number } {
  const consts = [
    '<rect x="',
    '" y="',
    '" width="',
    `" height="${g.heightText}" fill="rgb(255,`,
    ')" onmouseover="s(',
    ')" onmouseout="c()" />\n',
  ];
  const pieces: string[] = [...consts];
  let maxRow = 0;
  for (let l = 0; l < g.rows; l++) {
    pieces.push(g.rowY[l]!, g.rangeLabels[l]!);
    maxRow = Math.max(maxRow, Buffer.byteLength(g.rowY[l]!) + Buffer.byteLength(g.rangeLabels[l]!));
  }
  let maxCol = 0;
  for (let s = 0; s < g.columns; s++) {
    const p = g.columnPieces(s);
    pieces.push(p[0], p[1], p[2]);
    maxCol = Math.max(maxCol, p[0].length + p[1].length + p[2].length);
  }
  const text = Buffer.from(pieces.join(''));
  const tabAt = scanner.reserveTop(PARAM_BYTES + 8 * pieces.length + text.length);
  let mem = scanner.memory;
  const textAt = tabAt + PARAM_BYTES + 8 * pieces.length;
  new Uint8Array(mem.buffer, textAt, text.length).set(text);
  const tab = new Int32Array(mem.buffer, tabAt + PARAM_BYTES, 2 * pieces.length);
  let at = textAt;
  for (let k = 0; k < pieces.length; k++) {
    // Pieces other than the row labels are ASCII: their length is their byte length.
    const len = k >= 6 && k < 6 + 2 * g.rows && k % 2 === 1 ? Buffer.byteLength(pieces[k]!) : pieces[k]!.length;
    tab[2 * k] = at;
    tab[2 * k + 1] = len;
    at += len;
  }
  // Per cell: the constant pieces, the longest row and column pieces, the colour's two components (3 digits each),
  // count (10 digits), acc and total (up to 19 digits each) and 5 commas.
  const perCell = consts.join('').length + maxRow + maxCol + 6 + 10 + 38 + 5;
  const perCol = perCell * g.rows;
  // The output: all of it if that is below 64 MiB, else 64 MiB at a time (pages not written cost nothing).
  const want = head.length + Math.min(g.columns * perCol, 64 << 20) + tail.length;
  const outAt = scanner.reserveTop(want);
  mem = scanner.memory;
  new Uint8Array(mem.buffer, outAt, head.length).set(head);
  const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
  compiled ??= new wasm.Module(Buffer.from(PLAIN_CELLS_WASM, 'base64'));
  const { cells } = new wasm.Instance(compiled, { env: { memory: mem as ScanMemory } }).exports;
  new Int32Array(mem.buffer, tabAt, PARAM_BYTES / 4)[P_CELLS / 4] = 0;
  let end = outAt + want;
  let out = outAt + head.length;
  for (let s = 0; s < g.columns;) {
    const p = new Int32Array(scanner.memory.buffer, tabAt, PARAM_BYTES / 4);
    p[P_COUNTS / 4] = g.countsBase;
    p[P_STRIDE / 4] = g.stride;
    p[P_COLUMNS / 4] = g.columns;
    p[P_ROWS / 4] = g.rows;
    p[P_TAB / 4] = tabAt + PARAM_BYTES;
    p[P_OUT / 4] = out;
    p[P_LIMIT / 4] = end - tail.length;
    p[P_PERCOL / 4] = perCol;
    new Float64Array(scanner.memory.buffer, tabAt + P_LARGEST, 1)[0] = g.largestCount;
    s = cells(tabAt, s);
    out = new Int32Array(scanner.memory.buffer, tabAt, PARAM_BYTES / 4)[P_OUT / 4]!;
    if (s < g.columns) {
      end += Math.max(perCol, 64 << 20);
      scanner.extendTop(end);
    }
  }
  const bytes = new Uint8Array(scanner.memory.buffer, outAt, out - outAt + tail.length);
  bytes.set(tail, out - outAt);
  return { bytes, cells: new Int32Array(scanner.memory.buffer, tabAt, PARAM_BYTES / 4)[P_CELLS / 4]! };
}
