/**
 * The AST's one traversal: which fields of each node kind hold child nodes, and a mutator base class that passes
 * extend to rewrite the tree in place (bottom-up or top-down, as the subclass chooses). Every pass that walks
 * statements and expressions builds on this instead of its own `switch` over node kinds, so a new node kind is added
 * here once (the `never` checks below make the compiler name this file when a kind is missing).
 *
 * Children, per kind (ast.ts): statements hold expressions and blocks; expressions hold expressions, and a block
 * expression holds statements. Type specifications (`TypeSpec`) are not visited, except the expression inside
 * `typeof(expr)`-style specs (`of.arg`), which is. `type` (semantic types) and `pos` (spans) hold no nodes.
 */
import type { Block, Expr, IfStmt, Probe, Program, Stmt, TypeSpec } from './ast.js';

/** The functions that give each child of a node its replacement (a mutator, or a read-only walk returning its input). */
export interface ChildMapper {
  expr(e: Expr): Expr;
  stmt(s: Stmt): Stmt;
  block(b: Block): Block;
}

function mapTypeSpec(t: TypeSpec, m: ChildMapper): void {
  if (!t.of) return;
  if (t.of.arg.kind === 'TypeSpec') mapTypeSpec(t.of.arg, m);
  else t.of.arg = m.expr(t.of.arg);
}

/** Replace each direct child of statement `s` with its mapped node, in source order. */
export function mapStmtChildren(s: Stmt, m: ChildMapper): void {
  switch (s.kind) {
    case 'ExprStmt':
      s.expr = m.expr(s.expr);
      return;
    case 'AssignStmt':
      s.target = m.expr(s.target) as typeof s.target;
      s.value = m.expr(s.value);
      return;
    case 'VarDeclStmt':
      s.variable = m.expr(s.variable) as typeof s.variable;
      if (s.typeName) mapTypeSpec(s.typeName, m);
      if (s.value) s.value = m.expr(s.value);
      return;
    case 'IfStmt':
      s.cond = m.expr(s.cond);
      s.then = m.block(s.then);
      if (s.else) s.else = m.stmt(s.else) as Block | IfStmt;
      return;
    case 'WhileStmt':
      s.cond = m.expr(s.cond);
      s.body = m.block(s.body);
      return;
    case 'UnrollStmt':
      s.count = m.expr(s.count);
      s.body = m.block(s.body);
      return;
    case 'ForStmt':
      s.variable = m.expr(s.variable) as typeof s.variable;
      s.iterable = m.expr(s.iterable) as typeof s.iterable;
      s.body = m.block(s.body);
      return;
    case 'JumpStmt':
      if (s.value) s.value = m.expr(s.value);
      return;
    case 'Block':
      s.stmts = s.stmts.map((x) => m.stmt(x));
      return;
    default: {
      const never: never = s;
      throw new Error(`visitor: statement kind ${(never as Stmt).kind} has no children listed`);
    }
  }
}

/** Replace each direct child of expression `e` with its mapped node, in source order. */
export function mapExprChildren(e: Expr, m: ChildMapper): void {
  switch (e.kind) {
    case 'IntLit':
    case 'StrLit':
    case 'BoolLit':
    case 'BuiltinExpr':
    case 'PositionalExpr':
    case 'VarExpr':
    case 'OffsetofExpr':
      return;
    case 'MapExpr':
      e.keys = e.keys.map((k) => m.expr(k));
      return;
    case 'CallExpr':
      e.args = e.args.map((a) => m.expr(a));
      return;
    case 'BinaryExpr':
      e.left = m.expr(e.left);
      e.right = m.expr(e.right);
      return;
    case 'UnaryExpr':
      e.operand = m.expr(e.operand);
      return;
    case 'IncDecExpr':
      e.target = m.expr(e.target) as typeof e.target;
      return;
    case 'TernaryExpr':
      e.cond = m.expr(e.cond);
      e.then = m.expr(e.then);
      e.else = m.expr(e.else);
      return;
    case 'FieldExpr':
      e.object = m.expr(e.object);
      return;
    case 'IndexExpr':
      e.object = m.expr(e.object);
      e.index = m.expr(e.index);
      return;
    case 'CastExpr':
      mapTypeSpec(e.typeSpec, m);
      e.operand = m.expr(e.operand);
      return;
    case 'TupleExpr':
      e.elems = e.elems.map((x) => m.expr(x));
      return;
    case 'RangeExpr':
      e.start = m.expr(e.start);
      e.end = m.expr(e.end);
      return;
    case 'SizeofExpr':
      if (e.target.kind === 'TypeSpec') mapTypeSpec(e.target, m);
      else e.target = m.expr(e.target);
      return;
    case 'BlockExpr':
      e.stmts = e.stmts.map((s) => m.stmt(s));
      e.value = m.expr(e.value);
      return;
    default: {
      const never: never = e;
      throw new Error(`visitor: expression kind ${(never as Expr).kind} has no children listed`);
    }
  }
}

/**
 * Base of the passes that rewrite the AST in place. Each method returns the node that takes the visited node's
 * place (the node itself by default) after visiting its children; a subclass overrides the kinds it cares about and
 * calls `super.expr(e)` (or `super.stmt(s)`) where the children should be visited first (bottom-up) or afterwards
 * (top-down). `program()` visits every probe's predicate and body; macros and declarations are not visited.
 */
export class AstMutator implements ChildMapper {
  program(p: Program): void {
    for (const probe of p.probes) this.probe(probe);
  }

  probe(p: Probe): void {
    if (p.predicate) p.predicate = this.expr(p.predicate);
    p.body = this.block(p.body);
  }

  block(b: Block): Block {
    mapStmtChildren(b, this);
    return b;
  }

  /** A statement's replacement; a nested `{ }` block goes to {@link block}. */
  stmt(s: Stmt): Stmt {
    if (s.kind === 'Block') return this.block(s);
    mapStmtChildren(s, this);
    return s;
  }

  expr(e: Expr): Expr {
    mapExprChildren(e, this);
    return e;
  }
}
