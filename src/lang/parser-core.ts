/**
 * The parser's base layer (part of parser.ts Parser): its limits and operator tables, the token cursor over the
 * lexer (peek, advance, accept, expect, backtracking marks), diagnostics and error recovery signals, and the nesting
 * bound. The expression grammar is parser-expr.ts, programs, probes and statements parser.ts.
 */
import type * as A from './ast.js';
import { type Diagnostic, LineIndex, type SourceFile } from './diagnostics.js';
import { Lexer, type Token } from './lexer.js';
import { isBuiltinIdentifier, PARSER_BUILTIN_NAMES } from './builtins/registry.js';

/** Maximum nesting of the parser's recursion (parentheses, unary operators, blocks, `else if` chains). */
export const MAX_NESTING = 1000;
/** Maximum depth of the resulting tree (long operator chains like `1+1+...` build deep trees without recursion). */
export const MAX_AST_DEPTH = 1000;
/** Parsing stops after this many errors. */
export const MAX_ERRORS = 20;

/**
 * Builtin identifiers (bpftrace `docs/stdlib.md` and `Parser::is_builtin`): `(pid)` is never taken as a cast and
 * `sizeof(comm)` never as a type; the names are the builtin registry's (lang/builtins/registry.ts).
 */
export const BUILTIN_NAMES: ReadonlySet<string> = PARSER_BUILTIN_NAMES;

/** Whether `name` is a builtin identifier (see `BUILTIN_NAMES`), including `arg0`.., `sarg0`.., `__builtin_*`. */
export function isBuiltinName(name: string): boolean {
  return isBuiltinIdentifier(name) || name.startsWith('__builtin_');
}

export const ASSIGN_OPS: ReadonlySet<string> = new Set([
  '=',
  '+=',
  '-=',
  '*=',
  '/=',
  '%=',
  '&=',
  '|=',
  '^=',
  '<<=',
  '>>=',
]);

/** Binary operator precedences, C's order (bpftrace `BinopPrecedence`): higher binds tighter. */
export const BINARY_PREC: ReadonlyMap<string, number> = new Map([
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
export class ParseAbort {
  constructor(readonly stopAll: boolean) {}
}

/** Something with offsets to point an error at: a token or [start, end). */
export interface Range {
  start: number;
  end: number;
}

export abstract class ParserCore {
  protected readonly idx: LineIndex;
  protected readonly lx: Lexer;
  readonly diags: Diagnostic[] = [];
  protected readonly seen = new Set<string>();
  protected errorCount = 0;
  /** One token of lookahead; null when the next token has not been read yet. */
  protected tok: Token | null = null;
  /** End offset of the last consumed token. */
  protected lastEnd = 0;
  protected depth = 0;

  constructor(protected readonly source: SourceFile) {
    this.idx = new LineIndex(source.text);
    this.lx = new Lexer(
      source.text,
      (d) => this.report(d),
      (s, e) => this.idx.span(s, e),
    );
  }

  // ---- diagnostics ----

  protected report(d: Diagnostic): void {
    const key = `${d.pos?.offset}:${d.pos?.end}:${d.message}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.diags.push(d);
    if (d.severity === 'error' && ++this.errorCount >= MAX_ERRORS) throw new ParseAbort(true);
  }

  /** Records an error (parsing goes on). */
  protected error(message: string, at: Range, hint?: string): void {
    const d: Diagnostic = { severity: 'error', message: `syntax: ${message}`, pos: this.idx.span(at.start, at.end) };
    if (hint) d.hint = hint;
    this.report(d);
  }

  /** Records an error at `at` (default: the next token) and abandons the current statement. */
  protected fail(message: string, at?: Range, hint?: string): never {
    if (at !== undefined) {
      this.error(message, at, hint);
      throw new ParseAbort(false);
    }
    const tok = this.peek();
    if (tok.fatal) throw new ParseAbort(false); // already reported by the lexer
    this.error(tok.kind === 'invalid' && tok.error ? tok.error : message, tok, hint);
    throw new ParseAbort(false);
  }

  protected span(start: number, end: number): A.Span {
    return this.idx.span(start, end);
  }

  // ---- tokens ----

  protected peek(): Token {
    if (this.tok === null) this.tok = this.lx.next();
    return this.tok;
  }

  /** The token after `peek()`, without consuming anything. */
  protected peek2(): Token {
    this.peek();
    const p = this.lx.pos;
    const t = this.lx.next();
    this.lx.pos = p;
    return t;
  }

  protected advance(): Token {
    const t = this.peek();
    if (t.fatal) throw new ParseAbort(false);
    this.tok = null;
    this.lastEnd = t.end;
    return t;
  }

  /** Un-reads the lookahead token, so the lexer's character position is at the next unread source text. */
  protected unread(): void {
    if (this.tok !== null) {
      this.lx.pos = this.tok.start;
      this.tok = null;
    }
  }

  protected is(p: string): boolean {
    const t = this.peek();
    return t.kind === 'punct' && t.text === p;
  }

  protected isWord(w: string): boolean {
    const t = this.peek();
    return t.kind === 'ident' && t.text === w;
  }

  protected accept(p: string): Token | null {
    return this.is(p) ? this.advance() : null;
  }

  protected expect(p: string, hint?: string): Token {
    if (this.is(p)) return this.advance();
    return this.fail(`expected '${p}'`, undefined, hint);
  }

  protected mark(): { pos: number; tok: Token | null; lastEnd: number } {
    return { pos: this.lx.pos, tok: this.tok, lastEnd: this.lastEnd };
  }

  protected reset(m: { pos: number; tok: Token | null; lastEnd: number }): void {
    this.lx.pos = m.pos;
    this.tok = m.tok;
    this.lastEnd = m.lastEnd;
  }

  /** Bounds the recursion depth; `leave()` must follow in a `finally`. */
  protected enter(): void {
    if (++this.depth > MAX_NESTING) {
      this.error(`too deeply nested (the limit is ${MAX_NESTING} levels)`, this.peek());
      throw new ParseAbort(true);
    }
  }

  protected leave(): void {
    this.depth--;
  }
}
