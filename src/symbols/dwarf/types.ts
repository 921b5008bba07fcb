/**
 * The C view of DWARF types (DWARF 5 §5: base types §5.1, type modifiers §5.3, arrays §5.5, structures and unions
 * §5.7, enumerations §5.11, subroutine types §5.12, typedefs §5.4), built from DIEs by {@link DwarfInfo} and cyclic
 * where C is (a struct holding a pointer to itself refers to the same object).
 */

/** A member of a struct, union or class (§5.7.6). */
export interface DwarfMember {
  /** `undefined` for an anonymous struct or union member. */
  name: string | undefined;
  type: DwarfType;
  /** Byte offset from the start of the enclosing type (`DW_AT_data_member_location`; 0 in a union). */
  offset: number;
  /** For a bit field: the bit offset from the start of the enclosing type (`DW_AT_data_bit_offset`, or derived from
   * DWARF 2-3's `DW_AT_bit_offset` on little-endian machines) and its width. */
  bitOffset?: number;
  bitSize?: number;
}

/** A type, by kind. `size` is in bytes (`DW_AT_byte_size`); 0 where DWARF gives none (declarations, `void`). */
export type DwarfType =
  | { kind: 'void' }
  | {
      kind: 'base';
      name: string;
      size: number;
      /** `DW_ATE_*` (§7.8): 5 signed, 7 unsigned, 6/8 signed/unsigned char, 2 boolean, 4 float, ... */
      encoding: number;
    }
  | { kind: 'pointer' | 'reference' | 'rvalue_reference'; size: number; target: DwarfType }
  | {
      kind: 'struct' | 'union' | 'class';
      /** `undefined` for an anonymous type. */
      name: string | undefined;
      size: number;
      members: DwarfMember[];
      /** A forward declaration (`struct foo;`) without members or size. */
      declaration: boolean;
    }
  | {
      kind: 'enum';
      name: string | undefined;
      size: number;
      enumerators: { name: string; value: number }[];
      declaration: boolean;
    }
  | { kind: 'typedef'; name: string; target: DwarfType }
  | {
      kind: 'array';
      element: DwarfType;
      /** Element counts per dimension, outermost first; -1 for an unknown bound (`int a[]`). */
      dims: number[];
      /** Total size in bytes, or 0 when a dimension is unknown. */
      size: number;
    }
  | { kind: 'const' | 'volatile' | 'restrict' | 'atomic'; target: DwarfType }
  | { kind: 'function'; returns: DwarfType; params: DwarfType[]; variadic: boolean }
  | { kind: 'unspecified'; name: string };

/** The type behind typedefs and `const`/`volatile`/`restrict`/`_Atomic` qualifiers. */
export function stripType(t: DwarfType): DwarfType {
  let cur = t;
  for (let i = 0; i < 64; i++) {
    if (cur.kind === 'typedef' || cur.kind === 'const' || cur.kind === 'volatile' || cur.kind === 'restrict') {
      cur = cur.target;
    } else if (cur.kind === 'atomic') cur = cur.target;
    else return cur;
  }
  return cur;
}

/** The size in bytes of a value of type `t` (typedefs and qualifiers followed; 0 for `void` and functions). */
export function typeSize(t: DwarfType): number {
  const s = stripType(t);
  switch (s.kind) {
    case 'base':
    case 'pointer':
    case 'reference':
    case 'rvalue_reference':
    case 'struct':
    case 'union':
    case 'class':
    case 'enum':
    case 'array':
      return s.size;
    default:
      return 0;
  }
}

function tagged(kind: string, name: string | undefined): string {
  return name === undefined ? `${kind} <anonymous>` : `${kind} ${name}`;
}

/**
 * The type spelled as C declares it, e.g. `const char *`, `struct point`, `int [4]`, `int (*)(int, char *)`:
 * the type name gcc and gdb's `ptype` print (a space before a declarator suffix).
 */
export function typeName(t: DwarfType): string {
  return declarator(t, '').trim();
}

function declarator(t: DwarfType, inner: string): string {
  const sp = (s: string): string => (s === '' ? '' : ` ${s}`);
  switch (t.kind) {
    case 'void':
      return `void${sp(inner)}`;
    case 'base':
    case 'typedef':
    case 'unspecified':
      return `${t.name}${sp(inner)}`;
    case 'struct':
    case 'union':
    case 'class':
    case 'enum':
      return `${tagged(t.kind, t.name)}${sp(inner)}`;
    case 'pointer':
    case 'reference':
    case 'rvalue_reference': {
      const mark = t.kind === 'pointer' ? '*' : t.kind === 'reference' ? '&' : '&&';
      const target = t.target;
      const wrap = target.kind === 'array' || target.kind === 'function';
      return declarator(target, wrap ? `(${mark}${inner})` : `${mark}${inner}`);
    }
    case 'const':
    case 'volatile':
    case 'restrict':
    case 'atomic': {
      const q = t.kind === 'atomic' ? '_Atomic' : t.kind;
      const target = t.target;
      if (target.kind === 'pointer') return declarator(target, `${q}${inner === '' ? '' : ` ${inner}`}`);
      return `${q} ${declarator(target, inner)}`;
    }
    case 'array':
      return declarator(t.element, `${inner}${t.dims.map((d) => (d < 0 ? '[]' : `[${d}]`)).join('')}`);
    case 'function': {
      const params = t.params.map(typeName);
      if (t.variadic) params.push('...');
      return declarator(t.returns, `${inner}(${params.length === 0 ? 'void' : params.join(', ')})`);
    }
  }
}
