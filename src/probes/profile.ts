/**
 * The `profile` provider (alias `p`): `profile:hz:N`, `profile:s:N`, `profile:ms:N`, `profile:us:N` and
 * `profile:N` (nanoseconds, time suffix allowed), see `rate.ts`. The program (BPF_PROG_TYPE_PERF_EVENT) runs on
 * every CPU: one `cpu-clock` software perf event (type PERF_TYPE_SOFTWARE 1, config PERF_COUNT_SW_CPU_CLOCK 0) per
 * online CPU, with `sample_freq` = N and the `freq` bit for `hz`, else `sample_period` in ns; for all processes, or
 * only `-p PID`'s (with `inherit`), as bpftrace's AttachedProfileProbe does.
 */

import { onlineCpus } from '../kernel/cpus.js';
import type { AttachPoint } from '../lang/ast.js';
import { clockTiming } from './interval.js';
import { attachPerfEvents, openCpuClock } from './perf-attach.js';
import { listRateUnits, parseRate, type Rate, rateProbeName } from './rate.js';
import {
  type AttachedProbe,
  type AttachOptions,
  BPF_PROG_TYPE,
  type ExpandedProbe,
  type ProbeProvider,
} from './types.js';

/** One profile probe. */
export class ProfileProbe implements ExpandedProbe {
  readonly provider = 'profile';
  readonly progType = BPF_PROG_TYPE.PERF_EVENT;
  readonly args = null;
  readonly name: string;

  constructor(
    readonly attachPoint: AttachPoint,
    readonly rate: Rate,
  ) {
    this.name = rateProbeName('profile', rate);
  }

  /** Open one cpu-clock event per online CPU (for `opts.pid` only, if given) and link `progFd` to each. */
  attach(progFd: number, opts: AttachOptions = {}): AttachedProbe {
    const timing = clockTiming(this.rate);
    const pid = opts.pid ?? -1;
    return attachPerfEvents(
      progFd,
      onlineCpus().map((cpu) => () => openCpuClock(timing, cpu, pid, this.name)),
    );
  }
}

/** The profile provider. Not shown by a full `-l` (as bpftrace); `-l 'profile:*'` lists its units. */
export class ProfileProvider implements ProbeProvider {
  readonly names = ['profile', 'p'] as const;
  readonly supported = true;
  readonly listed = false;

  /** One probe. @throws CompileError for a malformed rate (see `parseRate`). */
  expand(ap: AttachPoint): ProfileProbe[] {
    return [new ProfileProbe(ap, parseRate(ap, 'profile'))];
  }

  list(search: string): string[] {
    return listRateUnits('profile', search);
  }
}
