/**
 * Output and actions (bpftrace `docs/stdlib.md`): printf and its relatives (format parsing: lang/printf.ts; the
 * records: codegen/gen.ts `printf()`; printing: runtime/output/printf.ts), `print`, `exit`, `system`/`cat`,
 * `signal` (`--unsafe`), and `getopt` (named program options after `--`). Their checks and code are still in the
 * analyser's `call()` and the generator's `callStmt()`.
 */
import type { BuiltinFunction } from './types.js';

export const OUTPUT_FUNCTIONS: readonly BuiltinFunction[] = [
  {
    name: 'printf',
    role: 'statement',
    doc: {
      usage: '`printf(fmt, ...)`',
      note: '`%d %i %u %x %X %o %s %c %p %%`, `%r`/`%rx`/`%rh` for buffers, `l`/`ll`/`h`/`hh` modifiers, widths, flags, precision',
    },
  },
  {
    name: 'errorf',
    role: 'statement',
    doc: { usage: '`errorf(fmt, ...)`', note: "on stderr as an ERROR at the call's location" },
  },
  {
    name: 'warnf',
    role: 'statement',
    doc: {
      usage: '`warnf(fmt, ...)`',
      note: "on stderr as a WARNING at the call's location (`--no-warnings` silences it)",
    },
  },
  {
    name: 'debugf',
    role: 'statement',
    doc: {
      usage: '`debugf(fmt, ...)`',
      note: "into the kernel's trace buffer with `bpf_trace_vprintk`; integers, pointers and strings, at most 12 values",
    },
  },
  {
    name: 'print',
    role: 'statement',
    doc: { usage: '`print(@m[, top[, div]])`, `print(value)`' },
  },
  { name: 'exit', role: 'statement', doc: { usage: '`exit([code])`' } },
  { name: 'system', role: 'statement', doc: { usage: '`system(fmt, ...)`', note: '`--unsafe`' } },
  { name: 'cat', role: 'statement', doc: { usage: '`cat(fmt, ...)`' } },
  { name: 'signal', role: 'statement', doc: { usage: '`signal(sig)`', note: '`--unsafe`' } },
  {
    name: 'getopt',
    doc: {
      usage: '`getopt(name[, default[, description]])`',
      note: 'named program options after `--` (`-- --aa=5 --dd`), typed by the default; `-- --help` lists them',
    },
  },
];
