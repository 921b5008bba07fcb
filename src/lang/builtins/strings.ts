/**
 * Strings, buffers and bytes (bpftrace `docs/stdlib.md`): `str`, `buf`, `strlen`, `strncmp`, `strcontains`,
 * `join`, `strerror`, `bswap`. Their checks and code are still in the analyser's `call()` and the generator's
 * `callExpr()`.
 */
import type { BuiltinFunction } from './types.js';

export const STRING_FUNCTIONS: readonly BuiltinFunction[] = [
  { name: 'str', doc: { usage: '`str(ptr[, len])`', note: 'at most `max_strlen` bytes (default 64)' } },
  { name: 'buf', doc: { usage: '`buf(data[, n])`', note: 'printed with `%r`/`%rx`/`%rh`; `==`/`!=` between buffers' } },
  { name: 'strlen', doc: { usage: '`strlen(s)`' } },
  { name: 'strncmp', doc: { usage: '`strncmp(a, b, n)`' } },
  {
    name: 'strcontains',
    doc: { usage: '`strcontains(haystack, needle)`', note: 'unrolled in BPF; neither string read past its NUL' },
  },
  { name: 'join', doc: { usage: '`join(argv[, sep])`', note: '16 arguments of 64 bytes, as bpftrace' } },
  { name: 'strerror', doc: { usage: '`strerror(errno)`', note: 'resolved in user space when printed' } },
  { name: 'bswap', doc: { usage: '`bswap(n)`' } },
];
