/**
 * Integer types as current bpftrace (v0.26, revision e1b7c393) gives them, where they differ from what bpfscope
 * stores. bpfscope stores every integer scratch variable and map key in 64 bits (lang/typeops.ts storageType); what
 * bpftrace reports about them follows its own typing, which this module reproduces:
 *
 * - an integer literal has the smallest signed type holding it (`1` is int8, `300` int16, `-1` int8), or uint64
 *   above INT64_MAX (bpftrace src/ast/integer_types.cpp, get_integer_type / get_signed_integer_type);
 * - a non-negative literal is "sign-flexible": next to an integer of a fixed sign it takes that sign
 *   (`$u % 10` is unsigned when `$u` is; type_resolver.cpp get_binop_int);
 * - a variable or map key has the promotion of every type assigned to it: the larger size, and for two signs the
 *   signed type that holds both (types.cpp get_promoted_int), so `$x = 1` is int8 and `$x = 1; $x = 1000` int16.
 *
 * The analyser uses it for `sizeof($x)`/`sizeof(1)`, the sign of arithmetic with a literal, and the types named in
 * map key mismatch messages. Storage is unchanged.
 */
import type { Expr } from './ast.js';
import { I64, type IntSize, type SType, typeName, U64 } from './types.js';

/** A type as bpftrace gives it, and whether its sign adapts to the other operand (a non-negative literal's). */
export interface BtType {
  type: SType;
  flex: boolean;
}

const INT64_MAX = 0x7fffffffffffffffn;

/** The type bpftrace gives an integer literal of value `v` (after constant folding, as bpftrace folds too). */
export function literalBtType(v: bigint): BtType {
  if (v > INT64_MAX) return { type: U64, flex: false };
  const a = v < 0n ? -v - 1n : v;
  const size: IntSize = a <= 0x7fn ? 1 : a <= 0x7fffn ? 2 : a <= 0x7fffffffn ? 4 : 8;
  return { type: { kind: 'int', size, signed: true }, flex: v >= 0n };
}

/**
 * bpftrace's type of expression `e`, which the analyser typed `t` (its storage or value type): a literal's own
 * type, a variable's from `vars` (the promotion of what was assigned to it), otherwise `t` with a fixed sign.
 */
export function btTypeOf(e: Expr, t: SType, vars: ReadonlyMap<string, BtType>): BtType {
  if (e.kind === 'IntLit') return literalBtType(e.value);
  if (e.kind === 'VarExpr' && t.kind === 'int') return vars.get(e.name) ?? { type: t, flex: false };
  return { type: t, flex: false };
}

/**
 * Two integer types joined as bpftrace joins a variable's or map key's assignments (types.cpp get_promoted_int):
 * one sign-flexible side takes the other's sign; two fixed, different signs give the signed type holding both
 * (a size up when the unsigned one is not smaller, at most int64). A non-integer side gives `next` unchanged.
 */
export function promoteBt(cur: BtType, next: BtType): BtType {
  const a = cur.type;
  const b = next.type;
  if (a.kind !== 'int' || b.kind !== 'int') return next;
  if (a.enum && b.enum?.name === a.enum.name) return cur;
  const flex = cur.flex && next.flex;
  const size = Math.max(a.size, b.size) as IntSize;
  if (a.signed === b.signed) return { type: { kind: 'int', size, signed: a.signed }, flex };
  if (cur.flex || next.flex) {
    const signed = (!cur.flex && a.signed) || (!next.flex && b.signed);
    return { type: { kind: 'int', size, signed }, flex };
  }
  if (a.signed && a.size > b.size) return { type: { kind: 'int', size: a.size, signed: true }, flex: false };
  if (b.signed && b.size > a.size) return { type: { kind: 'int', size: b.size, signed: true }, flex: false };
  return { type: size * 2 > 8 ? I64 : { kind: 'int', size: (size * 2) as IntSize, signed: true }, flex: false };
}

/**
 * Whether an integer arithmetic result is signed, as bpftrace types `l OP r` (type_resolver.cpp get_binop_int): a
 * sign-flexible operand takes the other's sign first. bpfscope keeps two rules of its own: `-` is signed when either
 * operand is (a literal counted as signed; bpftrace makes every `-` int64), and a shift has its left operand's sign.
 */
export function binopSigned(op: string, l: BtType, r: BtType, lSigned: boolean, rSigned: boolean): boolean {
  if (op === '<<' || op === '>>') return lSigned;
  if (op === '-') return lSigned || rSigned;
  const ls = l.flex && !r.flex ? rSigned : lSigned;
  const rs = r.flex && !l.flex ? lSigned : rSigned;
  return ls || rs;
}

/**
 * A map access's key types as bpftrace gives them (literals narrow; one tuple key as its elements, as a multi-key
 * map's key is a tuple). The keys must have been typed (`typeOf`: the unit's type table); an untyped one is `none`.
 */
export function btKeyTypes(
  keys: readonly Expr[],
  vars: ReadonlyMap<string, BtType>,
  typeOf: (e: Expr) => SType | undefined,
): BtType[] {
  const out = keys.map((k) => {
    const t = typeOf(k);
    return t ? btTypeOf(k, t, vars) : { type: NONE, flex: false };
  });
  const only = out.length === 1 ? out[0]!.type : undefined;
  if (only?.kind === 'tuple' && !only.names && only.elems.length > 1) {
    return only.elems.map((type) => ({ type, flex: false }));
  }
  return out;
}

const NONE: SType = { kind: 'none' };

/**
 * Map key types as bpftrace names them in messages: `'int8'` for one key, `'(int8,string[3])'` for several
 * (type_resolver.cpp get_map_key_type, a multi-key map's key being a tuple).
 */
export function keyTypesText(types: readonly SType[]): string {
  return types.length === 1 ? `'${typeName(types[0]!)}'` : `'(${types.map(typeName).join(',')})'`;
}
