/**
 * Error classes that reach the user as one clear message (never a stack trace). The CLI prints `message` (and
 * `hint` on a second line) to stderr and exits non-zero. Anything else thrown is a bug and is reported as one.
 *
 * The hierarchy (all exported from the package root):
 * - {@link BpfscopeError}: every error bpfscope reports; `message` is one sentence, `hint` an optional second line.
 *   - `CompileError` (lang/diagnostics.ts): the program does not compile; `diagnostics` with source spans.
 *   - {@link KernelError}: a system call failed; `syscall` names it, `errno` is the positive errno value.
 *     - {@link PermissionError}: EPERM/EACCES from bpf() or perf_event_open(2) (not root, no CAP_BPF/CAP_PERFMON,
 *       perf_event_paranoid, lockdown).
 *     - `VerifierError` (kernel/bpf.ts) and `ProgramRejected` (runtime/loader.ts): BPF_PROG_LOAD refused the
 *       program; `verifierLog` holds the kernel's complete verifier log.
 */
export class BpfscopeError extends Error {
  /** Optional second line: what to do about it. */
  hint?: string;
  /** Process exit code to use (default 1). */
  exitCode = 1;
  constructor(message: string, opts: { hint?: string; exitCode?: number; cause?: unknown } = {}) {
    super(message, opts.cause !== undefined ? { cause: opts.cause } : undefined);
    this.name = 'BpfscopeError';
    if (opts.hint) this.hint = opts.hint;
    if (opts.exitCode !== undefined) this.exitCode = opts.exitCode;
  }
}

/** Not an error but an answer printed as a `HINT:` alone, with a non-zero exit (`-- --help` for program options). */
export class HintOnlyError extends BpfscopeError {
  constructor(hint: string) {
    super(hint, { hint });
    this.name = 'HintOnlyError';
  }
}

/** A failed system call: `syscall` names it (e.g. `bpf(BPF_PROG_LOAD)`), `errno` is the positive errno value. */
export class KernelError extends BpfscopeError {
  /** The verifier log, when BPF_PROG_LOAD failed and the kernel wrote one (else undefined). */
  verifierLog?: string;
  constructor(
    readonly syscall: string,
    readonly errno: number,
    message: string,
    opts: { hint?: string; verifierLog?: string } = {},
  ) {
    super(message, opts.hint !== undefined ? { hint: opts.hint } : {});
    this.name = 'KernelError';
    if (opts.verifierLog !== undefined) this.verifierLog = opts.verifierLog;
  }
}

/**
 * The kernel refused a bpf() or perf_event_open(2) call with EPERM or EACCES: the process is not root and lacks
 * CAP_BPF/CAP_PERFMON, or kernel.perf_event_paranoid, lockdown or an LSM forbids the operation. `errno` is 1 (EPERM)
 * or 13 (EACCES).
 */
export class PermissionError extends KernelError {
  constructor(syscall: string, errno: number, message: string, opts: { hint?: string } = {}) {
    super(syscall, errno, message, opts);
    this.name = 'PermissionError';
  }
}
