/**
 * Block scoping of scratch variables, as current bpftrace has it (bpftrace's docs/migration_guide.md, "Added block
 * scoping for scratch variables", 0.22): a variable exists from its first assignment or `let` to the end of the
 * block that holds it (a probe body, an `if`/`else`/`while`/`unroll` body, a `{ }` block or block expression, a
 * `for` loop for its loop variable). A read of a variable no enclosing block has is an error, as is a `let` or a loop
 * variable that shadows one.
 *
 * Later passes keep one variable table per probe, so each declaration gets a name of its own: the first of a name
 * keeps it, later ones become `name#N` (N counting from 1 per name and probe). Messages strip the suffix.
 */
import type { Block, Expr, Program, Stmt, VarExpr } from '../ast.js';
import { CompileError, type Diagnostic } from '../diagnostics.js';
import { closestNames, didYouMean } from '../suggest.js';
import { AstMutator } from '../visitor.js';

/** A variable's name as the user wrote it (without the suffix this pass or macro expansion added). */
export function userVarName(name: string): string {
  return name.replace(/#.*$/, '');
}

class Scoper extends AstMutator {
  private readonly scopes: Map<string, string>[] = [];
  private readonly counters = new Map<string, number>();
  readonly errors: Diagnostic[] = [];

  /** The unique name of `name` in the innermost enclosing scope that has it. */
  private find(name: string): string | undefined {
    for (let i = this.scopes.length - 1; i >= 0; i--) {
      const u = this.scopes[i]!.get(name);
      if (u !== undefined) return u;
    }
    return undefined;
  }

  /** Declare `v` in the innermost scope under a fresh unique name, and rename it. */
  private declare(v: VarExpr): void {
    const n = this.counters.get(v.name);
    const unique = n === undefined ? v.name : `${v.name}#${n}`;
    this.counters.set(v.name, (n ?? 0) + 1);
    this.scopes[this.scopes.length - 1]!.set(v.name, unique);
    v.name = unique;
  }

  private use(v: VarExpr): void {
    const u = this.find(v.name);
    if (u === undefined) {
      const visible = new Set(this.scopes.flatMap((m) => [...m.keys()]));
      const hint = didYouMean(closestNames(v.name, visible).map((n) => `$${userVarName(n)}`));
      this.errors.push({
        severity: 'error',
        message: `Undefined or undeclared variable: $${userVarName(v.name)}`,
        pos: v.pos,
        ...(hint ? { hint } : {}),
      });
      return;
    }
    v.name = u;
  }

  scoped(body: () => void): void {
    this.scopes.push(new Map());
    body();
    this.scopes.pop();
  }

  override block(b: Block): Block {
    this.scoped(() => super.block(b));
    return b;
  }

  override stmt(s: Stmt): Stmt {
    switch (s.kind) {
      case 'AssignStmt':
        this.expr(s.value);
        if (s.target.kind === 'MapExpr') this.expr(s.target);
        else if (s.op === '=' && this.find(s.target.name) === undefined) this.declare(s.target);
        else this.use(s.target);
        return s;
      case 'VarDeclStmt':
        if (s.value) this.expr(s.value);
        if (this.find(s.variable.name) !== undefined) {
          this.errors.push({
            severity: 'error',
            message: `Variable $${userVarName(s.variable.name)} was already declared. Variable shadowing is not allowed.`,
            pos: s.pos,
          });
          return s;
        }
        this.declare(s.variable);
        return s;
      case 'ForStmt':
        this.expr(s.iterable);
        if (this.find(s.variable.name) !== undefined) {
          this.errors.push({
            severity: 'error',
            message: `Loop declaration shadows existing variable: $${userVarName(s.variable.name)}`,
            pos: s.variable.pos,
          });
          return s;
        }
        this.scoped(() => {
          this.declare(s.variable);
          this.block(s.body);
        });
        return s;
      default:
        return super.stmt(s);
    }
  }

  /** Every variable read under an expression, with block expressions scoped. */
  override expr(e: Expr): Expr {
    if (e.kind === 'VarExpr') this.use(e);
    else if (e.kind === 'BlockExpr') this.scoped(() => super.expr(e));
    else super.expr(e);
    return e;
  }
}

/**
 * Resolve every scratch variable of every probe to its declaration and rename declarations apart (see the module
 * comment). Throws CompileError with every undeclared read and shadowing declaration.
 */
export function scopeVariables(program: Program): void {
  const errors: Diagnostic[] = [];
  for (const probe of program.probes) {
    const s = new Scoper();
    // the predicate and the body share the probe's scope (the body's own block opens a second one inside it)
    s.scoped(() => s.probe(probe));
    for (const e of s.errors) errors.push(e);
  }
  if (errors.length) throw new CompileError(errors);
}
