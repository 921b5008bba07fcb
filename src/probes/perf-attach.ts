/**
 * Attaching a loaded BPF program to one or more perf events (`src/kernel/perf.ts`): open each event, link the
 * program to it (BPF_LINK_CREATE attach type BPF_PERF_EVENT, or the ioctl fallback), and hand back one handle that
 * closes every link and event. If any open or attach fails, the ones already made are closed before the error
 * propagates, so nothing leaks.
 */
import { rawTracepointOpen } from '../kernel/bpf.js';
import { close as closeFd } from '../kernel/ffi.js';
import { encodePerfEventAttr, PerfEvent, PerfFlag, PerfType, perfEventOpenRaw, SwEvent } from '../kernel/perf.js';
import type { AttachedProbe } from './types.js';

/**
 * Open the events `openers` create, one after the other, and attach `progFd` to each.
 * @throws KernelError from perf_event_open / LINK_CREATE (after closing what was opened).
 */
export function attachPerfEvents(progFd: number, openers: readonly (() => PerfEvent)[]): AttachedProbe {
  const events: PerfEvent[] = [];
  try {
    for (const open of openers) {
      const ev = open();
      events.push(ev);
      ev.attach(progFd);
    }
  } catch (e) {
    for (const ev of events) ev.close();
    throw e;
  }
  return {
    close() {
      for (const ev of events.splice(0)) ev.close();
    },
  };
}

/** Timing of a cpu-clock event: a period in ns, or a frequency in Hz (the attr's `freq` bit). */
export type ClockTiming = { periodNs: bigint } | { freqHz: bigint };

/**
 * A `cpu-clock` software event (PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK) on `cpu`, for all tasks (`pid` -1) or
 * task `pid` (then with `inherit`, so its future children count too, as bpftrace's profile probe does). Created
 * disabled; attaching enables it. `what` names the probe in error messages.
 * @throws KernelError
 */
export function openCpuClock(timing: ClockTiming, cpu: number, pid: number, what: string): PerfEvent {
  const attr = encodePerfEventAttr({
    type: PerfType.SOFTWARE,
    config: BigInt(SwEvent.CPU_CLOCK),
    flags: PerfFlag.DISABLED | (pid >= 0 ? PerfFlag.INHERIT : 0n),
    ...('freqHz' in timing ? { sampleFreq: timing.freqHz } : { samplePeriod: timing.periodNs }),
  });
  const desc = `${what} (cpu-clock, cpu ${cpu}${pid >= 0 ? `, pid ${pid}` : ''})`;
  return new PerfEvent(perfEventOpenRaw(attr, { pid, cpu }, desc), desc);
}

/**
 * Attach a BTF-typed tracing program (tp_btf, fentry/fexit: its target came from `attach_btf_id` at load) with
 * BPF_RAW_TRACEPOINT_OPEN; closing the result closes the link fd. @throws KernelError
 */
export function attachTracing(progFd: number): AttachedProbe {
  return linkHandle(rawTracepointOpen(null, progFd));
}

/** The handle of a BPF link (or raw tracepoint) fd: closing it detaches the program. Idempotent. */
export function linkHandle(linkFd: number): AttachedProbe {
  let fd = linkFd;
  return {
    close: () => {
      if (fd >= 0) {
        closeFd(fd);
        fd = -1;
      }
    },
  };
}
