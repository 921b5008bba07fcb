/**
 * Storage types and their unification: what maps and variables store (integers widened to 64 bits, struct values
 * materialized) and when two such types may share a map or variable; the width of an integer literal in a tuple.
 * Used by the analyser, the builtins' checks and the code generator (which must not import the analyser).
 */
import type { Expr } from './ast.js';
import { kernelBtf, materializeRecord } from './btf-types.js';
import type { TypeTable } from './type-table.js';
import { I64, type IntSize, type SType, stringType, typeKey, U64 } from './types.js';

/** A tuple type, a record when `names` is given. */
export function withNames(t: Extract<SType, { kind: 'tuple' }>, names: string[] | undefined): SType {
  return names ? { ...t, names } : t;
}

/**
 * Widen an integer type to what maps and variables store (64-bit ints). A tuple keeps its elements' integer sizes
 * (bpftrace lays tuples out so: `((int8)1, (int16)2)` is 4 bytes); its struct elements are materialized.
 */
export function storageType(t: SType): SType {
  if (t.kind === 'int') return t.enum ? { kind: 'int', size: 8, signed: false, enum: t.enum } : t.signed ? I64 : U64;
  if (t.kind === 'tuple') return withNames({ kind: 'tuple', elems: t.elems.map(elementStorageType) }, t.names);
  // a struct value (`*p`, `args`): its fields loaded, so the runtime can print it without BTF
  if (t.kind === 'record') return materializeRecord(t.btfId !== undefined ? kernelBtf() : undefined, t);
  return t;
}

/** What a tuple element stores: integers as they are, anything else as storageType. */
function elementStorageType(t: SType): SType {
  return t.kind === 'int' ? t : storageType(t);
}

/**
 * Two integer tuple elements joined (bpftrace's `get_promoted_int`, `src/types.cpp`): the larger size, signed when
 * either is; an unsigned one joined with a signed one no larger than it needs the next size up to keep its values.
 */
function promoteInt(a: Extract<SType, { kind: 'int' }>, b: Extract<SType, { kind: 'int' }>): SType {
  if (a.enum && b.enum?.name === a.enum.name && a.size === b.size) return a;
  if (a.signed === b.signed) return { kind: 'int', size: Math.max(a.size, b.size) as IntSize, signed: a.signed };
  const s = a.signed ? a : b;
  const u = a.signed ? b : a;
  const size = s.size > u.size ? s.size : Math.min(8, u.size * 2);
  return { kind: 'int', size: size as IntSize, signed: true };
}

/**
 * Join two storage types where they may be unified (ints of either sign, strings of different sizes). `inTuple`:
 * the types are tuple elements, whose integers keep their sizes (promoteInt) instead of being 64-bit.
 */
export function unify(a: SType, b: SType, inTuple = false): SType | null {
  if (a.kind === 'int' && b.kind === 'int') {
    if (inTuple) return promoteInt(a, b);
    // the same enum stays that enum; an enum with other integers is stored as a plain integer (bpftrace)
    if (a.enum && b.enum?.name === a.enum.name) return a;
    return a.signed && b.signed ? I64 : a.signed || b.signed ? I64 : U64;
  }
  if (a.kind === 'string' && b.kind === 'string') {
    // a full buffer of the larger size can only come from a source of that size: well-formed if all of those are
    const size = Math.max(a.size, b.size);
    const full = [a, b].filter((t) => t.size === size);
    return full.every((t) => t.wellFormed) ? { kind: 'string', size, wellFormed: true } : stringType(size);
  }
  if (a.kind === 'buffer' && b.kind === 'buffer') return { kind: 'buffer', size: Math.max(a.size, b.size) };
  if (a.kind === 'tuple' && b.kind === 'tuple' && a.elems.length === b.elems.length) {
    if (!a.names !== !b.names) return null;
    // records with the same fields in another order: b's fields in a's order (stores convert by name)
    const order = a.names ? a.names.map((n) => b.names!.indexOf(n)) : a.elems.map((_, i) => i);
    if (order.includes(-1)) return null;
    const elems: SType[] = [];
    for (let i = 0; i < a.elems.length; i++) {
      const u = unify(a.elems[i]!, b.elems[order[i]!]!, true);
      if (!u) return null;
      elems.push(u);
    }
    return withNames({ kind: 'tuple', elems }, a.names);
  }
  if (typeKey(a) === typeKey(b)) return a;
  // the same pointer type in two address spaces (a map set in a uprobe and in a kprobe): the first one's
  if (a.kind === 'pointer' && b.kind === 'pointer' && typeKey(a.to) === typeKey(b.to)) return a;
  return null;
}

/** Whether two storage types may be unified. */
export function sameShape(a: SType, b: SType): boolean {
  return unify(a, b) !== null;
}

/**
 * The type of an integer literal inside a tuple, as bpftrace types literals (`src/ast/integer_types.cpp`): the
 * smallest signed type that holds it, uint64 above INT64_MAX. `(1, "a")` is `(int8, string[2])`, 3 bytes. Also
 * the width a negative literal is zero-extended from when cast to a pointer (codegen).
 */
export function literalIntType(v: bigint): Extract<SType, { kind: 'int' }> {
  if (v > 0x7fffffffffffffffn) return { kind: 'int', size: 8, signed: false };
  const size =
    v >= -0x80n && v <= 0x7fn ? 1 : v >= -0x8000n && v <= 0x7fffn ? 2 : v >= -0x80000000n && v <= 0x7fffffffn ? 4 : 8;
  return { kind: 'int', size, signed: true };
}

/**
 * Expressions denoting a struct in kernel or user memory (`*p`, `p->s`, `(*p).s`), read with bpf_probe_read_*;
 * `types` are the program's (its unit's table).
 */
export function isMemoryLocation(e: Expr, types: TypeTable): boolean {
  if (e.kind === 'UnaryExpr') return e.op === '*';
  if (e.kind !== 'FieldExpr') return false;
  const ot = types.find(e.object);
  return ot?.kind === 'pointer' || (ot?.kind === 'record' && isMemoryLocation(e.object, types));
}
