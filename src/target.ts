/**
 * The live host as a compilation {@link Target} (`lang/target.ts`): CPUs from /sys/devices/system/cpu, bpfscope's
 * PID namespace from /proc/self/ns/pid, kernel symbols from /proc/kallsyms, cgroup ids from cgroupfs, `uaddr()`
 * from the probed binary's ELF symbols. The runtime (`runtime/tracer.ts`) creates it for a run; `compile()` uses it
 * when the caller passes no target. It sits beside compiler.ts, above the layers that may not read the host
 * (lang/, codegen/), and below the runtime.
 */
import { statSync } from 'node:fs';
import { onlineCpus, possibleCpus } from './kernel/cpus.js';
import { currentPidNamespace } from './kernel/pidns.js';
import type { Target } from './lang/target.js';
import { resolveUaddr } from './probes/uaddr.js';
import { kallsyms } from './symbols/kallsyms.js';

/** The cgroup v2 id of the cgroupfs directory at `path`: its inode number; undefined when it cannot be read. */
export function cgroupIdOf(path: string): bigint | undefined {
  try {
    return statSync(path, { bigint: true }).ino;
  } catch {
    return undefined;
  }
}

/** The host this process runs on. Reads lazily, on the first question that needs each fact. */
export function hostTarget(): Target {
  return {
    onlineCpus,
    possibleCpus,
    pidNamespace: currentPidNamespace,
    kernelSymbolAddress: (name) => kallsyms().lookup(name),
    cgroupId: cgroupIdOf,
    resolveUaddr,
  };
}
