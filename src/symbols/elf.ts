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
import { closeSync, fstatSync, openSync } from 'node:fs';
import { BpfscopeError } from '../errors.js';
import {
  cstr,
  type ElfSection,
  type ElfSegment,
  PT_LOAD,
  PT_NOTE,
  NT_GNU_BUILD_ID,
  SHT_DYNSYM,
  SHT_NOBITS,
  SHT_NOTE,
  SHT_STRTAB,
  SHT_SYMTAB,
  STT_FUNC,
  STT_GNU_IFUNC,
  STT_OBJECT,
  readFully,
  TWO32,
} from './elfdefs.js';
import { type ElfSymbols, SymbolsBuilder } from './elfsyms.js';

export {
  EM_AARCH64,
  EM_X86_64,
  type ElfSection,
  type ElfSegment,
  type ElfSymbol,
  ET_DYN,
  ET_EXEC,
  fileOffsetToVaddr,
  NT_GNU_BUILD_ID,
  PF_X,
  PT_LOAD,
  PT_NOTE,
  SHF_EXECINSTR,
  SHT_DYNSYM,
  SHT_NOBITS,
  SHT_NOTE,
  SHT_STRTAB,
  SHT_SYMTAB,
  STB_GLOBAL,
  STB_LOCAL,
  STB_WEAK,
  STT_FUNC,
  STT_GNU_IFUNC,
  STT_NOTYPE,
  STT_OBJECT,
  symbolFileOffset,
  vaddrToFileOffset,
} from './elfdefs.js';
export { ElfSymbols, setLazyStringTableMin, type SymbolHit } from './elfsyms.js';

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
    return readFully(this.fd, offset, length);
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

  /** @internal The open file descriptor this file is read through, or undefined (an in-memory image). */
  fd(): number | undefined {
    const src = this.source();
    return src instanceof FdSource ? src.fd : undefined;
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
