/**
 * A minimal ELF64 little-endian reader for symbolization and uprobes (x86-64, aarch64 and other LE64 machines).
 * Layouts: the System V gABI and glibc's `<elf.h>` (`Elf64_Ehdr` 64 bytes, `Elf64_Phdr` 56, `Elf64_Shdr` 64,
 * `Elf64_Sym` 24, `Elf64_Nhdr` 12); `.gnu_debuglink` and build-id notes: gdb's manual, "Separate Debug Files".
 *
 * Reading is incremental: the ELF header, then the program and section headers, then only the sections asked for
 * (symbol and string tables, notes, debuglink). A multi-gigabyte file costs a few small reads plus its symbol tables.
 *
 * Values are JavaScript numbers: exact below 2^53, which covers user-space virtual addresses and file offsets (not
 * vmlinux's 0xffffffff8... addresses: use kallsyms for the kernel).
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { BpfscopeError } from '../errors.js';

/** `e_type` values. */
export const ET_EXEC = 2;
export const ET_DYN = 3;
/** `e_machine` values this project targets. */
export const EM_X86_64 = 62;
export const EM_AARCH64 = 183;
/** `p_type`: loadable segment, note segment. */
export const PT_LOAD = 1;
export const PT_NOTE = 4;
/** `p_flags`: executable. */
export const PF_X = 1;
/** `sh_type` values used here. */
export const SHT_SYMTAB = 2;
export const SHT_STRTAB = 3;
export const SHT_NOTE = 7;
export const SHT_NOBITS = 8;
export const SHT_DYNSYM = 11;
/** `sh_flags`: executable instructions. */
export const SHF_EXECINSTR = 4;
/** `STT_*` symbol types (low 4 bits of `st_info`). */
export const STT_NOTYPE = 0;
export const STT_OBJECT = 1;
export const STT_FUNC = 2;
export const STT_GNU_IFUNC = 10;
/** `STB_*` bindings (high 4 bits of `st_info`). */
export const STB_LOCAL = 0;
export const STB_GLOBAL = 1;
export const STB_WEAK = 2;
/** `NT_GNU_BUILD_ID`, in a note named `GNU`. */
export const NT_GNU_BUILD_ID = 3;

const TWO32 = 4294967296;

/** One program header (`Elf64_Phdr`). */
export interface ElfSegment {
  type: number;
  flags: number;
  offset: number;
  vaddr: number;
  filesz: number;
  memsz: number;
  align: number;
}

/** One section header (`Elf64_Shdr`) with its name resolved from `.shstrtab`. */
export interface ElfSection {
  name: string;
  type: number;
  flags: number;
  addr: number;
  offset: number;
  size: number;
  link: number;
  info: number;
  entsize: number;
}

/** One symbol (`Elf64_Sym`), as listed by {@link ElfSymbols.list}. */
export interface ElfSymbol {
  name: string;
  /** `st_value`: the symbol's virtual address in the ELF file's address space. */
  value: number;
  /** `st_size` in bytes (0 when the object file did not record it). */
  size: number;
  /** `STT_*` */
  type: number;
  /** `STB_*` */
  bind: number;
  /** `st_shndx` */
  shndx: number;
  /** Which table it came from. */
  table: '.symtab' | '.dynsym';
}

/** `.gnu_debuglink` contents: the debug file's base name and the CRC-32 of the whole debug file. */
export interface DebugLink {
  file: string;
  crc: number;
}

/** Random-access byte source: a file descriptor or an in-memory image. */
interface Source {
  read(offset: number, length: number): Buffer;
  readonly size: number;
}

class FdSource implements Source {
  constructor(
    readonly fd: number,
    readonly size: number,
  ) {}
  read(offset: number, length: number): Buffer {
    if (offset < 0 || length < 0 || offset + length > this.size) {
      throw new BpfscopeError(`ELF read out of bounds (offset ${offset}, length ${length}, file size ${this.size})`);
    }
    const buf = Buffer.allocUnsafe(length);
    let done = 0;
    while (done < length) {
      const n = readSync(this.fd, buf, done, length - done, offset + done);
      if (n <= 0) throw new BpfscopeError(`short read from ELF file at offset ${offset + done}`);
      done += n;
    }
    return buf;
  }
}

class BufferSource implements Source {
  constructor(readonly buf: Buffer) {}
  get size(): number {
    return this.buf.length;
  }
  read(offset: number, length: number): Buffer {
    if (offset < 0 || length < 0 || offset + length > this.buf.length) {
      throw new BpfscopeError(`ELF read out of bounds (offset ${offset}, length ${length}, image size ${this.size})`);
    }
    return this.buf.subarray(offset, offset + length);
  }
}

function u64(b: Buffer, o: number): number {
  return b.readUInt32LE(o) + b.readUInt32LE(o + 4) * TWO32;
}

function cstr(b: Buffer, o: number): string {
  if (o >= b.length) return '';
  let e = b.indexOf(0, o);
  if (e < 0) e = b.length;
  return b.toString('utf8', o, e);
}

/**
 * An ELF64 little-endian file: headers parsed eagerly, sections read on demand. Open with {@link ElfFile.open} (from
 * a path or an open fd) or {@link ElfFile.fromBuffer}; call {@link close} when done (the parsed {@link ElfSymbols}
 * stay usable after it).
 */
export class ElfFile {
  readonly path: string;
  /** `e_type` (`ET_EXEC`, `ET_DYN`, ...). */
  readonly type: number;
  /** `e_machine` (`EM_X86_64`, `EM_AARCH64`, ...). */
  readonly machine: number;
  readonly entry: number;
  readonly segments: ElfSegment[];
  readonly sections: ElfSection[];
  private src: Source | undefined;
  private readonly ownsFd: boolean;
  private symCache: ElfSymbols | undefined;
  /** The raw symbol and string tables {@link findFunction} scans (read on its first call). */
  private rawTables: { data: Buffer; str: Buffer; ent: number; table: '.dynsym' | '.symtab' }[] | undefined;

  private constructor(src: Source, path: string, ownsFd: boolean) {
    this.src = src;
    this.path = path;
    this.ownsFd = ownsFd;
    try {
      if (src.size < 64) throw new BpfscopeError(`${path}: not an ELF file (too short)`);
      const eh = src.read(0, 64);
      if (eh.readUInt32BE(0) !== 0x7f454c46) throw new BpfscopeError(`${path}: not an ELF file`);
      if (eh[4] !== 2) throw new BpfscopeError(`${path}: 32-bit ELF is not supported`);
      if (eh[5] !== 1) throw new BpfscopeError(`${path}: big-endian ELF is not supported`);
      this.type = eh.readUInt16LE(16);
      this.machine = eh.readUInt16LE(18);
      this.entry = u64(eh, 24);
      const phoff = u64(eh, 32);
      const shoff = u64(eh, 40);
      const phentsize = eh.readUInt16LE(54);
      let phnum = eh.readUInt16LE(56);
      const shentsize = eh.readUInt16LE(58);
      let shnum = eh.readUInt16LE(60);
      let shstrndx = eh.readUInt16LE(62);
      // Extended numbering (gABI): counts that do not fit live in section header 0.
      if (shoff !== 0 && (shnum === 0 || shstrndx === 0xffff || phnum === 0xffff) && shoff + 64 <= src.size) {
        const s0 = src.read(shoff, 64);
        if (shnum === 0) shnum = u64(s0, 32);
        if (shstrndx === 0xffff) shstrndx = s0.readUInt32LE(40);
        if (phnum === 0xffff) phnum = s0.readUInt32LE(44);
      }
      this.segments = [];
      if (phoff !== 0 && phnum > 0 && phentsize >= 56) {
        const ph = src.read(phoff, phnum * phentsize);
        for (let i = 0; i < phnum; i++) {
          const o = i * phentsize;
          this.segments.push({
            type: ph.readUInt32LE(o),
            flags: ph.readUInt32LE(o + 4),
            offset: u64(ph, o + 8),
            vaddr: u64(ph, o + 16),
            filesz: u64(ph, o + 32),
            memsz: u64(ph, o + 40),
            align: u64(ph, o + 48),
          });
        }
      }
      this.sections = [];
      if (shoff !== 0 && shnum > 0 && shentsize >= 64 && shoff + shnum * shentsize <= src.size) {
        const sh = src.read(shoff, shnum * shentsize);
        const nameOffs: number[] = [];
        for (let i = 0; i < shnum; i++) {
          const o = i * shentsize;
          nameOffs.push(sh.readUInt32LE(o));
          this.sections.push({
            name: '',
            type: sh.readUInt32LE(o + 4),
            flags: u64(sh, o + 8),
            addr: u64(sh, o + 16),
            offset: u64(sh, o + 24),
            size: u64(sh, o + 32),
            link: sh.readUInt32LE(o + 40),
            info: sh.readUInt32LE(o + 44),
            entsize: u64(sh, o + 56),
          });
        }
        const strSec = this.sections[shstrndx];
        if (strSec && strSec.type !== SHT_NOBITS && strSec.offset + strSec.size <= src.size) {
          const names = src.read(strSec.offset, strSec.size);
          for (let i = 0; i < shnum; i++) this.sections[i]!.name = cstr(names, nameOffs[i]!);
        }
      }
    } catch (e) {
      this.close();
      throw e;
    }
  }

  /**
   * Open an ELF file by path (opened read-only here and closed by {@link close}) or from an already open `fd` (left
   * open by {@link close}; `path` is then only a label for messages and debug-file search).
   * @throws BpfscopeError when the file cannot be opened or is not a supported ELF64 LE file.
   */
  static open(path: string, fd?: number): ElfFile {
    let owns = false;
    if (fd === undefined) {
      try {
        fd = openSync(path, 'r');
      } catch (e) {
        throw new BpfscopeError(`cannot open ${path}: ${(e as Error).message}`, { cause: e });
      }
      owns = true;
    }
    let size: number;
    try {
      size = fstatSync(fd).size;
    } catch (e) {
      if (owns) closeSync(fd);
      throw new BpfscopeError(`cannot stat ${path}: ${(e as Error).message}`, { cause: e });
    }
    return new ElfFile(new FdSource(fd, size), path, owns);
  }

  /**
   * Parse an ELF image held in memory (e.g. the `[vdso]` read from /proc/self/mem).
   * @throws BpfscopeError when it is not a supported ELF64 LE image.
   */
  static fromBuffer(buf: Buffer, label = '<memory>'): ElfFile {
    return new ElfFile(new BufferSource(buf), label, false);
  }

  /** Release the file descriptor (when this object opened it). Parsed results stay valid. */
  close(): void {
    if (this.src instanceof FdSource && this.ownsFd) {
      try {
        closeSync(this.src.fd);
      } catch {
        // already closed
      }
    }
    this.src = undefined;
  }

  private source(): Source {
    if (!this.src) throw new BpfscopeError(`${this.path}: ELF file already closed`);
    return this.src;
  }

  /** The first section named `name`, or `undefined`. */
  section(name: string): ElfSection | undefined {
    return this.sections.find((s) => s.name === name);
  }

  /** Bytes of a section (empty for `SHT_NOBITS`). */
  sectionData(sec: ElfSection): Buffer {
    if (sec.type === SHT_NOBITS || sec.size === 0) return Buffer.alloc(0);
    return this.source().read(sec.offset, sec.size);
  }

  /** `PT_LOAD` program headers, in file order. */
  loadSegments(): ElfSegment[] {
    return this.segments.filter((p) => p.type === PT_LOAD);
  }

  /** The GNU build-id as lowercase hex, from a `.note.gnu.build-id` section or any `PT_NOTE` segment. */
  buildId(): string | undefined {
    const blobs: Buffer[] = [];
    const sec = this.section('.note.gnu.build-id');
    if (sec && sec.type === SHT_NOTE) blobs.push(this.sectionData(sec));
    else {
      for (const p of this.segments) {
        if (p.type === PT_NOTE && p.filesz > 0 && p.offset + p.filesz <= this.source().size) {
          blobs.push(this.source().read(p.offset, p.filesz));
        }
      }
      if (blobs.length === 0) {
        for (const s of this.sections) if (s.type === SHT_NOTE) blobs.push(this.sectionData(s));
      }
    }
    for (const b of blobs) {
      for (const n of parseNotes(b)) {
        if (n.type === NT_GNU_BUILD_ID && n.name === 'GNU') return n.desc.toString('hex');
      }
    }
    return undefined;
  }

  /** The `.gnu_debuglink` section: debug file name (NUL-terminated, padded to 4) then a u32 CRC-32. */
  debugLink(): DebugLink | undefined {
    const sec = this.section('.gnu_debuglink');
    if (!sec) return undefined;
    const b = this.sectionData(sec);
    const end = b.indexOf(0);
    if (end <= 0) return undefined;
    const crcOff = (end + 4) & ~3;
    if (crcOff + 4 > b.length) return undefined;
    return { file: b.toString('utf8', 0, end), crc: b.readUInt32LE(crcOff) };
  }

  /** Whether the file has a `.symtab` with contents (i.e. it is not stripped). */
  hasSymtab(): boolean {
    const s = this.sections.find((x) => x.type === SHT_SYMTAB);
    return s !== undefined && s.type !== SHT_NOBITS && s.size > 24;
  }

  /**
   * The defined function, object and IFUNC symbols of `.symtab` and `.dynsym` (read on the first call, then cached).
   */
  symbols(): ElfSymbols {
    this.symCache ??= this.buildSymbols(undefined);
    return this.symCache;
  }

  /**
   * {@link symbols} plus the `.symtab` of a separate debug file (found through `.gnu_debuglink` or the build-id).
   * A debug file keeps the original's addresses, so its symbols resolve in this file's address space. Not cached.
   */
  symbolsWithDebugFile(debug: ElfFile): ElfSymbols {
    return this.buildSymbols(debug);
  }

  /**
   * The first defined code symbol (`STT_FUNC` or `STT_GNU_IFUNC`, non-zero `st_value`) named `name`, in the order
   * {@link symbols} lists them (section order: `.dynsym` and `.symtab` as the file has them, then table order),
   * compared as {@link ElfSymbols.find} names them (a `.symver` suffix `@VERSION` is not part of the name).
   * For probe expansion of one exact name: see {@link findSymbol}.
   * @returns the symbol's `st_value`, `st_size` and type, or undefined when no such code symbol exists
   */
  findFunction(name: string): { value: number; size: number; type: number } | undefined {
    return this.findSymbol(name, { code: true });
  }

  /**
   * The first symbol named `name` that {@link symbols} would hold (defined `STT_FUNC`, `STT_OBJECT` or
   * `STT_GNU_IFUNC`), in its order and naming; with `code`, only functions with a non-zero address; with `table`,
   * only from that table. The tables are scanned comparing raw string-table bytes, without decoding every name or
   * building the address index that {@link symbols} builds (libc's ~3,000 symbols cost 15-40 ms of cold JavaScript
   * that way; this well under 1 ms). Names containing U+FFFD (which an invalid byte sequence also decodes to) are
   * looked up through {@link symbols}. The raw tables are kept for later calls; the first call needs the file open.
   */
  findSymbol(
    name: string,
    opts: { code?: boolean; table?: '.dynsym' | '.symtab' } = {},
  ): { value: number; size: number; type: number; table: '.dynsym' | '.symtab' } | undefined {
    const ok = (type: number, value: number, table: '.dynsym' | '.symtab'): boolean =>
      (opts.table === undefined || opts.table === table) &&
      (opts.code ? (type === STT_FUNC || type === STT_GNU_IFUNC) && value !== 0 : true);
    if (name === '') return undefined; // the tables' empty names are not symbols here
    if (name.includes('\ufffd')) {
      const s = this.symbols()
        .find(name)
        .find((x) => ok(x.type, x.value, x.table));
      return s ? { value: s.value, size: s.size, type: s.type, table: s.table } : undefined;
    }
    if (name.indexOf('@', 1) > 0) return undefined; // bare names never hold a version suffix
    const want = Buffer.from(name, 'utf8');
    const first = want[0]!;
    const len = want.length;
    this.rawTables ??= this.sections
      .filter((sec) => (sec.type === SHT_SYMTAB || sec.type === SHT_DYNSYM) && sec.size >= 24)
      .filter((sec) => this.sections[sec.link]?.type === SHT_STRTAB)
      .map((sec) => ({
        data: this.sectionData(sec),
        str: this.sectionData(this.sections[sec.link]!),
        ent: Math.max(sec.entsize, 24),
        table: sec.type === SHT_DYNSYM ? ('.dynsym' as const) : ('.symtab' as const),
      }));
    for (const { data, str, ent, table } of this.rawTables) {
      for (let o = ent; o + 24 <= data.length; o += ent) {
        const off = data.readUInt32LE(o);
        if (off === 0 || off + len > str.length || str[off] !== first) continue;
        const end = str[off + len];
        if (end !== 0 && end !== 64 && end !== undefined) continue;
        if (str.compare(want, 0, len, off, off + len) !== 0) continue;
        const type = data[o + 4]! & 15;
        if (type !== STT_FUNC && type !== STT_OBJECT && type !== STT_GNU_IFUNC) continue;
        if (data.readUInt16LE(o + 6) === 0) continue; // SHN_UNDEF: an import
        const value = u64(data, o + 8);
        if (!ok(type, value, table)) continue;
        return { value, size: u64(data, o + 16), type, table };
      }
    }
    return undefined;
  }

  private buildSymbols(debug: ElfFile | undefined): ElfSymbols {
    const b = new SymbolsBuilder();
    for (const s of this.sections) {
      if (s.type === SHT_SYMTAB || s.type === SHT_DYNSYM) b.addTable(this, s);
    }
    if (debug) for (const s of debug.sections) if (s.type === SHT_SYMTAB) b.addTable(debug, s);
    return b.finish(this.loadSegments(), this.path);
  }
}

/** One ELF note (`Elf64_Nhdr` + name + desc, each padded to 4 bytes). */
export interface ElfNote {
  name: string;
  type: number;
  desc: Buffer;
}

/** Split a note section or segment into notes. */
export function parseNotes(b: Buffer): ElfNote[] {
  const out: ElfNote[] = [];
  let o = 0;
  while (o + 12 <= b.length) {
    const namesz = b.readUInt32LE(o);
    const descsz = b.readUInt32LE(o + 4);
    const type = b.readUInt32LE(o + 8);
    const nameOff = o + 12;
    const descOff = nameOff + ((namesz + 3) & ~3);
    const next = descOff + ((descsz + 3) & ~3);
    if (descOff + descsz > b.length) break;
    const nameEnd = namesz > 0 && b[nameOff + namesz - 1] === 0 ? nameOff + namesz - 1 : nameOff + namesz;
    out.push({ name: b.toString('latin1', nameOff, nameEnd), type, desc: b.subarray(descOff, descOff + descsz) });
    o = next;
  }
  return out;
}

/** A symbol table being assembled from one or more ELF `SHT_SYMTAB`/`SHT_DYNSYM` sections. */
class SymbolsBuilder {
  private readonly strtabs: Buffer[] = [];
  private readonly tables: { elf: ElfFile; sec: ElfSection; str: ElfSection }[] = [];

  addTable(elf: ElfFile, sec: ElfSection): void {
    if (sec.type === SHT_NOBITS || sec.size < 24) return;
    const str = elf.sections[sec.link];
    if (!str || str.type !== SHT_STRTAB) return;
    this.tables.push({ elf, sec, str });
  }

  finish(loads: ElfSegment[], path: string): ElfSymbols {
    // Typed arrays sized for every entry, trimmed at the end: no per-symbol allocation.
    let cap = 0;
    for (const t of this.tables) cap += Math.floor(t.sec.size / Math.max(t.sec.entsize, 24));
    const value = new Float64Array(cap);
    const size = new Float64Array(cap);
    const info = new Uint8Array(cap);
    const shndx = new Uint16Array(cap);
    const nameOff = new Uint32Array(cap);
    const strtab = new Uint8Array(cap);
    const dyn = new Uint8Array(cap);
    let n = 0;
    for (const t of this.tables) {
      const data = t.elf.sectionData(t.sec);
      const str = t.elf.sectionData(t.str);
      const id = this.strtabs.length;
      this.strtabs.push(str);
      const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
      const ent = Math.max(t.sec.entsize, 24);
      const isDyn = t.sec.type === SHT_DYNSYM ? 1 : 0;
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
    }
    return new ElfSymbols(
      path,
      this.strtabs,
      value.slice(0, n),
      size.slice(0, n),
      info.slice(0, n),
      shndx.slice(0, n),
      nameOff.slice(0, n),
      strtab.slice(0, n),
      dyn.slice(0, n),
      loads,
    );
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

/**
 * The symbols of one ELF file (and its debug file), with an address index over the code symbols (`STT_FUNC`,
 * `STT_GNU_IFUNC`). Names are decoded from the string tables only when returned.
 */
export class ElfSymbols {
  /** Code symbol indices sorted by start address, one per address (best alias). */
  private readonly order: Uint32Array;
  private readonly starts: Float64Array;
  /** End (exclusive) per sorted entry: start + size, or the next symbol's start when size is 0. */
  private readonly ends: Float64Array;
  private readonly names: (string | undefined)[] = [];
  private byName: Map<string, number[]> | undefined;

  /** @internal built by {@link ElfFile.symbols} */
  constructor(
    readonly path: string,
    private readonly strtabs: Buffer[],
    private readonly value: Float64Array,
    private readonly size: Float64Array,
    private readonly info: Uint8Array,
    private readonly shndx: Uint16Array,
    private readonly nameOff: Uint32Array,
    private readonly strtab: Uint8Array,
    private readonly dyn: Uint8Array,
    /** The `PT_LOAD` segments of the file the addresses belong to. */
    readonly loads: ElfSegment[],
  ) {
    let ncode = 0;
    const idx = new Uint32Array(value.length);
    for (let i = 0; i < value.length; i++) {
      const t = info[i]! & 15;
      if ((t === STT_FUNC || t === STT_GNU_IFUNC) && value[i]! !== 0) idx[ncode++] = i;
    }
    const code = sortByValue(idx.subarray(0, ncode), value);
    const order: number[] = [];
    for (let k = 0; k < ncode; k++) {
      const i = code[k]!;
      const last = order.length - 1;
      if (last >= 0 && value[order[last]!] === value[i]) {
        if (this.better(i, order[last]!)) order[last] = i;
        continue;
      }
      order.push(i);
    }
    this.order = Uint32Array.from(order);
    this.starts = new Float64Array(order.length);
    this.ends = new Float64Array(order.length);
    for (let k = 0; k < order.length; k++) this.starts[k] = value[order[k]!]!;
    for (let k = 0; k < order.length; k++) {
      const i = order[k]!;
      let sz = size[i]!;
      if (sz === 0) sz = k + 1 < order.length ? this.starts[k + 1]! - this.starts[k]! : 1;
      this.ends[k] = this.starts[k]! + sz;
    }
  }

  private better(a: number, b: number): boolean {
    // A sized symbol over a zero-sized one, then perf's rules, on the raw name bytes (no decoding).
    const za = this.size[a] === 0;
    const zb = this.size[b] === 0;
    if (za !== zb) return !za;
    const ra = bindRank(this.info[a]!);
    const rb = bindRank(this.info[b]!);
    if (ra !== rb) return ra > rb;
    const sa = this.strtabs[this.strtab[a]!]!;
    const sb = this.strtabs[this.strtab[b]!]!;
    const oa = this.nameOff[a]!;
    const ob = this.nameOff[b]!;
    const ua = leadingUnderscores(sa, oa);
    const ub = leadingUnderscores(sb, ob);
    if (ua !== ub) return ua < ub;
    const la = bareNameLength(sa, oa);
    const lb = bareNameLength(sb, ob);
    if (la !== lb) return la > lb;
    // Prefer .symtab over .dynsym, then table order.
    if (this.dyn[a] !== this.dyn[b]) return this.dyn[a] === 0;
    return a < b;
  }

  private nameOf(i: number): string {
    let s = this.names[i];
    if (s === undefined) {
      s = cstr(this.strtabs[this.strtab[i]!]!, this.nameOff[i]!);
      // `.symver` names in .symtab carry their version (`clock_nanosleep@GLIBC_2.2.5`, `memcpy@@GLIBC_2.14`);
      // stacks and probes use the bare name, as bpftrace prints them.
      const at = s.indexOf('@', 1);
      if (at > 0) s = s.slice(0, at);
      this.names[i] = s;
    }
    return s;
  }

  /** Number of symbols (all kinds, aliases and both tables included). */
  get count(): number {
    return this.value.length;
  }

  /** Number of distinct code addresses in the address index. */
  get codeCount(): number {
    return this.order.length;
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
      if (vaddr < this.ends[k]!) {
        const i = this.order[k]!;
        return { name: this.nameOf(i), offset: vaddr - s[k]!, start: s[k]!, size: this.ends[k]! - s[k]! };
      }
    }
    return undefined;
  }

  private symbolAt(i: number): ElfSymbol {
    return {
      name: this.nameOf(i),
      value: this.value[i]!,
      size: this.size[i]!,
      type: this.info[i]! & 15,
      bind: this.info[i]! >> 4,
      shndx: this.shndx[i]!,
      table: this.dyn[i] ? '.dynsym' : '.symtab',
    };
  }

  /**
   * Symbols whose name passes `filter` (a RegExp, or a predicate; all when absent), de-duplicated by (name, value),
   * `.symtab` first. Use `globToRegExp` from the probes layer for glob patterns.
   */
  list(filter?: RegExp | ((name: string) => boolean)): ElfSymbol[] {
    const test = filter === undefined ? undefined : filter instanceof RegExp ? (s: string) => filter.test(s) : filter;
    const seen = new Set<string>();
    const out: ElfSymbol[] = [];
    for (let i = 0; i < this.value.length; i++) {
      const name = this.nameOf(i);
      if (test && !test(name)) continue;
      const key = `${name}\0${this.value[i]}`;
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
      for (let i = 0; i < this.value.length; i++) {
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

/**
 * File offset of a virtual address: `vaddr - (p_vaddr - p_offset)` of the `PT_LOAD` whose file image contains it
 * (what a uprobe's offset is), or `undefined` when no segment maps it from the file.
 */
export function vaddrToFileOffset(loads: ElfSegment[], vaddr: number): number | undefined {
  for (const p of loads) {
    if (p.type === PT_LOAD && vaddr >= p.vaddr && vaddr < p.vaddr + p.filesz) return vaddr - p.vaddr + p.offset;
  }
  return undefined;
}

/** Virtual address of a file offset through the `PT_LOAD` whose file image contains it, or `undefined`. */
export function fileOffsetToVaddr(loads: ElfSegment[], offset: number): number | undefined {
  for (const p of loads) {
    if (p.type === PT_LOAD && offset >= p.offset && offset < p.offset + p.filesz) return offset - p.offset + p.vaddr;
  }
  return undefined;
}

/**
 * The file offset of symbol `sym` for a uprobe: `st_value - (p_vaddr - p_offset)` of the `PT_LOAD` containing it.
 * @throws BpfscopeError when no loadable segment contains the symbol.
 */
export function symbolFileOffset(loads: ElfSegment[], sym: Pick<ElfSymbol, 'name' | 'value'>): number {
  const off = vaddrToFileOffset(loads, sym.value);
  if (off === undefined) {
    throw new BpfscopeError(`symbol ${sym.name} (0x${sym.value.toString(16)}) is not in a loadable segment`);
  }
  return off;
}
