/**
 * Counting distinct stacks for collapsers: a stack is a sequence of interned ids (a process name, then frames in
 * a fixed order the collapser chooses), hashed into a table with its summed count. At the end the stacks come out
 * as folded lines ("text count\n", bytes) in byte order of their text, without building the texts as strings (the
 * texts of a large profile are tens of MB; the ids a fraction of that).
 *
 * All sequences live in one Int32Array arena and per-stack data in typed arrays, so that lookups, sorting and
 * output walk contiguous memory instead of thousands of small objects.
 *
 * Counts follow Perl's arithmetic as stackcollapse-perf.pl prints it: exact integers below 2^64, doubles above.
 */
import { perlNum } from '../perl.js';
import { ARENA_AT, arenaMemory, foldedLines, type StackArrays, type StackPart } from './stack-lines.js';
import type { WasmMemory } from './wasm.js';

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const TWO_64 = 1n << 64n;
/**
 * First sizes of the arena (int32s) and of the per-stack arrays. They are reservations, not memory used: a new
 * typed array is zero pages that the OS provides on first touch, so only what is written counts (RSS), and tables
 * up to these sizes never grow by copying. Copying mattered: each doubling wrote a fresh buffer, and a first-touched
 * page costs ~16 us of CPU on the bench VM (64 MiB: ~16,400 page faults, ~260 ms).
 */
const ARENA_RESERVE = 1 << 22;
const ENTRY_RESERVE = 1 << 16;
/** Separator between frames in folded text. */
const SEMI = 0x3b;

/** Interned strings: equal strings get the same id (ids are indexes into `names`). */
export class Interner {
  readonly names: string[] = [];
  private readonly ids = new Map<string, number>();

  /** The id of `s`, adding it when new. */
  id(s: string): number {
    let id = this.ids.get(s);
    if (id === undefined) {
      id = this.names.length;
      this.names.push(s);
      this.ids.set(s, id);
    }
    return id;
  }
}

/** A StackTable's content as `StackTable.exportStacks` gives it (structured-clonable: it can cross threads). */
export interface ExportedStacks {
  /** The names the ids index. */
  names: string[];
  arena: Int32Array;
  off: Int32Array;
  len: Int32Array;
  count: Float64Array;
  /** [stack, count] for counts kept as bigint (beyond 2^53). */
  big: [number, bigint][];
}

/**
 * Distinct stacks and their counts. `reversed`: the frame ids after the first are given leaf first (as perf prints
 * them) and printed in reverse. Stacks are stored in printed order.
 */
export class StackTable {
  private arena: Int32Array;
  private arenaLen = 0;
  private off = new Int32Array(ENTRY_RESERVE);
  private len = new Int32Array(ENTRY_RESERVE);
  private hash = new Int32Array(ENTRY_RESERVE);
  private count = new Float64Array(ENTRY_RESERVE);
  /** Counts beyond 2^53, by stack. */
  private readonly big = new Map<number, bigint>();
  private slots = new Int32Array(1 << 11).fill(-1);
  private size = 0;
  /** The WebAssembly memory holding the arena, where `lines()` then works (none for a `transferable` table). */
  private linesMemory: WasmMemory | undefined;
  /** Other tables' stacks given to `addStacks`, not yet added (see there). */
  private pending: StackPart[] = [];

  /** Whether lines() took the stacks (they were written over in the arena's memory). */
  private written = false;

  /**
   * `transferable`: the arena is an ArrayBuffer of its own, for a table another thread will take (`exportStacks`);
   * otherwise it lives in a WebAssembly memory where the output is then sorted and written without copying it.
   */
  constructor(
    private readonly names: string[],
    private readonly reversed: boolean,
    opts: { transferable?: boolean; arenaInts?: number } = {},
  ) {
    const ints = opts.arenaInts ?? ARENA_RESERVE; // (smaller in tests, to see it grow)
    if (opts.transferable) {
      this.arena = new Int32Array(ints);
    } else {
      this.linesMemory = arenaMemory(ints);
      this.arena = new Int32Array(this.linesMemory.buffer, ARENA_AT, ints);
    }
  }

  /** Number of distinct stacks. */
  get distinct(): number {
    this.settle();
    return this.size;
  }

  /**
   * Adds `count` (or `big`, when the count does not fit a double exactly) to the stack `first, ids[0..len)`.
   */
  add(first: number, ids: Int32Array, n: number, count: number, big: bigint | null): void {
    if (this.pending.length > 0) this.settle();
    let h = Math.imul(first + 1, 0x9e3779b1);
    for (let i = 0; i < n; i++) {
      h = Math.imul(h ^ ids[i]!, 0x01000193);
      h ^= h >>> 15;
    }
    h &= 0x3fffffff;
    const slots = this.slots;
    const mask = slots.length - 1;
    const arena = this.arena;
    const rev = this.reversed;
    let s = h & mask;
    for (;;) {
      const e = slots[s]!;
      if (e < 0) break;
      if (this.hash[e] === h && this.len[e] === n + 1) {
        const o = this.off[e]!;
        if (arena[o] === first) {
          let i = 0;
          if (rev) while (i < n && arena[o + n - i] === ids[i]) i++;
          else while (i < n && arena[o + 1 + i] === ids[i]) i++;
          if (i === n) {
            this.addCount(e, count, big);
            return;
          }
        }
      }
      s = (s + 1) & mask;
    }
    const e = this.size++;
    if (e === this.off.length) this.growEntries();
    if (this.arenaLen + n + 1 > this.arena.length) this.growArena(n + 1);
    const a = this.arena;
    const o = this.arenaLen;
    a[o] = first;
    if (rev) for (let i = 0; i < n; i++) a[o + n - i] = ids[i]!;
    else for (let i = 0; i < n; i++) a[o + 1 + i] = ids[i]!;
    this.arenaLen += n + 1;
    this.off[e] = o;
    this.len[e] = n + 1;
    this.hash[e] = h;
    this.count[e] = 0;
    this.addCount(e, count, big);
    if (this.size * 2 > slots.length) this.rehash();
    else slots[s] = e;
  }

  private arrays(): StackArrays {
    return {
      names: this.names,
      arena: this.arena,
      arenaLen: this.arenaLen,
      off: this.off,
      len: this.len,
      count: this.count,
      size: this.size,
      memory: this.linesMemory,
      parts: this.pending,
    };
  }

  /**
   * This table's stacks in a form another thread can take: per stack its ids in printed order at
   * `arena[off[e], off[e] + len[e])`, its count, and the counts beyond 2^53 by stack. The typed arrays are views of
   * this table's own (not copies): transfer their buffers, and use this table no more.
   */
  exportStacks(): ExportedStacks {
    const n = this.size;
    return {
      names: this.names,
      // (An arena in a WebAssembly memory cannot be transferred: a copy.)
      arena: this.linesMemory ? this.arena.slice(0, this.arenaLen) : this.arena.subarray(0, this.arenaLen),
      off: this.off.subarray(0, n),
      len: this.len.subarray(0, n),
      count: this.count.subarray(0, n),
      big: [...this.big],
    };
  }

  /**
   * Adds the stacks of another table (`exportStacks()`, from a collapser that read another part of the input):
   * `idOf[i]` is this table's id for the other table's id `i`. Counts of equal stacks are summed. The stacks wait
   * until the output, whose WebAssembly writer takes them as they are and sums equal stacks while writing (no hashing
   * here); anything else that reads the table first adds them here (`settle`).
   */
  addStacks(other: ExportedStacks, idOf: Int32Array): void {
    if (other.big.length > 0) {
      this.settle();
      this.addNow(other, idOf);
      return;
    }
    this.pending.push({ arena: other.arena, off: other.off, len: other.len, count: other.count, idOf });
  }

  /** Adds the stacks waiting in `pending` to the table. */
  private settle(): void {
    const pending = this.pending;
    this.pending = [];
    for (const p of pending) this.addNow({ names: [], ...p, big: [] }, p.idOf);
  }

  private addNow(other: ExportedStacks, idOf: Int32Array): void {
    const { arena, off, len, count } = other;
    const big = new Map(other.big);
    let ids = new Int32Array(256);
    for (let e = 0; e < off.length; e++) {
      const o = off[e]!;
      const n = len[e]! - 1;
      if (n > ids.length) ids = new Int32Array(n * 2);
      // add() takes the frames after the first in the order it was given them (leaf first when reversed).
      if (this.reversed) for (let i = 0; i < n; i++) ids[i] = idOf[arena[o + n - i]!]!;
      else for (let i = 0; i < n; i++) ids[i] = idOf[arena[o + 1 + i]!]!;
      const b = big.get(e) ?? null;
      this.add(idOf[arena[o]!]!, ids, n, b === null ? count[e]! : Number(b), b);
    }
  }

  private addCount(e: number, count: number, big: bigint | null): void {
    const prev = this.big.get(e);
    if (big === null && prev === undefined && this.count[e]! + count <= MAX_SAFE) {
      this.count[e] = this.count[e]! + count;
    } else {
      this.big.set(e, (prev ?? BigInt(this.count[e]!)) + (big ?? BigInt(count)));
    }
  }

  /** Room for `more` ints after the arena's used part: its memory grown (in place) or a copy twice as large. */
  private growArena(more: number): void {
    const ints = Math.max(this.arena.length * 2, this.arenaLen + more);
    const memory = this.linesMemory;
    if (memory && this.arena.buffer === memory.buffer) {
      const need = ARENA_AT + ints * 4 - memory.buffer.byteLength;
      if (need > 0) memory.grow(Math.ceil(need / 65536));
      this.arena = new Int32Array(memory.buffer, ARENA_AT, (memory.buffer.byteLength - ARENA_AT) >> 2);
      return;
    }
    const bigger = new Int32Array(ints);
    bigger.set(this.arena.subarray(0, this.arenaLen));
    this.arena = bigger;
  }

  private growEntries(): void {
    const n = this.off.length * 2;
    const g32 = (a: Int32Array): Int32Array<ArrayBuffer> => {
      const b = new Int32Array(n);
      b.set(a);
      return b;
    };
    this.off = g32(this.off);
    this.len = g32(this.len);
    this.hash = g32(this.hash);
    const c = new Float64Array(n);
    c.set(this.count);
    this.count = c;
  }

  private rehash(): void {
    const slots = new Int32Array(this.slots.length * 2).fill(-1);
    const mask = slots.length - 1;
    for (let e = 0; e < this.size; e++) {
      let s = this.hash[e]! & mask;
      while (slots[s]! >= 0) s = (s + 1) & mask;
      slots[s] = e;
    }
    this.slots = slots;
  }

  private countText(e: number): string {
    const b = this.big.get(e);
    if (b === undefined) return String(this.count[e]!);
    return b >= TWO_64 ? perlNum(Number(b)) : b.toString();
  }

  /**
   * The folded lines ("text count\n") in byte order of the text, as latin1 bytes in pieces of about `pieceBytes`.
   * A piece is only valid until the next one is requested (its memory is reused): write or copy it first. A table
   * whose arena is in WebAssembly memory (not `transferable`) can be written once: the writer works in its arena.
   * Stacks whose texts coincide (possible only when a name contains ";") are merged, as a Perl hash keyed by the
   * text would.
   */
  *lines(pieceBytes = 1 << 20): Generator<Buffer> {
    const names = this.names;
    // Usually in WebAssembly (stack-lines.ts); below, the same in JavaScript for what it does not take.
    if (this.written) throw new Error('StackTable.lines(): the stacks were written already');
    // The writer works in the arena itself when it is in its memory (then the stacks can be written only once).
    const inPlace = this.linesMemory !== undefined && this.arena.buffer === this.linesMemory.buffer;
    const fast = this.big.size === 0 ? foldedLines(this.arrays(), pieceBytes) : null;
    if (fast) {
      this.written = inPlace;
      yield* fast;
      return;
    }
    this.settle();
    if (names.some((n) => n.includes(';'))) {
      yield* this.linesByText(pieceBytes);
      return;
    }
    // Names as bytes, in one arena.
    let total = 0;
    for (const n of names) total += n.length;
    const nameBytes = Buffer.allocUnsafe(total);
    const nameOff = new Int32Array(names.length + 1);
    for (let i = 0, at = 0; i < names.length; i++) {
      nameOff[i] = at;
      at += nameBytes.write(names[i]!, at, 'latin1');
      nameOff[i + 1] = at;
    }
    const order = this.sortedEntries();
    const arena = this.arena;
    // Sorted texts share long prefixes: a line starts as a copy of the previous line's shared part.
    const prefixBytes = [0]; // prefixBytes[k]: length of the text of the first k tokens
    let chunk: Buffer = Buffer.allocUnsafe(pieceBytes);
    let pos = 0;
    let prevStart = -1; // start of the previous line in `chunk`, -1 when it is not there
    let prevChunk: Buffer | null = null;
    let prevLineStart = 0;
    let prevOff = 0;
    let prevLen = 0;
    for (let r = 0; r < order.length; r++) {
      const e = order[r]!;
      const o = this.off[e]!;
      const n = this.len[e]!;
      let c = 0;
      if (r > 0) {
        const m = n < prevLen ? n : prevLen;
        while (c < m && arena[o + c] === arena[prevOff + c]) c++;
      }
      const countText = this.countText(e);
      let need = prefixBytes[c]! + countText.length + 2;
      for (let k = c; k < n; k++) need += (k > 0 ? 1 : 0) + nameOff[arena[o + k]! + 1]! - nameOff[arena[o + k]!]!;
      if (pos + need > chunk.length) {
        if (pos > 0) yield chunk.subarray(0, pos);
        // Two buffers take turns: the next line may copy its prefix from the previous line, in the other one.
        const spare: Buffer | null = prevChunk;
        prevChunk = chunk;
        prevLineStart = prevStart;
        chunk = spare && spare.length >= need ? spare : Buffer.allocUnsafe(Math.max(pieceBytes, need));
        pos = 0;
        prevStart = -1;
      }
      const start = pos;
      if (c > 0) {
        if (prevStart >= 0) chunk.copyWithin(pos, prevStart, prevStart + prefixBytes[c]!);
        else prevChunk!.copy(chunk, pos, prevLineStart, prevLineStart + prefixBytes[c]!);
        pos += prefixBytes[c]!;
      }
      for (let k = c; k < n; k++) {
        if (k > 0) chunk[pos++] = SEMI;
        const id = arena[o + k]!;
        const from = nameOff[id]!;
        const stop = nameOff[id + 1]!;
        // Long names by the native copy (this loop runs once, largely before V8 has optimized it).
        if (stop - from > 24) pos += nameBytes.copy(chunk, pos, from, stop);
        else for (let b = from; b < stop; b++) chunk[pos++] = nameBytes[b]!;
        prefixBytes[k + 1] = pos - start;
      }
      chunk[pos++] = 0x20;
      for (let i = 0; i < countText.length; i++) chunk[pos++] = countText.charCodeAt(i);
      chunk[pos++] = 0x0a;
      prevStart = start;
      prevOff = o;
      prevLen = n;
    }
    if (pos > 0) yield chunk.subarray(0, pos);
  }

  private text(e: number): string {
    const o = this.off[e]!;
    const parts: string[] = new Array(this.len[e]!);
    for (let i = 0; i < parts.length; i++) parts[i] = this.names[this.arena[o + i]!]!;
    return parts.join(';');
  }

  /** Rare case: texts are not a function of the token sequence alone; compare real texts, merge equal ones. */
  private *linesByText(pieceBytes: number): Generator<Buffer> {
    const byText = new Map<string, number>();
    for (let e = 0; e < this.size; e++) {
      const text = this.text(e);
      const prev = byText.get(text);
      if (prev === undefined) {
        byText.set(text, e);
      } else {
        const sum = (this.big.get(prev) ?? BigInt(this.count[prev]!)) + (this.big.get(e) ?? BigInt(this.count[e]!));
        this.big.set(prev, sum);
      }
    }
    let piece: string[] = [];
    let bytes = 0;
    for (const text of [...byText.keys()].sort()) {
      const line = `${text} ${this.countText(byText.get(text)!)}\n`;
      piece.push(line);
      bytes += line.length;
      if (bytes >= pieceBytes) {
        yield Buffer.from(piece.join(''), 'latin1');
        piece = [];
        bytes = 0;
      }
    }
    if (piece.length) yield Buffer.from(piece.join(''), 'latin1');
  }

  /**
   * Stack numbers in byte order of their texts "t0;t1;...;tn", given that no token contains ";": a most-significant-
   * token-first radix sort. A group of stacks that share their first d tokens is split by token d into buckets,
   * ordered by comparing only the group's distinct tokens (usually one or a few), and each bucket is sorted on from
   * token d+1. Shared leading tokens thus cost one integer read per stack and level, and strings are compared only
   * where stacks branch.
   */
  private sortedEntries(): Int32Array {
    const names = this.names;
    const arena = this.arena;
    const off = this.off;
    const len = this.len;
    const idx = new Int32Array(this.size);
    const tmp = new Int32Array(this.size);
    const keys = new Int32Array(this.size);
    const bucketOf = new Int32Array(2 * names.length + 1).fill(-1);
    for (let i = 0; i < idx.length; i++) idx[i] = i;
    /** Token at position d of stack e, encoded: -1 past the end, 2*id for a last token, 2*id+1 for "id;". */
    const key = (e: number, d: number): number => {
      const n = len[e]!;
      return d < n - 1 ? 2 * arena[off[e]! + d]! + 1 : d === n - 1 ? 2 * arena[off[e]! + d]! : -1;
    };
    const byToken = (a: number, b: number): number => (a === b ? 0 : compareTokens(a, b, names));
    const compareFrom = (a: number, b: number, d: number): number => {
      for (;;) {
        const ka = key(a, d);
        const kb = key(b, d);
        if (ka !== kb) return compareTokens(ka, kb, names);
        if (ka === -1) return 0;
        d++;
      }
    };
    // Explicit stack of groups [lo, hi, d] (recursion could be as deep as the stacks are long).
    const work: number[] = [0, idx.length, 0];
    while (work.length) {
      let d = work.pop()!;
      const hi = work.pop()!;
      const lo = work.pop()!;
      for (;;) {
        if (hi - lo <= 1) break;
        if (hi - lo <= 8) {
          // Small groups: insertion sort, comparing from token d on.
          for (let i = lo + 1; i < hi; i++) {
            const v = idx[i]!;
            let j = i;
            while (j > lo && compareFrom(idx[j - 1]!, v, d) > 0) {
              idx[j] = idx[j - 1]!;
              j--;
            }
            idx[j] = v;
          }
          break;
        }
        let same = true;
        const k0 = key(idx[lo]!, d);
        keys[lo] = k0;
        for (let i = lo + 1; i < hi; i++) {
          const k = key(idx[i]!, d);
          keys[i] = k;
          if (k !== k0) same = false;
        }
        if (same) {
          if (k0 === -1) break; // identical texts end here
          d++;
          continue;
        }
        // Distinct tokens of the group, in text order, and a bucket per token (bucketOf, indexed by token + 1, is
        // -1 outside this step: a typed array, not a Map, as this runs for every stack at every branching depth).
        const distinct: number[] = [];
        for (let i = lo; i < hi; i++) {
          const k = keys[i]! + 1;
          if (bucketOf[k] === -1) {
            bucketOf[k] = 0;
            distinct.push(k - 1);
          }
        }
        distinct.sort(byToken);
        const starts = new Int32Array(distinct.length + 1);
        for (let b = 0; b < distinct.length; b++) bucketOf[distinct[b]! + 1] = b;
        for (let i = lo; i < hi; i++) starts[bucketOf[keys[i]! + 1]! + 1]!++;
        for (let b = 0; b < distinct.length; b++) starts[b + 1] = starts[b + 1]! + starts[b]!;
        const fill = starts.slice();
        for (let i = lo; i < hi; i++) tmp[lo + fill[bucketOf[keys[i]! + 1]!]!++] = idx[i]!;
        for (let b = 0; b < distinct.length; b++) bucketOf[distinct[b]! + 1] = -1;
        for (let b = 0; b < distinct.length; b++) {
          const s = lo + starts[b]!;
          const e = lo + starts[b + 1]!;
          // copy back, then sort the bucket on the next token
          for (let i = s; i < e; i++) idx[i] = tmp[i]!;
          if (e - s > 1 && distinct[b] !== -1) work.push(s, e, d + 1);
        }
        break;
      }
    }
    return idx;
  }
}

/**
 * Byte order of two different encoded tokens (see sortedEntries' key): the texts compare as the strings "name"
 * (last token) or "name;" (more follow), and the end of a text sorts first. Neither string can be a proper prefix
 * of the other except "x" of "x;" or of "xy...", where the shorter text sorts first, as in byte order.
 */
function compareTokens(ka: number, kb: number, names: string[]): number {
  if (ka === -1) return -1;
  if (kb === -1) return 1;
  const x = names[ka >> 1]!;
  const y = names[kb >> 1]!;
  const xMore = (ka & 1) === 1;
  const yMore = (kb & 1) === 1;
  if (x === y) return xMore ? 1 : -1; // "x" < "x;"
  if (y.startsWith(x)) return xMore ? (SEMI < y.charCodeAt(x.length) ? -1 : 1) : -1;
  if (x.startsWith(y)) return yMore ? (x.charCodeAt(y.length) < SEMI ? -1 : 1) : 1;
  return x < y ? -1 : 1;
}
