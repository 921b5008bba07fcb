/**
 * This process's PID namespace, for bpftrace's `pid`/`tid` builtins, which current bpftrace gives as seen from its
 * own PID namespace (`pid(curr_ns)`; `pid(init)` is the initial namespace's view). Programs read the namespaced ids
 * with bpf_get_ns_current_pid_tgid(dev, ino, ...), whose `dev`/`ino` identify the namespace file
 * `/proc/self/ns/pid` (include/uapi/linux/bpf.h).
 */
import { statSync } from 'node:fs';

/** Inode number of the initial PID namespace (PROC_PID_INIT_INO, include/linux/proc_ns.h). */
export const PROC_PID_INIT_INO = 0xeffffffc;

let cached: { dev: bigint; ino: bigint } | null | undefined;

/**
 * `{ dev, ino }` of this process's PID namespace file, or null when it is the initial namespace (then the plain
 * pid/tgid helper gives the same ids, cheaper) or cannot be read.
 */
export function currentPidNamespace(): { dev: bigint; ino: bigint } | null {
  if (cached !== undefined) return cached;
  try {
    const st = statSync('/proc/self/ns/pid', { bigint: true });
    cached = st.ino === BigInt(PROC_PID_INIT_INO) ? null : { dev: st.dev, ino: st.ino };
  } catch {
    cached = null;
  }
  return cached;
}
