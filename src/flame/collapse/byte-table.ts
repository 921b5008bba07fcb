/**
 * An open-addressing hash table keyed by byte ranges of the input, for collapsers that see the same line text
 * (a frame's symbol and DSO) millions of times: a hit costs one hash of the bytes and one exact comparison, read
 * four bytes at a time, and allocates nothing. Each entry holds a mode number, a list of int32 ids, and four
 * "successors" the caller may use to predict the next key: stack lines repeat in the same order, so a predicted key
 * is checked by its length and one comparison, without hashing it.
 *
 * Layout is chosen for cache misses, which dominate on large inputs: an entry is one record in one buffer, header,
 * ids and key bytes together, so that a hit touches the slot array and one or two adjacent cache lines, and a
 * predicted hit only the previous record and the predicted one.
 *
 * Record at int32 index e of `words`:
 *   e+0 hash, e+1 key length in bytes, e+2 mode, e+3 id count n,
 *   e+4 .. e+11 four successors, most recent first, as (entry, key length) pairs (entry -1: none; the length
 *     rejects most wrong predictions without reading their records),
 *   e+12 .. e+12+n-1 ids, then the key bytes (padded to 4).
 */

const K1 = 0x01000193;
const HEADER = 12;

/** Start value of {@link hashBytes}; callers that hash while scanning continue from it with {@link hashWord}. */
export const HASH_SEED = 0x811c9dc5;

/** One step of {@link hashBytes}: mixes a 32-bit word (or, for the last 0-3 bytes, one byte) into `h`. */
export function hashWord(h: number, w: number): number {
  return Math.imul(h ^ w, K1);
}

/** The last step of {@link hashBytes}: mixes in the length and spreads the bits. 30 bits. */
export function hashFinish(h: number, len: number): number {
  h ^= Math.imul(len, 0x9e3779b1);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  return h & 0x3fffffff;
}

/**
 * Hash of bytes [start, end) of `dv`: FNV-style over little-endian 32-bit words from `start`, then the remaining
 * 0-3 bytes one by one, then the length. 30 bits, so that it stays a small integer (unboxed) in V8 wherever it is
 * passed or stored.
 */
export function hashBytes(dv: DataView, start: number, end: number): number {
  let h = HASH_SEED;
  let i = start;
  for (; i + 4 <= end; i += 4) h = hashWord(h, dv.getInt32(i, true));
  for (; i < end; i++) h = hashWord(h, dv.getUint8(i));
  return hashFinish(h, end - start);
}

export class ByteTable {
  private slots = new Int32Array(1 << 12).fill(-1);
  // A reservation (see stack-table.ts ARENA_RESERVE): only the pages written become memory.
  private buffer = new ArrayBuffer(1 << 22);
  /** The records as int32s (read ids from here: `words[idsStart(e) + k]`). */
  words = new Int32Array(this.buffer);
  private view = new DataView(this.buffer);
  private bytes = new Uint8Array(this.buffer);
  private used = 0; // in int32s
  private count = 0;
  /** Free for the caller: the entry predicted at the start of a sequence (-1: none). */
  first = -1;

  /** Number of keys. */
  get size(): number {
    return this.count;
  }

  /** The entry for bytes [start, end) of `dv` with hash `h` (from {@link hashBytes}), or -1. */
  find(dv: DataView, start: number, end: number, h: number): number {
    const slots = this.slots;
    const words = this.words;
    const mask = slots.length - 1;
    const len = end - start;
    for (let s = h & mask; ; s = (s + 1) & mask) {
      const e = slots[s]!;
      if (e < 0) return -1;
      if (words[e] === h && words[e + 1] === len && this.same(dv, start, e, len)) return e;
    }
  }

  /** Whether entry `e`'s key is exactly bytes [start, end) of `dv` (for checking a predicted entry). */
  matches(e: number, dv: DataView, start: number, end: number): boolean {
    const len = end - start;
    return this.words[e + 1] === len && this.same(dv, start, e, len);
  }

  private same(dv: DataView, start: number, e: number, len: number): boolean {
    const w = this.words;
    const at = e + HEADER + w[e + 3]!; // in int32s
    if (len < 4) {
      const kb = this.bytes;
      for (let k = 0; k < len; k++) if (dv.getUint8(start + k) !== kb[(at << 2) + k]) return false;
      return true;
    }
    // Whole words, then the last four bytes (overlapping the last word when len is not a multiple of 4).
    const last = len - 4;
    for (let k = 0; k < last; k += 4) if (dv.getInt32(start + k, true) !== w[at + (k >> 2)]) return false;
    return dv.getInt32(start + last, true) === this.view.getInt32((at << 2) + last, true);
  }

  /** Entry `e`'s mode (given at insert). */
  mode(e: number): number {
    return this.words[e + 2]!;
  }

  /** Index in `words` of entry `e`'s first id; `idCount(e)` ids follow. */
  idsStart(e: number): number {
    return e + HEADER;
  }

  idCount(e: number): number {
    return this.words[e + 3]!;
  }

  /**
   * The successor of `e` whose key is bytes [start, end) of `dv`, or -1. Successors of another length are
   * rejected by their length alone.
   */
  predicted(e: number, dv: DataView, start: number, end: number): number {
    const w = this.words;
    const len = end - start;
    for (let k = e + 4; k < e + HEADER; k += 2) {
      const s = w[k]!;
      if (s < 0) return -1;
      if (w[k + 1] === len && this.same(dv, start, s, len)) return s;
    }
    return -1;
  }

  /** Records `next` as the most recent successor of `e`; the oldest of four is dropped. */
  addSuccessor(e: number, next: number): void {
    const w = this.words;
    w.copyWithin(e + 6, e + 4, e + 10);
    w[e + 4] = next;
    w[e + 5] = w[next + 1]!;
  }

  /** Adds bytes [start, end) of `src` (not present; hash `h`) with `mode` and `ids`; returns the entry. */
  insert(src: Uint8Array, start: number, end: number, h: number, mode: number, ids: Int32Array): number {
    const len = end - start;
    const size = HEADER + ids.length + ((len + 3) >> 2);
    if (this.used + size > this.words.length) {
      const bigger = new ArrayBuffer(Math.max(this.buffer.byteLength * 2, (this.used + size) * 4));
      new Uint8Array(bigger).set(new Uint8Array(this.buffer, 0, this.used * 4));
      this.buffer = bigger;
      this.words = new Int32Array(bigger);
      this.view = new DataView(bigger);
      this.bytes = new Uint8Array(bigger);
    }
    const e = this.used;
    const w = this.words;
    w[e] = h;
    w[e + 1] = len;
    w[e + 2] = mode;
    w[e + 3] = ids.length;
    w.fill(-1, e + 4, e + HEADER);
    // Native copies: this runs once per distinct key, too rarely for a JavaScript loop to get optimized.
    w.set(ids, e + HEADER);
    this.bytes.set(src.subarray(start, end), (e + HEADER + ids.length) << 2);
    this.used += size;
    this.count++;
    if (this.count * 2 > this.slots.length) this.rehash();
    else this.place(e);
    return e;
  }

  private place(e: number): void {
    const slots = this.slots;
    const mask = slots.length - 1;
    let s = this.words[e]! & mask;
    while (slots[s]! >= 0) s = (s + 1) & mask;
    slots[s] = e;
  }

  private rehash(): void {
    this.slots = new Int32Array(this.slots.length * 2).fill(-1);
    const w = this.words;
    for (let e = 0; e < this.used; e += HEADER + w[e + 3]! + ((w[e + 1]! + 3) >> 2)) this.place(e);
  }
}
