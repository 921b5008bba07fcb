/**
 * Kernel-function probes for tools that follow bcc's kprobe/fentry programs (vfsstat, filetop, ext4slower,
 * cachestat, capable's fallback): which mechanism this kernel allows, decided by trying it (`kernel/features.ts`
 * loads and attaches a probe program; DESIGN.md decision 5), whether a function can be probed, and the one
 * sentence a tool exits with when neither kprobes nor fentry work (as on the development VM: no CONFIG_KPROBES,
 * trampolines refused with EPERM). Also the hardware PMU check for llcstat.
 */
import { hasFeature } from '../../kernel/features.js';
import { onlineCpus } from '../../kernel/cpus.js';
import { close } from '../../kernel/ffi.js';
import { PerfType } from '../../kernel/perf.js';
import { openCounter } from '../../probes/counter.js';
import { kallsyms } from '../../symbols/kallsyms.js';
import type { BpfscopeError } from '../../errors.js';
import { unsupported } from './runner.js';

/** How a tool's program reaches kernel functions: `kprobe:`/`kretprobe:` or `fentry:`/`fexit:`. */
export type KfuncKind = 'kprobe' | 'fentry';

/**
 * The mechanism to use: with `preferFentry` (bcc's tools that check `BPF.support_kfunc()` first, like vfsstat)
 * fentry when it loads, else kprobes; otherwise kprobes, else fentry. null when neither works here.
 */
export function kfuncKind(preferFentry = false): KfuncKind | null {
  const order: KfuncKind[] = preferFentry ? ['fentry', 'kprobe'] : ['kprobe', 'fentry'];
  // only the two probes asked about: features() would run all thirteen (~20-40 ms of program loads at start-up)
  return order.find((k) => hasFeature(k)) ?? null;
}

/**
 * The error a tool exits with when `kfuncKind` is null: one sentence naming what the tool needs (`what`, e.g.
 * "counting calls of vfs_read() and the other VFS functions") and what the kernel lacks.
 */
export function noKfuncError(tool: string, what: string, fentryToo = true): BpfscopeError {
  return unsupported(
    fentryToo
      ? `${tool}: ${what} needs kprobes or fentry, and this kernel has neither (it was built without CONFIG_KPROBES and refuses BPF trampoline programs)`
      : `${tool}: ${what} needs kprobes, and this kernel has none (it was built without CONFIG_KPROBES)`,
  );
}

/** Whether kernel function `name` (core kernel or a module) is in /proc/kallsyms as a text symbol. */
export function kernelFunctionExists(name: string): boolean {
  try {
    return kallsyms()
      .lookupAll(name)
      .some((e) => e.type === 't' || e.type === 'T');
  } catch {
    return false;
  }
}

/** The first of `names` that {@link kernelFunctionExists}, or undefined (bcc's `get_kprobe_functions` fallbacks). */
export function firstKernelFunction(names: string[]): string | undefined {
  return names.find(kernelFunctionExists);
}

/** Address of kernel data symbol `name` from /proc/kallsyms (any type), or undefined. */
export function kernelSymbolAddress(name: string): bigint | undefined {
  try {
    return kallsyms().lookup(name);
  } catch {
    return undefined;
  }
}

/**
 * Whether hardware events (PERF_TYPE_HARDWARE, `config`: `enum perf_hw_id` of uapi linux/perf_event.h, e.g. 3 =
 * cache misses) can be opened on the first online CPU: false on machines without a PMU the kernel exposes (most
 * virtual machines).
 */
export function hardwareEventsWork(config = 3): boolean {
  try {
    close(openCounter(PerfType.HARDWARE, config, 1_000_000, onlineCpus()[0] ?? 0).fd);
    return true;
  } catch {
    return false;
  }
}
