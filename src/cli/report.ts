/** Printing errors for users: compile diagnostics with positions, verifier rejections, one-line kernel errors. */
import { BpfscopeError, HintOnlyError } from '../errors.js';
import { CompileError, formatDiagnostic } from '../lang/diagnostics.js';
import { ProgramRejected } from '../runtime/loader.js';
import { USAGE, UsageError } from './args.js';

let lastSource: import('../lang/diagnostics.js').SourceFile | undefined;

/** Remember the program text so verifier errors can be shown against it. */
export function setReportSource(s: import('../lang/diagnostics.js').SourceFile): void {
  lastSource = s;
}

/** Print `err` to stderr and return the exit code. */
export function reportError(err: unknown): number {
  const w = (s: string): void => {
    process.stderr.write(s.endsWith('\n') ? s : `${s}\n`);
  };
  if (err instanceof CompileError) {
    const src = err.source ?? lastSource;
    for (const d of err.diagnostics) {
      w(src ? formatDiagnostic(d, src) : `ERROR: ${d.message}`);
    }
    return 1;
  }
  if (err instanceof ProgramRejected) {
    if (err.pos && lastSource) {
      w(formatDiagnostic({ severity: 'error', message: err.message, pos: err.pos }, lastSource));
    } else {
      w(`ERROR: ${err.message}`);
    }
    w('Verifier log (last lines):');
    for (const l of err.verifierTail) w(`  ${l}`);
    return 1;
  }
  if (err instanceof HintOnlyError) {
    w(`HINT: ${err.hint}`);
    return err.exitCode;
  }
  if (err instanceof UsageError) {
    // bpftrace prints its usage to stderr after a bad flag (getopt's default case)
    if (err.message) w(`ERROR: ${err.message}`);
    process.stderr.write(`${err.message ? '\n' : ''}${USAGE}`);
    return 1;
  }
  if (err instanceof BpfscopeError) {
    w(`ERROR: ${err.message}`);
    if (err.hint) w(`HINT: ${err.hint}`);
    return err.exitCode;
  }
  const e = err as Error;
  w(`ERROR: internal error: ${e?.message ?? String(err)}`);
  if (process.env.BPFSCOPE_DEBUG) w(e?.stack ?? '');
  else w('HINT: this is a bug in bpfscope; run with BPFSCOPE_DEBUG=1 for details and report it');
  return 1;
}
