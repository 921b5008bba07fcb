/**
 * An open-addressing hash table keyed by byte ranges of the input, for collapsers that see the same line text
 * (a frame's symbol and DSO) millions of times: a hit costs one hash of the bytes and one exact comparison, read
 * four bytes at a time, and allocates nothing. Each entry holds one integer value the caller gives meaning to, and
 * a "successor" slot the caller may use to predict the next key (stack lines repeat in the same order).
 *
 * Layout is chosen for cache misses, which dominate on large inputs: an entry's hash, key position, key length,
 * value and successor sit together in one typed array; keys sit in one byte arena in insertion order.
 */

const K1 = 0x01000193;
const STRIDE = 5; // hash, key start, key length, value, successor

/**
 * Hash of bytes [start, end) of `dv` (FNV-style over 32-bit words, then a final mix), 30 bits: small integers
 * stay unboxed in V8 wherever they are passed or stored.
 */
export function hashBytes(dv: DataView, start: number, end: number): number {
  let h = Math.imul(end - start, 0x9e3779b1) ^ 0x811c9dc5;
  let i = start;
  for (; i + 4 <= end; i += 4) h = Math.imul(h ^ dv.getInt32(i, true), K1);
  for (; i < end; i++) h = Math.imul(h ^ dv.getUint8(i), K1);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  return h & 0x3fffffff;
}

export class ByteTable {
  private slots = new Int32Array(1 << 12).fill(-1);
  private meta = new Int32Array(STRIDE << 11);
  private arena = new Uint8Array(1 << 16);
  private arenaView = new DataView(this.arena.buffer);
  private arenaLen = 0;
  private count = 0;
  /** Free for the caller: the entry predicted at the start of a sequence (-1: none). */
  first = -1;

  /** Number of keys. */
  get size(): number {
    return this.count;
  }

  /** The entry number for bytes [start, end) of `dv` with hash `h` (from {@link hashBytes}), or -1. */
  find(dv: DataView, start: number, end: number, h: number): number {
    const slots = this.slots;
    const meta = this.meta;
    const mask = slots.length - 1;
    const len = end - start;
    for (let s = h & mask; ; s = (s + 1) & mask) {
      const e = slots[s]!;
      if (e < 0) return -1;
      const m = e * STRIDE;
      if (meta[m] === h && meta[m + 2] === len && this.same(dv, start, meta[m + 1]!, len)) return e;
    }
  }

  /** Whether entry `e`'s key is exactly bytes [start, end) of `dv` (for checking a predicted entry). */
  matches(e: number, dv: DataView, start: number, end: number): boolean {
    const m = e * STRIDE;
    const len = end - start;
    return this.meta[m + 2] === len && this.same(dv, start, this.meta[m + 1]!, len);
  }

  private same(dv: DataView, start: number, at: number, len: number): boolean {
    const av = this.arenaView;
    let k = 0;
    for (; k + 4 <= len; k += 4) if (dv.getInt32(start + k, true) !== av.getInt32(at + k, true)) return false;
    for (; k < len; k++) if (dv.getUint8(start + k) !== av.getUint8(at + k)) return false;
    return true;
  }

  /** Entry `e`'s value. */
  value(e: number): number {
    return this.meta[e * STRIDE + 3]!;
  }

  /** Entry `e`'s successor (-1 until set). */
  successor(e: number): number {
    return this.meta[e * STRIDE + 4]!;
  }

  setSuccessor(e: number, next: number): void {
    this.meta[e * STRIDE + 4] = next;
  }

  /** Adds bytes [start, end) of `src` (not present; hash `h`) with `value`; returns the entry number. */
  insert(src: Uint8Array, start: number, end: number, h: number, value: number): number {
    const e = this.count++;
    if ((e + 1) * STRIDE > this.meta.length) {
      const bigger = new Int32Array(this.meta.length * 2);
      bigger.set(this.meta);
      this.meta = bigger;
    }
    const len = end - start;
    if (this.arenaLen + len > this.arena.length) {
      const bigger = new Uint8Array(Math.max(this.arena.length * 2, this.arenaLen + len));
      bigger.set(this.arena.subarray(0, this.arenaLen));
      this.arena = bigger;
      this.arenaView = new DataView(bigger.buffer);
    }
    this.arena.set(src.subarray(start, end), this.arenaLen);
    const m = e * STRIDE;
    this.meta[m] = h;
    this.meta[m + 1] = this.arenaLen;
    this.meta[m + 2] = len;
    this.meta[m + 3] = value;
    this.meta[m + 4] = -1;
    this.arenaLen += len;
    if (this.count * 2 > this.slots.length) this.rehash();
    else this.place(e);
    return e;
  }

  private place(e: number): void {
    const slots = this.slots;
    const mask = slots.length - 1;
    let s = this.meta[e * STRIDE]! & mask;
    while (slots[s]! >= 0) s = (s + 1) & mask;
    slots[s] = e;
  }

  private rehash(): void {
    this.slots = new Int32Array(this.slots.length * 2).fill(-1);
    for (let e = 0; e < this.count; e++) this.place(e);
  }
}
