/**
 * An aggregation that is a block expression's value, assigned to a map (`@ = { let $a = 100; avg($a) }`, what a
 * macro ending in an aggregation expands to; bpftrace's tests/runtime/call "block expression with map assignment"):
 * the block's statements run, then the aggregation is assigned directly, `{ let $a = 100; @ = avg($a); }`, the only
 * form later passes accept for aggregations.
 */
import type { AssignStmt, Program, Stmt } from '../ast.js';
import { AstMutator } from '../visitor.js';

const AGGREGATIONS = new Set(['count', 'sum', 'avg', 'min', 'max', 'stats', 'hist', 'lhist', 'tseries']);

class Hoister extends AstMutator {
  override stmt(s: Stmt): Stmt {
    if (
      s.kind === 'AssignStmt' &&
      s.op === '=' &&
      s.target.kind === 'MapExpr' &&
      s.value.kind === 'BlockExpr' &&
      s.value.value.kind === 'CallExpr' &&
      AGGREGATIONS.has(s.value.value.name)
    ) {
      const inner: AssignStmt = { ...s, value: s.value.value };
      return { kind: 'Block', pos: s.pos, stmts: [...s.value.stmts.map((x) => this.stmt(x)), this.stmt(inner)] };
    }
    return super.stmt(s);
  }
}

/** Rewrite every probe body in place (see the module comment). */
export function hoistBlockAggregations(program: Program): void {
  new Hoister().program(program);
}
