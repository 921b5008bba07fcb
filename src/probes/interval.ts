/**
 * The `interval` provider (alias `i`): `interval:s:N`, `interval:ms:N`, `interval:us:N`, `interval:hz:N` and
 * `interval:N` (nanoseconds, time suffix allowed: `interval:1s`), see `rate.ts`. The program (BPF_PROG_TYPE_PERF_EVENT)
 * runs on one CPU at a time: one `cpu-clock` software perf event (type PERF_TYPE_SOFTWARE 1, config
 * PERF_COUNT_SW_CPU_CLOCK 0) on the first online CPU for all processes, with `sample_period` = the interval in ns
 * (or `sample_freq` = N with the `freq` bit for `hz`), as bpftrace's AttachedIntervalProbe does.
 */

import { onlineCpus } from '../kernel/cpus.js';
import type { AttachPoint } from '../lang/ast.js';
import { attachPerfEvents, type ClockTiming, openCpuClock } from './perf-attach.js';
import { listRateUnits, parseRate, type Rate, rateProbeName } from './rate.js';
import { type AttachedProbe, BPF_PROG_TYPE, type ExpandedProbe, type ProbeProvider } from './types.js';

/** One interval probe. */
export class IntervalProbe implements ExpandedProbe {
  readonly provider = 'interval';
  readonly progType = BPF_PROG_TYPE.PERF_EVENT;
  readonly args = null;
  readonly name: string;

  constructor(
    readonly attachPoint: AttachPoint,
    readonly rate: Rate,
  ) {
    this.name = rateProbeName('interval', rate);
  }

  /** Open the cpu-clock event on the first online CPU (pid -1) and link `progFd` to it. */
  attach(progFd: number): AttachedProbe {
    const cpu = onlineCpus()[0] ?? 0;
    return attachPerfEvents(progFd, [() => openCpuClock(clockTiming(this.rate), cpu, -1, this.name)]);
  }
}

/** The perf event timing of a rate: `sample_freq` for `hz`, else `sample_period` in ns. */
export function clockTiming(rate: Rate): ClockTiming {
  return rate.freqHz !== undefined ? { freqHz: rate.freqHz } : { periodNs: rate.periodNs! };
}

/** The interval provider. Not shown by a full `-l` (as bpftrace); `-l 'interval:*'` lists its units. */
export class IntervalProvider implements ProbeProvider {
  readonly names = ['interval', 'i'] as const;
  readonly supported = true;
  readonly listed = false;

  /** One probe. @throws CompileError for a malformed rate (see `parseRate`). */
  expand(ap: AttachPoint): IntervalProbe[] {
    return [new IntervalProbe(ap, parseRate(ap, 'interval'))];
  }

  list(search: string): string[] {
    return listRateUnits('interval', search);
  }
}
