/**
 * Addresses, symbols and names (bpftrace `docs/stdlib.md`): `ksym`/`usym` (symbolized when printed), `kaddr`,
 * `uaddr`, `percpu_kaddr`, `kptr`/`uptr`, `path`, `syscall_name`/`signal_name`. Host facts (kernel symbols,
 * uaddr() resolution) come through the Target. The code of `usym`, `uaddr`, `percpu_kaddr` and `path` is still in
 * the generator's `callExpr()`.
 */
import type { CallExpr } from '../ast.js';
import { btfVarId, kernelBtf } from '../btf-types.js';
import { type SType, stringType, typeName, U64 } from '../types.js';
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
  {
    name: 'usym',
    arity: [1, 1],
    check(c, a) {
      const t = a.expr(c.args[0]!);
      if (t && t.kind !== 'int' && t.kind !== 'pointer') {
        a.error(c.args[0]!.pos, `${c.name}() expects an integer or pointer argument (${typeName(t)} provided)`);
      }
      return { kind: 'usym' };
    },
    doc: { usage: '`usym(addr)`' },
  },
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
    arity: [1, 1],
    check(c, a) {
      const x = c.args[0]!;
      if (x.kind !== 'StrLit') {
        a.error(x.pos, 'uaddr() expects a string literal symbol name');
        return null;
      }
      const target = a.target.resolveUaddr(a.probe, x.value);
      if (typeof target === 'string') {
        a.error(c.pos, target);
        return null;
      }
      const size = ([1, 2, 4, 8] as const).find((n) => n === target.size) ?? 8;
      return { kind: 'pointer', to: { kind: 'int', size, signed: false }, space: 'user' };
    },
    doc: {
      usage: '`uaddr("sym")`',
      note: "uprobe/uretprobe/usdt: the symbol's address from the probed binary's ELF symbols, typed `uint8/16/32/64 *` by its size; uretprobes of PIE binaries are a positioned error (bpftrace uses task_vma kfuncs)",
    },
  },
  {
    name: 'percpu_kaddr',
    arity: [1, 2],
    check(c, a) {
      // a per-CPU kernel variable's address on `cpu` or this CPU (bpftrace docs/stdlib.md)
      const x = c.args[0]!;
      if (x.kind !== 'StrLit') {
        a.error(x.pos, 'percpu_kaddr() expects a string literal variable name');
        return null;
      }
      const cpu = c.args[1];
      if (cpu) {
        const t = a.expr(cpu);
        if (t && t.kind !== 'int') a.error(cpu.pos, `percpu_kaddr() expects an integer cpu (${typeName(t)} provided)`);
      }
      if (btfVarId(kernelBtf(), x.value) === undefined) {
        a.error(c.pos, `Could not resolve variable "${x.value}" from BTF`);
        return null;
      }
      if (a.target.kernelSymbolAddress(x.value) === undefined) {
        // the verifier finds a variable's address with kallsyms, which lists data symbols only with KALLSYMS_ALL
        a.error(
          c.pos,
          `percpu_kaddr(): the kernel cannot give the address of "${x.value}" (not in /proc/kallsyms: this kernel is built without CONFIG_KALLSYMS_ALL)`,
        );
        return null;
      }
      return { kind: 'pointer', to: U64, space: 'kernel' };
    },
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
    arity: [1, 2],
    check(c, a) {
      // bpf_d_path(): fentry/fexit (and iter) programs of the kernel's btf_allowlist_d_path functions only
      const p = a.probe.provider;
      if (p !== 'fentry' && p !== 'fexit') {
        a.error(c.pos, `path() can only be used in fentry/fexit probes (the kernel's bpf_d_path helper), not '${p}'`);
        return null;
      }
      const t = a.expr(c.args[0]!);
      const isPath = (x: SType | null): boolean => x?.kind === 'record' && x.name === 'struct path';
      if (t && !isPath(t) && !(t.kind === 'pointer' && isPath(t.to))) {
        a.error(c.args[0]!.pos, `path() expects a struct path or a pointer to one (${typeName(t)} provided)`);
        return null;
      }
      let size = a.maxStrlen;
      const n = c.args[1];
      if (n) {
        const v = a.constValue(n);
        if (v === null || v <= 0n) {
          a.error(n.pos, 'path() expects a positive integer literal size');
          return null;
        }
        size = Number(v);
      }
      return stringType(size);
    },
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
