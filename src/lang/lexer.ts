/**
 * Lexer for bpftrace's language (bpftrace v0.26 `src/parser.cpp` lexing rules, `docs/language.md` "Literals").
 *
 * The lexer is driven by the parser: `next()` reads one token from the current offset, and the parser reads the
 * context-dependent parts itself through the character-level helpers (`readAttachPoint`, `skipLine`, ...), because
 * attach points (`uprobe:/bin/bash:readline`, `kprobe:vfs_*`) are not made of ordinary tokens. The lexer never
 * throws: problems are reported through the `report` callback as diagnostics (message prefixed `syntax: `, as
 * bpftrace's parser does) and the token is still produced.
 */
import type { Diagnostic } from './diagnostics.js';

/** Operators and punctuation, longest first within each length class. */
const PUNCT3 = ['<<=', '>>='] as const;
const PUNCT2 = [
  '..',
  '->',
  '++',
  '--',
  '+=',
  '-=',
  '*=',
  '/=',
  '%=',
  '&=',
  '|=',
  '^=',
  '<<',
  '>>',
  '<=',
  '>=',
  '==',
  '!=',
  '&&',
  '||',
] as const;
const PUNCT1 = '(){}[],;:?.+-*/%&|^!~<>=';

export type TokenKind =
  | 'ident' // identifiers and keywords: `pid`, `if`, `struct`, `count`
  | 'int' // integer literal; `value` holds its value (0n if invalid)
  | 'string' // string literal; `str`/`bytes` hold the decoded value
  | 'var' // `$name`; `name` without the sigil
  | 'positional' // `$1`..`$N`; `index`
  | 'paramcount' // `$#`
  | 'map' // `@name` or bare `@`; `name` without the sigil ('' for `@`)
  | 'punct' // operator or punctuation; `text` is the operator
  | 'invalid' // a character that starts no token; `error` may say why
  | 'eof';

/** One token. `start`/`end` are 0-based [start, end) offsets into the source text. */
export interface Token {
  kind: TokenKind;
  /** The token's source text (for `punct`, the operator itself; '' at end of input). */
  text: string;
  start: number;
  end: number;
  value?: bigint;
  str?: string;
  bytes?: Uint8Array;
  name?: string;
  index?: number;
  /**
   * A diagnostic that makes the rest of the statement meaningless was already reported for this token
   * (unterminated string, or end of input inside an unterminated comment): the parser stops without reporting more.
   */
  fatal?: boolean;
  /** For `invalid` tokens: the message to report when the parser cannot use the token. */
  error?: string;
}

/** Keywords that cannot be used as builtins or function names (bpftrace `docs/language.md` "Keywords"). */
export const KEYWORDS: ReadonlySet<string> = new Set([
  'break',
  'config',
  'continue',
  'else',
  'for',
  'if',
  'import',
  'let',
  'macro',
  'fn',
  'offsetof',
  'return',
  'sizeof',
  'unroll',
  'while',
]);

export function isIdentStart(c: string): boolean {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';
}

export function isIdentBody(c: string): boolean {
  return isIdentStart(c) || (c >= '0' && c <= '9');
}

function isDigit(c: string): boolean {
  return c >= '0' && c <= '9';
}

function isHexDigit(c: string): boolean {
  return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

function isOctDigit(c: string): boolean {
  return c >= '0' && c <= '7';
}

const U64_MAX = (1n << 64n) - 1n;

/**
 * Integer suffixes: [maximum value of the type, multiplier]. Suffixes are accepted for C compatibility and do not
 * change the literal's type; duration suffixes convert to nanoseconds (bpftrace `src/util/int_parser.cpp`).
 */
const INT_SUFFIXES: ReadonlyMap<string, [bigint, bigint]> = new Map([
  ['', [U64_MAX, 1n]],
  ['u', [0xffff_ffffn, 1n]],
  ['ul', [U64_MAX, 1n]],
  ['ull', [U64_MAX, 1n]],
  ['l', [(1n << 63n) - 1n, 1n]],
  ['ll', [(1n << 63n) - 1n, 1n]],
  ['ns', [U64_MAX, 1n]],
  ['us', [U64_MAX, 1_000n]],
  ['ms', [U64_MAX, 1_000_000n]],
  ['s', [U64_MAX, 1_000_000_000n]],
  ['m', [U64_MAX, 60_000_000_000n]],
  ['h', [U64_MAX, 3_600_000_000_000n]],
  ['d', [U64_MAX, 86_400_000_000_000n]],
]);

/** C `strtoull` over digits only (no sign, no whitespace): value (clamped at overflow), digits consumed. */
function strtoull(s: string, base: number): { value: bigint; used: number; overflow: boolean } {
  let i = 0;
  if (base === 0) base = s[0] === '0' ? 8 : 10;
  else if (base === 16 && s[0] === '0' && (s[1] === 'x' || s[1] === 'X') && isHexDigit(s[2] ?? '')) i = 2;
  let value = 0n;
  let overflow = false;
  const b = BigInt(base);
  const start = i;
  for (; i < s.length; i++) {
    const d = Number.parseInt(s[i] as string, 36);
    if (Number.isNaN(d) || d >= base) break;
    if (!overflow) {
      value = value * b + BigInt(d);
      if (value > U64_MAX) overflow = true;
    }
  }
  if (i === start) return { value: 0n, used: 0, overflow: false };
  return { value: overflow ? U64_MAX : value, used: i, overflow };
}

/**
 * The value of an integer literal as bpftrace computes it (`util::to_uint`, base auto-detected): `_` separators
 * dropped, `0x` hex, `0` octal, `<m>e<n>` scientific with a coefficient of 1-9, C suffixes (`u`, `ul`, `ull`, `l`,
 * `ll`) and duration suffixes (`ns`, `us`, `ms`, `s`, `m`, `h`, `d`, converted to nanoseconds).
 * Returns the value, or the error message bpftrace gives (`invalid trailing bytes: 5e`, `overflow error, ...`).
 */
export function parseIntLiteral(text: string): { value: bigint } | { error: string } {
  let n = text.replaceAll('_', '');
  // Upper-case `U`/`L` suffixes are accepted like their lower-case forms (bpftrace docs: `123UL`, `123LL`).
  if (!n.startsWith('0x') && !n.startsWith('0X')) n = n.replace(/[UL]/g, (m) => m.toLowerCase());
  return toUint(text, n, 0);
}

function toUint(orig: string, n: string, base: number): { value: bigint } | { error: string } {
  if (base === 0 && n.length >= 2) {
    if (n.startsWith('0x') || n.startsWith('0X')) return toUint(orig, n.slice(2), 16);
    if (n.startsWith('0b') || n.startsWith('0B')) return toUint(orig, n.slice(2), 2);
    if (n[0] === '0' && isOctDigit(n[1] as string)) return toUint(orig, n.slice(1), 8);
  }
  const r = strtoull(n, base);
  if (r.used === 0) return { error: `invalid integer: ${orig}` };
  if (r.overflow) return { error: `overflow error, maximum value is ${U64_MAX}: ${orig}` };
  let value = r.value;
  let rest = n.slice(r.used);
  if ((rest[0] === 'e' || rest[0] === 'E') && rest[1] !== undefined && rest[1] >= '1' && rest[1] <= '9') {
    if (value <= 0n || value >= 10n) {
      return { error: `coefficient part of scientific literal must be 1-9: ${orig}` };
    }
    const e = strtoull(rest.slice(1), 10);
    rest = rest.slice(1 + e.used);
    if (e.overflow) return { error: `overflow error, maximum value is ${U64_MAX}: ${orig}` };
    for (let k = 0n; k < e.value; k++) {
      if (value > U64_MAX / 10n) return { error: `overflow error, maximum value is ${U64_MAX}: ${orig}` };
      value *= 10n;
    }
  }
  const suffix = INT_SUFFIXES.get(rest);
  if (suffix === undefined) return { error: `invalid trailing bytes: ${orig}` };
  const [max, mult] = suffix;
  if (value > max / mult) return { error: `overflow error, maximum value is ${max}: ${orig}` };
  return { value: value * mult };
}

/** `$N` positional parameters must be in [1, LONG_MAX] (bpftrace `parse_primary`). */
const LONG_MAX = (1n << 63n) - 1n;

function utf8(s: string): number[] {
  return Array.from(Buffer.from(s, 'utf8'));
}

/**
 * Character-level scanner over one source text. `pos` is the offset of the next unread character. All offsets are
 * JavaScript string indices (UTF-16 code units).
 */
export class Lexer {
  pos = 0;

  /**
   * @param text the whole program text
   * @param report receives every diagnostic (the same diagnostic may be reported again when the parser backtracks
   *   and re-reads a token; the receiver de-duplicates)
   */
  constructor(
    readonly text: string,
    private readonly report: (d: Diagnostic & { pos: NonNullable<Diagnostic['pos']> }) => void,
    private readonly spanOf: (start: number, end: number) => NonNullable<Diagnostic['pos']>,
  ) {}

  private error(message: string, start: number, end: number): void {
    this.report({ severity: 'error', message: `syntax: ${message}`, pos: this.spanOf(start, end) });
  }

  /** The character `k` places ahead ('' past the end). */
  peekChar(k = 0): string {
    return this.text[this.pos + k] ?? '';
  }

  atEnd(): boolean {
    return this.pos >= this.text.length;
  }

  /** Set when an unterminated block comment ran to the end of the input (already reported). */
  private unterminatedComment = false;

  /**
   * Skips whitespace, `// ...` and `/* ... *\/` comments. An unterminated block comment is reported
   * (`syntax: unterminated comment`, spanning the `/*`) and consumes the rest of the input.
   */
  skipLayout(): void {
    const t = this.text;
    for (;;) {
      const c = t[this.pos];
      if (c === ' ' || c === '\t' || c === '\r' || c === '\n' || c === '\f' || c === '\v') {
        this.pos++;
      } else if (c === '/' && t[this.pos + 1] === '/') {
        const nl = t.indexOf('\n', this.pos);
        this.pos = nl < 0 ? t.length : nl;
      } else if (c === '/' && t[this.pos + 1] === '*') {
        const close = t.indexOf('*/', this.pos + 2);
        if (close < 0) {
          this.error('unterminated comment', this.pos, this.pos + 2);
          this.unterminatedComment = true;
          this.pos = t.length;
        } else {
          this.pos = close + 2;
        }
      } else {
        return;
      }
    }
  }

  /** The identifier starting at the current offset (after layout), without consuming it; '' if none. */
  peekWord(): string {
    this.skipLayout();
    let e = this.pos;
    if (!isIdentStart(this.text[e] ?? '')) return '';
    while (isIdentBody(this.text[e] ?? '')) e++;
    return this.text.slice(this.pos, e);
  }

  /** Consumes the rest of the current line (not the newline). Returns the consumed text. */
  skipLine(): string {
    const nl = this.text.indexOf('\n', this.pos);
    const end = nl < 0 ? this.text.length : nl;
    const s = this.text.slice(this.pos, end);
    this.pos = end;
    return s;
  }

  /**
   * Reads one attach point as raw text, by bpftrace v0.26's rules (`Parser::parse_attach_point`): everything up to
   * `{`, `,`, whitespace, or a `/` that starts a predicate (a `/` before any `:`; after a `:` it belongs to a path
   * as in `uprobe:/bin/bash:readline`). Double-quoted parts are taken whole, with `\` escapes kept. Unlike
   * bpftrace, `}`, `;` and a comment (`//`, or `/*` before any `:`) also end it. Returns '' when no attach point
   * starts here.
   */
  readAttachPoint(): { raw: string; start: number; end: number } {
    this.skipLayout();
    const t = this.text;
    const start = this.pos;
    let sawColon = false;
    while (this.pos < t.length) {
      const c = t[this.pos] as string;
      if (c === '{' || c === ',' || c === '}' || c === ';') break;
      if (c === ' ' || c === '\t' || c === '\r' || c === '\n' || c === '\f' || c === '\v') break;
      if (c === '/' && this.pos > start) {
        // Before any ':' a '/' starts a predicate or a comment; after it only `//` (a comment) ends the attach
        // point, as `/*` may be a path glob (`uprobe:/usr/lib/*.so:f`).
        if (!sawColon || t[this.pos + 1] === '/') break;
      }
      if (c === ':') sawColon = true;
      if (c === '"') {
        this.pos++;
        while (this.pos < t.length && t[this.pos] !== '"' && t[this.pos] !== '\n') {
          if (t[this.pos] === '\\' && this.pos + 1 < t.length && t[this.pos + 1] !== '\n') this.pos++;
          this.pos++;
        }
        if (t[this.pos] === '"') this.pos++;
        else {
          this.error('unterminated string', start, this.pos);
          return { raw: t.slice(start, this.pos), start, end: this.pos };
        }
        continue;
      }
      this.pos++;
    }
    return { raw: t.slice(start, this.pos), start, end: this.pos };
  }

  /** Reads the next token, skipping layout first. */
  next(): Token {
    this.skipLayout();
    const t = this.text;
    const start = this.pos;
    if (start >= t.length) {
      const tok: Token = { kind: 'eof', text: '', start, end: start };
      if (this.unterminatedComment) tok.fatal = true;
      return tok;
    }
    const c = t[start] as string;
    if (isIdentStart(c)) {
      let e = start + 1;
      while (isIdentBody(t[e] ?? '')) e++;
      this.pos = e;
      const text = t.slice(start, e);
      return { kind: 'ident', text, start, end: e, name: text };
    }
    if (isDigit(c)) return this.readNumber();
    if (c === '"') return this.readString();
    if (c === '$') return this.readDollar();
    if (c === '@') {
      let e = start + 1;
      if (isIdentStart(t[e] ?? '')) while (isIdentBody(t[e] ?? '')) e++;
      this.pos = e;
      return { kind: 'map', text: t.slice(start, e), start, end: e, name: t.slice(start + 1, e) };
    }
    for (const p of PUNCT3) {
      if (t.startsWith(p, start)) {
        this.pos = start + 3;
        return { kind: 'punct', text: p, start, end: this.pos };
      }
    }
    for (const p of PUNCT2) {
      if (t.startsWith(p, start)) {
        this.pos = start + 2;
        return { kind: 'punct', text: p, start, end: this.pos };
      }
    }
    if (PUNCT1.includes(c)) {
      this.pos = start + 1;
      return { kind: 'punct', text: c, start, end: this.pos };
    }
    // One whole code point, so that the error marker never splits a surrogate pair.
    const cp = t.codePointAt(start) ?? 0;
    this.pos = start + (cp > 0xffff ? 2 : 1);
    return { kind: 'invalid', text: t.slice(start, this.pos), start, end: this.pos };
  }

  private readDollar(): Token {
    const t = this.text;
    const start = this.pos;
    const n = t[start + 1] ?? '';
    if (n === '#') {
      this.pos = start + 2;
      return { kind: 'paramcount', text: '$#', start, end: this.pos };
    }
    if (isDigit(n)) {
      let e = start + 1;
      while (isDigit(t[e] ?? '')) e++;
      this.pos = e;
      const digits = t.slice(start + 1, e);
      const v = BigInt(digits);
      let index = Number(v);
      if (v < 1n || v > LONG_MAX) {
        this.error(`param $${digits} is out of integer range [1, ${LONG_MAX}]`, start, e);
        index = 0;
      }
      return { kind: 'positional', text: t.slice(start, e), start, end: e, index };
    }
    if (isIdentStart(n)) {
      let e = start + 2;
      while (isIdentBody(t[e] ?? '')) e++;
      this.pos = e;
      return { kind: 'var', text: t.slice(start, e), start, end: e, name: t.slice(start + 1, e) };
    }
    this.pos = start + 1;
    return { kind: 'invalid', text: '$', start, end: this.pos, error: "expected identifier after '$'" };
  }

  /**
   * Integer literal: `0x` hex digits, or decimal/octal digits with an optional `e<digits>` exponent and an optional
   * suffix, `_` allowed anywhere (bpftrace `Parser::consume_integer_str`). Identifier characters right after the
   * literal are reported as `invalid integer suffix 'xyz'`.
   */
  private readNumber(): Token {
    const t = this.text;
    const start = this.pos;
    let p = start;
    const trailingUnderscore = () => {
      if (t[p - 1] === '_') this.error('trailing underscore in integer literal', p - 1, p);
    };
    if (t[p] === '0' && (t[p + 1] === 'x' || t[p + 1] === 'X')) {
      p += 2;
      while (isHexDigit(t[p] ?? '') || t[p] === '_') p++;
      trailingUnderscore();
    } else {
      while (isDigit(t[p] ?? '') || t[p] === '_') p++;
      trailingUnderscore();
      if (t[p] === 'e' || t[p] === 'E') {
        p++;
        while (isDigit(t[p] ?? '') || t[p] === '_') p++;
        trailingUnderscore();
      }
      const s = t[p] ?? '';
      const s1 = t[p + 1] ?? '';
      if ((s === 'n' || s === 'u' || s === 'm') && s1 === 's') p += 2;
      else if (s === 's' || s === 'm' || s === 'h' || s === 'd') p += 1;
      else if (s === 'u' || s === 'U') {
        p++;
        if (t[p] === 'l' || t[p] === 'L') {
          p++;
          if (t[p] === 'l' || t[p] === 'L') p++;
        }
      } else if (s === 'l' || s === 'L') {
        p++;
        if (t[p] === 'l' || t[p] === 'L') p++;
      }
    }
    const text = t.slice(start, p);
    if (isIdentStart(t[p] ?? '')) {
      const bad = p;
      while (isIdentBody(t[p] ?? '')) p++;
      this.error(`invalid integer suffix '${t.slice(bad, p)}'`, bad, p);
    }
    this.pos = p;
    const r = parseIntLiteral(text);
    let value = 0n;
    if ('error' in r) this.error(r.error, start, p);
    else value = r.value;
    return { kind: 'int', text: t.slice(start, p), start, end: p, value };
  }

  /**
   * String literal with bpftrace's escapes: `\n \t \r \" \\`, octal `\N`, `\NN`, `\NNN` (at most 0377) and hex
   * `\xN`, `\xNN`. Strings cannot span lines. `str` holds the decoded text (an escaped byte b becomes the code unit
   * b); `bytes` the exact bytes (source characters in UTF-8, escapes as raw bytes).
   */
  private readString(): Token {
    const t = this.text;
    const start = this.pos;
    let p = start + 1;
    let str = '';
    const bytes: number[] = [];
    let plainFrom = p;
    const flush = (to: number) => {
      if (to > plainFrom) {
        const s = t.slice(plainFrom, to);
        str += s;
        for (const b of utf8(s)) bytes.push(b);
      }
    };
    const addByte = (b: number) => {
      str += String.fromCharCode(b);
      bytes.push(b);
    };
    for (;;) {
      const c = t[p];
      if (c === undefined || c === '\n') {
        flush(p);
        // The span covers the string up to the end of its line (without a trailing '\r').
        let end = p;
        if (t[end - 1] === '\r' && end - 1 > start) end--;
        this.error('unterminated string', start, end);
        this.pos = p;
        return {
          kind: 'string',
          text: t.slice(start, p),
          start,
          end: p,
          str,
          bytes: Uint8Array.from(bytes),
          fatal: true,
        };
      }
      if (c === '"') {
        flush(p);
        p++;
        break;
      }
      if (c !== '\\') {
        p++;
        continue;
      }
      flush(p);
      const escStart = p;
      const e = t[p + 1];
      if (e === undefined || e === '\n') {
        p++;
        plainFrom = p;
        continue; // reported as unterminated on the next iteration
      }
      p += 2;
      switch (e) {
        case 'n':
          addByte(10);
          break;
        case 't':
          addByte(9);
          break;
        case 'r':
          addByte(13);
          break;
        case '"':
          addByte(34);
          break;
        case '\\':
          addByte(92);
          break;
        case 'x':
        case 'X': {
          let h = '';
          while (h.length < 2 && isHexDigit(t[p] ?? '')) h += t[p++];
          if (h === '') this.error('invalid hex escape sequence', escStart, p);
          else addByte(Number.parseInt(h, 16));
          break;
        }
        default:
          if (isOctDigit(e)) {
            let o = e;
            while (o.length < 3 && isOctDigit(t[p] ?? '')) o += t[p++];
            const v = Number.parseInt(o, 8);
            if (v > 255) this.error(`octal escape sequence out of range '\\${o}'`, escStart, p);
            addByte(v & 0xff);
          } else {
            const cp = t.codePointAt(p - 1) ?? 0;
            if (cp > 0xffff) p++;
            this.error(`invalid escape character '\\${String.fromCodePoint(cp)}'`, escStart, p);
          }
      }
      plainFrom = p;
    }
    this.pos = p;
    return { kind: 'string', text: t.slice(start, p), start, end: p, str, bytes: Uint8Array.from(bytes) };
  }
}

/**
 * A positional parameter's integer value, when its text is an integer in one of bpftrace's literal forms (decimal,
 * `0` octal, `0x` hex, `0b` binary, `1e6` scientific, `_` separators; a leading `-` negates); undefined when the
 * parameter is a string. bpftrace: `begin { printf("%o", $1) }' 0775` prints 775.
 */
export function positionalInt(text: string): bigint | undefined {
  const s = text.trim();
  const neg = s.startsWith('-');
  const body = neg ? s.slice(1) : s;
  if (!/^(0[xX][0-9a-fA-F_]+|0[bB][01_]+|[0-9][0-9_]*([eE][0-9]+)?)$/.test(body)) return undefined;
  const r = parseIntLiteral(body);
  if ('error' in r) return undefined;
  return neg ? -r.value : r.value;
}
