/**
 * Folded output of a StackTable's stacks in WebAssembly (stack-lines.c, compiled into stack-lines-wasm.ts): the
 * stacks sorted by the byte order of their texts and written as "t0;t1;...;tn count\n" lines, a window of bytes at a
 * time, stacks with the same tokens summed into one line. It gives the same bytes as StackTable's JavaScript writer
 * (test/flame/collapse-stack-lines.test.ts) in a fraction of its time: on synth-200M's 37,663 stacks the JavaScript
 * sort and writer took ~150-200 ms, most of it before V8 had optimized them (bench/results/flame-issue14.md,
 * section lines13).
 *
 * Conditions, checked before any output (null: the caller writes the lines itself): no name contains ";" (texts are
 * then a function of the token sequences) and the counts are integers whose total is below 2^53 (no sum can then
 * lose precision; the caller keeps larger counts as bigint). The window grows for a line longer than it.
 *
 * Memory (one module instance per call, freed after it; byte addresses): the state block at 64-191 (S_* below, as in
 * stack-lines.c), then the name bytes and offsets, the token arena, per-stack first token, token count and count,
 * the keys and a merge sort's scratch, the output order, the sort's pending ranges, the prefix lengths and the
 * output window.
 */
import { STACK_LINES_WASM } from './stack-lines-wasm.js';
import { instantiate, newMemory, PAGE, type WasmMemory } from './wasm.js';

const S_NAMES = 64;
const S_STACKS = 68;
const S_NB = 72;
const S_NO = 76;
const S_AR = 80;
const S_OF = 84;
const S_LE = 88;
const S_CN = 92;
const S_KEYS = 96;
const S_TMP = 100;
const S_ORDER = 104;
const S_WORK = 108;
const S_PB = 112;
const S_OUT = 116;
const S_OUTCAP = 120;
const S_R = 124;
const S_POS = 128;
const S_FROM = 132;
const S_PREV = 136;
const BASE = 256;
/** Byte address of the arena in a memory from `arenaMemory` (the first area of foldedLines' layout). */
export const ARENA_AT = BASE;

/** The slice of the WebAssembly JS API used here (TypeScript's ES2022 lib has no WebAssembly types). */

/** The stacks as StackTable keeps them: stack e is the name ids `arena[off[e], off[e] + len[e])`, counted `count[e]`. */
export interface StackArrays {
  names: readonly string[];
  arena: Int32Array;
  arenaLen: number;
  off: Int32Array;
  len: Int32Array;
  count: Float64Array;
  /** Number of stacks (the arrays may be longer). */
  size: number;
  /**
   * The memory to work in (from `arenaMemory`, `arena` being its view at ARENA_AT); default: a new one. Its content
   * is overwritten: the arena too (its ids become ranks), so the stacks can be written only once.
   */
  memory?: WasmMemory;
  /**
   * Other tables' stacks to write with these (another thread's, StackTable.exportStacks), whose name ids are
   * `idOf[id]` in `names`; a stack in several tables is one line with the sum of its counts.
   */
  parts?: StackPart[];
}

/** Another table's stacks (arrays as in StackArrays, each exactly as long as used) and its ids' map into `names`. */
export interface StackPart {
  arena: Int32Array;
  off: Int32Array;
  len: Int32Array;
  count: Float64Array;
  idOf: Int32Array;
}

/** Byte addresses of foldedLines' areas, each 8-aligned, and the end of the last (`top`). */
function layout(
  t: { names: { length: number }; size: number; arenaLen: number },
  nameBytes: number,
  maxLen: number,
  pieceBytes: number,
): Record<'nb' | 'no' | 'ar' | 'of' | 'le' | 'cn' | 'keys' | 'tmp' | 'order' | 'work' | 'pb' | 'out' | 'top', number> {
  const n = t.names.length;
  const size = t.size;
  let top = BASE;
  const area = (bytes: number): number => {
    const at = top;
    top = (top + bytes + 7) & ~7;
    return at;
  };
  const ar = area(t.arenaLen * 4);
  const nb = area(nameBytes);
  const no = area((n + 1) * 4);
  const of = area(size * 4);
  const le = area(size * 4);
  const cn = area(size * 8);
  const keys = area(2 * n * 4);
  const tmp = area(2 * n * 4);
  const order = area(size * 4);
  const work = area(3 * ((size >> 1) + 2) * 4);
  const pb = area((maxLen + 1) * 4);
  const out = area(pieceBytes);
  return { nb, no, ar, of, le, cn, keys, tmp, order, work, pb, out, top };
}

/**
 * A memory holding an int32 arena of `ints` at ARENA_AT (reserved: only the pages written become memory), for a
 * StackTable whose stacks foldedLines then takes where they are: no copy of the arena, whose pages were written
 * while the stacks were counted.
 */
export function arenaMemory(ints: number): WasmMemory {
  return newMemory(Math.ceil((ARENA_AT + ints * 4) / PAGE));
}

/**
 * The folded lines of `t`'s stacks, sorted, as pieces of about `pieceBytes` (each valid until the next is taken: write
 * or copy it first); null, before any piece, when a condition above does not hold and the caller must write them.
 * Names are written as latin1 bytes.
 */
export function foldedLines(t: StackArrays, pieceBytes = 1 << 20): Generator<Buffer> | null {
  const { names } = t;
  const parts = t.parts ?? [];
  const n = names.length;
  // All names as one latin1 string (one char, one byte): one scan for ";" and one write into the memory.
  const joined = names.join('');
  if (joined.includes(';')) return null;
  const nameBytes = joined.length;
  let maxLen = 0;
  let total = 0;
  let size = 0;
  let arenaLen = t.arenaLen;
  // This table's stacks (the first t.size of its arrays), then each other table's (its arrays exactly).
  for (const { len, count, m } of [{ ...t, m: t.size }, ...parts.map((p) => ({ ...p, m: p.off.length }))]) {
    for (let e = 0; e < m; e++) {
      if (len[e]! > maxLen) maxLen = len[e]!;
      total += count[e]!;
    }
    size += m;
  }
  if (!(total <= Number.MAX_SAFE_INTEGER)) return null;
  for (const p of parts) arenaLen += p.arena.length;
  const all = { names, size, arenaLen };
  const { nb, no, ar, of, le, cn, keys, tmp, order, work, pb, out, top } = layout(all, nameBytes, maxLen, pieceBytes);
  let memory = t.memory;
  // The arena already where it is laid out: the memory's own view at ARENA_AT (taken before any grow detaches it).
  const inPlace = memory !== undefined && t.arena.buffer === memory.buffer && t.arena.byteOffset === ar;
  if (memory && memory.buffer.byteLength < top) memory.grow(Math.ceil((top - memory.buffer.byteLength) / PAGE));
  memory ??= newMemory(Math.ceil(top / PAGE));
  const ex = instantiate(STACK_LINES_WASM, memory);
  let buf = memory.buffer;
  let i32 = new Int32Array(buf);
  let u8 = Buffer.from(buf);
  const state: [number, number][] = [
    [S_NAMES, n],
    [S_STACKS, size],
    [S_NB, nb],
    [S_NO, no],
    [S_AR, ar],
    [S_OF, of],
    [S_LE, le],
    [S_CN, cn],
    [S_KEYS, keys],
    [S_TMP, tmp],
    [S_ORDER, order],
    [S_WORK, work],
    [S_PB, pb],
    [S_OUT, out],
    [S_OUTCAP, pieceBytes],
    [S_R, 0],
    [S_POS, 0],
    [S_PREV, -1],
  ];
  for (const [at, v] of state) i32[at >> 2] = v;
  u8.write(joined, nb, 'latin1');
  for (let i = 0, at = 0; i < n; i++) {
    i32[(no >> 2) + i] = at;
    at += names[i]!.length;
    i32[(no >> 2) + i + 1] = at;
  }
  const counts = new Float64Array(buf, cn, size);
  if (!inPlace) i32.set(t.arena.subarray(0, t.arenaLen), ar >> 2);
  i32.set(t.off.subarray(0, t.size), of >> 2);
  i32.set(t.len.subarray(0, t.size), le >> 2);
  counts.set(t.count.subarray(0, t.size));
  // The other tables after this one's: arenas copied and their ids mapped (idOf in the keys' area, not used yet).
  const remap = ex.remap as (from: number, to: number, idOf: number) => void;
  let e0 = t.size;
  let a0 = t.arenaLen;
  for (const p of parts) {
    const m = p.off.length;
    const at = ar + a0 * 4;
    i32.set(p.arena, at >> 2);
    i32.set(p.idOf, keys >> 2);
    remap(at, at + p.arena.length * 4, keys);
    for (let e = 0; e < m; e++) i32[(of >> 2) + e0 + e] = p.off[e]! + a0;
    i32.set(p.len, (le >> 2) + e0);
    counts.set(p.count, e0);
    e0 += m;
    a0 += p.arena.length;
  }
  (ex.prepare as () => number)();
  (ex.sort as () => void)();
  const lines = ex.lines as () => number;
  return (function* (): Generator<Buffer> {
    for (;;) {
      const status = lines();
      if (status === -2) {
        // A line longer than the window: make the window (the memory's last area) twice as long.
        const cap = i32[S_OUTCAP >> 2]! * 2;
        if (out + cap > buf.byteLength) memory.grow(Math.ceil((out + cap - buf.byteLength) / PAGE));
        buf = memory.buffer;
        i32 = new Int32Array(buf);
        u8 = Buffer.from(buf);
        i32[S_OUTCAP >> 2] = cap;
        continue;
      }
      if (status < 0) throw new Error(`stack-lines.c: lines() returned ${status}`);
      const from = i32[S_FROM >> 2]!;
      const pos = i32[S_POS >> 2]!;
      if (pos > from) yield u8.subarray(out + from, out + pos);
      if (status === 0) return;
    }
  })();
}
