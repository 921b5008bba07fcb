/**
 * Hand-written recursive-descent parser for bpftrace's language, following bpftrace v0.26's grammar
 * (`src/parser.cpp`, `docs/language.md`): shebang, C preprocessor lines and struct definitions (accepted and
 * ignored), `config = { ... }`, then probes `ATTACH[, ATTACH...] [/predicate/] { statements }`.
 *
 * Entry point: `parse(source)`. It returns the `Program` or throws `CompileError` and nothing else: syntax errors
 * are collected with their spans (the parser recovers at the next statement inside a block; an error outside any
 * block ends parsing), nesting is bounded (`MAX_NESTING`, `MAX_AST_DEPTH`) so deep inputs cannot overflow the stack
 * of the parser or of later passes.
 *
 * AST conventions (see `ast.ts` for the shapes):
 * - every node's `pos` spans its first to its last token (statements exclude their `;`); a parenthesised
 *   expression's span includes the parentheses; a `Probe`'s span covers its attach points only (as bpftrace's);
 * - bare identifiers (`pid`, `comm`, `args`, and also `perf` in `kstack(perf)` or enum names) are `BuiltinExpr`;
 *   semantic analysis decides what they mean;
 * - `a ?: b` is a `TernaryExpr` whose `then` is the same node object as `cond`;
 * - `_ = expr;` (bpftrace's discard) is an `ExprStmt`;
 * - `@m[a, b]` has `keys` [a, b]; `-1` is a `UnaryExpr` over `IntLit 1`;
 * - config values: strings and identifiers (`stack_mode = perf`, `x = true`) are strings, integers bigints;
 * - `if`/`while`/`unroll` take `(expr)` or, as in bpftrace v0.26, a single unparenthesised term (`if $x { }`);
 * - a `/` is a division unless the next token is `{` or the end of input (bpftrace v0.26's rule), so in
 *   `probe /a / 2 > 0/ { }` only the last `/` closes the predicate;
 * - not supported (reported as errors): records `(a=1)`, `if` used as a value, macros, `fn`, map declarations,
 *   imports, `offsetof(expr, f)`, pointer-to-array types.
 * A type may be written as a call of a type function of the builtin registry (`typeof(x)`): TypeSpec `of`.
 */
import type * as A from './ast.js';
import { CompileError, type Diagnostic, LineIndex, type SourceFile } from './diagnostics.js';
import { isIdentBody, isIdentStart, KEYWORDS, Lexer, type Token } from './lexer.js';
import { isBuiltinIdentifier, isTypeFunction, PARSER_BUILTIN_NAMES } from './builtins/registry.js';

/** Maximum nesting of the parser's recursion (parentheses, unary operators, blocks, `else if` chains). */
export const MAX_NESTING = 1000;
/** Maximum depth of the resulting tree (long operator chains like `1+1+...` build deep trees without recursion). */
export const MAX_AST_DEPTH = 1000;
/** Parsing stops after this many errors. */
const MAX_ERRORS = 20;

/**
 * Builtin identifiers (bpftrace `docs/stdlib.md` and `Parser::is_builtin`): `(pid)` is never taken as a cast and
 * `sizeof(comm)` never as a type; the names are the builtin registry's (lang/builtins/registry.ts).
 */
export const BUILTIN_NAMES: ReadonlySet<string> = PARSER_BUILTIN_NAMES;

/** Whether `name` is a builtin identifier (see `BUILTIN_NAMES`), including `arg0`.., `sarg0`.., `__builtin_*`. */
export function isBuiltinName(name: string): boolean {
  return isBuiltinIdentifier(name) || name.startsWith('__builtin_');
}

const ASSIGN_OPS: ReadonlySet<string> = new Set(['=', '+=', '-=', '*=', '/=', '%=', '&=', '|=', '^=', '<<=', '>>=']);

/** Binary operator precedences, C's order (bpftrace `BinopPrecedence`): higher binds tighter. */
const BINARY_PREC: ReadonlyMap<string, number> = new Map([
  ['||', 1],
  ['&&', 2],
  ['|', 3],
  ['^', 4],
  ['&', 5],
  ['==', 6],
  ['!=', 6],
  ['<', 7],
  ['<=', 7],
  ['>', 7],
  ['>=', 7],
  ['<<', 8],
  ['>>', 8],
  ['+', 9],
  ['-', 9],
  ['*', 10],
  ['/', 10],
  ['%', 10],
]);

/** Thrown inside the parser to abandon the current statement (`stopAll`: the whole program). */
class ParseAbort {
  constructor(readonly stopAll: boolean) {}
}

/** Something with offsets to point an error at: a token or [start, end). */
interface Range {
  start: number;
  end: number;
}

/** Splits an attach point's raw text: provider before the first `:`, parts split on `:` outside double quotes. */
export function splitAttachPoint(raw: string): { provider: string; parts: string[] } {
  const fields: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i] as string;
    if (c === ':' && !quoted) {
      fields.push(cur);
      cur = '';
    } else if (c === '"') {
      quoted = !quoted;
    } else if (quoted && c === '\\' && i + 1 < raw.length) {
      cur += raw[++i];
    } else {
      cur += c;
    }
  }
  fields.push(cur);
  return { provider: fields[0] as string, parts: fields.slice(1) };
}

class Parser {
  private readonly idx: LineIndex;
  private readonly lx: Lexer;
  readonly diags: Diagnostic[] = [];
  private readonly seen = new Set<string>();
  private errorCount = 0;
  /** One token of lookahead; null when the next token has not been read yet. */
  private tok: Token | null = null;
  /** End offset of the last consumed token. */
  private lastEnd = 0;
  private depth = 0;

  constructor(private readonly source: SourceFile) {
    this.idx = new LineIndex(source.text);
    this.lx = new Lexer(
      source.text,
      (d) => this.report(d),
      (s, e) => this.idx.span(s, e),
    );
  }

  // ---- diagnostics ----

  private report(d: Diagnostic): void {
    const key = `${d.pos?.offset}:${d.pos?.end}:${d.message}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.diags.push(d);
    if (d.severity === 'error' && ++this.errorCount >= MAX_ERRORS) throw new ParseAbort(true);
  }

  /** Records an error (parsing goes on). */
  private error(message: string, at: Range, hint?: string): void {
    const d: Diagnostic = { severity: 'error', message: `syntax: ${message}`, pos: this.idx.span(at.start, at.end) };
    if (hint) d.hint = hint;
    this.report(d);
  }

  /** Records an error at `at` (default: the next token) and abandons the current statement. */
  private fail(message: string, at?: Range, hint?: string): never {
    if (at !== undefined) {
      this.error(message, at, hint);
      throw new ParseAbort(false);
    }
    const tok = this.peek();
    if (tok.fatal) throw new ParseAbort(false); // already reported by the lexer
    this.error(tok.kind === 'invalid' && tok.error ? tok.error : message, tok, hint);
    throw new ParseAbort(false);
  }

  private span(start: number, end: number): A.Span {
    return this.idx.span(start, end);
  }

  // ---- tokens ----

  private peek(): Token {
    if (this.tok === null) this.tok = this.lx.next();
    return this.tok;
  }

  /** The token after `peek()`, without consuming anything. */
  private peek2(): Token {
    this.peek();
    const p = this.lx.pos;
    const t = this.lx.next();
    this.lx.pos = p;
    return t;
  }

  private advance(): Token {
    const t = this.peek();
    if (t.fatal) throw new ParseAbort(false);
    this.tok = null;
    this.lastEnd = t.end;
    return t;
  }

  /** Un-reads the lookahead token, so the lexer's character position is at the next unread source text. */
  private unread(): void {
    if (this.tok !== null) {
      this.lx.pos = this.tok.start;
      this.tok = null;
    }
  }

  private is(p: string): boolean {
    const t = this.peek();
    return t.kind === 'punct' && t.text === p;
  }

  private isWord(w: string): boolean {
    const t = this.peek();
    return t.kind === 'ident' && t.text === w;
  }

  private accept(p: string): Token | null {
    return this.is(p) ? this.advance() : null;
  }

  private expect(p: string, hint?: string): Token {
    if (this.is(p)) return this.advance();
    return this.fail(`expected '${p}'`, undefined, hint);
  }

  private mark(): { pos: number; tok: Token | null; lastEnd: number } {
    return { pos: this.lx.pos, tok: this.tok, lastEnd: this.lastEnd };
  }

  private reset(m: { pos: number; tok: Token | null; lastEnd: number }): void {
    this.lx.pos = m.pos;
    this.tok = m.tok;
    this.lastEnd = m.lastEnd;
  }

  /** Bounds the recursion depth; `leave()` must follow in a `finally`. */
  private enter(): void {
    if (++this.depth > MAX_NESTING) {
      this.error(`too deeply nested (the limit is ${MAX_NESTING} levels)`, this.peek());
      throw new ParseAbort(true);
    }
  }

  private leave(): void {
    this.depth--;
  }

  // ---- program ----

  parseProgram(): A.Program {
    const text = this.source.text;
    const config: A.ConfigItem[] = [];
    const mapDecls: A.MapDecl[] = [];
    const macros: A.MacroDecl[] = [];
    const cDefinitions: A.Program['cDefinitions'] = [];
    const probes: A.Probe[] = [];
    const lx = this.lx;
    try {
      lx.skipLayout();
      if (lx.peekChar() === '#' && lx.peekChar(1) === '!') lx.skipLine();
      // C definitions: `#include`/`#define` lines (ignored) and struct/union/enum definitions (lang/cdefs.ts).
      for (;;) {
        lx.skipLayout();
        if (lx.peekChar() === '#') {
          lx.skipLine();
          continue;
        }
        if (this.atCDefinition()) {
          const start = lx.pos;
          this.skipCDefinition();
          cDefinitions.push({ text: text.slice(start, this.lastEnd), pos: this.span(start, this.lastEnd) });
          continue;
        }
        if (lx.peekWord() === 'typedef' && /^typedef\s/.test(text.slice(lx.pos, lx.pos + 8))) {
          this.fail('C typedefs are not supported yet (struct, union and enum definitions are)', {
            start: lx.pos,
            end: lx.pos + 7,
          });
        }
        break;
      }
      // Config block.
      let sawConfig = false;
      for (;;) {
        const w = lx.peekWord();
        if (w === 'config') {
          const start = lx.pos;
          if (sawConfig) this.fail('duplicate config block', { start, end: start + 6 });
          sawConfig = true;
          config.push(...this.parseConfig());
          this.unread();
          continue;
        }
        if (w === 'import') this.fail('imports are not supported', { start: lx.pos, end: lx.pos + 6 });
        if (w === 'macro') {
          macros.push(this.parseMacro());
          this.unread();
          continue;
        }
        if (w === 'let' && this.atMapDecl()) {
          mapDecls.push(this.parseMapDecl());
          this.unread();
          continue;
        }
        break;
      }
      // Probes.
      for (;;) {
        this.unread();
        lx.skipLayout();
        if (lx.atEnd()) break;
        const start = lx.pos;
        if (lx.peekChar() === '#') {
          const line = lx.skipLine().trimEnd();
          this.fail('C definitions must appear before probes and functions', { start, end: start + line.length });
        }
        if (this.atCDefinition()) {
          this.skipCDefinition();
          this.fail('C definitions must appear before probes and functions', { start, end: this.lastEnd });
        }
        const w = lx.peekWord();
        const wordAt = { start, end: start + w.length };
        if (w === 'config') this.fail('config must appear before probes and functions', wordAt);
        if (w === 'import') this.fail('imports are not supported', wordAt);
        if (w === 'macro') {
          macros.push(this.parseMacro());
          continue;
        }
        if (w === 'fn') this.fail('functions (fn) are not supported', wordAt);
        if (w === 'let') {
          if (this.atMapDecl()) this.fail('map declarations must appear before probes', wordAt);
          this.fail('root-level let statements need to be map declarations, e.g. let @a = hash(2);', wordAt);
        }
        probes.push(this.parseProbe());
      }
    } catch (e) {
      if (!(e instanceof ParseAbort)) throw e;
    }
    return { kind: 'Program', pos: this.span(0, text.length), config, mapDecls, macros, cDefinitions, probes };
  }

  /** At `struct|union|enum NAME ... {` (bpftrace `looks_like_c_definition`), not an attach point like `struct:x`. */
  private atCDefinition(): boolean {
    return this.cDefinitionBrace() >= 0;
  }

  /** Offset of the `{` opening the C definition that starts at the current position, or -1. */
  private cDefinitionBrace(): number {
    const w = this.lx.peekWord();
    if (w !== 'struct' && w !== 'union' && w !== 'enum') return -1;
    const t = this.source.text;
    let p = scanLayout(t, this.lx.pos + w.length);
    while (p < t.length) {
      const c = t[p] as string;
      if (c === '{') return p;
      if (c === ':' || c === '/' || c === ',' || c === ';') return -1;
      if (isIdentStart(c)) {
        while (isIdentBody(t[p] ?? '')) p++;
      } else if (c === '(' || c === '[') {
        const close = c === '(' ? ')' : ']';
        const after = scanBalanced(t, p, c, close);
        if (after < 0) return -1;
        p = after;
      } else {
        return -1;
      }
      p = scanLayout(t, p);
    }
    return -1;
  }

  /** Skips a C struct/union/enum definition, its `__attribute__((...))`s and an optional `;`. */
  private skipCDefinition(): void {
    const t = this.source.text;
    const lx = this.lx;
    let p = this.cDefinitionBrace();
    let depth = 0;
    while (p < t.length) {
      const c = t[p];
      if (c === '/' && (t[p + 1] === '/' || t[p + 1] === '*')) {
        p = scanLayout(t, p);
        continue;
      }
      if (c === '{') depth++;
      else if (c === '}' && --depth === 0) {
        p++;
        break;
      }
      p++;
    }
    if (depth > 0) {
      lx.pos = t.length;
      this.fail("expected '}'", { start: t.length, end: t.length });
    }
    for (;;) {
      const q = scanLayout(t, p);
      if (!t.startsWith('__attribute__', q)) break;
      const r = scanLayout(t, q + 13);
      const after = t.startsWith('((', r) ? scanBalanced(t, r, '(', ')') : -1;
      if (after < 0) {
        lx.pos = r;
        this.fail("__attribute__ syntax error, expected '(('", { start: q, end: q + 13 });
      }
      p = after;
    }
    const q = scanLayout(t, p);
    if (t[q] === ';') p = q + 1;
    lx.pos = p;
    this.lastEnd = p;
  }

  /** `macro name(params) { stmts; value }` (bpftrace's macros). */
  private parseMacro(): A.MacroDecl {
    const start = this.peek().start;
    this.advance(); // macro
    const name = this.peek();
    if (name.kind !== 'ident') this.fail('expected a macro name');
    this.advance();
    this.expect('(');
    const params: A.MacroDecl['params'] = [];
    while (!this.is(')')) {
      const p = this.peek();
      const pos = this.span(p.start, p.end);
      if (p.kind === 'var') params.push({ kind: 'var', name: p.name as string, pos });
      else if (p.kind === 'map') params.push({ kind: 'map', name: p.name ?? '', pos });
      else if (p.kind === 'ident') params.push({ kind: 'ident', name: p.text, pos });
      else this.fail('expected a macro parameter: $variable, @map or a name');
      this.advance();
      if (!this.accept(',')) break;
    }
    this.expect(')');
    this.expect('{');
    const { stmts, trailing } = this.parseBlockBody(true);
    const close = this.expect('}');
    return { kind: 'MacroDecl', pos: this.span(start, close.end), name: name.text, params, stmts, value: trailing };
  }

  /** At `let @...` (the lexer is at `let`). */
  private atMapDecl(): boolean {
    const text = this.source.text;
    let p = this.lx.pos + 3;
    while (/\s/.test(text[p] ?? '')) p++;
    return text[p] === '@';
  }

  /** `let @name = TYPE(MAX_ENTRIES);` (bpftrace's map declarations). */
  private parseMapDecl(): A.MapDecl {
    const start = this.peek().start;
    this.advance(); // let
    const map = this.peek();
    if (map.kind !== 'map') this.fail('expected a map name');
    this.advance();
    this.expect('=');
    const type = this.peek();
    if (type.kind !== 'ident') this.fail('expected a map type, e.g. hash(100)');
    this.advance();
    this.expect('(');
    const n = this.peek();
    if (n.kind !== 'int') this.fail('expected the maximum number of entries (an integer)');
    this.advance();
    this.expect(')');
    const end = this.expect(';').end;
    return {
      kind: 'MapDecl',
      pos: this.span(start, end),
      name: map.name ?? '',
      mapType: type.text,
      typePos: this.span(type.start, type.end),
      maxEntries: n.value ?? 0n,
      maxEntriesPos: this.span(n.start, n.end),
    };
  }

  /** `config = { key = value; ... }` (bpftrace `parse_config`). */
  private parseConfig(): A.ConfigItem[] {
    const items: A.ConfigItem[] = [];
    this.advance(); // config
    this.expect('=');
    this.expect('{');
    while (!this.is('}') && this.peek().kind !== 'eof') {
      const key = this.peek();
      if (key.kind !== 'ident') this.fail('expected config key');
      this.advance();
      this.expect('=');
      const v = this.peek();
      let value: bigint | string;
      if (v.kind === 'string') value = v.str ?? '';
      else if (v.kind === 'int') value = v.value ?? 0n;
      else if (v.kind === 'ident') value = v.text;
      else return this.fail('expected string, int, boolean, or ident');
      this.advance();
      items.push({ kind: 'ConfigItem', pos: this.span(key.start, v.end), key: key.text, value });
      if (!this.accept(';') && !this.is('}')) this.fail("expected ';'");
    }
    this.expect('}');
    return items;
  }

  // ---- probes ----

  private parseProbe(): A.Probe {
    const aps = [this.parseAttachPoint()];
    while (this.is(',')) {
      this.advance();
      this.lx.skipLayout();
      const c = this.lx.peekChar();
      if (c === '{' || c === '/') break; // trailing comma
      aps.push(this.parseAttachPoint());
    }
    let predicate: A.Expr | null = null;
    if (this.is('/')) {
      this.advance();
      predicate = this.parseExpr();
      if (!this.is('/')) this.fail("expected '/' to close predicate");
      this.advance();
    }
    const body = this.parseBlock();
    const first = aps[0] as A.AttachPoint;
    const last = aps[aps.length - 1] as A.AttachPoint;
    return { kind: 'Probe', pos: this.span(first.pos.offset, last.pos.end), attachPoints: aps, predicate, body };
  }

  private parseAttachPoint(): A.AttachPoint {
    this.unread();
    const before = this.errorCount;
    const { raw, start, end } = this.lx.readAttachPoint();
    if (this.errorCount > before) throw new ParseAbort(false); // unterminated quote, already reported
    if (raw === '') this.fail('expected attach point');
    this.lastEnd = end;
    const { provider, parts } = splitAttachPoint(raw);
    return { kind: 'AttachPoint', pos: this.span(start, end), raw, provider, parts };
  }

  // ---- blocks and statements ----

  private parseBlock(): A.Block {
    const open = this.expect('{');
    const { stmts } = this.parseBlockBody(false);
    const close = this.expect('}');
    return { kind: 'Block', pos: this.span(open.start, close.end), stmts };
  }

  /**
   * Statements up to (not including) the closing `}`. With `allowTrailing`, a last expression statement without
   * `;` is returned separately as the block's value (block expressions).
   */
  private parseBlockBody(allowTrailing: boolean): { stmts: A.Stmt[]; trailing: A.Expr | null } {
    this.enter();
    try {
      const stmts: A.Stmt[] = [];
      let trailing: A.Expr | null = null;
      while (!this.is('}') && this.peek().kind !== 'eof') {
        trailing = null;
        try {
          const { stmt, simple } = this.parseStatement();
          if (simple) {
            if (this.is('}')) {
              if (allowTrailing && stmt.kind === 'ExprStmt') trailing = stmt.expr;
            } else if (!this.accept(';')) {
              if (this.peek().kind === 'eof') this.fail("expected '}'");
              this.fail("expected ';'");
            }
          } else if (allowTrailing && stmt.kind === 'IfStmt' && this.is('}')) {
            // `{ ...; if (c) { a } else { b } }`: a trailing if/else whose branches end in values is the block's value
            trailing = ifAsExpr(stmt);
          } else {
            this.accept(';');
          }
          if (trailing === null) stmts.push(stmt);
        } catch (e) {
          if (!(e instanceof ParseAbort) || e.stopAll) throw e;
          this.recover();
        }
      }
      if (this.peek().kind === 'eof') this.fail("expected '}'");
      return { stmts, trailing };
    } finally {
      this.leave();
    }
  }

  /**
   * After an error in a statement: skips to just after the next `;`, or just after a `{ ... }` group (the end of a
   * compound statement), or to the `}` closing the current block. Reaching the end of the input ends parsing.
   */
  private recover(): void {
    let depth = 0;
    for (;;) {
      const t = this.peek();
      if (t.kind === 'eof') throw new ParseAbort(true);
      if (t.kind === 'punct' && t.text === '}' && depth === 0) return;
      this.tok = null;
      this.lastEnd = t.end;
      if (t.kind === 'punct') {
        if (t.text === '{') depth++;
        else if (t.text === '}' && --depth === 0) return;
        else if (t.text === ';' && depth === 0) return;
      }
    }
  }

  /** One statement; `simple` statements need a `;` (or the block's `}`) after them. */
  private parseStatement(): { stmt: A.Stmt; simple: boolean } {
    const t = this.peek();
    if (t.kind === 'ident') {
      switch (t.text) {
        case 'if':
          return { stmt: this.parseIf(), simple: false };
        case 'while':
        case 'unroll':
          return { stmt: this.parseLoop(), simple: false };
        case 'for':
          return { stmt: this.parseFor(), simple: false };
        case 'return': {
          this.advance();
          const n = this.peek();
          const value =
            (n.kind === 'punct' && (n.text === ';' || n.text === '}')) || n.kind === 'eof' ? null : this.parseExpr();
          return {
            stmt: { kind: 'JumpStmt', pos: this.span(t.start, this.lastEnd), jump: 'return', value },
            simple: true,
          };
        }
        case 'break':
        case 'continue':
          this.advance();
          return {
            stmt: { kind: 'JumpStmt', pos: this.span(t.start, t.end), jump: t.text, value: null },
            simple: true,
          };
        case 'let':
          return { stmt: this.parseLet(), simple: true };
        case 'import':
          return this.fail('imports are not supported');
        case 'else':
          return this.fail("'else' without a matching 'if'");
        case '_': {
          const n = this.peek2();
          if (n.kind === 'punct' && n.text === '=') {
            this.advance();
            this.advance();
            const expr = this.parseExpr();
            return { stmt: { kind: 'ExprStmt', pos: this.span(t.start, expr.pos.end), expr }, simple: true };
          }
          break;
        }
      }
    }
    if (this.is('{')) return { stmt: this.parseBlock(), simple: false };

    const expr = this.parseExpr();
    const op = this.peek();
    if (op.kind === 'punct' && ASSIGN_OPS.has(op.text)) {
      this.advance();
      const value = this.parseExpr();
      const pos = this.span(t.start, value.pos.end);
      if (expr.kind === 'MapExpr' || expr.kind === 'VarExpr') {
        return { stmt: { kind: 'AssignStmt', pos, target: expr, op: op.text as A.AssignOp, value }, simple: true };
      }
      const immutable = expr.kind === 'FieldExpr' && !expr.arrow;
      this.error(
        immutable
          ? 'Tuples and records are immutable once created. Consider creating a new value and assigning it instead.'
          : 'invalid assignment target',
        { start: pos.offset, end: pos.end },
        immutable ? undefined : 'only maps (@m, @m[k]) and scratch variables ($x) can be assigned to',
      );
      return { stmt: { kind: 'ExprStmt', pos, expr }, simple: true };
    }
    return { stmt: { kind: 'ExprStmt', pos: this.span(t.start, expr.pos.end), expr }, simple: true };
  }

  /** `if (c) { } else if (c) { } else { }`; like bpftrace v0.26 the parentheses may be left out around a term. */
  private parseIf(): A.IfStmt {
    this.enter();
    try {
      const kw = this.advance();
      const cond = this.parseCondition('if');
      const then = this.parseBlock();
      let els: A.Block | A.IfStmt | null = null;
      if (this.isWord('else')) {
        this.advance();
        if (this.isWord('if')) els = this.parseIf();
        else if (this.is('{')) els = this.parseBlock();
        else this.fail("expected '{' or 'if' after 'else'");
      }
      return { kind: 'IfStmt', pos: this.span(kw.start, this.lastEnd), cond, then, else: els };
    } finally {
      this.leave();
    }
  }

  /**
   * The condition of `if`/`while`/`unroll`: `(expr)`, or (bpftrace v0.26) a single unary term such as `$x` or
   * `!@done`. When an operator follows an unparenthesised term, the error says to add the parentheses.
   */
  private parseCondition(keyword: string): A.Expr {
    if (this.is('(')) {
      this.advance();
      const e = this.parseExpr();
      this.expect(')');
      if (!this.is('{')) this.fail("expected '{'", undefined, this.conditionHint(keyword));
      return e;
    }
    const e = this.parseUnary();
    if (!this.is('{')) this.fail("expected '{'", undefined, this.conditionHint(keyword));
    return e;
  }

  private conditionHint(keyword: string): string | undefined {
    const t = this.peek();
    const isOp = t.kind === 'punct' && (BINARY_PREC.has(t.text) || t.text === '?' || ASSIGN_OPS.has(t.text));
    return isOp ? `put the whole condition in parentheses: ${keyword} (...) { ... }` : undefined;
  }

  /** `while (c) { }` and `unroll (N) { }`. */
  private parseLoop(): A.WhileStmt | A.UnrollStmt {
    const kw = this.advance();
    const cond = this.parseCondition(kw.text);
    const body = this.parseBlock();
    const pos = this.span(kw.start, body.pos.end);
    return kw.text === 'while'
      ? { kind: 'WhileStmt', pos, cond, body }
      : { kind: 'UnrollStmt', pos, count: cond, body };
  }

  /** `for ($kv : @map) { }`, `for ($i : start..end) { }` (parentheses optional, bounds are primaries). */
  private parseFor(): A.ForStmt {
    const kw = this.advance();
    const paren = this.accept('(');
    const v = this.peek();
    if (v.kind !== 'var') this.fail('expected variable in for loop');
    this.advance();
    const variable: A.VarExpr = { kind: 'VarExpr', pos: this.span(v.start, v.end), name: v.name as string };
    this.expect(':');
    const first = this.parsePrimary();
    let iterable: A.MapExpr | A.RangeExpr;
    if (this.is('..')) {
      this.advance();
      const end = this.parsePrimary();
      iterable = { kind: 'RangeExpr', pos: this.span(first.pos.offset, end.pos.end), start: first, end };
    } else if (first.kind === 'MapExpr' && first.keys.length === 0) {
      iterable = first;
    } else {
      return this.fail('expected map or range in for loop', { start: first.pos.offset, end: first.pos.end });
    }
    if (paren) this.expect(')');
    const body = this.parseBlock();
    return { kind: 'ForStmt', pos: this.span(kw.start, body.pos.end), variable, iterable, body };
  }

  /** `let $x;`, `let $x = e;`, `let $x: type = e;` */
  private parseLet(): A.VarDeclStmt {
    const kw = this.advance();
    const v = this.peek();
    if (v.kind !== 'var') this.fail("expected variable after 'let'");
    this.advance();
    const variable: A.VarExpr = { kind: 'VarExpr', pos: this.span(v.start, v.end), name: v.name as string };
    let typeName: A.TypeSpec | null = null;
    if (this.accept(':')) typeName = this.parseTypeSpec(true);
    let value: A.Expr | null = null;
    if (this.accept('=')) value = this.parseExpr();
    return { kind: 'VarDeclStmt', pos: this.span(kw.start, this.lastEnd), variable, typeName, value };
  }

  /**
   * A type as written in casts, `sizeof`, `offsetof` and `let` annotations: `uint32`, `struct task_struct *`,
   * `int8[4]`, `string[16]`, `int32*[4]` (array of pointers). A pointer to an array (`int32[4]*`) cannot be
   * represented in `TypeSpec` and is reported. With `required` false, returns null instead of reporting.
   */
  private parseTypeSpec(required: boolean): A.TypeSpec | null {
    const t = this.peek();
    const no = (msg: string, at?: Range): null => {
      if (required) this.fail(msg, at);
      return null;
    };
    if (t.kind !== 'ident' || KEYWORDS.has(t.text)) return no('expected type name');
    if (isTypeFunction(t.text) && this.peek2().text === '(') return this.parseTypeCall();
    this.advance();
    let name = t.text;
    if (name === 'struct' || name === 'union' || name === 'enum') {
      const n = this.peek();
      if (n.kind !== 'ident') return no('expected identifier');
      this.advance();
      name = `${name} ${n.text}`;
    }
    let pointerDepth = 0;
    let arrayCount: number | null = null;
    for (;;) {
      if (this.is('*')) {
        const star = this.peek();
        if (arrayCount !== null) return no('pointers to arrays are not supported', star);
        this.advance();
        pointerDepth++;
      } else if (this.is('[')) {
        const open = this.peek();
        if (arrayCount !== null) return no('arrays of arrays are not supported', open);
        this.advance();
        if (this.is(']')) arrayCount = 0;
        else {
          const n = this.peek();
          if (n.kind !== 'int') return no('expected array size');
          this.advance();
          arrayCount = Number(n.value ?? 0n);
        }
        if (!this.is(']')) return no("expected ']'");
        this.advance();
      } else {
        break;
      }
    }
    return { kind: 'TypeSpec', pos: this.span(t.start, this.lastEnd), name, pointerDepth, arrayCount };
  }

  // ---- expressions ----

  private parseExpr(): A.Expr {
    this.enter();
    try {
      return this.parseTernary();
    } finally {
      this.leave();
    }
  }

  /** `c ? a : b` (right-associative) and `c ?: b`. */
  private parseTernary(): A.Expr {
    const cond = this.parseBinary(0);
    if (!this.is('?')) return cond;
    this.advance();
    if (this.accept(':')) {
      const els = this.parseExpr();
      return { kind: 'TernaryExpr', pos: this.span(cond.pos.offset, els.pos.end), cond, then: cond, else: els };
    }
    const then = this.parseExpr();
    this.expect(':');
    const els = this.parseExpr();
    return { kind: 'TernaryExpr', pos: this.span(cond.pos.offset, els.pos.end), cond, then, else: els };
  }

  /** The binary operator at the lookahead, if any. A `/` followed by `{` (or the end) closes a predicate. */
  private binaryOp(): { op: A.BinaryOp; prec: number } | null {
    const t = this.peek();
    if (t.kind !== 'punct') return null;
    const prec = BINARY_PREC.get(t.text);
    if (prec === undefined) return null;
    if (t.text === '/') {
      const n = this.peek2();
      if (n.kind === 'eof' || (n.kind === 'punct' && n.text === '{')) return null;
    }
    return { op: t.text as A.BinaryOp, prec };
  }

  /** Precedence climbing; all binary operators are left-associative. */
  private parseBinary(minPrec: number): A.Expr {
    let left = this.parseUnary();
    for (;;) {
      const info = this.binaryOp();
      if (info === null || info.prec < minPrec) return left;
      this.advance();
      const right = this.parseBinary(info.prec + 1);
      left = { kind: 'BinaryExpr', pos: this.span(left.pos.offset, right.pos.end), op: info.op, left, right };
    }
  }

  private parseUnary(): A.Expr {
    this.enter();
    try {
      const t = this.peek();
      if (t.kind === 'punct') {
        switch (t.text) {
          case '++':
          case '--': {
            this.advance();
            const target = this.parseUnary();
            if (target.kind !== 'VarExpr' && target.kind !== 'MapExpr') {
              this.error('increment/decrement requires a variable or map', {
                start: target.pos.offset,
                end: target.pos.end,
              });
              return target;
            }
            return {
              kind: 'IncDecExpr',
              pos: this.span(t.start, target.pos.end),
              op: t.text,
              prefix: true,
              target,
            };
          }
          case '&': {
            // bpftrace v0.26: `&$var` and `&@map` only; the operand takes no subscript or field.
            this.advance();
            const n = this.peek();
            if (n.kind === 'var' || n.kind === 'map') {
              this.advance();
              const operand: A.VarExpr | A.MapExpr =
                n.kind === 'var'
                  ? { kind: 'VarExpr', pos: this.span(n.start, n.end), name: n.name as string }
                  : { kind: 'MapExpr', pos: this.span(n.start, n.end), name: n.name as string, keys: [] };
              return { kind: 'UnaryExpr', pos: this.span(t.start, n.end), op: '&', operand };
            }
            this.error('address-of operator (&) can only be used on a map or variable', n);
            const operand = this.parseUnary();
            return { kind: 'UnaryExpr', pos: this.span(t.start, operand.pos.end), op: '&', operand };
          }
          case '*':
          case '!':
          case '~':
          case '-': {
            this.advance();
            const operand = this.parseUnary();
            return { kind: 'UnaryExpr', pos: this.span(t.start, operand.pos.end), op: t.text, operand };
          }
        }
      }
      return this.parsePostfix(this.parsePrimary());
    } finally {
      this.leave();
    }
  }

  /** `.field`, `.N`, `->field`, `[index]`, `++`, `--` after a primary. */
  private parsePostfix(expr: A.Expr): A.Expr {
    for (;;) {
      const t = this.peek();
      if (t.kind !== 'punct') return expr;
      const start = expr.pos.offset;
      switch (t.text) {
        case '.':
        case '->': {
          this.advance();
          const f = this.peek();
          let field: string;
          if (f.kind === 'ident') field = f.text;
          else if (f.kind === 'int' && t.text === '.') field = (f.value ?? 0n).toString();
          else return this.fail(`expected field name after '${t.text}'`);
          this.advance();
          expr = { kind: 'FieldExpr', pos: this.span(start, f.end), object: expr, field, arrow: t.text === '->' };
          break;
        }
        case '[': {
          this.advance();
          const index = this.parseExpr();
          const close = this.expect(']');
          expr = { kind: 'IndexExpr', pos: this.span(start, close.end), object: expr, index };
          break;
        }
        case '++':
        case '--':
          this.advance();
          if (expr.kind !== 'VarExpr' && expr.kind !== 'MapExpr') {
            this.error('increment/decrement requires a variable or map', t);
            return expr;
          }
          expr = { kind: 'IncDecExpr', pos: this.span(start, t.end), op: t.text, prefix: false, target: expr };
          break;
        default:
          return expr;
      }
    }
  }

  private parsePrimary(): A.Expr {
    const t = this.peek();
    switch (t.kind) {
      case 'int':
        this.advance();
        return { kind: 'IntLit', pos: this.span(t.start, t.end), value: t.value ?? 0n };
      case 'string': {
        this.advance();
        const lit: A.StrLit = { kind: 'StrLit', pos: this.span(t.start, t.end), value: t.str ?? '' };
        if (t.bytes) lit.bytes = t.bytes;
        return lit;
      }
      case 'var':
        this.advance();
        return { kind: 'VarExpr', pos: this.span(t.start, t.end), name: t.name as string };
      case 'positional':
        this.advance();
        return { kind: 'PositionalExpr', pos: this.span(t.start, t.end), index: t.index ?? 0, count: false };
      case 'paramcount':
        this.advance();
        return { kind: 'PositionalExpr', pos: this.span(t.start, t.end), index: 0, count: true };
      case 'map': {
        this.advance();
        const keys: A.Expr[] = [];
        let end = t.end;
        if (this.is('[')) {
          this.advance();
          keys.push(this.parseExpr());
          while (this.accept(',')) keys.push(this.parseExpr());
          end = this.expect(']').end;
        }
        return { kind: 'MapExpr', pos: this.span(t.start, end), name: t.name as string, keys };
      }
      case 'ident':
        return this.parseIdentExpr();
      case 'punct':
        if (t.text === '(') return this.parseParen();
        if (t.text === '{') return this.parseBlockExpr();
        break;
    }
    return this.fail('expected expression');
  }

  /** Identifiers in expressions: literals `true`/`false`, `sizeof`, `offsetof`, calls and builtins. */
  private parseIdentExpr(): A.Expr {
    const t = this.peek();
    switch (t.text) {
      case 'true':
      case 'false':
        this.advance();
        return { kind: 'BoolLit', pos: this.span(t.start, t.end), value: t.text === 'true' };
      case 'sizeof':
        return this.parseSizeof();
      case 'offsetof':
        return this.parseOffsetof();
      case 'if':
        return this.parseIfExpr();
    }
    if (KEYWORDS.has(t.text)) return this.fail('expected expression');
    if (isTypeFunction(t.text) && this.peek2().text === '(') {
      // `typeof(uint64*)` as a macro argument (bpftrace v0.26 macros accept type expressions)
      const typeArg = this.parseTypeCall();
      return { kind: 'CallExpr', pos: typeArg.pos, name: t.text, args: [], typeArg };
    }
    this.advance();
    if (this.is('(')) {
      this.advance();
      const args: A.Expr[] = [];
      if (!this.is(')')) {
        args.push(this.parseExpr());
        while (this.accept(',')) args.push(this.parseExpr());
      }
      const close = this.expect(')');
      return { kind: 'CallExpr', pos: this.span(t.start, close.end), name: t.text, args };
    }
    return { kind: 'BuiltinExpr', pos: this.span(t.start, t.end), name: t.text };
  }

  /** Whether the lookahead starts a type (an identifier that is not a builtin or keyword, or struct/union/enum). */
  private atTypeName(): boolean {
    const t = this.peek();
    return (
      t.kind === 'ident' && !isBuiltinName(t.text) && !KEYWORDS.has(t.text) && t.text !== 'true' && t.text !== 'false'
    );
  }

  /** `typeof(TYPE)` / `typeof(expr)` where a type is written (any registry function of role `type`). */
  private parseTypeCall(): A.TypeSpec {
    const kw = this.advance();
    this.expect('(');
    let arg: A.TypeSpec | A.Expr | null = null;
    if (this.atTypeName()) {
      const m = this.mark();
      arg = this.parseTypeSpec(false);
      if (arg === null || !this.is(')')) {
        this.reset(m);
        arg = null;
      }
    }
    if (arg === null) arg = this.parseExpr();
    const close = this.expect(')');
    return {
      kind: 'TypeSpec',
      pos: this.span(kw.start, close.end),
      name: kw.text,
      pointerDepth: 0,
      arrayCount: null,
      of: { fn: kw.text, arg },
    };
  }

  /** `sizeof(TYPE)` or `sizeof(expr)`. */
  private parseSizeof(): A.SizeofExpr {
    const kw = this.advance();
    this.expect('(');
    let target: A.TypeSpec | A.Expr | null = null;
    if (this.atTypeName()) {
      const m = this.mark();
      target = this.parseTypeSpec(false);
      if (target === null || !this.is(')')) {
        this.reset(m);
        target = null;
      }
    }
    if (target === null) target = this.parseExpr();
    const close = this.expect(')');
    return { kind: 'SizeofExpr', pos: this.span(kw.start, close.end), target };
  }

  /** `offsetof(TYPE, field)` or `offsetof(TYPE, a.b)` (nested fields joined with '.'). */
  private parseOffsetof(): A.OffsetofExpr {
    const kw = this.advance();
    this.expect('(');
    const typeSpec = this.parseTypeSpec(true) as A.TypeSpec;
    this.expect(',');
    const fields: string[] = [];
    for (;;) {
      const f = this.peek();
      if (f.kind !== 'ident') this.fail('expected field name');
      this.advance();
      fields.push(f.text);
      if (!this.accept('.')) break;
    }
    const close = this.expect(')');
    return { kind: 'OffsetofExpr', pos: this.span(kw.start, close.end), typeSpec, field: fields.join('.') };
  }

  /** `()`, `(e)`, `(a, b)`, `(a,)`, and C casts `(TYPE)operand` (bpftrace's cast rule: see language.md). */
  private parseParen(): A.Expr {
    const open = this.advance();
    if (this.is(')')) {
      const close = this.advance();
      return { kind: 'TupleExpr', pos: this.span(open.start, close.end), elems: [] };
    }
    if (this.atRecordField()) return this.parseRecord(open);
    if (this.atTypeName()) {
      const m = this.mark();
      const typeSpec = this.parseTypeSpec(false);
      if (typeSpec !== null && this.is(')') && startsExpression(this.peek2())) {
        this.advance();
        const operand = this.parseUnary();
        return { kind: 'CastExpr', pos: this.span(open.start, operand.pos.end), typeSpec, operand };
      }
      this.reset(m);
    }
    const first = this.parseExpr();
    if (this.accept(',')) {
      const elems = [first];
      while (!this.is(')')) {
        elems.push(this.parseExpr());
        if (!this.accept(',')) break;
      }
      const close = this.expect(')');
      return { kind: 'TupleExpr', pos: this.span(open.start, close.end), elems };
    }
    const close = this.expect(')');
    first.pos = this.span(open.start, close.end);
    return first;
  }

  /** At `name =` (not `==`): the start of a record's field. */
  private atRecordField(): boolean {
    const n2 = this.peek2();
    return this.peek().kind === 'ident' && n2.kind === 'punct' && n2.text === '=';
  }

  /** A record `(name = expr, ...)` after its `(`: a TupleExpr with `names` (bpftrace's records). */
  private parseRecord(open: Token): A.TupleExpr {
    const elems: A.Expr[] = [];
    const names: string[] = [];
    do {
      if (!this.atRecordField()) this.fail("expected 'name = value' in a record");
      names.push(this.advance().text);
      this.advance();
      elems.push(this.parseExpr());
    } while (this.accept(',') && !this.is(')'));
    const close = this.expect(')');
    return { kind: 'TupleExpr', pos: this.span(open.start, close.end), elems, names };
  }

  /**
   * `if (c) { a } else { b }` used as a value (bpftrace v0.26's if expression): a ternary whose branches are block
   * expressions; `else` is required, and may be followed by another `if` expression.
   */
  private parseIfExpr(): A.Expr {
    this.enter();
    try {
      const kw = this.advance();
      const cond = this.parseCondition('if');
      const then = this.parseBlockExpr();
      if (!this.isWord('else')) return this.fail("an 'if' used as a value needs an 'else' branch");
      this.advance();
      const els = this.isWord('if') ? this.parseIfExpr() : this.is('{') ? this.parseBlockExpr() : null;
      if (!els) return this.fail("expected '{' or 'if' after 'else'");
      return { kind: 'TernaryExpr', pos: this.span(kw.start, this.lastEnd), cond, then, else: els };
    } finally {
      this.leave();
    }
  }

  /** `{ stmts; expr }` used as a value: the last statement must be an expression without `;`. */
  private parseBlockExpr(): A.BlockExpr {
    const open = this.advance();
    const { stmts, trailing } = this.parseBlockBody(true);
    const close = this.expect('}');
    let value = trailing;
    if (value === null) {
      this.error('a block used as a value must end with an expression (without a trailing ;)', close);
      value = { kind: 'BoolLit', pos: this.span(close.start, close.start), value: false };
    }
    return { kind: 'BlockExpr', pos: this.span(open.start, close.end), stmts, value };
  }
}

/**
 * An `if`/`else` statement whose every branch ends in an expression statement (or such an if/else), as the
 * equivalent if expression (a ternary of block expressions); null when a branch is missing or does not end in a
 * value.
 */
function ifAsExpr(s: A.IfStmt): A.Expr | null {
  const branch = (b: A.Block | A.IfStmt | null): A.Expr | null => {
    if (!b) return null;
    if (b.kind === 'IfStmt') return ifAsExpr(b);
    const last = b.stmts[b.stmts.length - 1];
    const value = last?.kind === 'ExprStmt' ? last.expr : last?.kind === 'IfStmt' ? ifAsExpr(last) : null;
    return value && { kind: 'BlockExpr', pos: b.pos, stmts: b.stmts.slice(0, -1), value };
  };
  const then = branch(s.then);
  const els = branch(s.else);
  return then && els ? { kind: 'TernaryExpr', pos: s.pos, cond: s.cond, then, else: els } : null;
}

/** Tokens that can start a cast's operand (bpftrace `can_start_expression`). */
function startsExpression(t: Token): boolean {
  switch (t.kind) {
    case 'int':
    case 'string':
    case 'var':
    case 'positional':
    case 'paramcount':
    case 'map':
    case 'ident':
      return true;
    case 'punct':
      return ['(', '-', '!', '~', '*', '&'].includes(t.text);
    default:
      return false;
  }
}

/** Offset after whitespace and comments starting at `p` (no diagnostics). */
function scanLayout(t: string, p: number): number {
  for (;;) {
    const c = t[p];
    if (c === ' ' || c === '\t' || c === '\r' || c === '\n' || c === '\f' || c === '\v') p++;
    else if (c === '/' && t[p + 1] === '/') {
      const nl = t.indexOf('\n', p);
      p = nl < 0 ? t.length : nl;
    } else if (c === '/' && t[p + 1] === '*') {
      const close = t.indexOf('*/', p + 2);
      p = close < 0 ? t.length : close + 2;
    } else return p;
  }
}

/** Offset just after the bracket closing the one at `p`, or -1 if it is never closed. */
function scanBalanced(t: string, p: number, open: string, close: string): number {
  let depth = 0;
  for (; p < t.length; p++) {
    if (t[p] === open) depth++;
    else if (t[p] === close && --depth === 0) return p + 1;
  }
  return -1;
}

/** The first node deeper than `MAX_AST_DEPTH` (walked without recursion), or null. */
function tooDeep(root: object): { pos: A.Span } | null {
  const stack: [object, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [object, number];
    if (depth > MAX_AST_DEPTH) return node as { pos: A.Span };
    for (const [k, v] of Object.entries(node)) {
      if (k === 'pos' || k === 'type' || v === null || typeof v !== 'object') continue;
      if (Array.isArray(v)) {
        for (const c of v) if (c !== null && typeof c === 'object' && 'kind' in c) stack.push([c, depth + 1]);
      } else if ('kind' in v) {
        stack.push([v, depth + 1]);
      }
    }
  }
  return null;
}

/**
 * Parses a bpftrace program.
 *
 * @param source the program text and its name for messages (`stdin` for `-e`)
 * @returns the AST (no `type`s filled in yet)
 * @throws CompileError with every syntax error found (errors in a statement are reported and parsing resumes at
 *   the next statement; an error outside any block, or nesting deeper than `MAX_NESTING`/`MAX_AST_DEPTH`, ends
 *   parsing), or `No probes to attach` (bpftrace's wording) when the program has no probe. Never throws anything
 *   else.
 */
export function parse(source: SourceFile): A.Program {
  let program: A.Program;
  let diags: Diagnostic[];
  try {
    const p = new Parser(source);
    program = p.parseProgram();
    diags = p.diags;
    if (!diags.some((d) => d.severity === 'error')) {
      const deep = tooDeep(program);
      if (deep) {
        diags.push({
          severity: 'error',
          message: `syntax: too deeply nested (the limit is ${MAX_AST_DEPTH} levels)`,
          pos: deep.pos,
        });
      }
    }
  } catch (e) {
    // A bug in the parser must still reach the user as one clear message, never a stack trace.
    const msg = e instanceof Error ? e.message : String(e);
    throw new CompileError([{ severity: 'error', message: `internal parser error: ${msg}` }], source);
  }
  const errors = diags
    .filter((d) => d.severity === 'error')
    .sort((a, b) => (a.pos?.offset ?? 0) - (b.pos?.offset ?? 0));
  if (errors.length > 0) throw new CompileError([...errors, ...diags.filter((d) => d.severity !== 'error')], source);
  if (program.probes.length === 0) {
    throw new CompileError([{ severity: 'error', message: 'No probes to attach' }], source);
  }
  return program;
}
