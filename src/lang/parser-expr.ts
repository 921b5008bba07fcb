/**
 * The parser's expression grammar (part of parser.ts Parser): types as written (`parseTypeSpec`, `typeof(x)`),
 * ternaries, binary operators by precedence, unary operators and casts, postfix (fields, indexes, calls),
 * primaries (literals, identifiers, maps, `sizeof`/`offsetof`, parentheses and tuples, records, `if` and block
 * expressions).
 */
import type * as A from './ast.js';
import { KEYWORDS, type Token } from './lexer.js';
import { isTypeFunction } from './builtins/registry.js';
import { BINARY_PREC, isBuiltinName, ParserCore, type Range } from './parser-core.js';

export abstract class ExprParser extends ParserCore {
  /** Statements, for block expressions (parser.ts Parser). */
  protected abstract parseBlockBody(allowTrailing: boolean): { stmts: A.Stmt[]; trailing: A.Expr | null };
  /** `(cond)` or a single term after `if`/`while` (parser.ts Parser). */
  protected abstract parseCondition(keyword: string): A.Expr;

  /**
   * A type as written in casts, `sizeof`, `offsetof` and `let` annotations: `uint32`, `struct task_struct *`,
   * `int8[4]`, `string[16]`, `int32*[4]` (array of pointers). A pointer to an array (`int32[4]*`) cannot be
   * represented in `TypeSpec` and is reported. With `required` false, returns null instead of reporting.
   */
  protected parseTypeSpec(required: boolean): A.TypeSpec | null {
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

  protected parseExpr(): A.Expr {
    this.enter();
    try {
      return this.parseTernary();
    } finally {
      this.leave();
    }
  }

  /** `c ? a : b` (right-associative) and `c ?: b`. */
  protected parseTernary(): A.Expr {
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
  protected binaryOp(): { op: A.BinaryOp; prec: number } | null {
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
  protected parseBinary(minPrec: number): A.Expr {
    let left = this.parseUnary();
    for (;;) {
      const info = this.binaryOp();
      if (info === null || info.prec < minPrec) return left;
      this.advance();
      const right = this.parseBinary(info.prec + 1);
      left = { kind: 'BinaryExpr', pos: this.span(left.pos.offset, right.pos.end), op: info.op, left, right };
    }
  }

  protected parseUnary(): A.Expr {
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
  protected parsePostfix(expr: A.Expr): A.Expr {
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

  protected parsePrimary(): A.Expr {
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
  protected parseIdentExpr(): A.Expr {
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
    // `config()`: current bpftrace's stdlib macro (the keyword `config` otherwise starts the config block)
    if (KEYWORDS.has(t.text) && !(t.text === 'config' && this.peek2().text === '(')) {
      return this.fail('expected expression');
    }
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
  protected atTypeName(): boolean {
    const t = this.peek();
    return (
      t.kind === 'ident' && !isBuiltinName(t.text) && !KEYWORDS.has(t.text) && t.text !== 'true' && t.text !== 'false'
    );
  }

  /** `typeof(TYPE)` / `typeof(expr)` where a type is written (any registry function of role `type`). */
  protected parseTypeCall(): A.TypeSpec {
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
  protected parseSizeof(): A.SizeofExpr {
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
  protected parseOffsetof(): A.OffsetofExpr {
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
  protected parseParen(): A.Expr {
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
  protected atRecordField(): boolean {
    const n2 = this.peek2();
    return this.peek().kind === 'ident' && n2.kind === 'punct' && n2.text === '=';
  }

  /** A record `(name = expr, ...)` after its `(`: a TupleExpr with `names` (bpftrace's records). */
  protected parseRecord(open: Token): A.TupleExpr {
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
  protected parseIfExpr(): A.Expr {
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
  protected parseBlockExpr(): A.BlockExpr {
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
