/**
 * The `bench` and `test` providers. `bench`: `bench:NAME { ... }` probes that current bpftrace runs only in `--mode bench` (`--bench`),
 * each timed with BPF_PROG_TEST_RUN and reported as a benchmark result (`bpftrace.cpp` run, `attached_probe.cpp`:
 * bench programs are BPF_PROG_TYPE_XDP, the type whose test runs take a repeat count and report the average time).
 * `test:NAME { ... }` probes run once each in `--mode test` (`--test`), passing unless they exit with a non-zero
 * status or call errorf(). Neither kind is ever attached; in other modes they are loaded and left alone.
 */
import type { AttachPoint } from '../lang/ast.js';
import { attachPointError } from './errors.js';
import { type AttachedProbe, BPF_PROG_TYPE, type ExpandedProbe, type ProbeProvider } from './types.js';

export class BenchProbe implements ExpandedProbe {
  readonly progType = BPF_PROG_TYPE.XDP;
  readonly args = null;
  readonly name: string;

  constructor(
    readonly attachPoint: AttachPoint,
    readonly provider: 'bench' | 'test',
    /** The benchmark's or test's name, as its result is labelled. */
    readonly benchName: string,
  ) {
    this.name = `${provider}:${benchName}`;
  }

  get special(): 'bench' | 'test' {
    return this.provider;
  }

  /** Nothing to attach: bench and test probes run through BPF_PROG_TEST_RUN. Returns a no-op handle. */
  attach(): AttachedProbe {
    return { close() {} };
  }
}

export class BenchProvider implements ProbeProvider {
  readonly names: readonly string[];
  readonly supported = true;
  readonly listed = false;

  constructor(readonly kind: 'bench' | 'test' = 'bench') {
    this.names = [kind];
  }

  /** One probe. @throws CompileError `bench probes must have a name` (bpftrace's wording) without exactly one name */
  expand(ap: AttachPoint): BenchProbe[] {
    if (ap.parts.length !== 1 || !ap.parts[0]) throw attachPointError(ap, `${this.kind} probes must have a name`);
    return [new BenchProbe(ap, this.kind, ap.parts[0])];
  }

  list(): string[] {
    return [];
  }
}
