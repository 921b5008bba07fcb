/**
 * The symbol index of an ELF file ({@link ElfSymbols}, built by `ElfFile.symbols()` in elf.ts): code symbols sorted by
 * address for resolution, names decoded on demand, large string tables read from the file instead of kept.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import {
  cstr,
  type ElfSection,
  type ElfSegment,
  type ElfSymbol,
  SHT_DYNSYM,
  SHT_NOBITS,
  SHT_STRTAB,
  STB_GLOBAL,
  STB_WEAK,
  STT_FUNC,
  STT_GNU_IFUNC,
  STT_OBJECT,
  readFully,
  TWO32,
  vaddrToFileOffset,
} from './elfdefs.js';

/** What the builder needs of an ElfFile (elf.ts; structural, so that this module does not import it). */
export interface ElfTables {
  readonly sections: ElfSection[];
  sectionData(sec: ElfSection): Buffer;
  /** The file's descriptor when it is read from a file (not an in-memory image). */
  fd(): number | undefined;
}

/**
 * String tables of at least this many bytes are not kept in memory: their names are read from the file when a result
 * needs them (node's own binary has ~12 MB of mangled C++ names, of which a profile uses a few hundred).
 */
let lazyStringTableMin = 64 * 1024;

/**
 * @internal For tests: the string-table size from which {@link ElfFile.symbols} reads names from the file on demand
 * (default 64 KiB; 0 = always, Infinity = never). Returns the previous value.
 */
export function setLazyStringTableMin(bytes: number): number {
  const prev = lazyStringTableMin;
  lazyStringTableMin = bytes;
  return prev;
}

/** Closes a {@link FileRef}'s descriptor once the symbols holding it are garbage. */
const fdCloser = new FinalizationRegistry<number>((fd) => {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
});

/**
 * A read-only descriptor of its own on an ELF file (opened through /proc/self/fd, so the same inode even when the
 * path was replaced or deleted), held by the {@link ElfSymbols} that read names from it and closed when they are
 * collected.
 */
export class FileRef {
  private static scratch = Buffer.allocUnsafe(256);
  private constructor(
    private readonly fd: number,
    private readonly size: number,
    private readonly mtimeNs: bigint,
  ) {
    fdCloser.register(this, fd);
  }

  /**
   * Whether the file still has the size and modification time it had when its tables were read. A file rewritten
   * in place (same inode) would otherwise give names of its new contents at old offsets: a wrong name is worse
   * than none, so such a read resolves nothing.
   */
  unchanged(): boolean {
    try {
      const st = fstatSync(this.fd, { bigint: true });
      return Number(st.size) === this.size && st.mtimeNs === this.mtimeNs;
    } catch {
      return false;
    }
  }

  /** A descriptor of our own on the file open as `srcFd`, or undefined (/proc not mounted, or another inode). */
  static of(srcFd: number): FileRef | undefined {
    let fd: number;
    try {
      fd = openSync(`/proc/self/fd/${srcFd}`, 'r');
    } catch {
      return undefined;
    }
    try {
      const a = fstatSync(fd, { bigint: true });
      const b = fstatSync(srcFd, { bigint: true });
      if (a.dev === b.dev && a.ino === b.ino) return new FileRef(fd, Number(a.size), a.mtimeNs);
    } catch {
      // fall through
    }
    closeSync(fd);
    return undefined;
  }

  read(offset: number, length: number): Buffer {
    return readFully(this.fd, offset, length);
  }

  /**
   * The NUL-terminated string at `off` of the string table at file offset `base` of `size` bytes (UTF-8), or
   * undefined when the file changed since it was opened ({@link unchanged}).
   */
  cstr(base: number, size: number, off: number): string | undefined {
    if (!this.unchanged()) return undefined;
    if (off >= size) return '';
    let buf: Buffer = FileRef.scratch;
    let len = Math.min(buf.length, size - off);
    let n = readSync(this.fd, buf, 0, len, base + off);
    let e = buf.subarray(0, n).indexOf(0);
    if (e < 0 && n === len && len < size - off) {
      // A long name (some C++ templates run to kilobytes): read the rest of the table in growing steps.
      for (len = 4096; e < 0; len *= 4) {
        len = Math.min(len, size - off);
        buf = this.read(base + off, len);
        n = len;
        e = buf.indexOf(0);
        if (len === size - off) break;
      }
    }
    return buf.toString('utf8', 0, e < 0 ? n : e);
  }
}

/** The per-symbol arrays of one or more symbol tables (defined code and data symbols, in table order). */
interface SymData {
  value: Float64Array;
  size: Float64Array;
  info: Uint8Array;
  shndx: Uint16Array;
  nameOff: Uint32Array;
  /** Index into the string tables. */
  strtab: Uint8Array;
  dyn: Uint8Array;
}

/** Where one symbol table and its string table are in a file. */
interface TableLoc {
  elf: ElfTables;
  sec: ElfSection;
  str: ElfSection;
}

/** The defined function, object and IFUNC symbols of `tables` (raw bytes), in order. */
function parseTables(tables: { data: Buffer; str: Buffer; ent: number; dyn: boolean }[]): SymData {
  // Typed arrays sized for every entry, trimmed at the end: no per-symbol allocation.
  let cap = 0;
  for (const t of tables) cap += Math.floor(t.data.length / t.ent);
  const value = new Float64Array(cap);
  const size = new Float64Array(cap);
  const info = new Uint8Array(cap);
  const shndx = new Uint16Array(cap);
  const nameOff = new Uint32Array(cap);
  const strtab = new Uint8Array(cap);
  const dyn = new Uint8Array(cap);
  let n = 0;
  tables.forEach((t, id) => {
    const { data, str, ent } = t;
    const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
    const isDyn = t.dyn ? 1 : 0;
    for (let o = ent; o + 24 <= data.length; o += ent) {
      const inf = data[o + 4]!;
      const ty = inf & 15;
      if (ty !== STT_FUNC && ty !== STT_OBJECT && ty !== STT_GNU_IFUNC) continue;
      const sh = dv.getUint16(o + 6, true);
      if (sh === 0) continue; // SHN_UNDEF: an import
      const name = dv.getUint32(o, true);
      if (name === 0 || name >= str.length) continue;
      value[n] = dv.getUint32(o + 8, true) + dv.getUint32(o + 12, true) * TWO32;
      size[n] = dv.getUint32(o + 16, true) + dv.getUint32(o + 20, true) * TWO32;
      info[n] = inf;
      shndx[n] = sh;
      nameOff[n] = name;
      strtab[n] = id;
      dyn[n] = isDyn;
      n++;
    }
  });
  return {
    value: value.slice(0, n),
    size: size.slice(0, n),
    info: info.slice(0, n),
    shndx: shndx.slice(0, n),
    nameOff: nameOff.slice(0, n),
    strtab: strtab.slice(0, n),
    dyn: dyn.slice(0, n),
  };
}

/** Symbol tables whose names (and, for listing, entries) are read again from their files when needed. */
interface LazyTables {
  /** Per string table: the file and the table's offset and size in it. */
  strs: { file: FileRef; offset: number; size: number }[];
  /** The symbol and string tables read again (for {@link ElfSymbols.list} and {@link ElfSymbols.find}). */
  reload(): { data: SymData; strtabs: Buffer[] };
}

/** A symbol table being assembled from one or more ELF `SHT_SYMTAB`/`SHT_DYNSYM` sections. */
export class SymbolsBuilder {
  private readonly tables: TableLoc[] = [];

  addTable(elf: ElfTables, sec: ElfSection): void {
    if (sec.type === SHT_NOBITS || sec.size < 24) return;
    const str = elf.sections[sec.link];
    if (!str || str.type !== SHT_STRTAB) return;
    this.tables.push({ elf, sec, str });
  }

  finish(loads: ElfSegment[], path: string): ElfSymbols {
    const raw = this.tables.map((t) => ({
      data: t.elf.sectionData(t.sec),
      str: t.elf.sectionData(t.str),
      ent: Math.max(t.sec.entsize, 24),
      dyn: t.sec.type === SHT_DYNSYM,
    }));
    const data = parseTables(raw);
    const strtabs = raw.map((r) => r.str);
    return new ElfSymbols(path, strtabs, data, loads, this.lazy(strtabs));
  }

  /** Names from the files when the string tables are large and every file can be kept open. */
  private lazy(strtabs: Buffer[]): LazyTables | undefined {
    let bytes = 0;
    for (const s of strtabs) bytes += s.length;
    if (this.tables.length === 0 || bytes < lazyStringTableMin) return undefined;
    const refs = new Map<ElfTables, FileRef>();
    for (const t of this.tables) {
      if (refs.has(t.elf)) continue;
      const fd = t.elf.fd();
      const ref = fd === undefined ? undefined : FileRef.of(fd);
      if (!ref) return undefined;
      refs.set(t.elf, ref);
    }
    const locs = this.tables.map((t) => ({ ...t, file: refs.get(t.elf)! }));
    return {
      strs: locs.map((t) => ({ file: t.file, offset: t.str.offset, size: t.str.size })),
      reload: () => {
        const raw = locs.map((t) => ({
          data: t.file.read(t.sec.offset, t.sec.size),
          str: t.file.read(t.str.offset, t.str.size),
          ent: Math.max(t.sec.entsize, 24),
          dyn: t.sec.type === SHT_DYNSYM,
        }));
        return { data: parseTables(raw), strtabs: raw.map((r) => r.str) };
      },
    };
  }
}

/** A symbol hit: `name` plus the offset of the looked-up address from the symbol's start. */
export interface SymbolHit {
  name: string;
  offset: number;
  /** Symbol start (`st_value`). */
  start: number;
  /** `st_size`, or the distance to the next symbol when the file recorded 0. */
  size: number;
}

/**
 * Sort symbol indices by value, then index (symbol tables are not sorted by address). When value and index fit
 * together in a double's 53 bits (any user-space file below 2^32 with < 2^21 symbols), they are packed into one
 * Float64Array key and sorted natively, several times faster than a comparator sort.
 */
function sortByValue(idx: Uint32Array, value: Float64Array): Uint32Array {
  let max = 0;
  for (let k = 0; k < idx.length; k++) if (value[idx[k]!]! > max) max = value[idx[k]!]!;
  const bits = Math.max(1, Math.ceil(Math.log2(value.length + 1)));
  const scale = 2 ** bits;
  if (max * scale + scale < 2 ** 53) {
    const keys = new Float64Array(idx.length);
    for (let k = 0; k < idx.length; k++) keys[k] = value[idx[k]!]! * scale + idx[k]!;
    keys.sort();
    const out = new Uint32Array(idx.length);
    for (let k = 0; k < keys.length; k++) out[k] = keys[k]! % scale;
    return out;
  }
  return idx.sort((a, b) => value[a]! - value[b]! || a - b);
}

function leadingUnderscores(b: Buffer, o: number): number {
  let n = 0;
  while (b[o + n] === 95) n++;
  return n;
}

/** Length of a NUL-terminated name up to its end or its `@VERSION` suffix. */
function bareNameLength(b: Buffer, o: number): number {
  let i = o;
  for (; i < b.length; i++) {
    const c = b[i]!;
    if (c === 0 || (c === 64 && i > o)) break;
  }
  return i - o;
}

/** Rank for alias choice (perf's `choose_best_symbol`): global 2, weak 1, local 0. */
function bindRank(info: number): number {
  const b = info >> 4;
  return b === STB_GLOBAL ? 2 : b === STB_WEAK ? 1 : 0;
}

/** How many decoded names of a lazily read table stay cached (most recently used). */
const LAZY_NAME_CACHE = 2048;

/**
 * The symbols of one ELF file (and its debug file), with an address index over the code symbols (`STT_FUNC`,
 * `STT_GNU_IFUNC`). Names are decoded from the string tables only when returned.
 *
 * Memory: the address index is typed arrays (start, size, name offset and table per distinct code address: 13 bytes
 * each when starts and sizes fit in 32 bits, else 21; node 20's binary: 78,125 addresses, 1.02 MB against 1.64 MB with
 * starts and ends as `Float64Array`s). Small tables keep their string tables and per-symbol arrays in memory. Large ones (string tables from 64 KiB)
 * keep only the index and a descriptor of the file: a name is read from the file (one `pread` of up to 256 bytes) when
 * a result needs it, the last 2,048 decoded names are cached, and {@link list}/{@link find} read the tables again on
 * their first call. A file rewritten in place (same inode; noticed by its size and modification time before each
 * name read) resolves nothing from then on, rather than names of its new contents.
 */
export class ElfSymbols {
  /**
   * Start per sorted entry, and size (end = start + size, exclusive: `st_size`, or the distance to the next symbol
   * when `st_size` is 0, or 1 for a last zero-sized one). Each a `Uint32Array` when all its values fit (every start
   * below 2^32: any user-space executable or library not mapped at a fixed high address; every size below 4 GiB),
   * else a `Float64Array` (values of 2^53 and more rounded, as `st_value` has always been read here).
   */
  private readonly starts: Float64Array | Uint32Array;
  private readonly sizes: Float64Array | Uint32Array;
  /** Per sorted entry: the chosen symbol's name offset and string table. */
  private readonly codeName: Uint32Array;
  private readonly codeTab: Uint8Array;
  /** Decoded names per sorted entry (in-memory tables: all kept; lazy tables: a bounded LRU). */
  private readonly codeNames = new Map<number, string>();
  private readonly names: (string | undefined)[] = [];
  private byName: Map<string, number[]> | undefined;
  private readonly total: number;
  private data: SymData | undefined;
  private strtabs: Buffer[] | undefined;

  /** @internal built by {@link ElfFile.symbols} */
  constructor(
    readonly path: string,
    strtabs: Buffer[],
    data: SymData,
    /** The `PT_LOAD` segments of the file the addresses belong to. */
    readonly loads: ElfSegment[],
    private readonly lazy: LazyTables | undefined,
  ) {
    const { value, size, info } = data;
    this.total = value.length;
    let ncode = 0;
    const idx = new Uint32Array(value.length);
    for (let i = 0; i < value.length; i++) {
      const t = info[i]! & 15;
      if ((t === STT_FUNC || t === STT_GNU_IFUNC) && value[i]! !== 0) idx[ncode++] = i;
    }
    const code = sortByValue(idx.subarray(0, ncode), value);
    // One entry per address (the best alias), compacted in place: code[0..nk) are the chosen symbols.
    let nk = 0;
    for (let k = 0; k < ncode; k++) {
      const i = code[k]!;
      if (nk > 0 && value[code[nk - 1]!] === value[i]) {
        if (better(data, strtabs, i, code[nk - 1]!)) code[nk - 1] = i;
        continue;
      }
      code[nk++] = i;
    }
    const starts = new Float64Array(nk);
    const sizes = new Float64Array(nk);
    this.codeName = new Uint32Array(nk);
    this.codeTab = new Uint8Array(nk);
    for (let k = 0; k < nk; k++) {
      const i = code[k]!;
      starts[k] = value[i]!;
      this.codeName[k] = data.nameOff[i]!;
      this.codeTab[k] = data.strtab[i]!;
    }
    for (let k = 0; k < nk; k++) {
      let sz = size[code[k]!]!;
      if (sz === 0) sz = k + 1 < nk ? starts[k + 1]! - starts[k]! : 1;
      sizes[k] = sz;
    }
    this.starts = narrow(starts);
    this.sizes = narrow(sizes);
    if (!lazy) {
      this.data = data;
      this.strtabs = strtabs;
    }
  }

  /** The per-symbol arrays and string tables (read again from the file for a lazy table, then kept). */
  private full(): { data: SymData; strtabs: Buffer[] } {
    if (!this.data || !this.strtabs) {
      const r = this.lazy!.reload();
      this.data = r.data;
      this.strtabs = r.strtabs;
    }
    return { data: this.data, strtabs: this.strtabs };
  }

  private nameOf(i: number): string {
    let s = this.names[i];
    if (s === undefined) {
      const { data, strtabs } = this.full();
      s = bareName(cstr(strtabs[data.strtab[i]!]!, data.nameOff[i]!));
      this.names[i] = s;
    }
    return s;
  }

  /** The name of sorted code entry `k`, or undefined when its file changed in place since it was read. */
  private codeNameOf(k: number): string | undefined {
    const m = this.codeNames;
    let s = m.get(k);
    if (s !== undefined) {
      if (this.lazy) {
        m.delete(k); // most recently used last
        m.set(k, s);
      }
      return s;
    }
    const tab = this.codeTab[k]!;
    if (this.strtabs) s = cstr(this.strtabs[tab]!, this.codeName[k]!);
    else {
      const t = this.lazy!.strs[tab]!;
      s = t.file.cstr(t.offset, t.size, this.codeName[k]!);
      if (s === undefined) return undefined;
    }
    s = bareName(s);
    if (this.lazy && m.size >= LAZY_NAME_CACHE) m.delete(m.keys().next().value!);
    m.set(k, s);
    return s;
  }

  /** Number of symbols (all kinds, aliases and both tables included). */
  get count(): number {
    return this.total;
  }

  /** Number of distinct code addresses in the address index. */
  get codeCount(): number {
    return this.starts.length;
  }

  /** Bytes held by the address index (starts, sizes, name offsets and tables), for memory accounting. */
  get indexBytes(): number {
    return this.starts.byteLength + this.sizes.byteLength + this.codeName.byteLength + this.codeTab.byteLength;
  }

  /**
   * The code symbol containing ELF virtual address `vaddr` (`start <= vaddr < start + size`; a zero-sized symbol
   * extends to the next one, as perf's `symbols__fixup_end`), or `undefined`.
   */
  resolve(vaddr: number): SymbolHit | undefined {
    const s = this.starts;
    let a = 0;
    let b = s.length;
    while (a < b) {
      const m = (a + b) >>> 1;
      if (s[m]! <= vaddr) a = m + 1;
      else b = m;
    }
    // Nested symbols are rare; look back a little for one that contains the address.
    for (let k = a - 1; k >= 0 && k >= a - 8; k--) {
      const end = s[k]! + this.sizes[k]!;
      if (vaddr < end) {
        const name = this.codeNameOf(k);
        if (name === undefined) return undefined;
        return { name, offset: vaddr - s[k]!, start: s[k]!, size: end - s[k]! };
      }
    }
    return undefined;
  }

  private symbolAt(i: number): ElfSymbol {
    const d = this.full().data;
    return {
      name: this.nameOf(i),
      value: d.value[i]!,
      size: d.size[i]!,
      type: d.info[i]! & 15,
      bind: d.info[i]! >> 4,
      shndx: d.shndx[i]!,
      table: d.dyn[i] ? '.dynsym' : '.symtab',
    };
  }

  /**
   * Symbols whose name passes `filter` (a RegExp, or a predicate; all when absent), de-duplicated by (name, value),
   * `.symtab` first. Use `globToRegExp` from the probes layer for glob patterns.
   */
  list(filter?: RegExp | ((name: string) => boolean)): ElfSymbol[] {
    const test = filter === undefined ? undefined : filter instanceof RegExp ? (s: string) => filter.test(s) : filter;
    const value = this.full().data.value;
    const seen = new Set<string>();
    const out: ElfSymbol[] = [];
    for (let i = 0; i < value.length; i++) {
      const name = this.nameOf(i);
      if (test && !test(name)) continue;
      const key = `${name}\0${value[i]}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(this.symbolAt(i));
    }
    return out;
  }

  /** Every symbol named exactly `name` (a function can appear in both tables or as several local statics). */
  find(name: string): ElfSymbol[] {
    if (!this.byName) {
      const m = new Map<string, number[]>();
      for (let i = 0; i < this.total; i++) {
        const n = this.nameOf(i);
        const l = m.get(n);
        if (l) l.push(i);
        else m.set(n, [i]);
      }
      this.byName = m;
    }
    return (this.byName.get(name) ?? []).map((i) => this.symbolAt(i));
  }

  /** File offset of ELF virtual address `vaddr` through the `PT_LOAD` containing it, or `undefined`. */
  fileOffset(vaddr: number): number | undefined {
    return vaddrToFileOffset(this.loads, vaddr);
  }
}

/** `a` as a `Uint32Array` when every value is an integer below 2^32 (the same numbers in half the bytes), else `a`. */
function narrow(a: Float64Array): Float64Array | Uint32Array {
  for (let k = 0; k < a.length; k++) if (!(a[k]! <= 0xffffffff && Number.isInteger(a[k]!) && a[k]! >= 0)) return a;
  return Uint32Array.from(a);
}

/**
 * A symbol name as stacks and probes use it: `.symver` names in .symtab carry their version
 * (`clock_nanosleep@GLIBC_2.2.5`, `memcpy@@GLIBC_2.14`); bpftrace prints the bare name.
 */
function bareName(s: string): string {
  const at = s.indexOf('@', 1);
  return at > 0 ? s.slice(0, at) : s;
}

/** Whether symbol `a` is a better name than `b` for the same address. */
function better(d: SymData, strtabs: Buffer[], a: number, b: number): boolean {
  // A sized symbol over a zero-sized one, then perf's rules, on the raw name bytes (no decoding).
  const za = d.size[a] === 0;
  const zb = d.size[b] === 0;
  if (za !== zb) return !za;
  const ra = bindRank(d.info[a]!);
  const rb = bindRank(d.info[b]!);
  if (ra !== rb) return ra > rb;
  const sa = strtabs[d.strtab[a]!]!;
  const sb = strtabs[d.strtab[b]!]!;
  const oa = d.nameOff[a]!;
  const ob = d.nameOff[b]!;
  const ua = leadingUnderscores(sa, oa);
  const ub = leadingUnderscores(sb, ob);
  if (ua !== ub) return ua < ub;
  const la = bareNameLength(sa, oa);
  const lb = bareNameLength(sb, ob);
  if (la !== lb) return la > lb;
  // Prefer .symtab over .dynsym, then table order.
  if (d.dyn[a] !== d.dyn[b]) return d.dyn[a] === 0;
  return a < b;
}
