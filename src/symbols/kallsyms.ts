/**
 * Kernel symbols from `/proc/kallsyms`. Each line is `ADDR TYPE NAME` or `ADDR TYPE NAME\t[MODULE]` (the kernel's
 * `kernel/kallsyms.c` `s_show`: `"%px %c %s\t[%s]\n"` for module symbols, `"%px %c %s\n"` otherwise); ADDR is hex,
 * TYPE is nm(1)'s symbol type letter (lower case = local). BPF programs appear as module `[bpf]`, ftrace trampolines
 * as `[__builtin__ftrace]`.
 *
 * Address resolution follows bcc's `KSyms` (`src/cc/bcc_syms.cc`, used by bpftrace's kstack): data symbols (types
 * `b B d D r R`) and zero addresses are dropped, the rest is sorted by address, and an address resolves to the
 * nearest symbol at or below it (kallsyms has no sizes). Aliases (several names at one address) resolve to one name
 * chosen by perf's rules (`tools/perf/util/symbol.c` `choose_best_symbol`): global over weak over local, fewer
 * leading underscores, then the longer name, then file order.
 *
 * Speed: the file (~120k-200k lines, ~5-8 MB) is read once and parsed in one pass over its bytes (hex digits folded
 * into two u32 halves, no per-line regex or string split); names are decoded only when a result needs them. The
 * name index used by `lookup` is built on its first call. Addresses are `bigint` (kernel addresses exceed 2^53).
 */
import { readFileSync } from 'node:fs';
import { BpfscopeError } from '../errors.js';

/** One resolved kernel address: `addr` lies `offset` bytes past symbol `name` (in `module`, absent for vmlinux). */
export interface KernelSymbol {
  /** Symbol name as printed by kallsyms (already unmangled: the kernel is C). */
  name: string;
  /** Bytes from the symbol's start to the resolved address. */
  offset: number;
  /** Module name without brackets (`ext4`, `bpf`, `__builtin__ftrace`); absent for the core kernel. */
  module?: string;
  /** The symbol's start address. */
  start: bigint;
}

/** One kallsyms entry, as listed by {@link Kallsyms.symbols}. */
export interface KallsymsEntry {
  name: string;
  addr: bigint;
  /** nm(1) type letter: `T`/`t` text, `W`/`w` weak, `D`/`d` data, ... */
  type: string;
  module?: string;
}

const TWO32 = 4294967296;

/** Hex digit value for each byte, or 255. */
const HEX = new Uint8Array(256).fill(255);
for (let i = 0; i < 10; i++) HEX[48 + i] = i;
for (let i = 0; i < 6; i++) {
  HEX[65 + i] = 10 + i;
  HEX[97 + i] = 10 + i;
}

/** Data symbol types that never hold code (bcc's `bcc_procutils_each_ksym` skips them too). */
function isDataType(t: number): boolean {
  // b B d D r R
  return t === 98 || t === 66 || t === 100 || t === 68 || t === 114 || t === 82;
}

/** Rank for alias choice: global 2, weak 1, local 0. */
function bindRank(t: number): number {
  if (t === 119 || t === 87 || t === 118 || t === 86) return 1; // w W v V
  return t >= 65 && t <= 90 ? 2 : 0;
}

/**
 * A parsed kallsyms table. Build one with {@link Kallsyms.load} (the real file, or a path for tests) or
 * {@link Kallsyms.fromBuffer}; the shared instance for `/proc/kallsyms` is {@link kallsyms}.
 */
export class Kallsyms {
  private readonly buf: Buffer;
  private readonly count: number;
  private readonly hi: Uint32Array;
  private readonly lo: Uint32Array;
  private readonly type: Uint8Array;
  private readonly nameStart: Uint32Array;
  private readonly nameEnd: Uint32Array;
  /** Module id per entry (0 = core kernel); `modules[id]` is the name. */
  private readonly modId: Uint16Array;
  private readonly modules: string[] = [''];
  /** Entry indices of code symbols, sorted by address, one per address (best alias). */
  private readonly sorted: Uint32Array;
  private readonly sortedHi: Uint32Array;
  private readonly sortedLo: Uint32Array;
  private names: (string | undefined)[] = [];
  private byName: Map<string, number[]> | undefined;

  private constructor(buf: Buffer) {
    this.buf = buf;
    // Upper bound on the line count: one entry per newline (plus a last line without one).
    let lines = 1;
    for (let i = buf.indexOf(10); i >= 0; i = buf.indexOf(10, i + 1)) lines++;
    this.hi = new Uint32Array(lines);
    this.lo = new Uint32Array(lines);
    this.type = new Uint8Array(lines);
    this.nameStart = new Uint32Array(lines);
    this.nameEnd = new Uint32Array(lines);
    this.modId = new Uint16Array(lines);
    this.count = this.parse();
    this.sorted = this.sortCode();
    this.sortedHi = new Uint32Array(this.sorted.length);
    this.sortedLo = new Uint32Array(this.sorted.length);
    for (let k = 0; k < this.sorted.length; k++) {
      this.sortedHi[k] = this.hi[this.sorted[k]!]!;
      this.sortedLo[k] = this.lo[this.sorted[k]!]!;
    }
  }

  /**
   * Read and parse a kallsyms file (default `/proc/kallsyms`).
   * @throws BpfscopeError when the file cannot be read.
   */
  static load(path = '/proc/kallsyms'): Kallsyms {
    let buf: Buffer;
    try {
      buf = readFileSync(path);
    } catch (e) {
      throw new BpfscopeError(`cannot read ${path}: ${(e as Error).message}`, { cause: e });
    }
    return new Kallsyms(buf);
  }

  /** Parse kallsyms text already in memory. */
  static fromBuffer(buf: Buffer | string): Kallsyms {
    return new Kallsyms(typeof buf === 'string' ? Buffer.from(buf) : buf);
  }

  /** Number of entries parsed (all types). */
  get size(): number {
    return this.count;
  }

  /**
   * Number of code symbols with a non-zero address used for resolution. Zero when kallsyms hides addresses
   * (`kernel.kptr_restrict`, or not root): every {@link resolve} then returns `undefined`.
   */
  get codeSymbols(): number {
    return this.sorted.length;
  }

  private parse(): number {
    const b = this.buf;
    const n = b.length;
    let i = 0;
    let k = 0;
    let lastModStart = -1;
    let lastModEnd = -1;
    let lastModId = 0;
    while (i < n) {
      // Address: hex digits folded into hi/lo halves.
      let hi = 0;
      let lo = 0;
      let c = b[i]!;
      while (i < n) {
        c = b[i]!;
        const d = HEX[c]!;
        if (d === 255) break;
        hi = ((hi << 4) | (lo >>> 28)) >>> 0;
        lo = ((lo << 4) | d) >>> 0;
        i++;
      }
      if (c !== 32 || i + 2 >= n) {
        // Malformed line: skip it.
        const nl = b.indexOf(10, i);
        i = nl < 0 ? n : nl + 1;
        continue;
      }
      const t = b[i + 1]!;
      i += 3; // ' T '
      const ns = i;
      while (i < n) {
        c = b[i]!;
        if (c === 9 || c === 10 || c === 32) break;
        i++;
      }
      const ne = i;
      let mod = 0;
      if (c === 9 || c === 32) {
        while (i < n && (b[i] === 9 || b[i] === 32)) i++;
        if (b[i] === 91) {
          const ms = i + 1;
          const me = b.indexOf(93, ms);
          const nl = b.indexOf(10, ms);
          if (me >= 0 && (nl < 0 || me < nl)) {
            if (
              lastModStart >= 0 &&
              me - ms === lastModEnd - lastModStart &&
              b.compare(b, ms, me, lastModStart, lastModEnd) === 0
            ) {
              mod = lastModId;
            } else {
              const name = b.toString('latin1', ms, me);
              let id = this.modules.indexOf(name);
              if (id < 0) {
                id = this.modules.length;
                this.modules.push(name);
              }
              mod = id;
              lastModId = id;
            }
            lastModStart = ms;
            lastModEnd = me;
          }
        }
        const nl = b.indexOf(10, i);
        i = nl < 0 ? n : nl + 1;
      } else {
        i++; // newline
      }
      this.hi[k] = hi;
      this.lo[k] = lo;
      this.type[k] = t;
      this.nameStart[k] = ns;
      this.nameEnd[k] = ne;
      this.modId[k] = mod;
      k++;
    }
    return k;
  }

  /** Sorted, alias-deduplicated indices of code symbols with non-zero addresses. */
  private sortCode(): Uint32Array {
    const idx: number[] = [];
    let sorted = true;
    let ph = 0;
    let pl = 0;
    for (let k = 0; k < this.count; k++) {
      const h = this.hi[k]!;
      const l = this.lo[k]!;
      if ((h === 0 && l === 0) || isDataType(this.type[k]!)) continue;
      if (h < ph || (h === ph && l < pl)) sorted = false;
      ph = h;
      pl = l;
      idx.push(k);
    }
    if (!sorted) this.sortIndices(idx);
    // Keep the best alias per address.
    const out = new Uint32Array(idx.length);
    let m = 0;
    for (let j = 0; j < idx.length; j++) {
      const k = idx[j]!;
      if (m > 0) {
        const p = out[m - 1]!;
        if (this.hi[p] === this.hi[k] && this.lo[p] === this.lo[k]) {
          if (this.better(k, p)) out[m - 1] = k;
          continue;
        }
      }
      out[m++] = k;
    }
    return out.slice(0, m);
  }

  /**
   * Sort entry indices by address, then file order. Kernel text, modules and BPF programs span about a gigabyte, so
   * (address - lowest, index) packs into one double and sorts natively; a wider span falls back to a comparator.
   */
  private sortIndices(idx: number[]): void {
    let minHi = 0xffffffff;
    let minLo = 0xffffffff;
    let maxHi = 0;
    let maxLo = 0;
    for (const k of idx) {
      const h = this.hi[k]!;
      const l = this.lo[k]!;
      if (h < minHi || (h === minHi && l < minLo)) {
        minHi = h;
        minLo = l;
      }
      if (h > maxHi || (h === maxHi && l > maxLo)) {
        maxHi = h;
        maxLo = l;
      }
    }
    const span = (maxHi - minHi) * TWO32 + (maxLo - minLo);
    const scale = 2 ** Math.max(1, Math.ceil(Math.log2(this.count + 1)));
    if (span * scale + scale < 2 ** 53) {
      const keys = new Float64Array(idx.length);
      for (let j = 0; j < idx.length; j++) {
        const k = idx[j]!;
        keys[j] = ((this.hi[k]! - minHi) * TWO32 + (this.lo[k]! - minLo)) * scale + k;
      }
      keys.sort();
      for (let j = 0; j < keys.length; j++) idx[j] = keys[j]! % scale;
      return;
    }
    idx.sort((a, b) => this.hi[a]! - this.hi[b]! || this.lo[a]! - this.lo[b]! || a - b);
  }

  /** Whether entry `a` is a better name than entry `b` for the same address (perf's `choose_best_symbol`). */
  private better(a: number, b: number): boolean {
    const ra = bindRank(this.type[a]!);
    const rb = bindRank(this.type[b]!);
    if (ra !== rb) return ra > rb;
    const ua = this.leadingUnderscores(a);
    const ub = this.leadingUnderscores(b);
    if (ua !== ub) return ua < ub;
    const la = this.nameEnd[a]! - this.nameStart[a]!;
    const lb = this.nameEnd[b]! - this.nameStart[b]!;
    if (la !== lb) return la > lb;
    return a < b;
  }

  private leadingUnderscores(k: number): number {
    let n = 0;
    for (let i = this.nameStart[k]!; i < this.nameEnd[k]! && this.buf[i] === 95; i++) n++;
    return n;
  }

  private nameOf(k: number): string {
    let s = this.names[k];
    if (s === undefined) {
      s = this.buf.toString('utf8', this.nameStart[k]!, this.nameEnd[k]!);
      this.names[k] = s;
    }
    return s;
  }

  private addrOf(k: number): bigint {
    return (BigInt(this.hi[k]!) << 32n) | BigInt(this.lo[k]!);
  }

  /**
   * The symbol containing kernel address `addr`: the nearest code symbol at or below it, or `undefined` when `addr`
   * lies below the first one (or the table is empty). Like bcc, an address past the last symbol resolves to it.
   */
  resolve(addr: bigint): KernelSymbol | undefined {
    return this.resolveHiLo(Number(addr >> 32n) >>> 0, Number(addr & 0xffffffffn));
  }

  /** {@link resolve} with the address split into its high and low 32-bit halves (no bigint arithmetic). */
  resolveHiLo(hi: number, lo: number): KernelSymbol | undefined {
    const sh = this.sortedHi;
    const sl = this.sortedLo;
    // Last index with (sh, sl) <= (hi, lo).
    let a = 0;
    let b = sh.length;
    while (a < b) {
      const m = (a + b) >>> 1;
      const mh = sh[m]!;
      if (mh < hi || (mh === hi && sl[m]! <= lo)) a = m + 1;
      else b = m;
    }
    if (a === 0) return undefined;
    const j = a - 1;
    const k = this.sorted[j]!;
    const offset = (hi - sh[j]!) * TWO32 + (lo - sl[j]!);
    const mod = this.modId[k]!;
    const r: KernelSymbol = { name: this.nameOf(k), offset, start: this.addrOf(k) };
    if (mod !== 0) r.module = this.modules[mod]!;
    return r;
  }

  private index(): Map<string, number[]> {
    if (!this.byName) {
      const m = new Map<string, number[]>();
      for (let k = 0; k < this.count; k++) {
        const name = this.nameOf(k);
        const list = m.get(name);
        if (list) list.push(k);
        else m.set(name, [k]);
      }
      this.byName = m;
      this.names = []; // the map holds the strings now; drop the per-entry cache
    }
    return this.byName;
  }

  /**
   * Address of the first kallsyms entry named `name` (any type, file order, as bpftrace's `resolve_kname`), or
   * `undefined`. When `module` is given, only that module's entries count (`''` = core kernel).
   */
  lookup(name: string, module?: string): bigint | undefined {
    const list = this.index().get(name);
    if (!list) return undefined;
    for (const k of list) {
      if (module !== undefined && this.modules[this.modId[k]!] !== module) continue;
      return this.addrOf(k);
    }
    return undefined;
  }

  /** Every entry named `name` (static functions can share a name), in file order. */
  lookupAll(name: string): KallsymsEntry[] {
    return (this.index().get(name) ?? []).map((k) => this.entry(k));
  }

  private entry(k: number): KallsymsEntry {
    const e: KallsymsEntry = { name: this.nameOf(k), addr: this.addrOf(k), type: String.fromCharCode(this.type[k]!) };
    const mod = this.modId[k]!;
    if (mod !== 0) e.module = this.modules[mod]!;
    return e;
  }

  /** Entries whose name passes `filter` (a RegExp tested against the name, or a predicate), in file order. */
  *symbols(filter?: RegExp | ((name: string) => boolean)): IterableIterator<KallsymsEntry> {
    const test = filter === undefined ? undefined : filter instanceof RegExp ? (s: string) => filter.test(s) : filter;
    for (let k = 0; k < this.count; k++) {
      if (test && !test(this.nameOf(k))) continue;
      yield this.entry(k);
    }
  }
}

let shared: Kallsyms | undefined;

/**
 * The process-wide `/proc/kallsyms` table, loaded on first use. Call {@link reloadKallsyms} after kernel modules or
 * BPF programs were loaded to see their symbols.
 * @throws BpfscopeError when /proc/kallsyms cannot be read.
 */
export function kallsyms(): Kallsyms {
  shared ??= Kallsyms.load();
  return shared;
}

/** Drop the shared table; the next {@link kallsyms} call reads /proc/kallsyms again. */
export function reloadKallsyms(): void {
  shared = undefined;
}
