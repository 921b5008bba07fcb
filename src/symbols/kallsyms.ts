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
 * names' compression (below) costs about as much as the parse (load ~80 -> ~150 ms here), and a name's first use the
 * inflation of its block (~7-10 us; later uses hit the decoded-name cache).
 * Addresses are `bigint` (kernel addresses exceed 2^53).
 *
 * Memory: what {@link Kallsyms.resolve} needs is kept in a compact form, the chosen code symbols only: the low address
 * halves as a `Uint32Array`, the high halves and the module ids as runs (symbol index where a run starts, and its
 * value; kernel text, modules and BPF programs all lie at 0xffffffff........, so one run of high halves), and the names
 * deflated in blocks of 64 consecutive names ({@link PackedNames}, packednames.ts), a block inflated when a name in it
 * is first needed. Measured on this 6.18 kernel (121,851 code symbols, 2.96 MB of names; MB = 10^6 bytes): 1.18 MB
 * (0.49 MB addresses, 0.69 MB names), against 4.67 MB with the names as one byte string and an offset, high half and
 * module id per symbol, and ~11 MB for the file text with a per-line index. The file text and the parse's per-line arrays are
 * temporaries of the constructor. {@link Kallsyms.lookup}, {@link Kallsyms.lookupAll}
 * and {@link Kallsyms.symbols} (every entry, data symbols too) parse the file again on their first call and keep
 * that table from then on (a table built by {@link Kallsyms.fromBuffer} parses the buffer it was given; one from
 * {@link Kallsyms.load} reads the file again, so it sees modules and BPF programs loaded since).
 */
import { readFileSync } from 'node:fs';
import { BpfscopeError } from '../errors.js';
import { PackedNames } from './packednames.js';

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

/** Every line of a kallsyms text, parsed: per-entry arrays indexing into the text. */
interface Parsed {
  buf: Buffer;
  count: number;
  hi: Uint32Array;
  lo: Uint32Array;
  type: Uint8Array;
  nameStart: Uint32Array;
  nameEnd: Uint32Array;
  /** Module id per entry (0 = core kernel); `modules[id]` is the name. */
  modId: Uint16Array;
  modules: string[];
}

function parse(buf: Buffer): Parsed {
  // Upper bound on the line count: one entry per newline (plus a last line without one).
  let lines = 1;
  for (let i = buf.indexOf(10); i >= 0; i = buf.indexOf(10, i + 1)) lines++;
  const p: Parsed = {
    buf,
    count: 0,
    hi: new Uint32Array(lines),
    lo: new Uint32Array(lines),
    type: new Uint8Array(lines),
    nameStart: new Uint32Array(lines),
    nameEnd: new Uint32Array(lines),
    modId: new Uint16Array(lines),
    modules: [''],
  };
  const b = buf;
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
            let id = p.modules.indexOf(name);
            if (id < 0) {
              id = p.modules.length;
              p.modules.push(name);
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
    p.hi[k] = hi;
    p.lo[k] = lo;
    p.type[k] = t;
    p.nameStart[k] = ns;
    p.nameEnd[k] = ne;
    p.modId[k] = mod;
    k++;
  }
  p.count = k;
  return p;
}

/** Sorted, alias-deduplicated indices of code symbols with non-zero addresses. */
function sortCode(p: Parsed): Uint32Array {
  const idx: number[] = [];
  let sorted = true;
  let ph = 0;
  let pl = 0;
  for (let k = 0; k < p.count; k++) {
    const h = p.hi[k]!;
    const l = p.lo[k]!;
    if ((h === 0 && l === 0) || isDataType(p.type[k]!)) continue;
    if (h < ph || (h === ph && l < pl)) sorted = false;
    ph = h;
    pl = l;
    idx.push(k);
  }
  if (!sorted) sortIndices(p, idx);
  // Keep the best alias per address.
  const out = new Uint32Array(idx.length);
  let m = 0;
  for (let j = 0; j < idx.length; j++) {
    const k = idx[j]!;
    if (m > 0) {
      const q = out[m - 1]!;
      if (p.hi[q] === p.hi[k] && p.lo[q] === p.lo[k]) {
        if (better(p, k, q)) out[m - 1] = k;
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
function sortIndices(p: Parsed, idx: number[]): void {
  let minHi = 0xffffffff;
  let minLo = 0xffffffff;
  let maxHi = 0;
  let maxLo = 0;
  for (const k of idx) {
    const h = p.hi[k]!;
    const l = p.lo[k]!;
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
  const scale = 2 ** Math.max(1, Math.ceil(Math.log2(p.count + 1)));
  if (span * scale + scale < 2 ** 53) {
    const keys = new Float64Array(idx.length);
    for (let j = 0; j < idx.length; j++) {
      const k = idx[j]!;
      keys[j] = ((p.hi[k]! - minHi) * TWO32 + (p.lo[k]! - minLo)) * scale + k;
    }
    keys.sort();
    for (let j = 0; j < keys.length; j++) idx[j] = keys[j]! % scale;
    return;
  }
  idx.sort((a, b) => p.hi[a]! - p.hi[b]! || p.lo[a]! - p.lo[b]! || a - b);
}

/** Whether entry `a` is a better name than entry `b` for the same address (perf's `choose_best_symbol`). */
function better(p: Parsed, a: number, b: number): boolean {
  const ra = bindRank(p.type[a]!);
  const rb = bindRank(p.type[b]!);
  if (ra !== rb) return ra > rb;
  const ua = leadingUnderscores(p, a);
  const ub = leadingUnderscores(p, b);
  if (ua !== ub) return ua < ub;
  const la = p.nameEnd[a]! - p.nameStart[a]!;
  const lb = p.nameEnd[b]! - p.nameStart[b]!;
  if (la !== lb) return la > lb;
  return a < b;
}

function leadingUnderscores(p: Parsed, k: number): number {
  let n = 0;
  for (let i = p.nameStart[k]!; i < p.nameEnd[k]! && p.buf[i] === 95; i++) n++;
  return n;
}

function hiLoBig(hi: number, lo: number): bigint {
  return (BigInt(hi) << 32n) | BigInt(lo);
}

/**
 * A parsed kallsyms table. Build one with {@link Kallsyms.load} (the real file, or a path for tests) or
 * {@link Kallsyms.fromBuffer}; the shared instance for `/proc/kallsyms` is {@link kallsyms}.
 */
export class Kallsyms {
  /** Where the full table comes from again: a path to read, or the caller's text. */
  private readonly source: { path: string } | { buf: Buffer };
  private readonly count: number;
  /**
   * The code symbols (best alias per address), sorted by address, symbol j at `(hi, sortedLo[j])`. The high halves
   * as runs: run r holds symbols `hiStart[r] .. hiStart[r + 1]` (exclusive), all with high half `hiVal[r]` (strictly
   * increasing in r; one run for a kernel whose text, modules and BPF programs all lie at 0xffffffff........).
   */
  private readonly hiVal: Uint32Array;
  private readonly hiStart: Uint32Array;
  private readonly sortedLo: Uint32Array;
  /** Module ids as runs: symbols `modStart[r] .. modStart[r + 1]` are in `modules[modId[r]]` (id 0: core kernel). */
  private readonly modStart: Uint32Array;
  private readonly modId: Uint16Array;
  /** Names of the code symbols, by sorted index, deflated in blocks. */
  private readonly codeNames: PackedNames;
  private readonly modules: string[];
  /** Names decoded so far, by code symbol index. */
  private readonly names = new Map<number, string>();
  /** Every entry, for name lookups and listing: built on first use. */
  private full: { p: Parsed; byName: Map<string, number[]> } | undefined;

  private constructor(buf: Buffer, source: { path: string } | { buf: Buffer }) {
    this.source = source;
    const p = parse(buf);
    this.count = p.count;
    this.modules = p.modules;
    const sorted = sortCode(p);
    const n = sorted.length;
    this.sortedLo = new Uint32Array(n);
    const nameStart = new Uint32Array(n);
    const nameEnd = new Uint32Array(n);
    let hiRuns = 0;
    let modRuns = 0;
    for (let j = 0; j < n; j++) {
      const k = sorted[j]!;
      this.sortedLo[j] = p.lo[k]!;
      nameStart[j] = p.nameStart[k]!;
      nameEnd[j] = p.nameEnd[k]!;
      if (j === 0 || p.hi[k] !== p.hi[sorted[j - 1]!]) hiRuns++;
      if (j === 0 || p.modId[k] !== p.modId[sorted[j - 1]!]) modRuns++;
    }
    this.hiVal = new Uint32Array(hiRuns);
    this.hiStart = new Uint32Array(hiRuns + 1);
    this.modStart = new Uint32Array(modRuns + 1);
    this.modId = new Uint16Array(modRuns);
    let h = 0;
    let m = 0;
    for (let j = 0; j < n; j++) {
      const k = sorted[j]!;
      if (j === 0 || p.hi[k] !== p.hi[sorted[j - 1]!]) {
        this.hiVal[h] = p.hi[k]!;
        this.hiStart[h++] = j;
      }
      if (j === 0 || p.modId[k] !== p.modId[sorted[j - 1]!]) {
        this.modId[m] = p.modId[k]!;
        this.modStart[m++] = j;
      }
    }
    this.hiStart[hiRuns] = n;
    this.modStart[modRuns] = n;
    this.codeNames = PackedNames.build(buf, nameStart, nameEnd);
  }

  /**
   * Read and parse a kallsyms file (default `/proc/kallsyms`).
   * @throws BpfscopeError when the file cannot be read.
   */
  static load(path = '/proc/kallsyms'): Kallsyms {
    return new Kallsyms(readKallsyms(path), { path });
  }

  /** Parse kallsyms text already in memory (kept for {@link lookup} and {@link symbols}). */
  static fromBuffer(buf: Buffer | string): Kallsyms {
    const b = typeof buf === 'string' ? Buffer.from(buf) : buf;
    return new Kallsyms(b, { buf: b });
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
    return this.sortedLo.length;
  }

  /** Bytes held by the resolution table (typed arrays and the names), for memory accounting. */
  get codeTableBytes(): number {
    return (
      this.hiVal.byteLength +
      this.hiStart.byteLength +
      this.sortedLo.byteLength +
      this.modStart.byteLength +
      this.modId.byteLength +
      this.codeNames.byteLength
    );
  }

  private codeName(j: number): string {
    let s = this.names.get(j);
    if (s === undefined) {
      s = this.codeNames.get(j);
      this.names.set(j, s);
    }
    return s;
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
    // The last run with a high half <= hi.
    const hv = this.hiVal;
    let a = 0;
    let b = hv.length;
    while (a < b) {
      const m = (a + b) >>> 1;
      if (hv[m]! <= hi) a = m + 1;
      else b = m;
    }
    if (a === 0) return undefined;
    let r = a - 1;
    // In that run, the last symbol with a low half <= lo (all of them when the run's high half is below hi).
    const sl = this.sortedLo;
    const s = this.hiStart[r]!;
    a = s;
    b = this.hiStart[r + 1]!;
    if (hv[r] === hi) {
      while (a < b) {
        const m = (a + b) >>> 1;
        if (sl[m]! <= lo) a = m + 1;
        else b = m;
      }
    } else a = b;
    if (a === s) {
      // Below the run's first symbol: the previous run's last one.
      if (r === 0) return undefined;
      r--;
    }
    const j = a - 1;
    const h = hv[r]!;
    const offset = (hi - h) * TWO32 + (lo - sl[j]!);
    const mod = this.moduleOf(j);
    const res: KernelSymbol = { name: this.codeName(j), offset, start: hiLoBig(h, sl[j]!) };
    if (mod !== 0) res.module = this.modules[mod]!;
    return res;
  }

  /** Module id of code symbol `j` (0 = core kernel), from the runs. */
  private moduleOf(j: number): number {
    const ms = this.modStart;
    let a = 0;
    let b = this.modId.length;
    while (a < b) {
      const m = (a + b) >>> 1;
      if (ms[m]! <= j) a = m + 1;
      else b = m;
    }
    return this.modId[a - 1]!;
  }

  /** The full table with its name index, parsed again from the source on first use. */
  private fullTable(): { p: Parsed; byName: Map<string, number[]> } {
    if (!this.full) {
      const p = parse('path' in this.source ? readKallsyms(this.source.path) : this.source.buf);
      const byName = new Map<string, number[]>();
      for (let k = 0; k < p.count; k++) {
        const name = p.buf.toString('utf8', p.nameStart[k]!, p.nameEnd[k]!);
        const list = byName.get(name);
        if (list) list.push(k);
        else byName.set(name, [k]);
      }
      this.full = { p, byName };
    }
    return this.full;
  }

  /**
   * Address of the first kallsyms entry named `name` (any type, file order, as bpftrace's `resolve_kname`), or
   * `undefined`. When `module` is given, only that module's entries count (`''` = core kernel).
   * @throws BpfscopeError when the table came from a file that can no longer be read.
   */
  lookup(name: string, module?: string): bigint | undefined {
    const { p, byName } = this.fullTable();
    const list = byName.get(name);
    if (!list) return undefined;
    for (const k of list) {
      if (module !== undefined && p.modules[p.modId[k]!] !== module) continue;
      return hiLoBig(p.hi[k]!, p.lo[k]!);
    }
    return undefined;
  }

  /** Every entry named `name` (static functions can share a name), in file order. */
  lookupAll(name: string): KallsymsEntry[] {
    const { p, byName } = this.fullTable();
    return (byName.get(name) ?? []).map((k) => entryOf(p, k, name));
  }

  /** Entries whose name passes `filter` (a RegExp tested against the name, or a predicate), in file order. */
  *symbols(filter?: RegExp | ((name: string) => boolean)): IterableIterator<KallsymsEntry> {
    const test = filter === undefined ? undefined : filter instanceof RegExp ? (s: string) => filter.test(s) : filter;
    const { p } = this.fullTable();
    for (let k = 0; k < p.count; k++) {
      const name = p.buf.toString('utf8', p.nameStart[k]!, p.nameEnd[k]!);
      if (test && !test(name)) continue;
      yield entryOf(p, k, name);
    }
  }
}

function entryOf(p: Parsed, k: number, name: string): KallsymsEntry {
  const e: KallsymsEntry = { name, addr: hiLoBig(p.hi[k]!, p.lo[k]!), type: String.fromCharCode(p.type[k]!) };
  const mod = p.modId[k]!;
  if (mod !== 0) e.module = p.modules[mod]!;
  return e;
}

function readKallsyms(path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new BpfscopeError(`cannot read ${path}: ${(e as Error).message}`, { cause: e });
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
