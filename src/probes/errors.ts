/**
 * Attach point diagnostics shared by the probe providers: a CompileError with one error positioned at the attach
 * point, or without a position for what bpftrace reports when attaching; the "did you mean" helpers (src/lang/suggest.ts) re-exported for the providers.
 */
import { KernelError } from '../errors.js';
import { Errno } from '../kernel/ffi.js';
import type { AttachPoint } from '../lang/ast.js';
import { CompileError } from '../lang/diagnostics.js';

/** A CompileError with a single error at the attach point's span; `hint` is printed after the source marker. */
export function attachPointError(ap: AttachPoint, message: string, hint?: string): CompileError {
  return new CompileError([{ severity: 'error', message, pos: ap.pos, ...(hint ? { hint } : {}) }]);
}

/** bpftrace's error for a probe left without attach points (`ast/passes/probe_prune.cpp`, missing_probes = error). */
export const NO_VALID_ATTACH_POINTS =
  "Probe has no valid attach points. If this is expected, set the 'missing_probes' config variable to 'warn'.";
/** Its warning with missing_probes = warn, the probe being skipped. */
export const NO_VALID_ATTACH_POINTS_WARNING =
  'Probe has no valid attach points. It is being removed which may cause issues with program behavior.';

/**
 * A CompileError without a position, for the checks bpftrace makes when it attaches (its AttachError and
 * SymbolError, printed as `ERROR: message` without a source location: `attached_probe.cpp`, `util/symbols.cpp`).
 */
export function attachTimeError(message: string): CompileError {
  return new CompileError([{ severity: 'error', message }]);
}

export { closestNames, didYouMean } from '../lang/suggest.js';

/**
 * Whether `e` is the kernel refusing to place a probe at an address (ENOTSUPP, EOPNOTSUPP, EINVAL: e.g. a uprobe on
 * an instruction it cannot single-step), as opposed to a permission or resource problem.
 */
export function isRefusedProbe(e: unknown): boolean {
  return (
    e instanceof KernelError && (e.errno === Errno.ENOTSUPP || e.errno === Errno.EOPNOTSUPP || e.errno === Errno.EINVAL)
  );
}
