/**
 * The `begin` and `end` providers (`BEGIN`/`END` as bpftrace has always spelled them; current bpftrace's canonical
 * names are lower case, and its `probe` builtin prints `begin`/`end`). Their programs are BPF_PROG_TYPE_RAW_TRACEPOINT
 * programs that the runtime runs once with BPF_PROG_TEST_RUN (at start, and at exit) instead of attaching them, as
 * bpftrace and ply do; `special` tells it which.
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
