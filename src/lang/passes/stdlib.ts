/**
 * bpftrace's stdlib spellings of builtins (its `src/stdlib/base.bt` wraps each builtin in a macro; `docs/stdlib.md`),
 * rewritten after user macros are expanded (a user macro of the same name and arity wins, as in bpftrace):
 * - `__builtin_comm` (any `__builtin_NAME` of a builtin) is the builtin `comm`;
 * - `comm()`, `cpu()`, `elapsed()`, ... (a builtin called without arguments) is the builtin;
 * - `ppid(task)` is `task->real_parent->tgid`;
 * - a block expression without statements whose value is a literal (what a macro like `macro m() { "hi" }`
 *   expands to) is the literal, so functions that need literals (`printf(m())`) accept it.
 */
import type { BuiltinExpr, Expr, FieldExpr, Program } from '../ast.js';
import { builtinVariable } from '../builtins/registry.js';
import { AstMutator } from '../visitor.js';

/** A builtin variable (not a pattern like `argN`); `NAME()` of one with `ownFunction` is left to the analyser. */
function variable(name: string): { ownFunction?: boolean } | undefined {
  const v = builtinVariable(name);
  return v && !v.pattern ? v : undefined;
}

/** Rewrite the stdlib spellings in place (see the module comment). */
export function resolveStdlibWrappers(program: Program): void {
  new StdlibWrappers().program(program);
}

function builtin(e: Expr, name: string): BuiltinExpr {
  return { kind: 'BuiltinExpr', pos: e.pos, name };
}

function replacement(e: Expr): Expr | undefined {
  if (e.kind === 'BuiltinExpr' && e.name.startsWith('__builtin_')) {
    const name = e.name.slice('__builtin_'.length);
    return variable(name) ? builtin(e, name) : undefined;
  }
  if (e.kind === 'CallExpr') {
    const v = e.args.length === 0 ? variable(e.name) : undefined;
    if (v) return v.ownFunction ? undefined : builtin(e, e.name);
    if (e.name === 'ppid' && e.args.length === 1) {
      const parent: FieldExpr = {
        kind: 'FieldExpr',
        pos: e.pos,
        object: e.args[0]!,
        field: 'real_parent',
        arrow: true,
      };
      return { kind: 'FieldExpr', pos: e.pos, object: parent, field: 'tgid', arrow: true };
    }
  }
  if (e.kind === 'BlockExpr' && e.stmts.length === 0 && ['StrLit', 'IntLit', 'BoolLit'].includes(e.value.kind)) {
    return e.value;
  }
  return undefined;
}

/** Rewrites bottom-up: a node's children first, then the node. */
class StdlibWrappers extends AstMutator {
  override expr(e: Expr): Expr {
    super.expr(e);
    return replacement(e) ?? e;
  }
}
