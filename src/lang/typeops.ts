/**
 * Storage types and their unification: what maps and variables store (integers widened to 64 bits, struct values
 * materialized) and when two such types may share a map or variable. Used by the analyser and the builtins' checks.
 */
import { kernelBtf, materializeRecord } from './btf-types.js';
import { I64, type SType, stringType, typeKey, U64 } from './types.js';

/** A tuple type, a record when `names` is given. */
export function withNames(t: Extract<SType, { kind: 'tuple' }>, names: string[] | undefined): SType {
  return names ? { ...t, names } : t;
}

/** Widen an integer/bool type to what maps and variables store (64-bit ints). */
export function storageType(t: SType): SType {
  if (t.kind === 'int') return t.enum ? { kind: 'int', size: 8, signed: false, enum: t.enum } : t.signed ? I64 : U64;
  if (t.kind === 'tuple') return withNames({ kind: 'tuple', elems: t.elems.map(storageType) }, t.names);
  // a struct value (`*p`, `args`): its fields loaded, so the runtime can print it without BTF
  if (t.kind === 'record') return materializeRecord(t.btfId !== undefined ? kernelBtf() : undefined, t);
  return t;
}

/** Join two storage types where they may be unified (ints of either sign, strings of different sizes). */
export function unify(a: SType, b: SType): SType | null {
  if (a.kind === 'int' && b.kind === 'int') {
    // the same enum stays that enum; an enum with other integers is stored as a plain integer (bpftrace)
    if (a.enum && b.enum?.name === a.enum.name) return a;
    return a.signed && b.signed ? I64 : a.signed || b.signed ? I64 : U64;
  }
  if (a.kind === 'string' && b.kind === 'string') return stringType(Math.max(a.size, b.size));
  if (a.kind === 'buffer' && b.kind === 'buffer') return { kind: 'buffer', size: Math.max(a.size, b.size) };
  if (a.kind === 'tuple' && b.kind === 'tuple' && a.elems.length === b.elems.length) {
    if (!a.names !== !b.names) return null;
    // records with the same fields in another order: b's fields in a's order (stores convert by name)
    const order = a.names ? a.names.map((n) => b.names!.indexOf(n)) : a.elems.map((_, i) => i);
    if (order.includes(-1)) return null;
    const elems: SType[] = [];
    for (let i = 0; i < a.elems.length; i++) {
      const u = unify(a.elems[i]!, b.elems[order[i]!]!);
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
