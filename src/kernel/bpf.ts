/**
 * bpf(2) commands, each building a zeroed `union bpf_attr` at the offsets of `include/uapi/linux/bpf.h` (checked on
 * the development kernel, see KERNEL.md). These are thin, typed calls: objects (maps, programs) that own their file
 * descriptors live in `src/bpf/`.
 *
 * Errors: a failed command throws {@link KernelError} named `bpf(BPF_<CMD>)`; EPERM/EACCES from an unprivileged
 * process become the one sentence of kernel/privileges.ts ("bpfscope needs root (or CAP_BPF and CAP_PERFMON): this
 * process lacks CAP_BPF"). Expected
 * outcomes (a missing key, the end of a map walk) are return values, not errors. A program the verifier rejects
 * throws {@link VerifierError} with the verifier log.
 */
import { BpfscopeError, KernelError, PermissionError } from '../errors.js';
import { address, Errno, kernelError, sysBpf, sysBpfAsync } from './ffi.js';
import { missingTracingCapabilities, privilegeMessage } from './privileges.js';

/** bpf(2) command numbers (`enum bpf_cmd`). */
export const BpfCmd = {
  MAP_CREATE: 0,
  MAP_LOOKUP_ELEM: 1,
  MAP_UPDATE_ELEM: 2,
  MAP_DELETE_ELEM: 3,
  MAP_GET_NEXT_KEY: 4,
  PROG_LOAD: 5,
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
} as const;

const cmdNames = new Map<number, string>(Object.entries(BpfCmd).map(([k, v]) => [v, `BPF_${k}`]));

/** Size of the `union bpf_attr` buffers we pass: covers every field used here; the kernel checks the rest is 0. */
export const BPF_ATTR_SIZE = 168;

/** Flags of MAP_UPDATE_ELEM (`BPF_ANY`, `BPF_NOEXIST`, `BPF_EXIST`). */
export const BPF_ANY = 0;
export const BPF_NOEXIST = 1;
export const BPF_EXIST = 2;

/** `BPF_F_TEST_RUN_ON_CPU`: PROG_TEST_RUN on `cpu` (raw_tp programs only). */
export const BPF_F_TEST_RUN_ON_CPU = 1;

/** Verifier log levels (`BPF_LOG_LEVEL1`, `BPF_LOG_LEVEL2`, `BPF_LOG_STATS`); combine with `|`. */
export const LOG_LEVEL_NORMAL = 1;
export const LOG_LEVEL_VERBOSE = 2;
export const LOG_LEVEL_STATS = 4;

/** Smallest and largest verifier log buffer we use, in bytes (the kernel wants >= 128, caps at UINT_MAX >> 2). */
const LOG_MIN = 64 * 1024;
const LOG_MAX = 16 * 1024 * 1024;

/** A program the verifier rejected: `log` is the complete verifier log, `lines` the log split into lines. */
export class VerifierError extends KernelError {
  readonly lines: string[];
  constructor(
    errno: number,
    readonly log: string,
    readonly programName: string,
  ) {
    const lines = log.split('\n').filter((l, i, a) => l !== '' || i < a.length - 1);
    const last = [...lines].reverse().find((l) => l.trim() !== '' && !/^(processed|verification time)/.test(l));
    super(
      'bpf(BPF_PROG_LOAD)',
      errno,
      `the BPF verifier rejected program${programName ? ` '${programName}'` : ''}${last ? `: ${last.trim()}` : ''}`,
      { hint: 'run with -v to see the full verifier log', verifierLog: log },
    );
    this.name = 'VerifierError';
    this.lines = lines;
  }
}

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
function attr(): Buffer {
  scratch.fill(0);
  return scratch;
}

/** Runs a command and throws its KernelError on failure; returns the non-negative result. */
function call(cmd: number, a: Buffer, what?: string): number {
  const r = sysBpf(cmd, a);
  if (r < 0) throw bpfError(cmd, -r, what);
  return r;
}

function ptr(buf: Buffer | null | undefined): bigint {
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
function writeObjName(a: Buffer, off: number, name: string | undefined): void {
  if (!name) return;
  const clean = name.replace(/[^A-Za-z0-9_.]/g, '_').slice(0, 15);
  a.write(clean, off, 'latin1');
}

// ---------------------------------------------------------------------------------------------------------------
// Maps

/** Parameters of MAP_CREATE. Sizes in bytes. */
export interface MapCreateAttr {
  mapType: number;
  keySize: number;
  valueSize: number;
  maxEntries: number;
  /** `BPF_F_*` map flags (e.g. BPF_F_NO_PREALLOC 1). */
  flags?: number;
  /** Object name, shown by `bpftool map show` (sanitised, cut to 15 bytes). */
  name?: string;
  innerMapFd?: number;
  numaNode?: number;
  btfFd?: number;
  btfKeyTypeId?: number;
  btfValueTypeId?: number;
  /** `map_extra` (u64): bloom filter hash count, arena address. */
  mapExtra?: bigint;
}

/** BPF_MAP_CREATE: returns the new map fd. @throws KernelError */
export function mapCreate(p: MapCreateAttr): number {
  return call(BpfCmd.MAP_CREATE, mapCreateAttr(p, attr()), p.name ? `'${p.name}'` : undefined);
}

/**
 * BPF_MAP_CREATE on a worker thread: resolves to the new map fd, rejects with the same KernelError as
 * {@link mapCreate}. Preallocating a hash map of 10,240 entries takes the kernel 5-140 ms (PERCPU_HASH: one per-CPU
 * allocation per element), which the caller can spend on other work meanwhile.
 */
export function mapCreateAsync(p: MapCreateAttr): Promise<number> {
  // its own attr buffer: the scratch one is reused by the synchronous commands that run meanwhile
  const a = mapCreateAttr(p, Buffer.alloc(BPF_ATTR_SIZE));
  return new Promise((resolve, reject) => {
    sysBpfAsync(BpfCmd.MAP_CREATE, a, (r) => {
      if (r >= 0) resolve(r);
      else reject(bpfError(BpfCmd.MAP_CREATE, -r, p.name ? `'${p.name}'` : undefined));
    });
  });
}

/** Fills a zeroed `bpf_attr` for MAP_CREATE (`union bpf_attr`, include/uapi/linux/bpf.h). */
function mapCreateAttr(p: MapCreateAttr, a: Buffer): Buffer {
  a.writeUInt32LE(p.mapType, 0);
  a.writeUInt32LE(p.keySize, 4);
  a.writeUInt32LE(p.valueSize, 8);
  a.writeUInt32LE(p.maxEntries, 12);
  a.writeUInt32LE(p.flags ?? 0, 16);
  a.writeUInt32LE(p.innerMapFd ?? 0, 20);
  a.writeUInt32LE(p.numaNode ?? 0, 24);
  writeObjName(a, 28, p.name);
  a.writeUInt32LE(p.btfFd ?? 0, 48);
  a.writeUInt32LE(p.btfKeyTypeId ?? 0, 52);
  a.writeUInt32LE(p.btfValueTypeId ?? 0, 56);
  a.writeBigUInt64LE(p.mapExtra ?? 0n, 64);
  return a;
}

function elemAttr(fd: number, key: Buffer | null, value: Buffer | null, flags: number): Buffer {
  const a = attr();
  a.writeUInt32LE(fd, 0);
  a.writeBigUInt64LE(ptr(key), 8);
  a.writeBigUInt64LE(ptr(value), 16);
  a.writeBigUInt64LE(BigInt(flags), 24);
  return a;
}

/**
 * BPF_MAP_LOOKUP_ELEM: copies the value of `key` into `value` (its full user-space size: per-CPU maps need
 * `roundup(value_size, 8) * possible CPUs` bytes). Returns false when the key is absent (ENOENT). @throws KernelError
 */
export function mapLookup(fd: number, key: Buffer, value: Buffer, flags = 0): boolean {
  const r = sysBpf(BpfCmd.MAP_LOOKUP_ELEM, elemAttr(fd, key, value, flags));
  if (r >= 0) return true;
  if (r === -Errno.ENOENT) return false;
  throw bpfError(BpfCmd.MAP_LOOKUP_ELEM, -r);
}

/** BPF_MAP_UPDATE_ELEM with BPF_ANY/NOEXIST/EXIST. @throws KernelError (EEXIST, ENOENT, E2BIG when full, ...) */
export function mapUpdate(fd: number, key: Buffer, value: Buffer, flags = BPF_ANY): void {
  call(BpfCmd.MAP_UPDATE_ELEM, elemAttr(fd, key, value, flags));
}

/** BPF_MAP_DELETE_ELEM: returns false when the key was absent. @throws KernelError (EINVAL on arrays) */
export function mapDelete(fd: number, key: Buffer): boolean {
  const r = sysBpf(BpfCmd.MAP_DELETE_ELEM, elemAttr(fd, key, null, 0));
  if (r >= 0) return true;
  if (r === -Errno.ENOENT) return false;
  throw bpfError(BpfCmd.MAP_DELETE_ELEM, -r);
}

/**
 * BPF_MAP_GET_NEXT_KEY: writes the key after `key` (the first key when `key` is null) into `next`. Returns false at
 * the end of the map. @throws KernelError
 */
export function mapGetNextKey(fd: number, key: Buffer | null, next: Buffer): boolean {
  const r = sysBpf(BpfCmd.MAP_GET_NEXT_KEY, elemAttr(fd, key, next, 0));
  if (r >= 0) return true;
  if (r === -Errno.ENOENT) return false;
  throw bpfError(BpfCmd.MAP_GET_NEXT_KEY, -r);
}

/** BPF_MAP_LOOKUP_AND_DELETE_ELEM (also pops queues/stacks with `key` null). Returns false when absent/empty. */
export function mapLookupAndDelete(fd: number, key: Buffer | null, value: Buffer, flags = 0): boolean {
  const r = sysBpf(BpfCmd.MAP_LOOKUP_AND_DELETE_ELEM, elemAttr(fd, key, value, flags));
  if (r >= 0) return true;
  if (r === -Errno.ENOENT) return false;
  throw bpfError(BpfCmd.MAP_LOOKUP_AND_DELETE_ELEM, -r);
}

/** One MAP_LOOKUP_BATCH step's result: `count` elements were written; `done` when the map has no more. */
export interface BatchStep {
  count: number;
  done: boolean;
}

/**
 * One BPF_MAP_LOOKUP_BATCH (or LOOKUP_AND_DELETE_BATCH with `del`) step. `inBatch` null starts at the beginning;
 * the kernel writes its position into `outBatch` (>= key size bytes; pass it back as `inBatch`). `keys`/`values`
 * hold up to `max` elements. Returns the count written and whether the walk is finished (ENOENT, possibly with a
 * final non-empty batch). @throws KernelError (EINVAL/ENOTSUPP when the map type has no batch ops, ENOSPC when a
 * hash bucket holds more than `max` elements)
 */
export function mapLookupBatch(
  fd: number,
  inBatch: Buffer | null,
  outBatch: Buffer,
  keys: Buffer,
  values: Buffer,
  max: number,
  del = false,
): BatchStep {
  const a = attr();
  a.writeBigUInt64LE(ptr(inBatch), 0);
  a.writeBigUInt64LE(ptr(outBatch), 8);
  a.writeBigUInt64LE(ptr(keys), 16);
  a.writeBigUInt64LE(ptr(values), 24);
  a.writeUInt32LE(max, 32);
  a.writeUInt32LE(fd, 36);
  const cmd = del ? BpfCmd.MAP_LOOKUP_AND_DELETE_BATCH : BpfCmd.MAP_LOOKUP_BATCH;
  const r = sysBpf(cmd, a);
  const count = a.readUInt32LE(32);
  if (r >= 0) return { count, done: false };
  if (r === -Errno.ENOENT) return { count, done: true };
  throw bpfError(cmd, -r);
}

/** All elements of a map, keys and values packed back to back (`count` of each). */
export interface MapDump {
  count: number;
  /** `count * keySize` bytes. */
  keys: Buffer;
  /** `count * valueBytes` bytes (per-CPU maps: each value is all CPUs' slots). */
  values: Buffer;
  /** Whether the batch API was used (false: the get_next_key + lookup fallback). */
  batched: boolean;
}

/** errnos that mean "this map type has no batch operations". */
function batchUnsupported(e: unknown): boolean {
  return (
    e instanceof KernelError &&
    (e.errno === Errno.EINVAL || e.errno === Errno.ENOTSUPP || e.errno === Errno.EOPNOTSUPP || e.errno === Errno.ENOSYS)
  );
}

/**
 * Reads every element of a map: BPF_MAP_LOOKUP_BATCH in chunks of `chunk` elements when the map type supports it,
 * otherwise a get_next_key walk with one lookup per key (keys deleted during the walk are skipped). `valueBytes` is
 * the user-space value size (per-CPU: `roundup(value_size, 8) * possible CPUs`). `useBatch` false forces the walk.
 * @throws KernelError
 */
export function mapDump(
  fd: number,
  keySize: number,
  valueBytes: number,
  opts: { chunk?: number; useBatch?: boolean } = {},
): MapDump {
  if (opts.useBatch !== false) {
    try {
      return dumpBatch(fd, keySize, valueBytes, opts.chunk ?? 256);
    } catch (e) {
      if (!batchUnsupported(e)) throw e;
    }
  }
  return dumpWalk(fd, keySize, valueBytes);
}

function dumpBatch(fd: number, keySize: number, valueBytes: number, chunk: number): MapDump {
  const keyParts: Buffer[] = [];
  const valueParts: Buffer[] = [];
  let total = 0;
  let inBatch: Buffer | null = null;
  let outBatch: Buffer = Buffer.alloc(Math.max(keySize, 8));
  for (;;) {
    const keys = Buffer.alloc(chunk * keySize);
    const values = Buffer.alloc(chunk * valueBytes);
    let step: BatchStep;
    try {
      step = mapLookupBatch(fd, inBatch, outBatch, keys, values, chunk);
    } catch (e) {
      // A hash bucket larger than the chunk: retry the same position with a bigger chunk.
      if (e instanceof KernelError && e.errno === Errno.ENOSPC && chunk < 1 << 20) {
        chunk *= 4;
        continue;
      }
      throw e;
    }
    if (step.count > 0) {
      keyParts.push(keys.subarray(0, step.count * keySize));
      valueParts.push(values.subarray(0, step.count * valueBytes));
      total += step.count;
    }
    if (step.done) break;
    const next: Buffer = inBatch ?? Buffer.alloc(outBatch.length);
    inBatch = outBatch;
    outBatch = next;
  }
  return { count: total, keys: Buffer.concat(keyParts), values: Buffer.concat(valueParts), batched: true };
}

function dumpWalk(fd: number, keySize: number, valueBytes: number): MapDump {
  const keyParts: Buffer[] = [];
  const valueParts: Buffer[] = [];
  let prev: Buffer | null = null;
  for (;;) {
    const next = Buffer.alloc(keySize);
    if (!mapGetNextKey(fd, prev, next)) break;
    const value = Buffer.alloc(valueBytes);
    if (mapLookup(fd, next, value)) {
      keyParts.push(next);
      valueParts.push(value);
    }
    prev = next;
  }
  return {
    count: keyParts.length,
    keys: Buffer.concat(keyParts),
    values: Buffer.concat(valueParts),
    batched: false,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Programs

/** Parameters of PROG_LOAD. */
export interface ProgLoadAttr {
  progType: number;
  /** Instructions, 8 bytes each. */
  insns: Buffer;
  /** License string; helpers like probe_read need a GPL-compatible one. Default "GPL". */
  license?: string;
  /** Object name shown by `bpftool prog show` (sanitised, cut to 15 bytes). */
  name?: string;
  expectedAttachType?: number;
  attachBtfId?: number;
  attachBtfObjFd?: number;
  progFlags?: number;
  kernVersion?: number;
  /** fd of the program's own BTF (from btfLoad), needed with `funcInfo`. */
  progBtfFd?: number;
  /** `struct bpf_func_info` records (u32 insn_off, u32 type_id; 8 bytes each): one per function of the program. */
  funcInfo?: Buffer;
  /**
   * Verifier log level for the first load (`LOG_LEVEL_*`, e.g. LOG_LEVEL_STATS to get "processed N insns" on
   * success). 0/undefined: load without a log and retry with level 1 only when the load fails.
   */
  logLevel?: number;
  /** Initial log buffer size in bytes (default 64 KiB; grows x4 on ENOSPC up to 16 MiB). */
  logSize?: number;
}

/** A loaded program: its fd and, when a log was requested, the verifier log of the successful load. */
export interface ProgLoadResult {
  fd: number;
  log?: string;
}

function progLoadAttempt(p: ProgLoadAttr, license: Buffer, logLevel: number, log: Buffer | null) {
  const a = attr();
  a.writeUInt32LE(p.progType, 0);
  a.writeUInt32LE(p.insns.length / 8, 4);
  a.writeBigUInt64LE(address(p.insns), 8);
  a.writeBigUInt64LE(address(license), 16);
  if (log) {
    a.writeUInt32LE(logLevel, 24);
    a.writeUInt32LE(log.length, 28);
    a.writeBigUInt64LE(address(log), 32);
  }
  a.writeUInt32LE(p.kernVersion ?? 0, 40);
  a.writeUInt32LE(p.progFlags ?? 0, 44);
  writeObjName(a, 48, p.name);
  a.writeUInt32LE(p.expectedAttachType ?? 0, 68);
  if (p.funcInfo && p.progBtfFd !== undefined) {
    a.writeUInt32LE(p.progBtfFd, 72);
    a.writeUInt32LE(8, 76); // func_info_rec_size
    a.writeBigUInt64LE(address(p.funcInfo), 80);
    a.writeUInt32LE(p.funcInfo.length / 8, 88);
  }
  a.writeUInt32LE(p.attachBtfId ?? 0, 108);
  a.writeUInt32LE(p.attachBtfObjFd ?? 0, 112);
  const r = sysBpf(BpfCmd.PROG_LOAD, a);
  // log_true_size (kernel >= 6.4): bytes the whole log needs, including the NUL.
  const trueSize = a.readUInt32LE(140);
  return { r, trueSize };
}

function logText(log: Buffer): string {
  const end = log.indexOf(0);
  return log.toString('utf8', 0, end < 0 ? log.length : end);
}

/**
 * BPF_PROG_LOAD. Loads without a verifier log first (fast path) unless `logLevel` asks for one; on failure retries
 * with a log (level 1 or the requested one), growing the buffer on ENOSPC (to `log_true_size` when the kernel
 * reports it) up to 16 MiB.
 * @throws VerifierError when the kernel rejected the program and wrote a log; KernelError otherwise (EPERM without
 * privileges as the sentence of {@link privilegeMessage}).
 */
export function progLoad(p: ProgLoadAttr): ProgLoadResult {
  if (p.insns.length === 0 || p.insns.length % 8 !== 0) {
    throw new BpfscopeError(`internal error: program '${p.name ?? ''}' is ${p.insns.length} bytes, not 8-byte insns`);
  }
  const license = cString(p.license ?? 'GPL');
  const wanted = p.logLevel ?? 0;
  // The verifier gives up with EAGAIN when a signal is pending (a -c child's SIGCHLD, a profiler's SIGPROF):
  // retry a few times, as libbpf does.
  const attempt = (level: number, log: Buffer | null): { r: number; trueSize: number } => {
    let res = progLoadAttempt(p, license, level, log);
    for (let i = 0; i < 5 && res.r === -Errno.EAGAIN; i++) res = progLoadAttempt(p, license, level, log);
    return res;
  };
  if (wanted === 0) {
    const { r } = attempt(0, null);
    if (r >= 0) return { fd: r };
    if (!isPrivileged() && (r === -Errno.EPERM || r === -Errno.EACCES)) throw bpfError(BpfCmd.PROG_LOAD, -r);
  }
  const level = wanted || LOG_LEVEL_NORMAL;
  let size = Math.max(p.logSize ?? LOG_MIN, 128);
  for (;;) {
    const log = Buffer.alloc(size);
    const { r, trueSize } = attempt(level, log);
    if (r >= 0) return wanted ? { fd: r, log: logText(log) } : { fd: r };
    if (r === -Errno.ENOSPC && size < LOG_MAX) {
      size = Math.min(LOG_MAX, Math.max(size * 4, trueSize));
      continue;
    }
    const text = logText(log);
    if (text.trim() !== '') throw new VerifierError(-r, text, p.name ?? '');
    throw bpfError(BpfCmd.PROG_LOAD, -r, p.name ? `'${p.name}'` : undefined);
  }
}

/** Result of PROG_TEST_RUN: the program's return value (r0, u32) and the average run time in ns. */
export interface TestRunResult {
  retval: number;
  durationNs: number;
  /** Bytes of ctx_out / data_out the kernel wrote (when buffers were given). */
  ctxSizeOut: number;
  dataSizeOut: number;
}

/**
 * BPF_PROG_TEST_RUN: runs a loaded program once (or `repeat` times) in the kernel. raw_tp programs take `ctxIn` (the
 * u64 argument array) and may pin a CPU with `flags` BPF_F_TEST_RUN_ON_CPU and `cpu`. @throws KernelError
 */
export function progTestRun(
  progFd: number,
  opts: {
    ctxIn?: Buffer;
    ctxOut?: Buffer;
    dataIn?: Buffer;
    dataOut?: Buffer;
    repeat?: number;
    flags?: number;
    cpu?: number;
  } = {},
): TestRunResult {
  const a = attr();
  a.writeUInt32LE(progFd, 0);
  a.writeUInt32LE(opts.dataIn?.length ?? 0, 8);
  a.writeUInt32LE(opts.dataOut?.length ?? 0, 12);
  a.writeBigUInt64LE(ptr(opts.dataIn), 16);
  a.writeBigUInt64LE(ptr(opts.dataOut), 24);
  a.writeUInt32LE(opts.repeat ?? 0, 32);
  a.writeUInt32LE(opts.ctxIn?.length ?? 0, 40);
  a.writeUInt32LE(opts.ctxOut?.length ?? 0, 44);
  a.writeBigUInt64LE(ptr(opts.ctxIn), 48);
  a.writeBigUInt64LE(ptr(opts.ctxOut), 56);
  a.writeUInt32LE(opts.flags ?? 0, 64);
  a.writeUInt32LE(opts.cpu ?? 0, 68);
  call(BpfCmd.PROG_TEST_RUN, a);
  return {
    retval: a.readUInt32LE(4),
    dataSizeOut: a.readUInt32LE(12),
    durationNs: a.readUInt32LE(36),
    ctxSizeOut: a.readUInt32LE(44),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Attaching

/**
 * BPF_RAW_TRACEPOINT_OPEN: attaches a raw_tp program to tracepoint `name` (no category: `sched_switch`), or a
 * tracing program (tp_btf/fentry, whose target came from attach_btf_id at load) with `name` null. Returns the link
 * fd; closing it detaches. @throws KernelError (ENOENT for an unknown tracepoint)
 */
export function rawTracepointOpen(name: string | null, progFd: number, cookie = 0n): number {
  const a = attr();
  const nameBuf = name === null ? null : cString(name);
  a.writeBigUInt64LE(ptr(nameBuf), 0);
  a.writeUInt32LE(progFd, 8);
  a.writeBigUInt64LE(cookie, 16);
  return call(BpfCmd.RAW_TRACEPOINT_OPEN, a, name ? `'${name}'` : undefined);
}

/** The attach-type-specific part of LINK_CREATE. */
export type LinkTarget =
  | { kind: 'perf_event'; cookie?: bigint }
  | { kind: 'tracing'; targetBtfId?: number; cookie?: bigint }
  | {
      kind: 'kprobe_multi';
      /** BPF_F_KPROBE_MULTI_RETURN (1) for kretprobes. */
      flags?: number;
      syms?: string[];
      addrs?: bigint[];
      cookies?: bigint[];
    }
  | {
      kind: 'uprobe_multi';
      path: string;
      /** File offsets of the probed instructions (bytes). */
      offsets: bigint[];
      refCtrOffsets?: bigint[];
      cookies?: bigint[];
      /** BPF_F_UPROBE_MULTI_RETURN (1) for uretprobes. */
      flags?: number;
      /** Only this process (0: all). */
      pid?: number;
    }
  | { kind: 'none' };

function u64Array(vals: bigint[] | undefined): Buffer | null {
  if (!vals || vals.length === 0) return null;
  const b = Buffer.alloc(vals.length * 8);
  vals.forEach((v, i) => b.writeBigUInt64LE(v, i * 8));
  return b;
}

/**
 * BPF_LINK_CREATE: attaches `progFd` to `targetFd` (a perf event fd for attach type PERF_EVENT 41, 0 for tracing /
 * multi links) with `attachType`. Returns the link fd; closing it detaches. @throws KernelError
 */
export function linkCreate(
  progFd: number,
  targetFd: number,
  attachType: number,
  target: LinkTarget,
  flags = 0,
): number {
  const a = attr();
  a.writeUInt32LE(progFd, 0);
  a.writeUInt32LE(targetFd, 4);
  a.writeUInt32LE(attachType, 8);
  a.writeUInt32LE(flags, 12);
  // Buffers referenced by pointer must stay alive until the call returns: keep them in `keep`.
  const keep: (Buffer | null)[] = [];
  switch (target.kind) {
    case 'perf_event':
      a.writeBigUInt64LE(target.cookie ?? 0n, 16);
      break;
    case 'tracing':
      a.writeUInt32LE(target.targetBtfId ?? 0, 16);
      a.writeBigUInt64LE(target.cookie ?? 0n, 24);
      break;
    case 'kprobe_multi': {
      const n = target.syms?.length ?? target.addrs?.length ?? 0;
      let symsBuf: Buffer | null = null;
      if (target.syms && target.syms.length > 0) {
        const strs = target.syms.map(cString);
        symsBuf = Buffer.alloc(strs.length * 8);
        strs.forEach((s, i) => symsBuf!.writeBigUInt64LE(address(s), i * 8));
        for (const s of strs) keep.push(s);
      }
      const addrs = u64Array(target.addrs);
      const cookies = u64Array(target.cookies);
      keep.push(symsBuf, addrs, cookies);
      a.writeUInt32LE(target.flags ?? 0, 16);
      a.writeUInt32LE(n, 20);
      a.writeBigUInt64LE(ptr(symsBuf), 24);
      a.writeBigUInt64LE(ptr(addrs), 32);
      a.writeBigUInt64LE(ptr(cookies), 40);
      break;
    }
    case 'uprobe_multi': {
      const path = cString(target.path);
      const offsets = u64Array(target.offsets);
      const refs = u64Array(target.refCtrOffsets);
      const cookies = u64Array(target.cookies);
      keep.push(path, offsets, refs, cookies);
      a.writeBigUInt64LE(ptr(path), 16);
      a.writeBigUInt64LE(ptr(offsets), 24);
      a.writeBigUInt64LE(ptr(refs), 32);
      a.writeBigUInt64LE(ptr(cookies), 40);
      a.writeUInt32LE(target.offsets.length, 48);
      a.writeUInt32LE(target.flags ?? 0, 52);
      a.writeUInt32LE(target.pid ?? 0, 56);
      break;
    }
    case 'none':
      break;
  }
  const fd = call(BpfCmd.LINK_CREATE, a, `attach_type ${attachType}`);
  keep.length = 0;
  return fd;
}

// ---------------------------------------------------------------------------------------------------------------
// Object info and BTF objects

/** BPF_OBJ_GET_INFO_BY_FD into `info` (its length is `info_len`); returns the length the kernel filled. */
export function objGetInfoByFd(fd: number, info: Buffer): number {
  const a = attr();
  a.writeUInt32LE(fd, 0);
  a.writeUInt32LE(info.length, 4);
  a.writeBigUInt64LE(address(info), 8);
  call(BpfCmd.OBJ_GET_INFO_BY_FD, a);
  return a.readUInt32LE(4);
}

/** `struct bpf_prog_info` fields bpfscope uses (offsets from uapi bpf.h, 232-byte struct). */
export interface ProgInfo {
  type: number;
  id: number;
  /** The 8-byte program tag as 16 hex digits (as bpftool prints it). */
  tag: string;
  jitedProgLen: number;
  /** Length in bytes of the translated (post-verifier) instructions. */
  xlatedProgLen: number;
  name: string;
  /** Map ids the program uses. */
  mapIds: number[];
  btfId: number;
  /** Cumulative run time in ns and run count (only counted while `kernel.bpf_stats_enabled` is 1). */
  runTimeNs: bigint;
  runCnt: bigint;
  /** Instructions the verifier processed. */
  verifiedInsns: number;
  /** When the program was loaded: ns since boot (CLOCK_BOOTTIME). */
  loadTimeNs: bigint;
  /** uid of the process that loaded it. */
  createdByUid: number;
  /** Whether its license is GPL-compatible. */
  gplCompatible: boolean;
  /** Times the program was not run because it was already running on that CPU (kernel >= 5.12). */
  recursionMisses: bigint;
  /** BTF object id and type id of the attach target (fentry, tp_btf, ...; 0 for others). */
  attachBtfObjId: number;
  attachBtfId: number;
  /** The translated instructions, when requested. */
  xlated?: Buffer;
}

const PROG_INFO_SIZE = 232;

function cStr(b: Buffer, off: number, len: number): string {
  const s = b.subarray(off, off + len);
  const end = s.indexOf(0);
  return s.toString('utf8', 0, end < 0 ? len : end);
}

/** Program info by fd; `xlated` also fetches the translated instructions. @throws KernelError */
export function progInfo(fd: number, opts: { xlated?: boolean } = {}): ProgInfo {
  let info = Buffer.alloc(PROG_INFO_SIZE);
  objGetInfoByFd(fd, info);
  const nrMaps = info.readUInt32LE(52);
  const xlatedLen = info.readUInt32LE(20);
  let maps: Buffer | null = null;
  let xlated: Buffer | null = null;
  if (nrMaps > 0 || (opts.xlated && xlatedLen > 0)) {
    // Second call with arrays: only the array pointers and counts may be non-zero in the input.
    const again = Buffer.alloc(PROG_INFO_SIZE);
    if (nrMaps > 0) {
      maps = Buffer.alloc(nrMaps * 4);
      again.writeUInt32LE(nrMaps, 52);
      again.writeBigUInt64LE(address(maps), 56);
    }
    if (opts.xlated && xlatedLen > 0) {
      xlated = Buffer.alloc(xlatedLen);
      again.writeUInt32LE(xlatedLen, 20);
      again.writeBigUInt64LE(address(xlated), 32);
    }
    objGetInfoByFd(fd, again);
    info = again;
  }
  const mapIds: number[] = [];
  if (maps) for (let i = 0; i < nrMaps; i++) mapIds.push(maps.readUInt32LE(i * 4));
  const out: ProgInfo = {
    type: info.readUInt32LE(0),
    id: info.readUInt32LE(4),
    tag: info.subarray(8, 16).toString('hex'),
    jitedProgLen: info.readUInt32LE(16),
    xlatedProgLen: xlatedLen,
    name: cStr(info, 64, 16),
    mapIds,
    btfId: info.readUInt32LE(128),
    runTimeNs: info.readBigUInt64LE(192),
    runCnt: info.readBigUInt64LE(200),
    verifiedInsns: info.readUInt32LE(216),
    loadTimeNs: info.readBigUInt64LE(40),
    createdByUid: info.readUInt32LE(48),
    gplCompatible: (info.readUInt32LE(84) & 1) !== 0,
    recursionMisses: info.readBigUInt64LE(208),
    attachBtfObjId: info.readUInt32LE(220),
    attachBtfId: info.readUInt32LE(224),
  };
  if (xlated) out.xlated = xlated;
  return out;
}

/** `struct bpf_map_info` fields (uapi bpf.h). */
export interface MapInfo {
  type: number;
  id: number;
  keySize: number;
  valueSize: number;
  maxEntries: number;
  flags: number;
  name: string;
  mapExtra: bigint;
  /** BTF object describing key and value (0: none). */
  btfId: number;
}

/** Map info by fd. @throws KernelError */
export function mapInfo(fd: number): MapInfo {
  const info = Buffer.alloc(88);
  objGetInfoByFd(fd, info);
  return {
    type: info.readUInt32LE(0),
    id: info.readUInt32LE(4),
    keySize: info.readUInt32LE(8),
    valueSize: info.readUInt32LE(12),
    maxEntries: info.readUInt32LE(16),
    flags: info.readUInt32LE(20),
    name: cStr(info, 24, 16),
    mapExtra: info.readBigUInt64LE(80),
    btfId: info.readUInt32LE(64),
  };
}

/** `struct bpf_btf_info`: id, name (module name for module BTF, "vmlinux"), whether it is kernel BTF. */
export interface BtfInfo {
  id: number;
  name: string;
  kernelBtf: boolean;
  size: number;
}

/** BTF object info by fd (name via a second buffer). @throws KernelError */
export function btfInfo(fd: number): BtfInfo {
  const name = Buffer.alloc(64);
  const info = Buffer.alloc(32);
  info.writeBigUInt64LE(address(name), 16);
  info.writeUInt32LE(name.length, 24);
  objGetInfoByFd(fd, info);
  return {
    size: info.readUInt32LE(8),
    id: info.readUInt32LE(12),
    name: cStr(name, 0, name.length),
    kernelBtf: info.readUInt32LE(28) !== 0,
  };
}

/**
 * BPF_BTF_LOAD: load a BTF blob (`Documentation/bpf/btf.rst` layout) and return its fd. On failure the kernel's BTF
 * log is in the error's message. @throws KernelError
 */
export function btfLoad(btf: Buffer): number {
  const log = Buffer.alloc(64 * 1024);
  const a = attr();
  a.writeBigUInt64LE(address(btf), 0);
  a.writeBigUInt64LE(address(log), 8);
  a.writeUInt32LE(btf.length, 16);
  a.writeUInt32LE(log.length, 20);
  a.writeUInt32LE(1, 24);
  const r = sysBpf(BpfCmd.BTF_LOAD, a);
  if (r < 0) throw bpfError(BpfCmd.BTF_LOAD, -r, logText(log).trim().split('\n').slice(-3).join('; '));
  return r;
}

/** BPF_BTF_GET_FD_BY_ID: an fd for a loaded BTF object (vmlinux, a module). @throws KernelError */
export function btfGetFdById(id: number): number {
  const a = attr();
  a.writeUInt32LE(id, 0);
  return call(BpfCmd.BTF_GET_FD_BY_ID, a, `id ${id}`);
}

/** BPF_BTF_GET_NEXT_ID: the next loaded BTF object id after `id` (0: the first), or undefined at the end. */
export function btfGetNextId(id: number): number | undefined {
  const a = attr();
  a.writeUInt32LE(id, 0);
  const r = sysBpf(BpfCmd.BTF_GET_NEXT_ID, a);
  if (r === -Errno.ENOENT) return undefined;
  if (r < 0) throw bpfError(BpfCmd.BTF_GET_NEXT_ID, -r);
  return a.readUInt32LE(4);
}

// ---------------------------------------------------------------------------------------------------------------
// Listing the system's objects (bpftool prog/map/link show, bpftool perf)

/** The kinds of BPF objects with ids. */
export type BpfObjectKind = 'prog' | 'map' | 'link';

const NEXT_ID_CMD: Record<BpfObjectKind, number> = {
  prog: BpfCmd.PROG_GET_NEXT_ID,
  map: BpfCmd.MAP_GET_NEXT_ID,
  link: BpfCmd.LINK_GET_NEXT_ID,
};
const FD_BY_ID_CMD: Record<BpfObjectKind, number> = {
  prog: BpfCmd.PROG_GET_FD_BY_ID,
  map: BpfCmd.MAP_GET_FD_BY_ID,
  link: BpfCmd.LINK_GET_FD_BY_ID,
};

/**
 * BPF_{PROG,MAP,LINK}_GET_NEXT_ID: the id of the next object of `kind` after `id` (0: the first), or undefined at the
 * end. Needs CAP_SYS_ADMIN. @throws KernelError (EPERM without it)
 */
export function objGetNextId(kind: BpfObjectKind, id: number): number | undefined {
  const a = attr();
  a.writeUInt32LE(id, 0);
  const r = sysBpf(NEXT_ID_CMD[kind], a);
  if (r === -Errno.ENOENT) return undefined;
  if (r < 0) throw bpfError(NEXT_ID_CMD[kind], -r);
  return a.readUInt32LE(4);
}

/**
 * BPF_{PROG,MAP,LINK}_GET_FD_BY_ID: a new fd for object `id` (the caller closes it), or undefined when the object
 * is gone (ENOENT). @throws KernelError
 */
export function objGetFdById(kind: BpfObjectKind, id: number): number | undefined {
  const a = attr();
  a.writeUInt32LE(id, 0);
  const r = sysBpf(FD_BY_ID_CMD[kind], a);
  if (r === -Errno.ENOENT) return undefined;
  if (r < 0) throw bpfError(FD_BY_ID_CMD[kind], -r, `id ${id}`);
  return r;
}

/** `enum bpf_link_type` values used by {@link linkInfo}. */
export const LinkType = {
  RAW_TRACEPOINT: 1,
  TRACING: 2,
  CGROUP: 3,
  ITER: 4,
  NETNS: 5,
  XDP: 6,
  PERF_EVENT: 7,
  KPROBE_MULTI: 8,
  STRUCT_OPS: 9,
  NETFILTER: 10,
  TCX: 11,
  UPROBE_MULTI: 12,
  NETKIT: 13,
  SOCKMAP: 14,
} as const;

/** `enum bpf_perf_event_type` (kernel >= 6.6): what a perf_event link is attached to. */
export const PerfEventType = {
  UNSPEC: 0,
  UPROBE: 1,
  URETPROBE: 2,
  KPROBE: 3,
  KRETPROBE: 4,
  TRACEPOINT: 5,
  EVENT: 6,
} as const;

/**
 * `struct bpf_link_info` (uapi bpf.h): common fields and the type-specific part bpfscope shows. Fields of a part the
 * running kernel does not fill stay undefined (perf_event details need 6.6, uprobe_multi 6.8).
 */
export interface LinkInfo {
  /** `enum bpf_link_type` ({@link LinkType}). */
  type: number;
  id: number;
  progId: number;
  /** raw_tracepoint: the tracepoint name (`sched_switch`). */
  tpName?: string;
  /** tracing (fentry, fexit, tp_btf, lsm...): `enum bpf_attach_type` and the target's BTF object/type ids. */
  attachType?: number;
  targetObjId?: number;
  targetBtfId?: number;
  /** cgroup, netns, tcx, netkit, sockmap: attach type; cgroup: its id. */
  cgroupId?: bigint;
  /** xdp, tcx, netkit: interface index. */
  ifindex?: number;
  /** iter: the iterator's target name. */
  iterTarget?: string;
  /** kprobe_multi / uprobe_multi: number of probed addresses, flags (1: return probes); kprobe_multi: misses. */
  count?: number;
  flags?: number;
  missed?: bigint;
  /** uprobe_multi: the probed file and the process it is limited to (0: all). */
  path?: string;
  pid?: number;
  /** perf_event: `enum bpf_perf_event_type` ({@link PerfEventType}); 0 when the kernel does not report it. */
  perfEventType?: number;
  /** perf_event uprobe: file name; kprobe: function name; tracepoint: tracepoint name. */
  perfName?: string;
  /** perf_event uprobe/kprobe: offset (bytes) from the file start / the function. */
  perfOffset?: number;
  /** perf_event kprobe: address; event: config. */
  perfAddr?: bigint;
  /** perf_event event: `perf_event_attr.type`. */
  perfEventAttrType?: number;
  cookie?: bigint;
}

const LINK_INFO_SIZE = 72;
const NAME_BUF = 4096;

/** BPF_OBJ_GET_INFO_BY_FD on a link fd, names included (a second call with name buffers). @throws KernelError */
export function linkInfo(fd: number): LinkInfo {
  const first = Buffer.alloc(LINK_INFO_SIZE);
  objGetInfoByFd(fd, first);
  const type = first.readUInt32LE(0);
  const out: LinkInfo = { type, id: first.readUInt32LE(4), progId: first.readUInt32LE(8) };
  const name = Buffer.alloc(NAME_BUF);
  const again = (ptrOff: number, lenOff: number): Buffer => {
    const b = Buffer.alloc(LINK_INFO_SIZE);
    b.writeBigUInt64LE(address(name), ptrOff);
    b.writeUInt32LE(name.length, lenOff);
    objGetInfoByFd(fd, b);
    return b;
  };
  switch (type) {
    case LinkType.RAW_TRACEPOINT: {
      again(16, 24);
      out.tpName = cStr(name, 0, name.length);
      break;
    }
    case LinkType.TRACING:
      out.attachType = first.readUInt32LE(16);
      out.targetObjId = first.readUInt32LE(20);
      out.targetBtfId = first.readUInt32LE(24);
      break;
    case LinkType.CGROUP:
      out.cgroupId = first.readBigUInt64LE(16);
      out.attachType = first.readUInt32LE(24);
      break;
    case LinkType.ITER: {
      again(16, 24);
      out.iterTarget = cStr(name, 0, name.length);
      break;
    }
    case LinkType.NETNS:
      out.attachType = first.readUInt32LE(20);
      break;
    case LinkType.XDP:
      out.ifindex = first.readUInt32LE(16);
      break;
    case LinkType.TCX:
    case LinkType.NETKIT:
      out.ifindex = first.readUInt32LE(16);
      out.attachType = first.readUInt32LE(20);
      break;
    case LinkType.KPROBE_MULTI:
      out.count = first.readUInt32LE(24);
      out.flags = first.readUInt32LE(28);
      out.missed = first.readBigUInt64LE(32);
      break;
    case LinkType.UPROBE_MULTI: {
      const b = again(16, 48);
      out.path = cStr(name, 0, name.length);
      out.count = b.readUInt32LE(52);
      out.flags = b.readUInt32LE(56);
      out.pid = b.readUInt32LE(60);
      break;
    }
    case LinkType.PERF_EVENT: {
      const pt = first.readUInt32LE(16);
      out.perfEventType = pt;
      if (pt === PerfEventType.EVENT) {
        out.perfAddr = first.readBigUInt64LE(24);
        out.perfEventAttrType = first.readUInt32LE(32);
        out.cookie = first.readBigUInt64LE(40);
      } else if (pt !== PerfEventType.UNSPEC) {
        const b = again(24, 32);
        out.perfName = cStr(name, 0, name.length);
        out.perfOffset = b.readUInt32LE(36);
        if (pt === PerfEventType.KPROBE || pt === PerfEventType.KRETPROBE) {
          out.perfAddr = b.readBigUInt64LE(40);
          out.missed = b.readBigUInt64LE(48);
          out.cookie = b.readBigUInt64LE(56);
        } else out.cookie = b.readBigUInt64LE(40);
      }
      break;
    }
  }
  return out;
}

/** `enum bpf_task_fd_type`: what kind of perf event (or raw tracepoint) a task's fd is. */
export const TaskFdType = {
  RAW_TRACEPOINT: 0,
  TRACEPOINT: 1,
  KPROBE: 2,
  KRETPROBE: 3,
  UPROBE: 4,
  URETPROBE: 5,
} as const;

/** The answer of BPF_TASK_FD_QUERY (`bpftool perf`): the program on a task's fd and where it is attached. */
export interface TaskFdInfo {
  progId: number;
  /** A {@link TaskFdType}. */
  fdType: number;
  /** Tracepoint name (`sys_enter_openat`), kprobe function, or uprobe file name; '' for a kprobe by address. */
  name: string;
  /** uprobe: offset in the file; kprobe: offset from the function (bytes). */
  probeOffset: bigint;
  /** kprobe by address: the address (0 otherwise). */
  probeAddr: bigint;
}

/**
 * BPF_TASK_FD_QUERY: which BPF program is attached through fd `fd` of process `pid` (a perf event fd:
 * tracepoint, kprobe or uprobe; or a raw tracepoint fd). Undefined when the fd has no program (ENOENT), is not such
 * an fd (ENOTSUPP, EINVAL) or is gone (EBADF, ESRCH). @throws KernelError (EPERM without CAP_SYS_ADMIN)
 */
export function taskFdQuery(pid: number, fd: number): TaskFdInfo | undefined {
  const name = Buffer.alloc(NAME_BUF);
  const a = attr();
  a.writeUInt32LE(pid, 0);
  a.writeUInt32LE(fd, 4);
  a.writeUInt32LE(name.length, 12);
  a.writeBigUInt64LE(address(name), 16);
  const r = sysBpf(BpfCmd.TASK_FD_QUERY, a);
  if (r < 0) {
    const err = -r;
    if (err === Errno.EPERM || err === Errno.EACCES) throw bpfError(BpfCmd.TASK_FD_QUERY, err);
    if (err === Errno.ENOSPC) throw bpfError(BpfCmd.TASK_FD_QUERY, err, `pid ${pid} fd ${fd}`);
    return undefined;
  }
  return {
    progId: a.readUInt32LE(24),
    fdType: a.readUInt32LE(28),
    name: cStr(name, 0, name.length),
    probeOffset: a.readBigUInt64LE(32),
    probeAddr: a.readBigUInt64LE(40),
  };
}

/**
 * BPF_ENABLE_STATS with BPF_STATS_RUN_TIME: programs count run_cnt and run_time_ns while the returned fd is open
 * (close it to turn them off again, unless `kernel.bpf_stats_enabled` is set). @throws KernelError (EPERM
 * without CAP_SYS_ADMIN, EBUSY never: the kernel counts holders)
 */
export function enableStats(): number {
  const a = attr();
  a.writeUInt32LE(0, 0); // BPF_STATS_RUN_TIME
  return call(BpfCmd.ENABLE_STATS, a);
}
