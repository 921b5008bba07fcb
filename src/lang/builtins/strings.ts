/**
 * Strings, buffers and bytes (bpftrace `docs/stdlib.md`): `str`, `buf`, `strlen`, `strncmp`, `strcontains`,
 * `join`, `strerror`, `bswap`. Their checks and code are still in the analyser's `call()` and the generator's
 * `callExpr()`.
 */
import * as I from '../../bpf/insn.js';
import { typeName, U64 } from '../types.js';
import type { BuiltinFunction } from './types.js';

export const STRING_FUNCTIONS: readonly BuiltinFunction[] = [
  { name: 'str', doc: { usage: '`str(ptr[, len])`', note: 'at most `max_strlen` bytes (default 64)' } },
  { name: 'buf', doc: { usage: '`buf(data[, n])`', note: 'printed with `%r`/`%rx`/`%rh`; `==`/`!=` between buffers' } },
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
  { name: 'strncmp', doc: { usage: '`strncmp(a, b, n)`' } },
  {
    name: 'strcontains',
    doc: { usage: '`strcontains(haystack, needle)`', note: 'unrolled in BPF; neither string read past its NUL' },
  },
  { name: 'join', doc: { usage: '`join(argv[, sep])`', note: '16 arguments of 64 bytes, as bpftrace' } },
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
      const size = (c.type as { size: number }).size;
      const r = g.vreg();
      g.emit(I.mov64(r, g.scalar(c.args[0]!)));
      if (size > 1) g.emit(I.endian(r, (size * 8) as 16 | 32 | 64, 'be'));
      return r;
    },
    doc: { usage: '`bswap(n)`' },
  },
];
