/**
 * Whether this process may trace, and the one sentence saying what it lacks when it may not.
 *
 * Tracing needs CAP_BPF (bpf(): maps, program loads) and CAP_PERFMON (tracing programs, perf_event_open), or
 * CAP_SYS_ADMIN, which the kernel accepts for both (`bpf_capable()`, `perfmon_capable()` in include/linux/capability.h).
 * root has all three. The effective set is read from `CapEff` in /proc/self/status (a hex mask of capability numbers,
 * include/uapi/linux/capability.h: CAP_SYS_ADMIN 21, CAP_PERFMON 38, CAP_BPF 39). bpftrace checks the same before it
 * runs anything (src/run_bpftrace.cpp check_privileges), with one message per missing capability.
 */
import { readFileSync } from 'node:fs';
import { PermissionError } from '../errors.js';

const CAP_SYS_ADMIN = 21n;
const CAP_PERFMON = 38n;
const CAP_BPF = 39n;

/** The start of every "not privileged" message. */
export const NEED_ROOT = 'bpfscope needs root (or CAP_BPF and CAP_PERFMON)';

/** This process's effective capability mask (`CapEff`), or 0 when /proc/self/status cannot be read. */
export function effectiveCapabilities(): bigint {
  try {
    const m = /^CapEff:\s*([0-9a-f]+)/m.exec(readFileSync('/proc/self/status', 'utf8'));
    return m ? BigInt(`0x${m[1]}`) : 0n;
  } catch {
    return 0n;
  }
}

let missingCache: string[] | undefined;

/** The tracing capabilities this process lacks, in the order CAP_BPF, CAP_PERFMON; empty when it may trace. Cached. */
export function missingTracingCapabilities(): string[] {
  if (missingCache) return missingCache;
  const caps = effectiveCapabilities();
  const has = (n: bigint) => (caps & (1n << n)) !== 0n;
  missingCache = has(CAP_SYS_ADMIN)
    ? []
    : [...(has(CAP_BPF) ? [] : ['CAP_BPF']), ...(has(CAP_PERFMON) ? [] : ['CAP_PERFMON'])];
  return missingCache;
}

/**
 * The sentence for a process that cannot trace: `bpfscope needs root (or CAP_BPF and CAP_PERFMON): this process has
 * neither` or `...: this process lacks CAP_PERFMON`; undefined when nothing is missing.
 */
export function privilegeMessage(missing: readonly string[] = missingTracingCapabilities()): string | undefined {
  if (missing.length === 0) return undefined;
  return `${NEED_ROOT}: this process ${missing.length > 1 ? 'has neither' : `lacks ${missing[0]}`}`;
}

/**
 * Refuse to go on without the privileges tracing needs, before anything is compiled, started or loaded.
 * @throws PermissionError with {@link privilegeMessage} (errno EPERM, syscall `bpf`: the call it would have failed)
 */
export function requireTracingPrivileges(): void {
  const message = privilegeMessage();
  if (message) throw new PermissionError('bpf', 1, message);
}
