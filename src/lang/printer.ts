/**
 * AST dump for `bpfscope -d ast`: an indented tree, one node per line, one space of indent per level, in the style
 * of bpftrace's tree printer (`src/ast/passes/printer.cpp` up to v0.24; from v0.25 bpftrace's `-d ast` prints the
 * program re-formatted as source instead). Given the semantic pass's types (`type-table.ts`), a typed expression
 * gets ` :: [type]` after it, in bpftrace's type spelling (`types.ts` `typeName`).
 *
 * ```
 * Program
 *  tracepoint:syscalls:sys_enter_openat
 *   pred
 *    ==
 *     builtin: pid
 *     int: 1
 *   =
 *    map: @
 *     builtin: comm
 *    call: count
 * ```
 */
import type * as A from './ast.js';
import type { TypeTable } from './type-table.js';
import { type SType, typeName } from './types.js';

/**
 * Renders `program` as an indented tree; lines joined with '\n', no trailing newline. `typeOf` gives an
 * expression's type to show (none: no types shown; see {@link lastTypeOf}).
 */
export function printAst(program: A.Program, typeOf?: (e: A.Expr) => SType | undefined): string {
  const p = new TreePrinter(typeOf ?? (() => undefined));
  p.program(program);
  return p.lines.join('\n');
}

/**
 * The type lookup of {@link printAst} over the type tables of a compilation's units (in unit order): a node of a
 * probe with several attach points shows its type in the last unit that typed it.
 */
export function lastTypeOf(tables: Iterable<TypeTable>): (e: A.Expr) => SType | undefined {
  const last = [...tables].reverse();
  return (e) => {
    for (const t of last) {
      const found = t.find(e);
      if (found) return found;
    }
    return undefined;
  };
}

/** A `TypeSpec` as written: `uint32`, `struct task_struct *`, `uint8[4]`, `string[]`. */
export function typeSpecText(t: A.TypeSpec): string {
  let s = t.name;
  if (t.pointerDepth > 0) s += ` ${'*'.repeat(t.pointerDepth)}`;
  if (t.arrayCount !== null) s += `[${t.arrayCount === 0 ? '' : t.arrayCount}]`;
  return s;
}

/** String literal text escaped as bpftrace's printer does: `\\`, `\"`, `\n`, `\t`, `\r`, other bytes as `\xNN`. */
export function escapeString(lit: Pick<A.StrLit, 'value' | 'bytes'>): string {
  const bytes = lit.bytes ?? Buffer.from(lit.value, 'utf8');
  let s = '';
  for (const b of bytes) {
    if (b === 0x5c) s += '\\\\';
    else if (b === 0x22) s += '\\"';
    else if (b >= 0x20 && b <= 0x7e) s += String.fromCharCode(b);
    else if (b === 10) s += '\\n';
    else if (b === 9) s += '\\t';
    else if (b === 13) s += '\\r';
    else s += `\\x${b.toString(16).padStart(2, '0')}`;
  }
  return s;
}

const UNARY_NAMES: Record<A.UnaryExpr['op'], string> = { '!': '!', '~': '~', '-': '-', '*': 'dereference', '&': '&' };

class TreePrinter {
  readonly lines: string[] = [];

  constructor(private readonly typeOf: (e: A.Expr) => SType | undefined) {}

  private line(depth: number, text: string): void {
    this.lines.push(' '.repeat(depth) + text);
  }

  private typed(e: A.Expr): string {
    const t = this.typeOf(e);
    return t && t.kind !== 'none' ? ` :: [${typeName(t)}]` : '';
  }

  program(p: A.Program): void {
    this.line(0, 'Program');
    if (p.config.length > 0) {
      this.line(1, 'config');
      for (const c of p.config) {
        this.line(2, '=');
        this.line(3, `config var: ${c.key}`);
        this.line(3, typeof c.value === 'bigint' ? `int: ${c.value}` : `string: ${escapeString({ value: c.value })}`);
      }
    }
    for (const d of p.mapDecls) {
      this.line(1, `map decl: @${d.name}`);
      this.line(2, `bpf type: ${d.mapType}`);
      this.line(2, `max entries: ${d.maxEntries}`);
    }
    for (const probe of p.probes) this.probe(probe, 1);
  }

  private probe(probe: A.Probe, depth: number): void {
    for (const ap of probe.attachPoints) this.line(depth, ap.raw);
    if (probe.predicate) {
      this.line(depth + 1, 'pred');
      this.expr(probe.predicate, depth + 2);
    }
    this.stmts(probe.body.stmts, depth + 1);
  }

  private stmts(stmts: A.Stmt[], depth: number): void {
    for (const s of stmts) this.stmt(s, depth);
  }

  private stmt(s: A.Stmt, depth: number): void {
    switch (s.kind) {
      case 'ExprStmt':
        this.expr(s.expr, depth);
        return;
      case 'AssignStmt':
        this.line(depth, s.op);
        this.expr(s.target, depth + 1);
        this.expr(s.value, depth + 1);
        return;
      case 'VarDeclStmt':
        this.line(depth, `decl${s.typeName ? ` :: [${typeSpecText(s.typeName)}]` : ''}`);
        this.expr(s.variable, depth + 1);
        if (s.value) this.expr(s.value, depth + 1);
        return;
      case 'IfStmt':
        this.line(depth, 'if');
        this.expr(s.cond, depth + 1);
        this.line(depth + 1, 'then');
        this.stmts(s.then.stmts, depth + 2);
        if (s.else) {
          this.line(depth + 1, 'else');
          if (s.else.kind === 'IfStmt') this.stmt(s.else, depth + 2);
          else this.stmts(s.else.stmts, depth + 2);
        }
        return;
      case 'WhileStmt':
        this.line(depth, 'while');
        this.expr(s.cond, depth + 1);
        this.line(depth + 1, 'block');
        this.stmts(s.body.stmts, depth + 2);
        return;
      case 'UnrollStmt':
        this.line(depth, 'unroll');
        this.expr(s.count, depth + 1);
        this.line(depth + 1, 'block');
        this.stmts(s.body.stmts, depth + 2);
        return;
      case 'ForStmt':
        this.line(depth, 'for');
        this.line(depth + 1, 'decl');
        this.expr(s.variable, depth + 2);
        this.expr(s.iterable, depth + 2);
        this.line(depth + 1, 'stmts');
        this.stmts(s.body.stmts, depth + 2);
        return;
      case 'JumpStmt':
        this.line(depth, s.jump);
        if (s.value) this.expr(s.value, depth + 1);
        return;
      case 'Block':
        this.line(depth, 'block');
        this.stmts(s.stmts, depth + 1);
        return;
    }
  }

  private expr(e: A.Expr, depth: number): void {
    const t = this.typed(e);
    switch (e.kind) {
      case 'IntLit':
        this.line(depth, `int: ${e.value}${t}`);
        return;
      case 'StrLit':
        this.line(depth, `string: ${escapeString(e)}${t}`);
        return;
      case 'BoolLit':
        this.line(depth, `bool: ${e.value}${t}`);
        return;
      case 'BuiltinExpr':
        this.line(depth, `builtin: ${e.name}${t}`);
        return;
      case 'PositionalExpr':
        this.line(depth, `param: $${e.count ? '#' : e.index}${t}`);
        return;
      case 'VarExpr':
        this.line(depth, `variable: $${e.name}${t}`);
        return;
      case 'MapExpr':
        this.line(depth, `map: @${e.name}${t}`);
        for (const k of e.keys) this.expr(k, depth + 1);
        return;
      case 'CallExpr':
        this.line(depth, `call: ${e.name}${t}`);
        for (const a of e.args) this.expr(a, depth + 1);
        return;
      case 'BinaryExpr':
        this.line(depth, `${e.op}${t}`);
        this.expr(e.left, depth + 1);
        this.expr(e.right, depth + 1);
        return;
      case 'UnaryExpr':
        this.line(depth, `${UNARY_NAMES[e.op]}${t}`);
        this.expr(e.operand, depth + 1);
        return;
      case 'IncDecExpr':
        this.line(depth, `${e.op} (${e.prefix ? 'pre' : 'post'})${t}`);
        this.expr(e.target, depth + 1);
        return;
      case 'TernaryExpr':
        this.line(depth, `?:${t}`);
        this.expr(e.cond, depth + 1);
        this.expr(e.then, depth + 1);
        this.expr(e.else, depth + 1);
        return;
      case 'FieldExpr':
        this.line(depth, `${e.arrow ? '->' : '.'}${t}`);
        this.expr(e.object, depth + 1);
        this.line(depth + 1, e.field);
        return;
      case 'IndexExpr':
        this.line(depth, `[]${t}`);
        this.expr(e.object, depth + 1);
        this.expr(e.index, depth + 1);
        return;
      case 'CastExpr':
        this.line(depth, `(${typeSpecText(e.typeSpec)})${t}`);
        this.expr(e.operand, depth + 1);
        return;
      case 'TupleExpr':
        this.line(depth, `tuple:${t}`);
        for (const x of e.elems) this.expr(x, depth + 1);
        return;
      case 'RangeExpr':
        this.line(depth, `range${t}`);
        this.expr(e.start, depth + 1);
        this.expr(e.end, depth + 1);
        return;
      case 'SizeofExpr':
        this.line(depth, `sizeof:${t}`);
        if (e.target.kind === 'TypeSpec') this.line(depth + 1, typeSpecText(e.target));
        else this.expr(e.target, depth + 1);
        return;
      case 'OffsetofExpr':
        this.line(depth, `offsetof:${t}`);
        this.line(depth + 1, typeSpecText(e.typeSpec));
        this.line(depth + 1, e.field);
        return;
      case 'BlockExpr':
        this.line(depth, `block expr${t}`);
        this.stmts(e.stmts, depth + 1);
        this.expr(e.value, depth + 1);
        return;
    }
  }
}
