/**
 * The host facts a program is compiled against, behind one interface: the analyser (`lang/passes/semantic.ts`)
 * and the code generator (`codegen/`) ask a {@link Target} and never read /proc, /sys or ELF files themselves.
 * The runtime creates the real one (`src/target.ts` hostTarget(), what `compile()` uses when given none); tests
 * pass a fake to compile for a machine with other CPUs, namespaces or symbols.
 *
 * Kernel BTF (`lang/btf-types.ts` kernelBtf()) is not part of it yet: types are still loaded from
 * /sys/kernel/btf/vmlinux directly.
 */
import type { ExpandedProbe } from './probe.js';

/** Where a `uaddr()` symbol is, and how to turn its ELF address into the process's address. */
export interface UaddrTarget {
  /** The symbol's ELF virtual address (`st_value`). */
  vaddr: number;
  /** `st_size` in bytes: 1, 2, 4 or 8 type the pointer (`uint8 *` ... `uint64 *`), anything else `uint64 *`. */
  size: number;
  /**
   * For position-independent binaries (ET_DYN): the ELF virtual address of the probed instruction. The load bias
   * is then `ip - probeVaddr` at run time (the probe fires with `ip` at that instruction), so the symbol is at
   * `ip - probeVaddr + vaddr`. Undefined for fixed-address executables, where `vaddr` is the address.
   */
  probeVaddr?: number;
}

/** A PID namespace, as `bpf_get_ns_current_pid_tgid(dev, ino, ...)` names it: `stat()` of its `/proc/PID/ns/pid`. */
export interface PidNamespace {
  dev: bigint;
  ino: bigint;
}

/** Host facts for compilation. Every method may be called several times; implementations cache what they read. */
export interface Target {
  /** Ids of the online CPUs (`/sys/devices/system/cpu/online`): the `ncpus` builtin is their count. */
  onlineCpus(): readonly number[];
  /**
   * Ids of the possible CPUs (`/sys/devices/system/cpu/possible`): per-CPU loops run over them (`percpu_kaddr` of
   * a CPU, per-CPU map reads).
   */
  possibleCpus(): readonly number[];
  /**
   * The PID namespace `pid`/`tid` are reported in (bpfscope's own), or null when that is the initial namespace
   * (then the plain pid/tgid helper gives the same ids).
   */
  pidNamespace(): PidNamespace | null;
  /** A kernel symbol's address (`/proc/kallsyms`), undefined when the kernel does not list it. */
  kernelSymbolAddress(name: string): bigint | undefined;
  /**
   * The cgroup v2 id of the cgroupfs directory at `path` (bpftrace's compile-time `cgroupid()`: the directory's
   * inode number, the kernfs node id `bpf_get_current_cgroup_id()` returns); undefined when it cannot be read.
   */
  cgroupId(path: string): bigint | undefined;
  /**
   * `uaddr(symbol)` in `probe`: where the symbol is in the probed binary, or one sentence saying why it cannot be
   * resolved (wrong probe type, unknown symbol, a uretprobe on a position-independent binary).
   */
  resolveUaddr(probe: ExpandedProbe, symbol: string): UaddrTarget | string;
}
