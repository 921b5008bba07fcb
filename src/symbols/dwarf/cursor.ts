/**
 * A little-endian byte cursor over one DWARF section: fixed-size integers, LEB128 (DWARF 5 §7.6), NUL-terminated
 * strings and the "initial length" of 32- and 64-bit DWARF (§7.4). Values are JavaScript numbers: exact below 2^53,
 * which covers user-space addresses and section offsets; 8-byte constants above that lose their low bits.
 */
import { DwarfError } from './errors.js';

const TWO32 = 4294967296;

export class Cursor {
  constructor(
    readonly buf: Buffer,
    public pos = 0,
    /** Name of the section, for error messages. */
    readonly section = '',
  ) {}

  get atEnd(): boolean {
    return this.pos >= this.buf.length;
  }

  private need(n: number): void {
    if (this.pos + n > this.buf.length) {
      throw new DwarfError(`truncated ${this.section || 'DWARF data'} at offset ${this.pos} (needs ${n} more bytes)`);
    }
  }

  u8(): number {
    this.need(1);
    return this.buf[this.pos++]!;
  }
  s8(): number {
    this.need(1);
    return this.buf.readInt8(this.pos++);
  }
  u16(): number {
    this.need(2);
    const v = this.buf.readUInt16LE(this.pos);
    this.pos += 2;
    return v;
  }
  u24(): number {
    this.need(3);
    const v = this.buf.readUIntLE(this.pos, 3);
    this.pos += 3;
    return v;
  }
  u32(): number {
    this.need(4);
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }
  u64(): number {
    this.need(8);
    const v = this.buf.readUInt32LE(this.pos) + this.buf.readUInt32LE(this.pos + 4) * TWO32;
    this.pos += 8;
    return v;
  }
  s64(): number {
    this.need(8);
    const v = this.buf.readUInt32LE(this.pos) + this.buf.readInt32LE(this.pos + 4) * TWO32;
    this.pos += 8;
    return v;
  }
  /** An unsigned integer of `size` bytes (1, 2, 4 or 8): addresses and offsets. */
  uN(size: number): number {
    switch (size) {
      case 1:
        return this.u8();
      case 2:
        return this.u16();
      case 4:
        return this.u32();
      case 8:
        return this.u64();
      default:
        throw new DwarfError(`unsupported ${size}-byte field in ${this.section}`);
    }
  }
  /** Unsigned LEB128 (§7.6). */
  uleb(): number {
    const b = this.buf;
    let result = 0;
    let mul = 1;
    for (;;) {
      if (this.pos >= b.length) this.need(1);
      const byte = b[this.pos++]!;
      result += (byte & 0x7f) * mul;
      if ((byte & 0x80) === 0) return result;
      mul *= 128;
    }
  }
  /** Signed LEB128 (§7.6). */
  sleb(): number {
    const b = this.buf;
    let result = 0;
    let mul = 1;
    let byte: number;
    do {
      if (this.pos >= b.length) this.need(1);
      byte = b[this.pos++]!;
      result += (byte & 0x7f) * mul;
      mul *= 128;
    } while (byte & 0x80);
    if (byte & 0x40) result -= mul;
    return result;
  }
  /** Skip a LEB128 number. */
  skipLeb(): void {
    const b = this.buf;
    while (this.pos < b.length && b[this.pos++]! & 0x80);
  }
  /** A NUL-terminated UTF-8 string. */
  cstr(): string {
    const e = this.buf.indexOf(0, this.pos);
    if (e < 0) throw new DwarfError(`unterminated string in ${this.section} at offset ${this.pos}`);
    const s = this.buf.toString('utf8', this.pos, e);
    this.pos = e + 1;
    return s;
  }
  bytes(n: number): Buffer {
    this.need(n);
    const v = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return v;
  }
  /**
   * The initial length field of a unit or table header (§7.4): 4 bytes, or 0xffffffff then 8 bytes for 64-bit DWARF.
   * Returns the length and the offset size (4 or 8) that the rest of the header uses.
   */
  initialLength(): { length: number; offsetSize: 4 | 8 } {
    const l = this.u32();
    if (l === 0xffffffff) return { length: this.u64(), offsetSize: 8 };
    if (l >= 0xfffffff0) throw new DwarfError(`reserved unit length 0x${l.toString(16)} in ${this.section}`);
    return { length: l, offsetSize: 4 };
  }
}

/** The NUL-terminated string at `off` of a string section (`.debug_str`, `.debug_line_str`). */
export function strAt(buf: Buffer, off: number, section: string): string {
  if (off >= buf.length) throw new DwarfError(`string offset ${off} is outside ${section} (${buf.length} bytes)`);
  let e = buf.indexOf(0, off);
  if (e < 0) e = buf.length;
  return buf.toString('utf8', off, e);
}
