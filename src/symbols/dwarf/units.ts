/**
 * Units and debugging information entries of `.debug_info` (DWARF 5 §7.5; DWARF 2-4 headers too): abbreviation
 * tables (`.debug_abbrev`, §7.5.3), unit headers (§7.5.1), attribute values by form (§7.5.5-6) and their indirect
 * forms (`.debug_str_offsets` §7.26, `.debug_addr` §7.27, `.debug_line_str`).
 */
import {
  DW_AT_addr_base,
  DW_AT_comp_dir,
  DW_AT_dwo_name,
  DW_AT_GNU_addr_base,
  DW_AT_GNU_dwo_name,
  DW_AT_GNU_ranges_base,
  DW_AT_high_pc,
  DW_AT_language,
  DW_AT_loclists_base,
  DW_AT_low_pc,
  DW_AT_name,
  DW_AT_producer,
  DW_AT_ranges,
  DW_AT_rnglists_base,
  DW_AT_stmt_list,
  DW_AT_str_offsets_base,
  DW_FORM_addr,
  DW_FORM_addrx,
  DW_FORM_addrx1,
  DW_FORM_addrx2,
  DW_FORM_addrx3,
  DW_FORM_addrx4,
  DW_FORM_block,
  DW_FORM_block1,
  DW_FORM_block2,
  DW_FORM_block4,
  DW_FORM_data1,
  DW_FORM_data16,
  DW_FORM_data2,
  DW_FORM_data4,
  DW_FORM_data8,
  DW_FORM_exprloc,
  DW_FORM_flag,
  DW_FORM_flag_present,
  DW_FORM_GNU_addr_index,
  DW_FORM_GNU_ref_alt,
  DW_FORM_GNU_str_index,
  DW_FORM_GNU_strp_alt,
  DW_FORM_implicit_const,
  DW_FORM_indirect,
  DW_FORM_line_strp,
  DW_FORM_loclistx,
  DW_FORM_ref1,
  DW_FORM_ref2,
  DW_FORM_ref4,
  DW_FORM_ref8,
  DW_FORM_ref_addr,
  DW_FORM_ref_sig8,
  DW_FORM_ref_sup4,
  DW_FORM_ref_sup8,
  DW_FORM_ref_udata,
  DW_FORM_rnglistx,
  DW_FORM_sdata,
  DW_FORM_sec_offset,
  DW_FORM_string,
  DW_FORM_strp,
  DW_FORM_strp_sup,
  DW_FORM_strx,
  DW_FORM_strx1,
  DW_FORM_strx2,
  DW_FORM_strx3,
  DW_FORM_strx4,
  DW_FORM_udata,
  DW_UT_compile,
  DW_UT_partial,
  DW_UT_skeleton,
  DW_UT_split_compile,
  DW_UT_split_type,
  DW_UT_type,
} from './constants.js';
import { Cursor, strAt } from './cursor.js';
import { DwarfError } from './errors.js';
import type { DwarfSections } from './sections.js';

/** One abbreviation declaration (§7.5.3): the tag, whether children follow, and the attribute specifications. */
export interface Abbrev {
  code: number;
  tag: number;
  hasChildren: boolean;
  attrs: number[];
  forms: number[];
  /** `DW_FORM_implicit_const` values, by attribute position (0 for other forms). */
  implicit: number[];
}

/** An abbreviation table: dense by code where possible. */
export type AbbrevTable = (Abbrev | undefined)[];

/** Parse the abbreviation table at `offset` of `.debug_abbrev`. */
export function parseAbbrevs(buf: Buffer, offset: number): AbbrevTable {
  const c = new Cursor(buf, offset, '.debug_abbrev');
  const table: AbbrevTable = [];
  for (;;) {
    const code = c.uleb();
    if (code === 0) break;
    const tag = c.uleb();
    const hasChildren = c.u8() !== 0;
    const attrs: number[] = [];
    const forms: number[] = [];
    const implicit: number[] = [];
    for (;;) {
      const at = c.uleb();
      const form = c.uleb();
      if (at === 0 && form === 0) break;
      attrs.push(at);
      forms.push(form);
      implicit.push(form === DW_FORM_implicit_const ? c.sleb() : 0);
    }
    table[code] = { code, tag, hasChildren, attrs, forms, implicit };
  }
  return table;
}

/** An attribute value as stored: its form and the raw value (a number, an inline string or a block). */
export interface AttrValue {
  form: number;
  value: number | string | Buffer;
}

/** A debugging information entry with its attributes read (§2.1). */
export interface Die {
  /** Offset of the DIE in `.debug_info`. */
  offset: number;
  tag: number;
  hasChildren: boolean;
  attrs: Map<number, AttrValue>;
  /** Offset just past its attributes: its first child when `hasChildren`. */
  next: number;
  unit: Unit;
}

/** The unit types this reader names; DWARF 2-4 compile units count as `DW_UT_compile`. */
export type UnitType =
  | typeof DW_UT_compile
  | typeof DW_UT_type
  | typeof DW_UT_partial
  | typeof DW_UT_skeleton
  | typeof DW_UT_split_compile
  | typeof DW_UT_split_type;

/**
 * One unit of `.debug_info` (§7.5.1.1 full and partial units, §7.5.1.2 skeleton units): its header, the bases its
 * unit DIE sets (`DW_AT_str_offsets_base`, `DW_AT_addr_base`, `DW_AT_rnglists_base`, `DW_AT_loclists_base`), and its
 * name, directory and line table offset.
 */
export class Unit {
  /** Offset of the first DIE (the unit DIE). */
  readonly dieOffset: number;
  /** Offset just past the unit. */
  readonly end: number;
  readonly version: number;
  unitType: UnitType;
  readonly addrSize: number;
  readonly offsetSize: 4 | 8;
  readonly abbrevs: AbbrevTable;
  /** Size of `DW_FORM_ref_addr`: the address size in DWARF 2, the offset size after. */
  readonly refAddrSize: number;
  name = '';
  compDir = '';
  producer = '';
  language = 0;
  /** `DW_AT_stmt_list`: offset of its line program in `.debug_line`, or -1. */
  lineOffset = -1;
  /** `DW_AT_low_pc` of the unit: the base address of its range and location lists (0 when absent). */
  lowPc = 0;
  strOffsetsBase = 0;
  addrBase = 0;
  rnglistsBase = 0;
  loclistsBase = 0;
  /** `DW_AT_dwo_name` / `DW_AT_GNU_dwo_name`: the split DWARF file holding the real unit (`-gsplit-dwarf`). */
  dwoName: string | undefined;
  /** The unit's code ranges as [start, end) pairs (from low/high pc or `DW_AT_ranges`). */
  ranges: [number, number][] = [];

  constructor(
    readonly sections: DwarfSections,
    /** Offset of the unit header in `.debug_info`. */
    readonly offset: number,
    abbrevCache: Map<number, AbbrevTable>,
  ) {
    const info = sections.get('info');
    const c = new Cursor(info, offset, '.debug_info');
    const { length, offsetSize } = c.initialLength();
    this.offsetSize = offsetSize;
    this.end = c.pos + length;
    if (this.end > info.length) throw new DwarfError(`.debug_info unit at offset ${offset} runs past the section end`);
    this.version = c.u16();
    if (this.version < 2 || this.version > 5) {
      throw new DwarfError(`.debug_info unit at offset ${offset} has unsupported DWARF version ${this.version}`);
    }
    let abbrevOffset: number;
    if (this.version >= 5) {
      this.unitType = c.u8() as UnitType;
      this.addrSize = c.u8();
      abbrevOffset = c.uN(offsetSize);
      if (this.unitType === DW_UT_skeleton || this.unitType === DW_UT_split_compile) c.u64();
      else if (this.unitType === DW_UT_type || this.unitType === DW_UT_split_type) {
        c.u64();
        c.uN(offsetSize);
      }
    } else {
      this.unitType = DW_UT_compile;
      abbrevOffset = c.uN(offsetSize);
      this.addrSize = c.u8();
    }
    this.refAddrSize = this.version === 2 ? this.addrSize : offsetSize;
    this.dieOffset = c.pos;
    let abbrevs = abbrevCache.get(abbrevOffset);
    if (!abbrevs) {
      abbrevs = parseAbbrevs(sections.get('abbrev'), abbrevOffset);
      abbrevCache.set(abbrevOffset, abbrevs);
    }
    this.abbrevs = abbrevs;
  }

  /** Read the unit DIE and take the bases, name and ranges from it. `readRanges` resolves `DW_AT_ranges`. */
  readUnitDie(readRanges: (unit: Unit, av: AttrValue) => [number, number][]): Die | undefined {
    if (this.dieOffset >= this.end) return undefined;
    const die = this.die(this.dieOffset);
    if (!die) return undefined;
    const a = die.attrs;
    // Bases first: the unit DIE's own strx/addrx/rnglistx attributes are relative to them.
    const num = (at: number): number | undefined => {
      const v = a.get(at);
      return v && typeof v.value === 'number' ? v.value : undefined;
    };
    this.strOffsetsBase = num(DW_AT_str_offsets_base) ?? 0;
    this.addrBase = num(DW_AT_addr_base) ?? num(DW_AT_GNU_addr_base) ?? 0;
    this.rnglistsBase = num(DW_AT_rnglists_base) ?? num(DW_AT_GNU_ranges_base) ?? 0;
    this.loclistsBase = num(DW_AT_loclists_base) ?? 0;
    if (this.version >= 5 && a.get(DW_AT_str_offsets_base) === undefined && this.sections.has('str_offsets')) {
      // A unit without the attribute but with strx forms: the first contribution's header is 8 bytes (§7.26).
      this.strOffsetsBase = this.offsetSize === 8 ? 16 : 8;
    }
    this.name = this.string(a.get(DW_AT_name)) ?? '';
    this.compDir = this.string(a.get(DW_AT_comp_dir)) ?? '';
    this.producer = this.string(a.get(DW_AT_producer)) ?? '';
    this.language = num(DW_AT_language) ?? 0;
    this.lineOffset = num(DW_AT_stmt_list) ?? -1;
    this.dwoName = this.string(a.get(DW_AT_dwo_name)) ?? this.string(a.get(DW_AT_GNU_dwo_name));
    if (this.dwoName !== undefined && this.unitType === DW_UT_compile) this.unitType = DW_UT_skeleton;
    const low = a.get(DW_AT_low_pc);
    if (low) this.lowPc = this.address(low);
    const high = a.get(DW_AT_high_pc);
    if (low && high) this.ranges = [[this.lowPc, this.highPc(this.lowPc, high)]];
    const rng = a.get(DW_AT_ranges);
    if (rng) this.ranges = readRanges(this, rng);
    return die;
  }

  /** `DW_AT_high_pc`: an address (class address) or an offset from low_pc (class constant, DWARF 4+). */
  highPc(low: number, av: AttrValue): number {
    if (av.form === DW_FORM_addr || isAddrx(av.form)) return this.address(av);
    return low + (av.value as number);
  }

  /** Read the DIE at `offset` (absolute in `.debug_info`); `undefined` for a null entry (end of siblings). */
  die(offset: number): Die | undefined {
    const c = new Cursor(this.sections.get('info'), offset, '.debug_info');
    const code = c.uleb();
    if (code === 0) return undefined;
    const ab = this.abbrevs[code];
    if (!ab) throw new DwarfError(`.debug_info DIE at offset ${offset} uses unknown abbreviation ${code}`);
    const attrs = new Map<number, AttrValue>();
    for (let i = 0; i < ab.attrs.length; i++) {
      let form = ab.forms[i]!;
      if (form === DW_FORM_indirect) form = c.uleb();
      const value = form === DW_FORM_implicit_const ? ab.implicit[i]! : this.readForm(c, form);
      attrs.set(ab.attrs[i]!, { form, value });
    }
    return { offset, tag: ab.tag, hasChildren: ab.hasChildren, attrs, next: c.pos, unit: this };
  }

  /** The children of `die`, read in order (each child's own subtree skipped). */
  children(die: Die): Die[] {
    const out: Die[] = [];
    if (!die.hasChildren) return out;
    let off = die.next;
    for (;;) {
      const child = this.die(off);
      if (!child) break;
      out.push(child);
      off = child.hasChildren ? this.skipChildren(child.next) : child.next;
    }
    return out;
  }

  /** Skip a list of sibling DIEs starting at `offset` and its terminating null entry; returns the offset after it. */
  skipChildren(offset: number): number {
    const c = new Cursor(this.sections.get('info'), offset, '.debug_info');
    let depth = 1;
    while (depth > 0) {
      if (c.pos >= this.end)
        throw new DwarfError(`.debug_info unit at offset ${this.offset} has unterminated children`);
      const code = c.uleb();
      if (code === 0) {
        depth--;
        continue;
      }
      const ab = this.abbrevs[code];
      if (!ab) throw new DwarfError(`.debug_info DIE at offset ${c.pos} uses unknown abbreviation ${code}`);
      for (let i = 0; i < ab.forms.length; i++) this.skipForm(c, ab.forms[i]!);
      if (ab.hasChildren) depth++;
    }
    return c.pos;
  }

  /** Read one attribute value of `form` (§7.5.6): numbers for constants, offsets, references and indexes. */
  readForm(c: Cursor, form: number): number | string | Buffer {
    switch (form) {
      case DW_FORM_addr:
        return c.uN(this.addrSize);
      case DW_FORM_data1:
      case DW_FORM_ref1:
      case DW_FORM_flag:
      case DW_FORM_strx1:
      case DW_FORM_addrx1:
        return c.u8();
      case DW_FORM_data2:
      case DW_FORM_ref2:
      case DW_FORM_strx2:
      case DW_FORM_addrx2:
        return c.u16();
      case DW_FORM_strx3:
      case DW_FORM_addrx3:
        return c.u24();
      case DW_FORM_data4:
      case DW_FORM_ref4:
      case DW_FORM_strx4:
      case DW_FORM_addrx4:
      case DW_FORM_ref_sup4:
        return c.u32();
      case DW_FORM_data8:
      case DW_FORM_ref8:
      case DW_FORM_ref_sig8:
      case DW_FORM_ref_sup8:
        return c.u64();
      case DW_FORM_data16:
        return c.bytes(16);
      case DW_FORM_sdata:
        return c.sleb();
      case DW_FORM_udata:
      case DW_FORM_ref_udata:
      case DW_FORM_strx:
      case DW_FORM_addrx:
      case DW_FORM_loclistx:
      case DW_FORM_rnglistx:
      case DW_FORM_GNU_addr_index:
      case DW_FORM_GNU_str_index:
        return c.uleb();
      case DW_FORM_string:
        return c.cstr();
      case DW_FORM_strp:
      case DW_FORM_line_strp:
      case DW_FORM_sec_offset:
      case DW_FORM_strp_sup:
      case DW_FORM_GNU_ref_alt:
      case DW_FORM_GNU_strp_alt:
        return c.uN(this.offsetSize);
      case DW_FORM_ref_addr:
        return c.uN(this.refAddrSize);
      case DW_FORM_block1:
        return c.bytes(c.u8());
      case DW_FORM_block2:
        return c.bytes(c.u16());
      case DW_FORM_block4:
        return c.bytes(c.u32());
      case DW_FORM_block:
      case DW_FORM_exprloc:
        return c.bytes(c.uleb());
      case DW_FORM_flag_present:
        return 1;
      case DW_FORM_indirect:
        return this.readForm(c, c.uleb());
      default:
        throw new DwarfError(`.debug_info uses unknown attribute form 0x${form.toString(16)} at offset ${c.pos}`);
    }
  }

  /** Skip one attribute value of `form` without building it. */
  skipForm(c: Cursor, form: number): void {
    switch (form) {
      case DW_FORM_flag_present:
      case DW_FORM_implicit_const:
        return;
      case DW_FORM_data1:
      case DW_FORM_ref1:
      case DW_FORM_flag:
      case DW_FORM_strx1:
      case DW_FORM_addrx1:
        c.pos += 1;
        return;
      case DW_FORM_data2:
      case DW_FORM_ref2:
      case DW_FORM_strx2:
      case DW_FORM_addrx2:
        c.pos += 2;
        return;
      case DW_FORM_strx3:
      case DW_FORM_addrx3:
        c.pos += 3;
        return;
      case DW_FORM_data4:
      case DW_FORM_ref4:
      case DW_FORM_strx4:
      case DW_FORM_addrx4:
      case DW_FORM_ref_sup4:
        c.pos += 4;
        return;
      case DW_FORM_data8:
      case DW_FORM_ref8:
      case DW_FORM_ref_sig8:
      case DW_FORM_ref_sup8:
        c.pos += 8;
        return;
      case DW_FORM_data16:
        c.pos += 16;
        return;
      case DW_FORM_addr:
        c.pos += this.addrSize;
        return;
      case DW_FORM_strp:
      case DW_FORM_line_strp:
      case DW_FORM_sec_offset:
      case DW_FORM_strp_sup:
      case DW_FORM_GNU_ref_alt:
      case DW_FORM_GNU_strp_alt:
        c.pos += this.offsetSize;
        return;
      case DW_FORM_ref_addr:
        c.pos += this.refAddrSize;
        return;
      case DW_FORM_sdata:
      case DW_FORM_udata:
      case DW_FORM_ref_udata:
      case DW_FORM_strx:
      case DW_FORM_addrx:
      case DW_FORM_loclistx:
      case DW_FORM_rnglistx:
      case DW_FORM_GNU_addr_index:
      case DW_FORM_GNU_str_index:
        c.skipLeb();
        return;
      case DW_FORM_string: {
        const e = c.buf.indexOf(0, c.pos);
        if (e < 0) throw new DwarfError(`unterminated string in .debug_info at offset ${c.pos}`);
        c.pos = e + 1;
        return;
      }
      case DW_FORM_block1:
        c.pos += 1 + c.buf[c.pos]!;
        return;
      case DW_FORM_block2:
        c.pos += 2 + c.buf.readUInt16LE(c.pos);
        return;
      case DW_FORM_block4:
        c.pos += 4 + c.buf.readUInt32LE(c.pos);
        return;
      case DW_FORM_block:
      case DW_FORM_exprloc: {
        const n = c.uleb();
        c.pos += n;
        return;
      }
      case DW_FORM_indirect:
        this.skipForm(c, c.uleb());
        return;
      default:
        throw new DwarfError(`.debug_info uses unknown attribute form 0x${form.toString(16)} at offset ${c.pos}`);
    }
  }

  /** A string attribute's text (inline, `.debug_str`, `.debug_line_str` or through `.debug_str_offsets`). */
  string(av: AttrValue | undefined): string | undefined {
    if (!av) return undefined;
    const v = av.value;
    if (typeof v === 'string') return v;
    if (typeof v !== 'number') return undefined;
    switch (av.form) {
      case DW_FORM_strp:
        return strAt(this.sections.get('str'), v, '.debug_str');
      case DW_FORM_line_strp:
        return strAt(this.sections.get('line_str'), v, '.debug_line_str');
      case DW_FORM_strx:
      case DW_FORM_strx1:
      case DW_FORM_strx2:
      case DW_FORM_strx3:
      case DW_FORM_strx4:
      case DW_FORM_GNU_str_index:
        return this.strx(v);
      case DW_FORM_GNU_strp_alt:
      case DW_FORM_strp_sup:
        throw new DwarfError('this file refers to a supplementary debug file (dwz), which bpfscope does not read yet');
      default:
        return undefined;
    }
  }

  /** The string at index `i` of this unit's `.debug_str_offsets` contribution (§7.26). */
  strx(i: number): string {
    const so = this.sections.get('str_offsets');
    const at = this.strOffsetsBase + i * this.offsetSize;
    if (at + this.offsetSize > so.length) throw new DwarfError(`string index ${i} is outside .debug_str_offsets`);
    const off = this.offsetSize === 8 ? new Cursor(so, at).u64() : so.readUInt32LE(at);
    return strAt(this.sections.get('str'), off, '.debug_str');
  }

  /** An address attribute: `DW_FORM_addr`, or an index into this unit's `.debug_addr` contribution (§7.27). */
  address(av: AttrValue): number {
    if (isAddrx(av.form)) return this.addrx(av.value as number);
    return av.value as number;
  }

  /** The address at index `i` of `.debug_addr` from this unit's `DW_AT_addr_base`. */
  addrx(i: number): number {
    const a = this.sections.get('addr');
    const at = this.addrBase + i * this.addrSize;
    if (at + this.addrSize > a.length) throw new DwarfError(`address index ${i} is outside .debug_addr`);
    return new Cursor(a, at, '.debug_addr').uN(this.addrSize);
  }

  /** A reference attribute as an absolute `.debug_info` offset (§7.5.5 class reference). */
  ref(av: AttrValue | undefined): number | undefined {
    if (!av || typeof av.value !== 'number') return undefined;
    switch (av.form) {
      case DW_FORM_ref1:
      case DW_FORM_ref2:
      case DW_FORM_ref4:
      case DW_FORM_ref8:
      case DW_FORM_ref_udata:
        return this.offset + av.value;
      case DW_FORM_ref_addr:
        return av.value;
      case DW_FORM_ref_sig8:
        throw new DwarfError('this file uses type units (-fdebug-types-section), which bpfscope does not read yet');
      default:
        return undefined;
    }
  }
}

export function isAddrx(form: number): boolean {
  return (
    form === DW_FORM_addrx ||
    form === DW_FORM_addrx1 ||
    form === DW_FORM_addrx2 ||
    form === DW_FORM_addrx3 ||
    form === DW_FORM_addrx4 ||
    form === DW_FORM_GNU_addr_index
  );
}

/** Whether `form` is of class constant (§7.5.5): `data*`, `sdata`, `udata`, `implicit_const`. */
export function isConstant(form: number): boolean {
  return (
    form === DW_FORM_data1 ||
    form === DW_FORM_data2 ||
    form === DW_FORM_data4 ||
    form === DW_FORM_data8 ||
    form === DW_FORM_sdata ||
    form === DW_FORM_udata ||
    form === DW_FORM_implicit_const
  );
}

/** Read the unit headers of `.debug_info` in order. */
export function readUnits(sections: DwarfSections): Unit[] {
  const info = sections.get('info');
  const cache = new Map<number, AbbrevTable>();
  const units: Unit[] = [];
  let off = 0;
  while (off + 11 <= info.length) {
    const u = new Unit(sections, off, cache);
    units.push(u);
    off = u.end;
  }
  return units;
}

/** Whether this unit holds no DIEs of its own but points at a split DWARF (`.dwo`) file. */
export function isSkeleton(u: Unit): boolean {
  return u.unitType === DW_UT_skeleton;
}
