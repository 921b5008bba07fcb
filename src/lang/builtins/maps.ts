/**
 * Map functions and aggregations (bpftrace `docs/stdlib.md`, `docs/language.md` "Maps"): the aggregations are
 * only assigned to a map (`@x = count()`; codegen/aggregate.ts), the rest take a map argument. Their checks and
 * code are still in the analyser's `call()` and the generator's `callExpr()`/`callStmt()`.
 */
import type { BuiltinFunction } from './types.js';

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
    doc: { usage: '`delete(@m[k])`, `delete(@m, k)`', note: 'true when the key existed (current bpftrace)' },
  },
  { name: 'clear', role: 'statement', doc: { usage: '`clear(@m)`' } },
  { name: 'zero', role: 'statement', doc: { usage: '`zero(@m)`' } },
  { name: 'has_key', doc: { usage: '`has_key(@m, k)`' } },
  {
    name: 'len',
    doc: {
      usage: '`len(@m)`, `len(kstack)`',
      note: 'elements of a map (counted with bpf_for_each_map_elem); frames stored of a stack',
    },
  },
];
