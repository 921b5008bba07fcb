/**
 * The `begin` and `end` providers (`BEGIN`/`END` as bpftrace has always spelled them; current bpftrace's canonical
 * names are lower case, and its `probe` builtin prints `begin`/`end`). Their programs are BPF_PROG_TYPE_RAW_TRACEPOINT
 * programs that the runtime runs once with BPF_PROG_TEST_RUN (at start, and at exit) instead of attaching them, as
 * bpftrace and ply do; `special` tells it which. The `self` provider (`self:signal:SIGUSR1`) is run the same way,
 * each time bpfscope receives the signal.
 */
import type { AttachPoint } from '../lang/ast.js';
import { attachPointError } from './errors.js';
import { type AttachedProbe, BPF_PROG_TYPE, type ExpandedProbe, type ProbeProvider } from './types.js';

/** A BEGIN or END probe. */
export class SpecialProbe implements ExpandedProbe {
  readonly progType = BPF_PROG_TYPE.RAW_TRACEPOINT;
  readonly args = null;
  readonly provider: 'begin' | 'end';
  readonly name: 'begin' | 'end';

  constructor(
    readonly attachPoint: AttachPoint,
    readonly special: 'begin' | 'end',
  ) {
    this.provider = special;
    this.name = special;
  }

  /** Nothing to attach: BEGIN/END run through BPF_PROG_TEST_RUN. Returns a no-op handle. */
  attach(): AttachedProbe {
    return { close() {} };
  }
}

/** Provider for `begin` (alias `BEGIN`) or `end` (alias `END`). */
export class SpecialProvider implements ProbeProvider {
  readonly names: readonly string[];
  readonly supported = true;
  readonly listed = false;

  constructor(readonly which: 'begin' | 'end') {
    this.names = [which, which.toUpperCase()];
  }

  /**
   * One probe. `BEGIN:*` is accepted as `BEGIN` (bpftrace does the same, for `-l`-style patterns).
   * @throws CompileError `begin probe type requires 0 arguments, found N` for anything else after the name.
   */
  expand(ap: AttachPoint): SpecialProbe[] {
    const parts = ap.parts.length === 1 && ap.parts[0] === '*' ? [] : ap.parts;
    if (parts.length !== 0) {
      throw attachPointError(ap, `${this.which} probe type requires 0 arguments, found ${parts.length}`);
    }
    return [new SpecialProbe(ap, this.which)];
  }

  list(): string[] {
    return [];
  }
}

/** Signals a `self:signal:NAME` probe may name (bpftrace docs/language.md "self"). */
export const SELF_SIGNALS = ['SIGUSR1'] as const;

/** A `self:signal:SIGUSR1` probe: run by the runtime (BPF_PROG_TEST_RUN) whenever bpfscope receives the signal. */
export class SelfSignalProbe implements ExpandedProbe {
  readonly progType = BPF_PROG_TYPE.RAW_TRACEPOINT;
  readonly args = null;
  readonly provider = 'self';
  readonly special = 'signal' as const;
  readonly name: string;

  constructor(
    readonly attachPoint: AttachPoint,
    readonly signal: (typeof SELF_SIGNALS)[number],
  ) {
    this.name = `self:signal:${signal}`;
  }

  /** Nothing to attach: the runtime runs the program on the signal. Returns a no-op handle. */
  attach(): AttachedProbe {
    return { close() {} };
  }
}

/** Provider for `self:signal:SIGUSR1` (bpftrace's runtime events). */
export class SelfProvider implements ProbeProvider {
  readonly names = ['self'] as const;
  readonly supported = true;
  readonly listed = false;

  /** @throws CompileError for anything but `self:signal:SIGUSR1`, with bpftrace's wording. */
  expand(ap: AttachPoint): SelfSignalProbe[] {
    if (ap.parts.length !== 2 || ap.parts[0] !== 'signal') {
      throw attachPointError(ap, `self probe type requires 2 arguments: self:signal:SIGNAL`);
    }
    const sig = ap.parts[1]!;
    const known = SELF_SIGNALS.find((s) => s === sig || s === `SIG${sig}`);
    if (!known)
      throw attachPointError(ap, `Unsupported signal: ${sig} (self:signal supports ${SELF_SIGNALS.join(', ')})`);
    return [new SelfSignalProbe(ap, known)];
  }

  list(): string[] {
    return SELF_SIGNALS.map((s) => `self:signal:${s}`);
  }
}
