/** bpf(2) program commands (see bpf.ts): PROG_LOAD with the verifier log, PROG_TEST_RUN. */
import { BpfscopeError, KernelError } from '../errors.js';
import { address, Errno, sysBpf } from './ffi.js';
import { attr, BpfCmd, bpfError, call, cString, isPrivileged, logText, ptr, writeObjName } from './bpf-attr.js';

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
