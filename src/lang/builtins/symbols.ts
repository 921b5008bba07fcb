/**
 * Addresses, symbols and names (bpftrace `docs/stdlib.md`): `ksym`/`usym` (symbolized when printed), `kaddr`,
 * `uaddr`, `percpu_kaddr`, `kptr`/`uptr`, `path`, `syscall_name`/`signal_name`. Host facts (kernel symbols,
 * uaddr() resolution) come through the Target. Their checks and code are still in the analyser's `call()` and
 * the generator's `callExpr()`.
 */
import type { CallExpr } from '../ast.js';
import { type SType, typeName, U64 } from '../types.js';
import type { BuiltinChecker, BuiltinFunction } from './types.js';

/** One integer argument, `kind` the result (printed as a name in user space: runtime/decode.ts). */
function intNamed(c: CallExpr, a: BuiltinChecker): void {
  const arg = c.args[0]!;
  const t = a.expr(arg);
  if (t && t.kind !== 'int') a.error(arg.pos, `${c.name}() expects an integer (${typeName(t)} provided)`);
}

/** `kptr(p)`/`uptr(p)`: the value as a pointer into kernel/user memory. */
function ptrCheck(space: 'kernel' | 'user'): BuiltinFunction['check'] {
  return (c, a) => {
    const t = a.expr(c.args[0]!);
    if (t && t.kind !== 'int' && t.kind !== 'pointer') {
      a.error(c.args[0]!.pos, `${c.name}() expects an integer or pointer (${typeName(t)} provided)`);
      return null;
    }
    const to: SType = t?.kind === 'pointer' ? t.to : { kind: 'int', size: 1, signed: true };
    return { kind: 'pointer', to, space };
  };
}

const NAMES_NOTE =
  "bpftrace's tables (the uapi syscall numbers of this architecture, strsignal(3) text for 0..64, else `Unknown syscall` / `N/A`), resolved in user space when printed, so they print and key maps but cannot be compared with strings in the program";

export const SYMBOL_FUNCTIONS: readonly BuiltinFunction[] = [
  {
    name: 'ksym',
    arity: [1, 1],
    check(c, a) {
      const t = a.expr(c.args[0]!);
      if (t && t.kind !== 'int' && t.kind !== 'pointer') {
        a.error(c.args[0]!.pos, `ksym() expects an integer or pointer argument (${typeName(t)} provided)`);
      }
      return { kind: 'ksym' };
    },
    generate: (c, g) => g.scalar(c.args[0]!),
    doc: { usage: '`ksym(addr)`' },
  },
  { name: 'usym', doc: { usage: '`usym(addr)`' } },
  {
    name: 'kaddr',
    arity: [1, 1],
    check(c, a) {
      const sym = c.args[0]!;
      if (sym.kind !== 'StrLit') {
        a.error(sym.pos, 'kaddr() expects a string literal symbol name');
        return null;
      }
      if (a.target.kernelSymbolAddress(sym.value) === undefined)
        a.error(c.pos, `Failed to resolve kernel symbol: ${sym.value}`);
      return U64;
    },
    generate: (c, g) => g.constant(g.target.kernelSymbolAddress((c.args[0] as { value: string }).value) ?? 0n),
    doc: { usage: '`kaddr("sym")`' },
  },
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
  {
    name: 'kptr',
    arity: [1, 1],
    check: ptrCheck('kernel'),
    generate: (c, g) => g.scalar(c.args[0]!),
    doc: { usage: '`kptr(p)`' },
  },
  {
    name: 'uptr',
    arity: [1, 1],
    check: ptrCheck('user'),
    generate: (c, g) => g.scalar(c.args[0]!),
    doc: { usage: '`uptr(p)`' },
  },
  {
    name: 'path',
    doc: {
      usage: '`path(p[, size])`',
      note: 'bpf_d_path: fentry/fexit of the functions the kernel allows (tested in the Debian 6.1 guest); elsewhere a positioned error',
    },
  },
  {
    name: 'syscall_name',
    arity: [1, 1],
    check: (c, a) => (intNamed(c, a), { kind: 'syscall_name' }),
    generate: (c, g) => g.scalar(c.args[0]!),
    doc: { usage: '`syscall_name(n)`', note: NAMES_NOTE },
  },
  {
    name: 'signal_name',
    arity: [1, 1],
    check: (c, a) => (intNamed(c, a), { kind: 'signal_name' }),
    generate: (c, g) => g.scalar(c.args[0]!),
    doc: { usage: '`signal_name(n)`', note: NAMES_NOTE },
  },
];
