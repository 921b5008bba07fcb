/**
 * bcc's C expressions in bpftrace: the predicates, printf arguments and collected expressions that `trace` and
 * `argdist` take inside their probe specifiers (iovisor/bcc `tools/trace.py`, `tools/argdist.py`) are C source
 * pasted into a BPF C program. bpftrace's expression syntax is C's for what those tools are used with (arithmetic,
 * comparisons, `&&`/`||`, `->` on typed pointers, `?:`), so translation works on tokens:
 * - names are replaced through a resolver (`arg1` → `arg0`, a signature parameter → its typed argument register,
 *   `$retval`, `$latency`, ...), each replacement parenthesised;
 * - C casts become bpftrace casts (`(unsigned int)x` → `(uint32)x`, `(struct sock *)p` stays, `(void *)p` →
 *   `(uint64)p`, `(char *)p` is dropped: a string is read with `str()` where the tool needs one);
 * - `STRCMP("lit", e)` (bcc's `StrcmpRewrite`: the first `len(lit)` bytes equal) → `strncmp(str(e), "lit", n) == 0`;
 * - character literals become numbers, integer suffixes (`10UL`) are dropped.
 * Anything else passes through unchanged and is checked by the compiler.
 */
import { BpfscopeError } from '../../errors.js';

/** A C token: identifier (`$` allowed, as bcc's aliases), number, string/char literal, operator or blank. */
export interface CToken {
  kind: 'ident' | 'num' | 'str' | 'char' | 'op' | 'ws';
  text: string;
}

const OPS3 = ['<<=', '>>=', '...'];
const OPS2 = [
  '->',
  '++',
  '--',
  '<<',
  '>>',
  '<=',
  '>=',
  '==',
  '!=',
  '&&',
  '||',
  '+=',
  '-=',
  '*=',
  '/=',
  '%=',
  '&=',
  '|=',
  '^=',
];

/**
 * Split C text into tokens (concatenating their texts gives `text` back).
 * @throws BpfscopeError for an unterminated string or character literal
 */
export function tokenizeC(text: string): CToken[] {
  const out: CToken[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    const rest = text.slice(i);
    let m: RegExpMatchArray | null;
    if ((m = /^\s+/.exec(rest))) out.push({ kind: 'ws', text: m[0] });
    else if ((m = /^[A-Za-z_$][A-Za-z0-9_$]*/.exec(rest))) out.push({ kind: 'ident', text: m[0] });
    else if ((m = /^(0[xX][0-9a-fA-F]+|\d+)[uUlL]*/.exec(rest))) out.push({ kind: 'num', text: m[0] });
    else if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < text.length && text[j] !== c) j += text[j] === '\\' ? 2 : 1;
      if (j >= text.length) throw new BpfscopeError(`unterminated ${c === '"' ? 'string' : 'character'} in '${text}'`);
      out.push({ kind: c === '"' ? 'str' : 'char', text: text.slice(i, j + 1) });
    } else {
      const op = OPS3.find((o) => rest.startsWith(o)) ?? OPS2.find((o) => rest.startsWith(o)) ?? c;
      out.push({ kind: 'op', text: op });
    }
    i += out[out.length - 1]!.text.length;
  }
  return out;
}

/** A C type as bpftrace sees it. */
export type CType =
  | { kind: 'int'; bits: 8 | 16 | 32 | 64; signed: boolean }
  /** `char *` and friends: a string address (read with `str()`). */
  | { kind: 'string' }
  /** A pointer to a struct/union: kept as a typed pointer (BTF). */
  | { kind: 'record'; text: string }
  /** Any other pointer: an address. */
  | { kind: 'pointer' };

const INT_TYPES: Record<string, { bits: 8 | 16 | 32 | 64; signed: boolean }> = {
  char: { bits: 8, signed: true },
  'signed char': { bits: 8, signed: true },
  'unsigned char': { bits: 8, signed: false },
  short: { bits: 16, signed: true },
  'short int': { bits: 16, signed: true },
  'unsigned short': { bits: 16, signed: false },
  'unsigned short int': { bits: 16, signed: false },
  int: { bits: 32, signed: true },
  signed: { bits: 32, signed: true },
  'signed int': { bits: 32, signed: true },
  unsigned: { bits: 32, signed: false },
  'unsigned int': { bits: 32, signed: false },
  long: { bits: 64, signed: true },
  'long int': { bits: 64, signed: true },
  'long long': { bits: 64, signed: true },
  'long long int': { bits: 64, signed: true },
  'unsigned long': { bits: 64, signed: false },
  'unsigned long int': { bits: 64, signed: false },
  'unsigned long long': { bits: 64, signed: false },
  'unsigned long long int': { bits: 64, signed: false },
  bool: { bits: 8, signed: false },
  _Bool: { bits: 8, signed: false },
  u8: { bits: 8, signed: false },
  s8: { bits: 8, signed: true },
  u16: { bits: 16, signed: false },
  s16: { bits: 16, signed: true },
  u32: { bits: 32, signed: false },
  s32: { bits: 32, signed: true },
  u64: { bits: 64, signed: false },
  s64: { bits: 64, signed: true },
  __u8: { bits: 8, signed: false },
  __s8: { bits: 8, signed: true },
  __u16: { bits: 16, signed: false },
  __s16: { bits: 16, signed: true },
  __u32: { bits: 32, signed: false },
  __s32: { bits: 32, signed: true },
  __u64: { bits: 64, signed: false },
  __s64: { bits: 64, signed: true },
  uint8_t: { bits: 8, signed: false },
  int8_t: { bits: 8, signed: true },
  uint16_t: { bits: 16, signed: false },
  int16_t: { bits: 16, signed: true },
  uint32_t: { bits: 32, signed: false },
  int32_t: { bits: 32, signed: true },
  uint64_t: { bits: 64, signed: false },
  int64_t: { bits: 64, signed: true },
  size_t: { bits: 64, signed: false },
  ssize_t: { bits: 64, signed: true },
  uintptr_t: { bits: 64, signed: false },
  intptr_t: { bits: 64, signed: true },
  off_t: { bits: 64, signed: true },
  loff_t: { bits: 64, signed: true },
  pid_t: { bits: 32, signed: true },
  uid_t: { bits: 32, signed: false },
  gid_t: { bits: 32, signed: false },
  dev_t: { bits: 32, signed: false },
  gfp_t: { bits: 32, signed: false },
  umode_t: { bits: 16, signed: false },
  mode_t: { bits: 32, signed: false },
  time_t: { bits: 64, signed: true },
};

const QUALIFIERS = new Set(['const', 'volatile', '__user', 'restrict', '__restrict', 'register']);
const TYPE_WORDS = new Set([...Object.keys(INT_TYPES).flatMap((k) => k.split(' ')), 'void', 'struct', 'union', 'enum']);

/**
 * The bpftrace view of C type text (`unsigned long`, `const char *`, `struct timespec *`), or undefined when it is
 * not a type this module knows (a typedef other than the common kernel/libc ones, an array).
 */
export function parseCType(text: string): CType | undefined {
  const stars = (text.match(/\*/g) ?? []).length;
  const words = text
    .replace(/\*/g, ' ')
    .trim()
    .split(/\s+/)
    .filter((w) => w !== '' && !QUALIFIERS.has(w));
  if (words.length === 0) return undefined;
  if (words[0] === 'struct' || words[0] === 'union') {
    if (words.length !== 2 || !/^[A-Za-z_]\w*$/.test(words[1]!)) return undefined;
    return stars === 1
      ? { kind: 'record', text: `${words[0]} ${words[1]} *` }
      : stars > 1
        ? { kind: 'pointer' }
        : undefined;
  }
  if (words[0] === 'enum')
    return words.length === 2 && stars === 0
      ? { kind: 'int', bits: 32, signed: false }
      : stars
        ? { kind: 'pointer' }
        : undefined;
  const base = words.join(' ');
  if (stars > 0) {
    if (base !== 'void' && INT_TYPES[base] === undefined) return undefined;
    return stars === 1 && (base === 'char' || base === 'signed char' || base === 'unsigned char')
      ? { kind: 'string' }
      : { kind: 'pointer' };
  }
  const t = INT_TYPES[base];
  return t ? { kind: 'int', ...t } : undefined;
}

/** bpftrace's integer type name: `int32`, `uint64`, ... */
export function intTypeName(t: { bits: number; signed: boolean }): string {
  return `${t.signed ? '' : 'u'}int${t.bits}`;
}

/**
 * `(e)` converted to C type `t` in bpftrace: integers are cast (truncated, sign-extended as C converts), strings
 * are read with `str(e, stringSize)`, struct pointers keep their type, other pointers are addresses.
 */
export function convertTo(t: CType, e: string, stringSize: number): string {
  switch (t.kind) {
    case 'int':
      return `(${intTypeName(t)})(${e})`;
    case 'string':
      return `str(${e}, ${stringSize})`;
    case 'record':
      return `((${t.text})(${e}))`;
    case 'pointer':
      return `(uint64)(${e})`;
  }
}

/** One parameter of a bcc function signature. */
export interface CParam {
  name: string;
  /** The type text as written (`const char *`). */
  type: string;
}

/**
 * argdist's `_parse_signature`: parameters split at `,`; the name follows the last `*` or else the last space
 * (`struct timespec *req` → `struct timespec *`, `req`). `''` → no parameters.
 */
export function parseSignature(sig: string): CParam[] {
  if (sig.trim() === '') return [];
  return sig.split(',').map((p) => {
    const param = p.trim();
    let index = param.lastIndexOf('*');
    if (index === -1) index = param.lastIndexOf(' ');
    return { type: param.slice(0, index + 1).trim(), name: param.slice(index + 1).trim() };
  });
}

/**
 * `e` read as a value of C type `type` (a parameter's declared type): integers cast to their width and sign, struct
 * pointers typed (so `->` works), other pointers left as addresses.
 * @throws BpfscopeError for a type this module does not know
 */
export function typedValue(type: string, e: string): string {
  const t = parseCType(type);
  if (!t) throw new BpfscopeError(`unsupported parameter type '${type}'`);
  switch (t.kind) {
    case 'int':
      return `(${intTypeName(t)})${e}`;
    case 'record':
      return `((${t.text})${e})`;
    default:
      return e;
  }
}

/**
 * The bpftrace expression for parameter `index` (0-based) of type `type` at a function entry: the argument
 * register `argN` as that type ({@link typedValue}).
 * @throws BpfscopeError for a type this module does not know, or a parameter after the sixth
 */
export function paramExpr(index: number, type: string): string {
  if (index > 5) throw new BpfscopeError('only the first six parameters can be read');
  return typedValue(type, `arg${index}`);
}

/** What a name in an expression becomes: bpftrace text, or undefined to keep it. */
export type NameResolver = (name: string) => string | undefined;

export interface TranslateOptions {
  /** Replacement of identifiers (`arg1`, `$retval`, parameter names); the result is parenthesised. */
  names: NameResolver;
  /** `$entry(name)` (argdist's return probes): replacement text, or undefined when not allowed here. */
  entry?: (param: string) => string | undefined;
  /** Length of strings read for STRCMP (bcc reads exactly the literal's length). */
  stringSize?: number;
}

function cStringBytes(lit: string): number {
  // Length of the literal's contents after C escapes, in bytes.
  let n = 0;
  const body = lit.slice(1, -1);
  for (let i = 0; i < body.length; i++) {
    if (body[i] === '\\') {
      const m = /^\\(x[0-9a-fA-F]+|[0-7]{1,3}|.)/.exec(body.slice(i));
      i += m![0].length - 1;
      n += 1;
    } else n += Buffer.byteLength(body[i]!);
  }
  return n;
}

function charValue(lit: string): number {
  const body = lit.slice(1, -1);
  if (!body.startsWith('\\')) return body.codePointAt(0) ?? 0;
  const esc: Record<string, number> = {
    n: 10,
    t: 9,
    r: 13,
    '0': 0,
    '\\': 92,
    "'": 39,
    '"': 34,
    a: 7,
    b: 8,
    f: 12,
    v: 11,
  };
  const e = body.slice(1);
  if (/^x[0-9a-fA-F]+$/.test(e)) return Number.parseInt(e.slice(1), 16);
  if (/^[0-7]{1,3}$/.test(e)) return Number.parseInt(e, 8);
  return esc[e] ?? e.codePointAt(0) ?? 0;
}

/** Index of the token after the `)` matching the `(` at `open`, or -1. */
function closeParen(toks: CToken[], open: number): number {
  let depth = 0;
  for (let i = open; i < toks.length; i++) {
    if (toks[i]!.text === '(') depth++;
    else if (toks[i]!.text === ')' && --depth === 0) return i;
  }
  return -1;
}

/** The bpftrace cast for the tokens of a parenthesised C type, '' to drop it, or undefined if not a type. */
function castFor(inner: CToken[]): string | undefined {
  const words = inner.filter((t) => t.kind !== 'ws');
  const idents = words.filter((t) => t.kind === 'ident' && !QUALIFIERS.has(t.text));
  if (idents.length === 0 || !words.every((t) => t.kind === 'ident' || t.text === '*')) return undefined;
  const record = idents[0]!.text === 'struct' || idents[0]!.text === 'union';
  if (!record && !idents.every((t) => TYPE_WORDS.has(t.text))) return undefined;
  const t = parseCType(words.map((w) => w.text).join(' '));
  if (!t) return undefined;
  if (t.kind === 'int') return `(${intTypeName(t)})`;
  if (t.kind === 'record') return `(${t.text})`;
  if (t.kind === 'string') return '';
  return '(uint64)';
}

/**
 * Translate bcc C expression `expr` to bpftrace expression text (see the module comment).
 * @throws BpfscopeError for an unterminated literal, a `$entry()` that is not allowed or names no parameter, or a
 *   malformed `STRCMP`
 */
export function translateCExpr(expr: string, opts: TranslateOptions): string {
  return translateTokens(tokenizeC(expr), opts);
}

function translateTokens(toks: CToken[], opts: TranslateOptions): string {
  let out = '';
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i]!;
    const next = (k: number): CToken | undefined => {
      let n = 0;
      for (let j = i + 1; j < toks.length; j++) {
        if (toks[j]!.kind === 'ws') continue;
        if (n++ === k) return toks[j];
      }
      return undefined;
    };
    if (t.kind === 'ident' && t.text === 'STRCMP' && next(0)?.text === '(') {
      const open = toks.indexOf(next(0)!, i);
      const close = closeParen(toks, open);
      const args = toks.slice(open + 1, close);
      const comma = args.findIndex((a) => a.text === ',');
      const lit = args.slice(0, comma).filter((a) => a.kind !== 'ws');
      if (close < 0 || comma < 0 || lit.length !== 1 || lit[0]!.kind !== 'str') {
        throw new BpfscopeError(
          `STRCMP takes a string literal and an expression: '${toks.map((x) => x.text).join('')}'`,
        );
      }
      const n = cStringBytes(lit[0]!.text);
      const e = translateTokens(args.slice(comma + 1), opts).trim();
      out += `(strncmp(str(${e}), ${lit[0]!.text}, ${n}) == 0)`;
      i = close;
      continue;
    }
    if (t.kind === 'ident' && t.text === '$entry' && next(0)?.text === '(') {
      const open = toks.indexOf(next(0)!, i);
      const close = closeParen(toks, open);
      const name = toks
        .slice(open + 1, close)
        .map((x) => x.text)
        .join('')
        .trim();
      const r = opts.entry?.(name);
      if (close < 0 || r === undefined) throw new BpfscopeError(`$entry(${name}): no such param`);
      out += `(${r})`;
      i = close;
      continue;
    }
    if (t.kind === 'ident') {
      // `arg1@user` (trace): the @user marker only chooses bcc's user-space read; str() picks it here.
      if (next(0)?.text === '@' && next(1)?.text === 'user' && /^arg[1-6]$/.test(t.text)) {
        const r = opts.names(t.text);
        out += r === undefined ? t.text : `(${r})`;
        i = toks.indexOf(next(1)!, i);
        continue;
      }
      const prev = out.trimEnd();
      const member = prev.endsWith('.') || prev.endsWith('->');
      const r = member ? undefined : opts.names(t.text);
      out += r === undefined ? t.text : `(${r})`;
      continue;
    }
    if (t.kind === 'num') {
      out += t.text.replace(/[uUlL]+$/, '');
      continue;
    }
    if (t.kind === 'char') {
      out += String(charValue(t.text));
      continue;
    }
    if (t.text === '(') {
      const close = closeParen(toks, i);
      if (close > 0) {
        const cast = castFor(toks.slice(i + 1, close));
        if (cast !== undefined) {
          out += cast;
          i = close;
          continue;
        }
      }
    }
    out += t.text;
  }
  return out;
}
