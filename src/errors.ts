/**
 * Error classes that reach the user as one clear message (never a stack trace). The CLI prints `message` (and
 * `hint` on a second line) to stderr and exits non-zero. Anything else thrown is a bug and is reported as one.
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
  constructor(
    readonly syscall: string,
    readonly errno: number,
    message: string,
    opts: { hint?: string } = {},
  ) {
    super(message, opts);
    this.name = 'KernelError';
  }
}
