/**
 * Addresses, symbols and names (bpftrace `docs/stdlib.md`): `ksym`/`usym` (symbolized when printed), `kaddr`,
 * `uaddr`, `percpu_kaddr`, `kptr`/`uptr`, `path`, `syscall_name`/`signal_name`. Host facts (kernel symbols,
 * uaddr() resolution) come through the Target. Their checks and code are still in the analyser's `call()` and
 * the generator's `callExpr()`.
 */
import type { BuiltinFunction } from './types.js';

const NAMES_NOTE =
  "bpftrace's tables (the uapi syscall numbers of this architecture, strsignal(3) text for 0..64, else `Unknown syscall` / `N/A`), resolved in user space when printed, so they print and key maps but cannot be compared with strings in the program";

export const SYMBOL_FUNCTIONS: readonly BuiltinFunction[] = [
  { name: 'ksym', doc: { usage: '`ksym(addr)`' } },
  { name: 'usym', doc: { usage: '`usym(addr)`' } },
  { name: 'kaddr', doc: { usage: '`kaddr("sym")`' } },
  {
    name: 'uaddr',
    doc: {
      usage: '`uaddr("sym")`',
      note: "uprobe/uretprobe/usdt: the symbol's address from the probed binary's ELF symbols, typed `uint8/16/32/64 *` by its size; uretprobes of PIE binaries are a positioned error (bpftrace uses task_vma kfuncs)",
    },
  },
  {
    name: 'percpu_kaddr',
    doc: {
      usage: '`percpu_kaddr(name[, cpu])`',
      note: 'where the kernel lists data symbols in kallsyms (CONFIG_KALLSYMS_ALL); elsewhere a positioned error, as for bpftrace',
    },
  },
  { name: 'kptr', doc: { usage: '`kptr(p)`' } },
  { name: 'uptr', doc: { usage: '`uptr(p)`' } },
  {
    name: 'path',
    doc: {
      usage: '`path(p[, size])`',
      note: 'bpf_d_path: fentry/fexit of the functions the kernel allows (tested in the Debian 6.1 guest); elsewhere a positioned error',
    },
  },
  { name: 'syscall_name', doc: { usage: '`syscall_name(n)`', note: NAMES_NOTE } },
  { name: 'signal_name', doc: { usage: '`signal_name(n)`', note: NAMES_NOTE } },
];
