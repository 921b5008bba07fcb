/**
 * Strings, buffers and bytes (bpftrace `docs/stdlib.md`): `str`, `buf`, `strlen`, `strncmp`, `strcontains`,
 * `join`, `strerror`, `bswap`. The code of `str`, `buf`, `strncmp`, `strcontains` and `join` is still in the
 * generator's `callExpr()`/`callStmt()`.
 */
import * as I from '../../bpf/insn.js';
import type { CallExpr } from '../ast.js';
import { BOOL, I64, type SType, sizeOf, stringType, typeName, U64 } from '../types.js';
import type { BuiltinChecker, BuiltinFunction } from './types.js';

/**
 * `str(ptr[, len])`: at most `max_strlen` bytes, the length counting the NUL. As current bpftrace
 * (`Config::pad_max_strlen`, `codegen_llvm.cpp` str), a read without a length, or with one above `max_strlen`, reads
 * one byte more (below 1024) so that a string of `max_strlen` characters or more keeps `max_strlen` of them without
 * a NUL: such a string prints with the `str_trunc_trailer` (`..`).
 */
function strCheck(c: CallExpr, a: BuiltinChecker): SType | null {
  const args = c.args;
  if (args.length < 1 || args.length > 2) {
    a.error(c.pos, `str() requires 1 or 2 arguments (${args.length} provided)`);
    return null;
  }
  const t = a.expr(args[0]!);
  c.space = a.addressSpace(args[0]!);
  if (t && t.kind !== 'int' && t.kind !== 'pointer' && t.kind !== 'string') {
    a.error(c.pos, `str() expects an integer or a pointer type as first argument (${typeName(t)} provided)`);
  }
  let size = a.maxStrlen;
  const padded = a.maxStrlen < 1024 ? a.maxStrlen + 1 : a.maxStrlen;
  let read = padded;
  if (args.length === 2) {
    const lt = a.expr(args[1]!);
    const n = a.constValue(args[1]!);
    if (n !== null) {
      if (n < 0n) a.error(args[1]!.pos, 'str() length must be non-negative');
      // the length includes the NUL terminator (bpftrace: str(args.filename, 5) gives 4 characters)
      size = Math.max(1, Math.min(Number(n), a.maxStrlen));
      read = n > BigInt(a.maxStrlen) ? padded : size;
    } else if (lt && lt.kind !== 'int') {
      a.error(args[1]!.pos, `str() expects an integer length (${typeName(lt)} provided)`);
    }
  }
  if (t && t.kind === 'string') return stringType(Math.min(size, Math.max(t.size, 1)));
  if (read > size) c.strRead = read;
  else delete c.strRead;
  return stringType(size);
}

/** `buf(data[, n])`: n bytes (the data's size when it is a string or an array), at most `max_strlen`. */
function bufCheck(c: CallExpr, a: BuiltinChecker): SType | null {
  const args = c.args;
  const t = a.expr(args[0]!);
  c.space = a.addressSpace(args[0]!);
  let n: number | null = t?.kind === 'string' ? t.size : t?.kind === 'array' ? t.count * sizeOf(t.elem) : null;
  if (args.length === 2) {
    const v = a.constValue(args[1]!);
    if (v === null || v < 0n) {
      a.error(args[1]!.pos, 'buf() expects an integer literal length');
      return null;
    }
    n = Number(v);
  }
  if (t && t.kind !== 'string' && t.kind !== 'array' && t.kind !== 'pointer' && t.kind !== 'int') {
    a.error(args[0]!.pos, `buf() expects a string, array or pointer (${typeName(t)} provided)`);
    return null;
  }
  if (n === null) {
    a.error(c.pos, 'buf() of a pointer needs a length: buf(ptr, n)');
    return null;
  }
  return { kind: 'buffer', size: Math.min(n, a.maxStrlen) };
}

/** `strncmp(a, b, n)`: n a compile-time integer. */
function strncmpCheck(c: CallExpr, a: BuiltinChecker): SType {
  const args = c.args;
  const x = a.expr(args[0]!);
  const y = a.expr(args[1]!);
  for (const [t, e] of [
    [x, args[0]!],
    [y, args[1]!],
  ] as const) {
    if (t && t.kind !== 'string') a.error(e.pos, `strncmp() expects strings (${typeName(t)} provided)`);
  }
  if (a.constValue(args[2]!) === null) a.error(args[2]!.pos, 'strncmp() expects an integer literal length');
  return I64;
}

/** `join(argv[, sep])`: argv a pointer to an array of string pointers (user memory unless known kernel). */
function joinCheck(c: CallExpr, a: BuiltinChecker): SType {
  const args = c.args;
  if (!a.argCount(c, 1, 2)) return { kind: 'none' };
  const t = a.expr(args[0]!);
  // a plain integer: user memory unless it is known to be a kernel address (bpfscope's join default)
  c.space = a.spaceOf(args[0]!) ?? 'user';
  if (t && t.kind !== 'pointer' && t.kind !== 'int') {
    a.error(args[0]!.pos, `join() expects a pointer to an array of strings (${typeName(t)} provided)`);
  }
  if (args[1] && args[1].kind !== 'StrLit') a.error(args[1].pos, 'join() expects a string literal separator');
  return { kind: 'none' };
}

export const STRING_FUNCTIONS: readonly BuiltinFunction[] = [
  {
    name: 'str',
    check: strCheck,
    doc: { usage: '`str(ptr[, len])`', note: 'at most `max_strlen` bytes (default 64)' },
  },
  {
    name: 'buf',
    arity: [1, 2],
    check: bufCheck,
    doc: { usage: '`buf(data[, n])`', note: 'printed with `%r`/`%rx`/`%rh`; `==`/`!=` between buffers' },
  },
  {
    name: 'strlen',
    arity: [1, 1],
    check(c, a) {
      const t = a.expr(c.args[0]!);
      if (t && t.kind !== 'string') a.error(c.args[0]!.pos, `strlen() expects a string (${typeName(t)} provided)`);
      return U64;
    },
    generate(c, g) {
      // unrolled over the string's bytes: the index of the first NUL
      const v = g.mem(c.args[0]!);
      const r = g.vreg();
      const b = g.vreg();
      const done = g.newLabel('strlen');
      g.emit(I.mov64Imm(r, 0));
      for (let i = 0; i < v.size; i++) {
        g.emit(I.ldx(1, b, g.fb, v.off + i), I.jmpImm('jeq', b, 0, done), I.mov64Imm(r, i + 1));
      }
      g.mark(done);
      return r;
    },
    doc: { usage: '`strlen(s)`' },
  },
  { name: 'strncmp', arity: [3, 3], check: strncmpCheck, doc: { usage: '`strncmp(a, b, n)`' } },
  {
    name: 'strcontains',
    arity: [2, 2],
    check(c, a) {
      for (const x of c.args) {
        const t = a.expr(x);
        if (t && t.kind !== 'string') a.error(x.pos, `strcontains() expects strings (${typeName(t)} provided)`);
      }
      return BOOL;
    },
    doc: { usage: '`strcontains(haystack, needle)`', note: 'unrolled in BPF; neither string read past its NUL' },
  },
  {
    name: 'join',
    check: joinCheck,
    doc: { usage: '`join(argv[, sep])`', note: '16 arguments of 64 bytes, as bpftrace' },
  },
  {
    name: 'strerror',
    arity: [1, 1],
    check(c, a) {
      const t = a.expr(c.args[0]!);
      if (t && t.kind !== 'int') a.error(c.args[0]!.pos, `strerror() expects an integer (${typeName(t)} provided)`);
      return { kind: 'errno' };
    },
    generate: (c, g) => g.scalar(c.args[0]!),
    doc: { usage: '`strerror(errno)`', note: 'resolved in user space when printed' },
  },
  {
    name: 'bswap',
    arity: [1, 1],
    check(c, a) {
      const t = a.expr(c.args[0]!);
      if (t && t.kind !== 'int') {
        a.error(c.args[0]!.pos, `bswap() expects an integer (${typeName(t)} provided)`);
        return null;
      }
      return t;
    },
    generate(c, g) {
      const size = (g.typeOf(c) as { size: number }).size;
      const r = g.vreg();
      g.emit(I.mov64(r, g.scalar(c.args[0]!)));
      if (size > 1) g.emit(I.endian(r, (size * 8) as 16 | 32 | 64, 'be'));
      return r;
    },
    doc: { usage: '`bswap(n)`' },
  },
];
