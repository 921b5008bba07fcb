/**
 * Unreachable statements (bpftrace's control_flow_analyser): a statement that follows, in the same block, one that
 * always ends the block (`return`, `break`, `continue`, `exit()`, an `if`/`else` whose branches all do, a block that
 * does) gets the warning `Unreachable statement.`, on the first such statement only. The code is still compiled.
 */
import type { Block, Program, Stmt } from '../ast.js';
import type { Diagnostic } from '../diagnostics.js';

/** Whether `s` always leaves the enclosing block. */
function terminates(s: Stmt): boolean {
  switch (s.kind) {
    case 'JumpStmt':
      return true;
    case 'ExprStmt':
      return s.expr.kind === 'CallExpr' && s.expr.name === 'exit';
    case 'IfStmt':
      return s.else !== null && terminates(s.then) && terminates(s.else);
    case 'Block':
      return s.stmts.some(terminates);
    default:
      return false;
  }
}

function visitBlock(b: Block, out: Diagnostic[]): void {
  const i = b.stmts.findIndex(terminates);
  const next = i >= 0 ? b.stmts[i + 1] : undefined;
  if (next) out.push({ severity: 'warning', message: 'Unreachable statement.', pos: next.pos });
  for (const s of b.stmts) visitStmt(s, out);
}

function visitStmt(s: Stmt, out: Diagnostic[]): void {
  switch (s.kind) {
    case 'IfStmt':
      visitBlock(s.then, out);
      if (s.else) visitStmt(s.else, out);
      return;
    case 'WhileStmt':
    case 'UnrollStmt':
    case 'ForStmt':
      visitBlock(s.body, out);
      return;
    case 'Block':
      visitBlock(s, out);
      return;
    default:
      return;
  }
}

/** The `Unreachable statement.` warnings of every probe body, in source order. */
export function unreachableWarnings(program: Program): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const p of program.probes) visitBlock(p.body, out);
  return out;
}
