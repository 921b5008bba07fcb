/**
 * Macro expansion (bpftrace v0.22+ `macro name(params) { ... }`, its `docs/language.md` "Macros"): every call
 * `name(args)` of a macro (or a bare `name` for a macro without parameters) is replaced, before any other pass, by the
 * macro's body:
 * - in an expression, a block expression `{ stmts; value }` (the macro must end with a value);
 * - as a statement, a block `{ stmts; value; }`.
 * Parameters: `$x` takes a scratch variable by reference (uses of `$x` become the caller's variable, so the macro
 * can update it), `@x` a map (uses of `@x[...]` become the caller's map), a bare `x` any expression (each use is a
 * copy of the argument; a type where the parameter's name is written as a type, `sizeof(x)`, `(x*)e`, when the argument
 * is `typeof(TYPE)`). The macro's own variables are renamed (`$y` -> `$y#macro_N`) so they cannot collide with
 * the caller's. Macros may call macros, in any definition order; recursion is an error.
 */
import type { BlockExpr, CallExpr, Expr, MacroDecl, Program, SizeofExpr, Span, Stmt, TypeSpec } from '../ast.js';
import { CompileError, type Diagnostic } from '../diagnostics.js';

const MAX_DEPTH = 32;

/** Functions of the language a macro of the same name but another arity leaves alone. */
const BUILTIN_FUNCS = new Set(['cpu', 'pid', 'tid', 'nsecs', 'kstack', 'ustack', 'printf', 'print', 'exit', 'str']);

/** Expand every macro call of `program` in place. @throws CompileError for a bad call or recursion */
export function expandMacros(program: Program): void {
  if (program.macros.length === 0) return;
  const errors: Diagnostic[] = [];
  const macros = new Map<string, MacroDecl>();
  for (const m of program.macros) {
    if (macros.has(m.name)) errors.push({ severity: 'error', message: `Redefinition of macro: ${m.name}`, pos: m.pos });
    else macros.set(m.name, m);
  }
  const ex = new Expander(macros, errors);
  for (const p of program.probes) {
    if (p.predicate) p.predicate = ex.expr(p.predicate, []);
    p.body.stmts = ex.stmts(p.body.stmts, []);
  }
  if (errors.length) throw new CompileError(errors);
}

class Expander {
  private serial = 0;

  constructor(
    private readonly macros: Map<string, MacroDecl>,
    private readonly errors: Diagnostic[],
  ) {}

  /** Expand inside statements; a macro call used as a statement becomes a block. */
  stmts(list: Stmt[], stack: string[]): Stmt[] {
    return list.map((s) => {
      if (s.kind === 'ExprStmt') {
        const call = this.macroCall(s.expr);
        if (call) {
          const body = this.instantiate(call.macro, call.args, call.pos, stack, false);
          return body ? { kind: 'Block', pos: s.pos, stmts: body.stmts } : s;
        }
      }
      this.walk(s, stack);
      return s;
    });
  }

  expr(e: Expr, stack: string[]): Expr {
    const call = this.macroCall(e);
    if (call) {
      const body = this.instantiate(call.macro, call.args, call.pos, stack, true);
      if (!body) return e;
      return { kind: 'BlockExpr', pos: e.pos, stmts: body.stmts, value: body.value! } satisfies BlockExpr;
    }
    this.walk(e, stack);
    return e;
  }

  /** The macro a call or bare name refers to, with its arguments. */
  private macroCall(e: Expr): { macro: MacroDecl; args: Expr[]; pos: Span } | undefined {
    if (e.kind === 'CallExpr') {
      // a macro with another number of parameters does not hide a builtin function of the same name
      const m = this.macros.get(e.name);
      const args = (e as CallExpr).args;
      return m && (m.params.length === args.length || !BUILTIN_FUNCS.has(e.name))
        ? { macro: m, args, pos: e.pos }
        : undefined;
    }
    if (e.kind === 'BuiltinExpr') {
      const m = this.macros.get(e.name);
      return m && m.params.length === 0 ? { macro: m, args: [], pos: e.pos } : undefined;
    }
    return undefined;
  }

  /** Visit the children of a node, expanding macro calls found in expression and statement positions. */
  private walk(node: object, stack: string[]): void {
    const rec = node as Record<string, unknown>;
    for (const [k, v] of Object.entries(rec)) {
      if (k === 'pos' || k === 'type' || !v || typeof v !== 'object') continue;
      if (Array.isArray(v)) {
        if (v.length && isStmt(v[0])) rec[k] = this.stmts(v as Stmt[], stack);
        else rec[k] = v.map((x) => (isExpr(x) ? this.expr(x, stack) : (this.walk(x as object, stack), x)));
      } else if (isExpr(v)) {
        rec[k] = this.expr(v, stack);
      } else {
        this.walk(v, stack);
      }
    }
  }

  /** The macro's statements and value for one call: arguments substituted, locals renamed, inner calls expanded. */
  private instantiate(
    m: MacroDecl,
    args: Expr[],
    pos: Span,
    stack: string[],
    needValue: boolean,
  ): { stmts: Stmt[]; value: Expr | null } | undefined {
    const fail = (message: string): undefined => {
      this.errors.push({ severity: 'error', message, pos });
      return undefined;
    };
    if (stack.includes(m.name) || stack.length >= MAX_DEPTH) {
      return fail(`Recursive macro call detected: ${[...stack, m.name].join(' -> ')}`);
    }
    if (args.length !== m.params.length) {
      return fail(`Call to ${m.name}() has ${args.length} argument(s), the macro takes ${m.params.length}`);
    }
    if (needValue && m.value === null)
      return fail(`Macro ${m.name}() has no value: it cannot be used in an expression`);
    // the caller's arguments are expanded in the caller's context first
    const expanded = args.map((a) => this.expr(a, stack));
    const vars = new Map<string, string>();
    const maps = new Map<string, string>();
    const exprs = new Map<string, Expr>();
    for (let i = 0; i < m.params.length; i++) {
      const p = m.params[i]!;
      const a = expanded[i]!;
      if (p.kind === 'var') {
        if (a.kind !== 'VarExpr') return fail(`Macro ${m.name}() expects a variable for $${p.name}`);
        vars.set(p.name, a.name);
      } else if (p.kind === 'map') {
        if (a.kind !== 'MapExpr' || a.keys.length) return fail(`Macro ${m.name}() expects a map for @${p.name}`);
        maps.set(p.name, a.name);
      } else {
        exprs.set(p.name, a);
      }
    }
    /**
     * A type written with a bare parameter's name (`sizeof(x)`, `(x*)e`, `let $v: typeof(x)`): its argument's type
     * when the argument is `typeof(...)` (the pointer stars and array count written after the name added), the
     * argument itself where an expression may stand (`sizeof`'s target, `typeof`'s argument); undefined otherwise.
     */
    const typeParam = (spec: TypeSpec, exprOk: boolean): TypeSpec | Expr | undefined => {
      if (spec.of || !exprs.has(spec.name)) return undefined;
      const a = exprs.get(spec.name)!;
      const written = a.kind === 'CallExpr' ? a.typeArg : undefined;
      if (!written) return exprOk ? clone(a) : undefined;
      const inner = written.of?.arg;
      if (inner?.kind === 'TypeSpec' && !inner.of) {
        if (inner.arrayCount !== null && (spec.pointerDepth > 0 || spec.arrayCount !== null)) {
          this.errors.push({
            severity: 'error',
            message: `${spec.name}: a pointer to or an array of an array type is not supported`,
            pos: spec.pos,
          });
          return undefined;
        }
        return {
          kind: 'TypeSpec',
          pos: spec.pos,
          name: inner.name,
          pointerDepth: inner.pointerDepth + spec.pointerDepth,
          arrayCount: spec.arrayCount ?? inner.arrayCount,
        };
      }
      if (spec.pointerDepth === 0 && spec.arrayCount === null) return clone(written);
      this.errors.push({
        severity: 'error',
        message: `${spec.name}: a typeof() of an expression cannot take '*' or '[N]' in a macro yet`,
        pos: spec.pos,
      });
      return undefined;
    };
    const suffix = `#macro_${++this.serial}`;
    const body = clone({ stmts: m.stmts, value: m.value }) as { stmts: Stmt[]; value: Expr | null };
    /** Arguments written in place of a type parameter: the caller's, substituted already. */
    const placed = new WeakSet<object>();
    const place = <T extends object>(x: T): T => (placed.add(x), x);
    const sub = (node: unknown): unknown => {
      if (Array.isArray(node)) return node.map(sub);
      if (!node || typeof node !== 'object' || ArrayBuffer.isView(node) || placed.has(node)) return node;
      const o = node as Record<string, unknown> & { kind?: string; name?: string; pos?: Span };
      if (o.pos) o.pos = { ...o.pos, expandedFrom: pos };
      if (o.kind === 'VarExpr' && typeof o.name === 'string') {
        o.name = vars.get(o.name) ?? `${o.name}${suffix}`;
        return o;
      }
      if (o.kind === 'MapExpr' && typeof o.name === 'string' && maps.has(o.name)) o.name = maps.get(o.name)!;
      if (o.kind === 'BuiltinExpr' && typeof o.name === 'string' && exprs.has(o.name)) return clone(exprs.get(o.name));
      if (o.kind === 'TypeSpec') {
        const spec = o as unknown as TypeSpec;
        const r = typeParam(spec, false);
        if (r) return place(r);
        const arg = spec.of?.arg.kind === 'TypeSpec' ? typeParam(spec.of.arg, true) : undefined;
        if (arg) spec.of!.arg = place(arg);
      }
      if (o.kind === 'SizeofExpr') {
        const e = o as unknown as SizeofExpr;
        const target = e.target.kind === 'TypeSpec' ? typeParam(e.target, true) : undefined;
        if (target) e.target = place(target);
      }
      for (const [k, v] of Object.entries(o)) if (k !== 'pos' && k !== 'type') o[k] = sub(v);
      return o;
    };
    const stmts = sub(body.stmts) as Stmt[];
    const value = body.value ? (sub(body.value) as Expr) : null;
    const inner = [...stack, m.name];
    const outStmts = this.stmts(stmts, inner);
    const outValue = value ? this.expr(value, inner) : null;
    if (!needValue && outValue) outStmts.push({ kind: 'ExprStmt', pos: outValue.pos, expr: outValue });
    return { stmts: outStmts, value: outValue };
  }
}

function isExpr(v: unknown): v is Expr {
  const k = (v as { kind?: unknown } | null)?.kind;
  return typeof k === 'string' && (k.endsWith('Expr') || k.endsWith('Lit'));
}

function isStmt(v: unknown): v is Stmt {
  const k = (v as { kind?: unknown } | null)?.kind;
  return typeof k === 'string' && (k.endsWith('Stmt') || k === 'Block');
}

/** Deep copy of an AST fragment (plain data; spans are shared, they are never mutated). */
function clone<T>(v: T): T {
  if (Array.isArray(v)) return v.map(clone) as T;
  if (!v || typeof v !== 'object' || ArrayBuffer.isView(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[k] = k === 'pos' ? x : clone(x);
  return out as T;
}
