/**
 * The DWARF sections of an ELF file, read on first use and decompressed when needed:
 * - `SHF_COMPRESSED` sections (gABI "Section Compression"): an `Elf64_Chdr` (`ch_type` u32, `ch_reserved` u32,
 *   `ch_size` u64, `ch_addralign` u64; 24 bytes) then the data; `ELFCOMPRESS_ZLIB` (1) is inflated with node:zlib,
 *   `ELFCOMPRESS_ZSTD` (2) is refused with a message (Node 20's zlib has no zstd);
 * - GNU's older `.zdebug_*` sections: the magic `ZLIB`, the uncompressed size as a big-endian u64, then zlib data.
 */
import { zlib } from '../../builtins.js';
import { type ElfFile, SHT_NOBITS } from '../elf.js';
import { DwarfError } from './errors.js';

/** `sh_flags` bit of a compressed section. */
export const SHF_COMPRESSED = 0x800;
/** `ch_type` values. */
export const ELFCOMPRESS_ZLIB = 1;
export const ELFCOMPRESS_ZSTD = 2;

/** The DWARF sections the reader uses, by name without the leading `.debug_`. */
export type DwarfSectionName =
  'info' | 'abbrev' | 'str' | 'str_offsets' | 'line_str' | 'line' | 'addr' | 'rnglists' | 'ranges' | 'loclists' | 'loc';

/** Lazily loaded, decompressed DWARF sections of one ELF file. Empty buffers stand for absent sections. */
export class DwarfSections {
  private readonly cache = new Map<string, Buffer>();
  /** How each compressed section was stored, for diagnostics: `zlib` (SHF_COMPRESSED) or `zdebug` (GNU). */
  readonly compressed = new Map<string, 'zlib' | 'zdebug'>();

  /**
   * @param split for a split DWARF file (`-gsplit-dwarf`'s `.dwo`): its sections are named `.debug_NAME.dwo`, and
   *   `.debug_addr` is the one of the main file (`main`), which the skeleton unit's `DW_AT_addr_base` indexes.
   */
  constructor(
    readonly elf: ElfFile,
    private readonly split?: { main: DwarfSections },
  ) {}

  private get suffix(): string {
    return this.split ? '.dwo' : '';
  }

  /** Whether the file has a `.debug_NAME` (or `.zdebug_NAME`) section with contents. */
  has(name: DwarfSectionName): boolean {
    if (this.split && name === 'addr') return this.split.main.has('addr');
    const s = this.elf.section(`.debug_${name}${this.suffix}`) ?? this.elf.section(`.zdebug_${name}${this.suffix}`);
    return s !== undefined && s.type !== SHT_NOBITS && s.size > 0;
  }

  /** The bytes of `.debug_NAME`, decompressed; an empty buffer when the section is absent. */
  get(name: DwarfSectionName): Buffer {
    if (this.split && name === 'addr') return this.split.main.get('addr');
    let b = this.cache.get(name);
    if (b === undefined) {
      b = this.load(name);
      this.cache.set(name, b);
    }
    return b;
  }

  private load(name: DwarfSectionName): Buffer {
    const plain = this.elf.section(`.debug_${name}${this.suffix}`);
    if (plain && plain.type !== SHT_NOBITS) {
      const raw = this.elf.sectionData(plain);
      if ((plain.flags & SHF_COMPRESSED) === 0) return raw;
      this.compressed.set(name, 'zlib');
      if (raw.length < 24) throw new DwarfError(`${this.elf.path}: .debug_${name} has a truncated compression header`);
      const type = raw.readUInt32LE(0);
      const size = raw.readUInt32LE(8) + raw.readUInt32LE(12) * 4294967296;
      if (type === ELFCOMPRESS_ZSTD) {
        throw new DwarfError(`${this.elf.path}: .debug_${name} is zstd-compressed, which bpfscope cannot read yet`, {
          hint: 'decompress it with `objcopy --decompress-debug-sections FILE`',
        });
      }
      if (type !== ELFCOMPRESS_ZLIB) {
        throw new DwarfError(`${this.elf.path}: .debug_${name} uses unknown compression type ${type}`);
      }
      return this.inflate(name, raw.subarray(24), size);
    }
    const z = this.elf.section(`.zdebug_${name}${this.suffix}`);
    if (z && z.type !== SHT_NOBITS) {
      const raw = this.elf.sectionData(z);
      this.compressed.set(name, 'zdebug');
      if (raw.length < 12 || raw.toString('latin1', 0, 4) !== 'ZLIB') return raw;
      const size = raw.readUInt32BE(4) * 4294967296 + raw.readUInt32BE(8);
      return this.inflate(name, raw.subarray(12), size);
    }
    return Buffer.alloc(0);
  }

  private inflate(name: string, data: Buffer, size: number): Buffer {
    let out: Buffer;
    try {
      out = zlib().inflateSync(data);
    } catch (e) {
      throw new DwarfError(`${this.elf.path}: cannot decompress .debug_${name}: ${(e as Error).message}`, { cause: e });
    }
    if (out.length !== size) {
      throw new DwarfError(
        `${this.elf.path}: .debug_${name} decompressed to ${out.length} bytes, its header says ${size}`,
      );
    }
    return out;
  }
}
