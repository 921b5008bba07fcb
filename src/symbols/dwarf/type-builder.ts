/**
 * The DWARF reader's type builder: a `DW_TAG_*_type` DIE (base, pointer, reference, qualifier, typedef, struct, union,
 * class, enum, array, subroutine) as the C type model of types.ts, with struct members and bit-fields.
 */
import {
  DW_ATE_signed,
  DW_ATE_signed_char,
  DW_AT_bit_offset,
  DW_AT_bit_size,
  DW_AT_byte_size,
  DW_AT_const_value,
  DW_AT_count,
  DW_AT_data_bit_offset,
  DW_AT_data_member_location,
  DW_AT_declaration,
  DW_AT_encoding,
  DW_AT_lower_bound,
  DW_AT_name,
  DW_AT_type,
  DW_AT_upper_bound,
  DW_FORM_implicit_const,
  DW_FORM_sdata,
  DW_TAG_array_type,
  DW_TAG_atomic_type,
  DW_TAG_base_type,
  DW_TAG_class_type,
  DW_TAG_const_type,
  DW_TAG_enumeration_type,
  DW_TAG_enumerator,
  DW_TAG_formal_parameter,
  DW_TAG_member,
  DW_TAG_pointer_type,
  DW_TAG_reference_type,
  DW_TAG_restrict_type,
  DW_TAG_rvalue_reference_type,
  DW_TAG_structure_type,
  DW_TAG_subrange_type,
  DW_TAG_subroutine_type,
  DW_TAG_typedef,
  DW_TAG_union_type,
  DW_TAG_unspecified_parameters,
  DW_TAG_unspecified_type,
  DW_TAG_volatile_type,
} from './constants.js';
import { Cursor } from './cursor.js';
import { DwarfError } from './errors.js';
import type { DieStore } from './store.js';
import { type DwarfMember, type DwarfType, stripType } from './types.js';
import { type AttrValue, type Die, isConstant, type Unit } from './units.js';

/** Builds the C type model (types.ts) from type DIEs, each DIE once: cycles (a struct pointing to itself) share objects. */
export class TypeBuilder {
  private readonly typeCache = new Map<number, DwarfType>();

  constructor(private readonly store: DieStore) {}

  /** The type of a `DW_AT_type` attribute (absent means `void`). */
  typeRef(av: (AttrValue & { unit?: Unit }) | undefined): DwarfType {
    if (!av) return { kind: 'void' };
    const unit = av.unit ?? this.store.units[0]!;
    const off = unit.ref(av);
    return off === undefined ? { kind: 'void' } : this.typeAt(off);
  }

  /** The type described by the DIE at `.debug_info` offset `off`, built once (cycles share objects). */
  typeAt(off: number): DwarfType {
    const hit = this.typeCache.get(off);
    if (hit) return hit;
    const die = this.store.dieAt(off);
    const u = die.unit;
    const a = die.attrs;
    const num = (at: number): number | undefined => {
      const v = a.get(at);
      return v && typeof v.value === 'number' ? v.value : undefined;
    };
    const name = u.string(a.get(DW_AT_name));
    const size = num(DW_AT_byte_size) ?? 0;
    const target = (): DwarfType => this.typeRef(withUnit(a.get(DW_AT_type), u));
    let t: DwarfType;
    switch (die.tag) {
      case DW_TAG_base_type:
        t = { kind: 'base', name: name ?? '', size, encoding: num(DW_AT_encoding) ?? 0 };
        this.typeCache.set(off, t);
        return t;
      case DW_TAG_pointer_type:
      case DW_TAG_reference_type:
      case DW_TAG_rvalue_reference_type: {
        const kind =
          die.tag === DW_TAG_pointer_type
            ? 'pointer'
            : die.tag === DW_TAG_reference_type
              ? 'reference'
              : 'rvalue_reference';
        const p = { kind, size: size || u.addrSize, target: { kind: 'void' } } as DwarfType & { target: DwarfType };
        this.typeCache.set(off, p);
        p.target = target();
        return p;
      }
      case DW_TAG_const_type:
      case DW_TAG_volatile_type:
      case DW_TAG_restrict_type:
      case DW_TAG_atomic_type: {
        const kind = (
          {
            [DW_TAG_const_type]: 'const',
            [DW_TAG_volatile_type]: 'volatile',
            [DW_TAG_restrict_type]: 'restrict',
            [DW_TAG_atomic_type]: 'atomic',
          } as const
        )[die.tag];
        const q = { kind, target: { kind: 'void' } } as DwarfType & { target: DwarfType };
        this.typeCache.set(off, q);
        q.target = target();
        return q;
      }
      case DW_TAG_typedef: {
        const td = { kind: 'typedef', name: name ?? '', target: { kind: 'void' } } as DwarfType & { target: DwarfType };
        this.typeCache.set(off, td);
        td.target = target();
        return td;
      }
      case DW_TAG_structure_type:
      case DW_TAG_union_type:
      case DW_TAG_class_type: {
        const kind = die.tag === DW_TAG_structure_type ? 'struct' : die.tag === DW_TAG_union_type ? 'union' : 'class';
        const members: DwarfMember[] = [];
        const s: DwarfType = { kind, name, size, members, declaration: num(DW_AT_declaration) !== undefined };
        this.typeCache.set(off, s);
        for (const m of u.children(die)) {
          if (m.tag !== DW_TAG_member) continue;
          members.push(this.member(m));
        }
        return s;
      }
      case DW_TAG_enumeration_type: {
        const enumerators: { name: string; value: number }[] = [];
        for (const e of u.children(die)) {
          if (e.tag !== DW_TAG_enumerator) continue;
          const cv = e.attrs.get(DW_AT_const_value);
          let value = typeof cv?.value === 'number' ? cv.value : 0;
          // dataN constants are unsigned as stored; an enum with a signed underlying type reads them back signed.
          if (cv && cv.form !== DW_FORM_sdata && cv.form !== DW_FORM_implicit_const && size > 0 && size < 8) {
            const under = a.get(DW_AT_type) ? stripType(target()) : undefined;
            const signed =
              under?.kind === 'base' && (under.encoding === DW_ATE_signed || under.encoding === DW_ATE_signed_char);
            const bits = 8 * Math.min(size, cvSize(cv.form));
            if (signed && value >= 2 ** (bits - 1)) value -= 2 ** bits;
          }
          enumerators.push({ name: u.string(e.attrs.get(DW_AT_name)) ?? '', value });
        }
        t = { kind: 'enum', name, size, enumerators, declaration: num(DW_AT_declaration) !== undefined };
        this.typeCache.set(off, t);
        return t;
      }
      case DW_TAG_array_type: {
        const arr = { kind: 'array', element: { kind: 'void' }, dims: [], size: 0 } as unknown as DwarfType & {
          kind: 'array';
        };
        this.typeCache.set(off, arr);
        arr.element = target();
        for (const d of u.children(die)) {
          if (d.tag !== DW_TAG_subrange_type) continue;
          const cnt = d.attrs.get(DW_AT_count);
          const ub = d.attrs.get(DW_AT_upper_bound);
          const lb = d.attrs.get(DW_AT_lower_bound);
          const lower = lb && typeof lb.value === 'number' ? lb.value : 0;
          if (cnt && isConstant(cnt.form)) arr.dims.push(cnt.value as number);
          else if (ub && isConstant(ub.form)) arr.dims.push((ub.value as number) - lower + 1);
          else arr.dims.push(-1);
        }
        const elemSize = typeSizeOf(arr.element);
        arr.size = arr.dims.some((d) => d < 0) ? 0 : arr.dims.reduce((p, d) => p * d, elemSize);
        if (size > 0) arr.size = size;
        return arr;
      }
      case DW_TAG_subroutine_type: {
        const fnT = {
          kind: 'function',
          returns: { kind: 'void' },
          params: [],
          variadic: false,
        } as unknown as DwarfType & {
          kind: 'function';
        };
        this.typeCache.set(off, fnT);
        fnT.returns = target();
        for (const p of u.children(die)) {
          if (p.tag === DW_TAG_formal_parameter) fnT.params.push(this.typeRef(withUnit(p.attrs.get(DW_AT_type), u)));
          else if (p.tag === DW_TAG_unspecified_parameters) fnT.variadic = true;
        }
        return fnT;
      }
      case DW_TAG_unspecified_type:
        t = { kind: 'unspecified', name: name ?? '' };
        this.typeCache.set(off, t);
        return t;
      default:
        throw new DwarfError(`.debug_info DIE at offset ${off} (tag 0x${die.tag.toString(16)}) is not a type`);
    }
  }

  private member(m: Die): DwarfMember {
    const u = m.unit;
    const a = m.attrs;
    const type = this.typeRef(withUnit(a.get(DW_AT_type), u));
    const loc = a.get(DW_AT_data_member_location);
    let offset = 0;
    if (loc && typeof loc.value === 'number') offset = loc.value;
    else if (loc && loc.value instanceof Buffer) {
      // DWARF 2: a location expression, DW_OP_plus_uconst N.
      const c = new Cursor(loc.value, 0);
      if (c.u8() === 0x23) offset = c.uleb();
    }
    const mem: DwarfMember = { name: u.string(a.get(DW_AT_name)), type, offset };
    const bs = a.get(DW_AT_bit_size);
    if (bs && typeof bs.value === 'number') {
      mem.bitSize = bs.value;
      const dbo = a.get(DW_AT_data_bit_offset);
      const bo = a.get(DW_AT_bit_offset);
      if (dbo && typeof dbo.value === 'number') {
        mem.bitOffset = dbo.value;
        mem.offset = Math.floor(dbo.value / 8);
      } else if (bo && typeof bo.value === 'number') {
        // DWARF 2-3 (little-endian): bits counted from the most significant bit of the storage unit.
        const storage = 8 * (num(a.get(DW_AT_byte_size)) ?? typeSizeOf(type));
        mem.bitOffset = offset * 8 + storage - bo.value - bs.value;
      } else mem.bitOffset = offset * 8;
    }
    return mem;
  }
}

function withUnit(av: AttrValue | undefined, unit: Unit): (AttrValue & { unit: Unit }) | undefined {
  return av ? { ...av, unit } : undefined;
}

function num(av: AttrValue | undefined): number | undefined {
  return av && typeof av.value === 'number' ? av.value : undefined;
}

function cvSize(form: number): number {
  return form === 0x0b ? 1 : form === 0x05 ? 2 : form === 0x06 ? 4 : 8;
}

function typeSizeOf(t: DwarfType): number {
  const s = stripType(t);
  return 'size' in s ? s.size : 0;
}
