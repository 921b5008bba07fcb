/**
 * A hash map from 64-bit addresses (given as high and low u32 halves) to values: open addressing with linear probing
 * over typed arrays. Symbolization looks up every frame of every stack; V8's `Map` with heap-number or bigint keys costs
 * hundreds of nanoseconds per lookup at 100k+ entries, this costs tens.
 */
export class AddrCache<V> {
  private keyHi: Uint32Array;
  private keyLo: Uint32Array;
  private used: Uint8Array;
  private vals: (V | undefined)[];
  private mask: number;
  private count = 0;

  constructor(capacity = 1024) {
    let n = 16;
    while (n < capacity * 2) n *= 2;
    this.keyHi = new Uint32Array(n);
    this.keyLo = new Uint32Array(n);
    this.used = new Uint8Array(n);
    this.vals = new Array(n);
    this.mask = n - 1;
  }

  /** Slots allocated (a power of two, at least twice the entries). */
  get capacity(): number {
    return this.used.length;
  }

  /** Number of entries. */
  get size(): number {
    return this.count;
  }

  private slot(hi: number, lo: number): number {
    let h = Math.imul(lo ^ Math.imul(hi, 0x85ebca6b), 0x9e3779b1);
    h ^= h >>> 15;
    return h & this.mask;
  }

  /** The value stored for address (hi, lo), or `undefined`. */
  get(hi: number, lo: number): V | undefined {
    let i = this.slot(hi, lo);
    while (this.used[i] === 1) {
      if (this.keyLo[i] === lo && this.keyHi[i] === hi) return this.vals[i];
      i = (i + 1) & this.mask;
    }
    return undefined;
  }

  /** Store `v` for address (hi, lo), replacing any previous value. */
  set(hi: number, lo: number, v: V): void {
    if ((this.count + 1) * 2 > this.used.length) this.grow();
    let i = this.slot(hi, lo);
    while (this.used[i] === 1) {
      if (this.keyLo[i] === lo && this.keyHi[i] === hi) {
        this.vals[i] = v;
        return;
      }
      i = (i + 1) & this.mask;
    }
    this.used[i] = 1;
    this.keyHi[i] = hi;
    this.keyLo[i] = lo;
    this.vals[i] = v;
    this.count++;
  }

  /** Keep only the entries for which `keep(hi, lo, value)` is true. */
  filter(keep: (hi: number, lo: number, v: V) => boolean): void {
    const { keyHi, keyLo, used, vals } = this;
    this.reset(used.length);
    for (let i = 0; i < used.length; i++) {
      if (used[i] === 1 && keep(keyHi[i]!, keyLo[i]!, vals[i]!)) this.set(keyHi[i]!, keyLo[i]!, vals[i]!);
    }
  }

  /** Remove every entry. */
  clear(): void {
    this.reset(16);
  }

  private reset(n: number): void {
    this.keyHi = new Uint32Array(n);
    this.keyLo = new Uint32Array(n);
    this.used = new Uint8Array(n);
    this.vals = new Array(n);
    this.mask = n - 1;
    this.count = 0;
  }

  private grow(): void {
    const { keyHi, keyLo, used, vals } = this;
    this.reset(used.length * 2);
    for (let i = 0; i < used.length; i++) if (used[i] === 1) this.set(keyHi[i]!, keyLo[i]!, vals[i]!);
  }
}
