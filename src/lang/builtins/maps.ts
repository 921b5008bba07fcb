/**
 * Map functions and aggregations (bpftrace `docs/stdlib.md`, `docs/language.md` "Maps"): the aggregations are
 * only assigned to a map (`@x = count()`; codegen/aggregate.ts, checked by the analyser's `aggregation()` where
 * it is assigned), the rest take a map argument. Their code is still in the generator's `callExpr()`/`callStmt()`
 * (codegen/gen-calls.ts).
 */
import type { CallExpr } from '../ast.js';
import { sameShape, storageType } from '../typeops.js';
import { btTypeOf, keyTypesText } from '../bt-int-types.js';
import { BOOL, I64, type SType, typeName, U64 } from '../types.js';
import type { BuiltinChecker, BuiltinFunction } from './types.js';

/** `clear(@m)`, `zero(@m)`: a whole map. */
function wholeMap(c: CallExpr, a: BuiltinChecker): SType {
  if (c.args.length !== 1) a.error(c.pos, `${c.name}() requires one argument`);
  const m = a.mapArg(c, 0);
  if (m) {
    if (m.keys.length) a.error(m.pos, `The map passed to ${c.name}() should not be indexed by a key`);
    a.checkMapExists(m);
  }
  return { kind: 'none' };
}

/** `delete(@m[k])`, `delete(@m, k)`, `delete(@x)`. */
function deleteCheck(c: CallExpr, a: BuiltinChecker): SType {
  const args = c.args;
  if (args.length === 2) {
    const m = a.mapArg(c, 0);
    if (m) {
      a.checkMapExists(m);
      const t = a.expr(args[1]!);
      const sym = a.map(m.name);
      if (t && sym) {
        const keyT =
          sym.keyTypes.length === 1 ? sym.keyTypes[0]! : { kind: 'tuple' as const, elems: [...sym.keyTypes] };
        if (!sameShape(storageType(t), keyT)) a.error(args[1]!.pos, `delete(): key type mismatch`);
      }
    }
    return BOOL;
  }
  if (args.length !== 1) {
    a.error(c.pos, 'delete() requires 1 or 2 arguments');
    return BOOL;
  }
  const m = a.mapArg(c, 0);
  if (m) {
    const sym = a.map(m.name);
    a.mapKeyTypes(m);
    if (!sym) a.error(m.pos, `Undefined map: @${m.name}`);
    else if (sym.keyTypes.length > 0 && m.keys.length === 0) {
      a.error(m.pos, `delete() of a keyed map needs a key: delete(@${m.name}[key])`);
    }
  }
  return BOOL;
}

/** `has_key(@m, k)`: k typed as the map's key (a tuple for several keys). */
function hasKeyCheck(c: CallExpr, a: BuiltinChecker): SType {
  const args = c.args;
  const m = a.mapArg(c, 0);
  if (m) {
    if (m.keys.length) a.error(m.pos, 'has_key() expects a map without a key: has_key(@m, key)');
    a.checkMapExists(m);
  }
  const kt = a.expr(args[1]!);
  const info = m ? a.map(m.name) : undefined;
  if (m && info && kt) {
    const label = m.name === '' ? '@' : `@${m.name}`;
    if (info.keyTypes.length === 0) {
      a.error(m.pos, `call to has_key() expects a map with explicit keys (non-scalar map); ${label} has none`);
    } else {
      // a multi-key map takes its key as a tuple: has_key(@m, (1, "a"))
      const given = info.keyTypes.length > 1 && kt.kind === 'tuple' ? kt.elems : [kt];
      // named as bpftrace names them: a literal key has its own type, the map's keys the types first written
      const givenBt = given.length === 1 ? [btTypeOf(args[1]!, kt, new Map()).type] : given;
      if (
        given.length !== info.keyTypes.length ||
        !given.every((k, i) => sameShape(storageType(k), info.keyTypes[i]!))
      ) {
        a.error(
          args[1]!.pos,
          `Argument mismatch for ${label}: trying to access with arguments: ${keyTypesText(givenBt)} when map expects arguments: ${keyTypesText(info.btKeyTypes?.map((k) => k.type) ?? info.keyTypes)}`,
        );
      }
    }
  }
  return BOOL;
}

/** `len(@m)` (elements, counted with bpf_for_each_map_elem) or `len(kstack)` (frames stored). */
function lenCheck(c: CallExpr, a: BuiltinChecker): SType | null {
  const a0 = c.args[0]!;
  if (a0.kind === 'MapExpr' && a0.keys.length === 0) {
    a.checkMapExists(a0);
    const sym = a.map(a0.name);
    if (sym && sym.keyTypes.length === 0) {
      a.error(a0.pos, 'call to len() expects a map with explicit keys (non-scalar map)');
      return null;
    }
    return U64;
  }
  const t = a.expr(a0);
  if (t && t.kind !== 'kstack' && t.kind !== 'ustack') {
    a.error(a0.pos, `len() expects a map, a kstack or a ustack (${typeName(t)} provided)`);
    return null;
  }
  return I64;
}

const aggregation = (name: string, usage: string, note?: string): BuiltinFunction => ({
  name,
  role: 'aggregation',
  doc: { usage, note },
});

export const MAP_FUNCTIONS: readonly BuiltinFunction[] = [
  aggregation('count', '`count()`'),
  aggregation('sum', '`sum(x)`'),
  aggregation('avg', '`avg(x)`'),
  aggregation('min', '`min(x)`'),
  aggregation('max', '`max(x)`'),
  aggregation('stats', '`stats(x)`'),
  aggregation('hist', '`hist(x[, bits])`'),
  aggregation('lhist', '`lhist(x, min, max, step)`'),
  {
    name: 'delete',
    check: deleteCheck,
    doc: { usage: '`delete(@m[k])`, `delete(@m, k)`', note: 'true when the key existed (current bpftrace)' },
  },
  { name: 'clear', role: 'statement', check: wholeMap, doc: { usage: '`clear(@m)`' } },
  { name: 'zero', role: 'statement', check: wholeMap, doc: { usage: '`zero(@m)`' } },
  { name: 'has_key', arity: [2, 2], check: hasKeyCheck, doc: { usage: '`has_key(@m, k)`' } },
  {
    name: 'len',
    arity: [1, 1],
    check: lenCheck,
    doc: {
      usage: '`len(@m)`, `len(kstack)`',
      note: 'elements of a map (counted with bpf_for_each_map_elem); frames stored of a stack',
    },
  },
];
