/**
 * The common part of the bpf(2) commands (see bpf.ts): command numbers (`enum bpf_cmd`), the `union bpf_attr`
 * scratch buffer, running a command and turning its failure into a {@link KernelError}, pointers and object names.
 */
import { KernelError, PermissionError } from '../errors.js';
import { address, Errno, kernelError, sysBpf } from './ffi.js';
import { missingTracingCapabilities, privilegeMessage } from './privileges.js';

/** bpf(2) command numbers (`enum bpf_cmd`). */
export const BpfCmd = {
  MAP_CREATE: 0,
  MAP_LOOKUP_ELEM: 1,
  MAP_UPDATE_ELEM: 2,
  MAP_DELETE_ELEM: 3,
  MAP_GET_NEXT_KEY: 4,
  PROG_LOAD: 5,
  OBJ_PIN: 6,
  PROG_TEST_RUN: 10,
  PROG_GET_NEXT_ID: 11,
  MAP_GET_NEXT_ID: 12,
  PROG_GET_FD_BY_ID: 13,
  MAP_GET_FD_BY_ID: 14,
  OBJ_GET_INFO_BY_FD: 15,
  RAW_TRACEPOINT_OPEN: 17,
  BTF_LOAD: 18,
  BTF_GET_FD_BY_ID: 19,
  TASK_FD_QUERY: 20,
  MAP_LOOKUP_AND_DELETE_ELEM: 21,
  BTF_GET_NEXT_ID: 23,
  MAP_LOOKUP_BATCH: 24,
  MAP_LOOKUP_AND_DELETE_BATCH: 25,
  MAP_UPDATE_BATCH: 26,
  MAP_DELETE_BATCH: 27,
  LINK_CREATE: 28,
  LINK_GET_FD_BY_ID: 30,
  LINK_GET_NEXT_ID: 31,
  ENABLE_STATS: 32,
  ITER_CREATE: 33,
} as const;

const cmdNames = new Map<number, string>(Object.entries(BpfCmd).map(([k, v]) => [v, `BPF_${k}`]));

/** Size of the `union bpf_attr` buffers we pass: covers every field used here; the kernel checks the rest is 0. */
export const BPF_ATTR_SIZE = 168;

/** Flags of MAP_UPDATE_ELEM (`BPF_ANY`, `BPF_NOEXIST`, `BPF_EXIST`). */
export const BPF_ANY = 0;
export const BPF_NOEXIST = 1;
export const BPF_EXIST = 2;

/**
 * Whether this process has what tracing needs (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN; root has them): see
 * kernel/privileges.ts.
 */
export function isPrivileged(): boolean {
  return missingTracingCapabilities().length === 0;
}

/** The KernelError for a failed bpf command; EPERM/EACCES without privileges become {@link privilegeMessage}'s sentence. */
export function bpfError(cmd: number, err: number, what?: string): KernelError {
  const name = `bpf(${cmdNames.get(cmd) ?? cmd})`;
  const unprivileged = err === Errno.EPERM || err === Errno.EACCES ? privilegeMessage() : undefined;
  if (unprivileged) return new PermissionError(name, err, unprivileged);
  const e = kernelError(what ? `${name} ${what}` : name, err);
  if (err === Errno.EPERM) {
    return new PermissionError(e.syscall, err, e.message, {
      hint: 'the kernel refused although we are privileged: kernel lockdown or an LSM may forbid this',
    });
  }
  return e;
}

// One scratch attr buffer, zeroed before each command: the calls are synchronous, so it is never shared.
const scratch = Buffer.alloc(BPF_ATTR_SIZE);
export function attr(): Buffer {
  scratch.fill(0);
  return scratch;
}

/** Runs a command and throws its KernelError on failure; returns the non-negative result. */
export function call(cmd: number, a: Buffer, what?: string): number {
  const r = sysBpf(cmd, a);
  if (r < 0) throw bpfError(cmd, -r, what);
  return r;
}

export function ptr(buf: Buffer | null | undefined): bigint {
  return buf && buf.length > 0 ? address(buf) : 0n;
}

/** NUL-terminated C string in a Buffer. */
export function cString(s: string): Buffer {
  return Buffer.from(`${s}\0`, 'utf8');
}

/**
 * Writes an object name (`map_name`/`prog_name`, BPF_OBJ_NAME_LEN 16 with the NUL) at `off`: characters the kernel
 * refuses (anything but `[A-Za-z0-9_.]`) become `_`, and the name is cut to 15 bytes.
 */
export function writeObjName(a: Buffer, off: number, name: string | undefined): void {
  if (!name) return;
  const clean = name.replace(/[^A-Za-z0-9_.]/g, '_').slice(0, 15);
  a.write(clean, off, 'latin1');
}

/** The text of a NUL-terminated kernel log buffer (verifier, BTF). */
export function logText(log: Buffer): string {
  const end = log.indexOf(0);
  return log.toString('utf8', 0, end < 0 ? log.length : end);
}
