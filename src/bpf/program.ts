/**
 * Loading BPF programs: a loaded program is an object owning its fd. Program and attach type numbers come from
 * `enum bpf_prog_type` / `enum bpf_attach_type` in include/uapi/linux/bpf.h.
 */
import { BpfscopeError } from '../errors.js';
import { btfLoad, type ProgInfo, progInfo, progLoad, progTestRun, type TestRunResult } from '../kernel/bpf.js';
import { close as closeFd } from '../kernel/ffi.js';
import { type BtfFunc, funcInfoBtf } from './btf-writer.js';

export { LOG_LEVEL_NORMAL, LOG_LEVEL_STATS, LOG_LEVEL_VERBOSE, VerifierError } from '../kernel/bpf.js';

/** Program types (`enum bpf_prog_type`). KPROBE also serves uprobes; TRACING serves tp_btf, fentry, fexit. */
export const ProgType = {
  UNSPEC: 0,
  SOCKET_FILTER: 1,
  KPROBE: 2,
  SCHED_CLS: 3,
  TRACEPOINT: 5,
  XDP: 6,
  PERF_EVENT: 7,
  RAW_TRACEPOINT: 17,
  RAW_TRACEPOINT_WRITABLE: 24,
  TRACING: 26,
  LSM: 29,
  SYSCALL: 31,
} as const;

/** Attach types (`enum bpf_attach_type`) used for tracing. */
export const AttachType = {
  NONE: 0,
  TRACE_RAW_TP: 23,
  TRACE_FENTRY: 24,
  TRACE_FEXIT: 25,
  MODIFY_RETURN: 26,
  TRACE_ITER: 28,
  PERF_EVENT: 41,
  TRACE_KPROBE_MULTI: 42,
  TRACE_UPROBE_MULTI: 48,
  TRACE_KPROBE_SESSION: 52,
  TRACE_UPROBE_SESSION: 53,
} as const;

/** Parameters of {@link loadProgram}. */
export interface ProgramSpec {
  /** A {@link ProgType} value. */
  type: number;
  /** Encoded instructions, 8 bytes each (two slots for ld_imm64). */
  insns: Buffer;
  /** Shown by `bpftool prog show` (sanitised to `[A-Za-z0-9_.]`, cut to 15 bytes). */
  name: string;
  /** An {@link AttachType} the program must be loaded for (tp_btf: TRACE_RAW_TP; uprobe_multi: TRACE_UPROBE_MULTI). */
  expectedAttachType?: number;
  /** BTF type id of the attach target (tp_btf: TYPEDEF `btf_trace_<tp>`; fentry: the FUNC). */
  attachBtfId?: number;
  /** fd of the module BTF object holding `attachBtfId` (0: vmlinux). */
  attachBtfObjFd?: number;
  /** Default "GPL" (bpf_probe_read and most tracing helpers are GPL-only). */
  license?: string;
  /** Verifier log level for the first load (LOG_LEVEL_STATS for "processed N insns"); the log is kept in `log`. */
  logLevel?: number;
  /** `BPF_F_*` program flags (e.g. BPF_F_SLEEPABLE 16). */
  progFlags?: number;
  /**
   * The program's functions, the main one first: each with the slot it starts at (the first at 0). They are
   * described in program BTF + func_info, which the kernel requires for callbacks; with only the main function the
   * BTF names it for other tracers (`fentry:bpf:ID:NAME`), and a kernel that refuses the BTF gets the program without.
   */
  funcs?: (BtfFunc & { insnOff: number })[];
}

/** A loaded program owning its fd. */
export interface LoadedProgram {
  readonly fd: number;
  readonly name: string;
  readonly type: number;
  /** The verifier log of the load when `logLevel` was given. */
  readonly log?: string;
  /** BPF_OBJ_GET_INFO_BY_FD: id, tag, xlated_prog_len, verified_insns, ... (`xlated` to fetch instructions). */
  info(opts?: { xlated?: boolean }): ProgInfo;
  /** BPF_PROG_TEST_RUN (raw_tp programs: `ctxIn` is the u64 argument array). */
  testRun(opts?: Parameters<typeof progTestRun>[1]): TestRunResult;
  /** Closes the fd; the kernel frees the program once no link or perf event holds it. Idempotent. */
  close(): void;
  readonly closed: boolean;
}

class Program implements LoadedProgram {
  private _fd: number;
  constructor(
    fd: number,
    readonly name: string,
    readonly type: number,
    readonly log?: string,
  ) {
    this._fd = fd;
  }
  get fd(): number {
    if (this._fd < 0) throw new BpfscopeError(`internal error: program '${this.name}' used after close()`);
    return this._fd;
  }
  get closed(): boolean {
    return this._fd < 0;
  }
  info(opts: { xlated?: boolean } = {}): ProgInfo {
    return progInfo(this.fd, opts);
  }
  testRun(opts: Parameters<typeof progTestRun>[1] = {}): TestRunResult {
    return progTestRun(this.fd, opts);
  }
  close(): void {
    if (this._fd >= 0) {
      closeFd(this._fd);
      this._fd = -1;
    }
  }
}

/**
 * BPF_PROG_LOAD of `spec`. Loads without a verifier log first and, on failure, again with one.
 * @throws VerifierError (the full log, errno, the log's lines) when the verifier rejects the program; KernelError for
 * other failures (the root sentence when unprivileged).
 */
export function loadProgram(spec: ProgramSpec): LoadedProgram {
  let btfFd: number | undefined;
  let funcInfo: Buffer | undefined;
  if (spec.funcs && spec.funcs.length > 0) {
    const { btf, funcTypeIds } = funcInfoBtf(spec.funcs);
    try {
      btfFd = btfLoad(btf);
    } catch (e) {
      // only callbacks need the BTF
      if (spec.funcs.length > 1) throw e;
    }
    if (btfFd !== undefined) {
      funcInfo = Buffer.alloc(8 * spec.funcs.length);
      spec.funcs.forEach((f, i) => {
        funcInfo!.writeUInt32LE(f.insnOff, i * 8);
        funcInfo!.writeUInt32LE(funcTypeIds[i]!, i * 8 + 4);
      });
    }
  }
  try {
    return loadWith(spec, btfFd, funcInfo);
  } finally {
    // the loaded program holds its own reference to the BTF
    if (btfFd !== undefined) closeFd(btfFd);
  }
}

function loadWith(spec: ProgramSpec, progBtfFd: number | undefined, funcInfo: Buffer | undefined): LoadedProgram {
  const r = progLoad({
    ...(progBtfFd !== undefined && funcInfo ? { progBtfFd, funcInfo } : {}),
    progType: spec.type,
    insns: spec.insns,
    name: spec.name,
    license: spec.license ?? 'GPL',
    ...(spec.expectedAttachType !== undefined ? { expectedAttachType: spec.expectedAttachType } : {}),
    ...(spec.attachBtfId !== undefined ? { attachBtfId: spec.attachBtfId } : {}),
    ...(spec.attachBtfObjFd !== undefined ? { attachBtfObjFd: spec.attachBtfObjFd } : {}),
    ...(spec.logLevel !== undefined ? { logLevel: spec.logLevel } : {}),
    ...(spec.progFlags !== undefined ? { progFlags: spec.progFlags } : {}),
  });
  return new Program(r.fd, spec.name, spec.type, r.log);
}
