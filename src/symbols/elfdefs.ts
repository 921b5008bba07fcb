/**
 * ELF64 constants, header and symbol shapes, and address/file-offset conversion shared by the ELF reader (elf.ts) and
 * its symbol index (elfsyms.ts). Layouts: the System V gABI and glibc's `<elf.h>`. Import them from elf.ts.
 */
import { readSync } from 'node:fs';
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

export const TWO32 = 4294967296;

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

/** The NUL-terminated UTF-8 string at `o` of a string table (to its end when unterminated; '' past it). */
export function cstr(b: Buffer, o: number): string {
  if (o >= b.length) return '';
  let e = b.indexOf(0, o);
  if (e < 0) e = b.length;
  return b.toString('utf8', o, e);
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

/** `length` bytes of open file `fd` from `offset` (pread until done). Throws BpfscopeError on a short read. */
export function readFully(fd: number, offset: number, length: number): Buffer {
  const buf = Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const n = readSync(fd, buf, done, length - done, offset + done);
    if (n <= 0) throw new BpfscopeError(`short read from ELF file at offset ${offset + done}`);
    done += n;
  }
  return buf;
}
