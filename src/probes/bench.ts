/**
 * The `bench` provider: `bench:NAME { ... }` probes that current bpftrace runs only in `--mode bench` (`--bench`),
 * each timed with BPF_PROG_TEST_RUN and reported as a benchmark result (`bpftrace.cpp` run, `attached_probe.cpp`:
 * bench programs are BPF_PROG_TYPE_XDP, the type whose test runs take a repeat count and report the average time).
 * They are never attached; in other modes they are loaded and left alone.
 */
import type { AttachPoint } from '../lang/ast.js';
import { attachPointError } from './errors.js';
import { type AttachedProbe, BPF_PROG_TYPE, type ExpandedProbe, type ProbeProvider } from './types.js';

export class BenchProbe implements ExpandedProbe {
  readonly provider = 'bench';
  readonly progType = BPF_PROG_TYPE.XDP;
  readonly args = null;
  readonly special = 'bench' as const;
  readonly name: string;

  constructor(
    readonly attachPoint: AttachPoint,
    /** The benchmark's name, as its result is labelled. */
    readonly benchName: string,
  ) {
    this.name = `bench:${benchName}`;
  }

  /** Nothing to attach: bench probes run through BPF_PROG_TEST_RUN. Returns a no-op handle. */
  attach(): AttachedProbe {
    return { close() {} };
  }
}

export class BenchProvider implements ProbeProvider {
  readonly names = ['bench'] as const;
  readonly supported = true;
  readonly listed = false;

  /** One probe. @throws CompileError `bench probes must have a name` (bpftrace's wording) without exactly one name */
  expand(ap: AttachPoint): BenchProbe[] {
    if (ap.parts.length !== 1 || !ap.parts[0]) throw attachPointError(ap, 'bench probes must have a name');
    return [new BenchProbe(ap, ap.parts[0])];
  }

  list(): string[] {
    return [];
  }
}
