/**
 * An aggregation that is a block expression's value, assigned to a map (`@ = { let $a = 100; avg($a) }`, what a
 * macro ending in an aggregation expands to; bpftrace's tests/runtime/call "block expression with map assignment"):
 * the block's statements run, then the aggregation is assigned directly, `{ let $a = 100; @ = avg($a); }`, the only
 * form later passes accept for aggregations.
 */
import type { AssignStmt, Block, Program, Stmt } from '../ast.js';

const AGGREGATIONS = new Set(['count', 'sum', 'avg', 'min', 'max', 'stats', 'hist', 'lhist', 'tseries']);

function rewriteStmt(s: Stmt): Stmt {
  if (
    s.kind === 'AssignStmt' &&
    s.op === '=' &&
    s.target.kind === 'MapExpr' &&
    s.value.kind === 'BlockExpr' &&
    s.value.value.kind === 'CallExpr' &&
    AGGREGATIONS.has(s.value.value.name)
  ) {
    const inner: AssignStmt = { ...s, value: s.value.value };
    return { kind: 'Block', pos: s.pos, stmts: [...s.value.stmts.map(rewriteStmt), rewriteStmt(inner)] };
  }
  for (const v of Object.values(s)) {
    if (v && typeof v === 'object' && (v as { kind?: string }).kind === 'Block') rewriteBlock(v as Block);
    if (v && typeof v === 'object' && (v as { kind?: string }).kind === 'IfStmt') rewriteStmt(v as Stmt);
  }
  if (s.kind === 'Block') rewriteBlock(s);
  return s;
}

function rewriteBlock(b: Block): void {
  b.stmts = b.stmts.map(rewriteStmt);
}

/** Rewrite every probe body in place (see the module comment). */
export function hoistBlockAggregations(program: Program): void {
  for (const p of program.probes) rewriteBlock(p.body);
}
