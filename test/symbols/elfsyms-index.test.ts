/**
 * ElfSymbols' address index (elfsyms.ts) on synthetic ELF images built here: starts and sizes kept as `Uint32Array`s
 * when they fit in 32 bits and as `Float64Array`s when not (starts above 4 GiB, a symbol of 4 GiB or more), with the
 * same resolutions either way. The expected values come from the symbol list below, with bigint arithmetic.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ElfFile } from '../../src/symbols/elf.js';

const STT_FUNC = 2;
const STB_GLOBAL = 1;

interface Sym {
  name: string;
  value: bigint;
  size: bigint;
}

/** An ELF64 LE image with `.symtab` (global functions, in the order given), `.strtab` and `.shstrtab` only. */
function elfImage(syms: Sym[]): Buffer {
  const strtab = Buffer.from(`\0${syms.map((s) => `${s.name}\0`).join('')}`);
  const symtab = Buffer.alloc(24 * (syms.length + 1));
  let nameOff = 1;
  syms.forEach((s, i) => {
    const o = 24 * (i + 1);
    symtab.writeUInt32LE(nameOff, o);
    symtab[o + 4] = (STB_GLOBAL << 4) | STT_FUNC;
    symtab.writeUInt16LE(1, o + 6); // defined in section 1 (any non-zero index)
    symtab.writeBigUInt64LE(s.value, o + 8);
    symtab.writeBigUInt64LE(s.size, o + 16);
    nameOff += Buffer.byteLength(s.name) + 1;
  });
  const shstrtab = Buffer.from('\0.symtab\0.strtab\0.shstrtab\0');
  const symOff = 64;
  const strOff = symOff + symtab.length;
  const shstrOff = strOff + strtab.length;
  const shOff = (shstrOff + shstrtab.length + 7) & ~7;
  const out = Buffer.alloc(shOff + 4 * 64);
  out.writeUInt32BE(0x7f454c46, 0);
  out[4] = 2; // ELFCLASS64
  out[5] = 1; // little-endian
  out[6] = 1; // EV_CURRENT
  out.writeUInt16LE(2, 16); // ET_EXEC
  out.writeUInt16LE(62, 18); // EM_X86_64
  out.writeUInt32LE(1, 20);
  out.writeBigUInt64LE(BigInt(shOff), 40);
  out.writeUInt16LE(64, 52); // e_ehsize
  out.writeUInt16LE(56, 54); // e_phentsize
  out.writeUInt16LE(64, 58); // e_shentsize
  out.writeUInt16LE(4, 60); // e_shnum
  out.writeUInt16LE(3, 62); // e_shstrndx
  symtab.copy(out, symOff);
  strtab.copy(out, strOff);
  shstrtab.copy(out, shstrOff);
  const section = (i: number, name: number, type: number, off: number, size: number, link: number, ent: number) => {
    const o = shOff + 64 * i;
    out.writeUInt32LE(name, o);
    out.writeUInt32LE(type, o + 4);
    out.writeBigUInt64LE(BigInt(off), o + 24);
    out.writeBigUInt64LE(BigInt(size), o + 32);
    out.writeUInt32LE(link, o + 40);
    out.writeUInt32LE(type === 2 ? 1 : 0, o + 44); // sh_info of .symtab: first global
    out.writeBigUInt64LE(1n, o + 48);
    out.writeBigUInt64LE(BigInt(ent), o + 56);
  };
  section(1, 1, 2, symOff, symtab.length, 2, 24); // .symtab (SHT_SYMTAB), strings in section 2
  section(2, 9, 3, strOff, strtab.length, 0, 0); // .strtab
  section(3, 17, 3, shstrOff, shstrtab.length, 0, 0); // .shstrtab
  return out;
}

/**
 * Check resolve() at each symbol's start, the byte after, its last byte, its end and the middle, against the
 * symbols' own extents (non-overlapping here): `size`, or up to the next start when 0, or 1 byte for a last one.
 */
function checkAll(syms: Sym[]): number {
  const e = ElfFile.fromBuffer(elfImage(syms));
  const s = e.symbols();
  const sorted = syms.slice().sort((a, b) => (a.value < b.value ? -1 : 1));
  const extent = sorted.map((x, i) =>
    x.size !== 0n ? x.size : i + 1 < sorted.length ? sorted[i + 1]!.value - x.value : 1n,
  );
  const within = (a: bigint) => {
    for (let i = 0; i < sorted.length; i++) {
      if (sorted[i]!.value <= a && a < sorted[i]!.value + extent[i]!) return i;
    }
    return -1;
  };
  for (let i = 0; i < sorted.length; i++) {
    const { value } = sorted[i]!;
    for (const a of [
      value - 1n,
      value,
      value + 1n,
      value + extent[i]! / 2n,
      value + extent[i]! - 1n,
      value + extent[i]!,
    ]) {
      const k = within(a);
      const want =
        k < 0
          ? undefined
          : {
              name: sorted[k]!.name,
              offset: Number(a - sorted[k]!.value),
              start: Number(sorted[k]!.value),
              size: Number(extent[k]!),
            };
      assert.deepEqual(s.resolve(Number(a)), want, `0x${a.toString(16)}`);
    }
  }
  return s.indexBytes;
}

describe('ElfSymbols address index: 32-bit starts and sizes when they fit', () => {
  it('low addresses and sizes: 13 bytes per address (u32 start, u32 size, name offset, table)', () => {
    const syms: Sym[] = [
      { name: 'main', value: 0x401100n, size: 0x40n },
      { name: '_start', value: 0x401000n, size: 0x26n },
      { name: 'no_size', value: 0x401040n, size: 0n }, // extends to main
      { name: 'top', value: 0xffff_f000n, size: 0xfffn }, // up to 0xffff_ffff
      { name: 'last_zero', value: 0xffff_ffffn, size: 0n }, // the highest 32-bit start: one byte
    ];
    assert.equal(checkAll(syms), 13 * syms.length);
  });

  it('starts above 4 GiB: 64-bit starts (17 bytes per address), same resolutions', () => {
    const base = 0x7f12_3456_0000n;
    const syms: Sym[] = [
      { name: 'high_a', value: base, size: 0x80n },
      { name: 'high_b', value: base + 0x80n, size: 0n },
      { name: 'high_c', value: base + 0x1000n, size: 0x10n },
      { name: 'low', value: 0x1000n, size: 0x10n },
    ];
    assert.equal(checkAll(syms), 17 * syms.length);
  });

  it('a size of 4 GiB or more (given, or up to the next start): 64-bit sizes, same resolutions', () => {
    const syms: Sym[] = [
      { name: 'huge', value: 0x1000n, size: 0x1_0000_0010n },
      { name: 'gap_before', value: 0x2_0000_0000n, size: 0n }, // extends 2^33 bytes to far
      { name: 'far', value: 0x4_0000_0000n, size: 0x20n },
    ];
    assert.equal(checkAll(syms), 21 * syms.length);
  });

  it('sizes of 4 GiB or more with starts below 4 GiB: u32 starts, 64-bit sizes (17 bytes per address)', () => {
    const syms: Sym[] = [
      { name: 'small', value: 0x1000n, size: 0x10n },
      { name: 'big', value: 0x2000n, size: 0x1_0000_0000n },
    ];
    assert.equal(checkAll(syms), 17 * syms.length);
  });
});
