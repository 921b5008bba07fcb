/**
 * The `hardware` provider (alias `h`): `hardware:EVENT:COUNT` on the CPU's performance monitoring unit
 * (PERF_TYPE_HARDWARE, one event per online CPU), with bpftrace's event names, aliases and default counts
 * (`docs/language.md` "hardware"; configs from `enum perf_hw_id`, include/uapi/linux/perf_event.h).
 * Whether the PMU exists is detected by opening the event at compile time: virtual machines without a PMU (like
 * the development VM) get one clear sentence instead of an attach failure.
 */
import { onlineCpus } from '../kernel/cpus.js';
import { close as closeFd } from '../kernel/ffi.js';
import { encodePerfEventAttr, PerfEvent, PerfFlag, PerfType, perfEventOpenRaw } from '../kernel/perf.js';
import type { AttachPoint } from '../lang/ast.js';
import { attachPointError, closestNames, didYouMean } from './errors.js';
import { globToRegExp } from './glob.js';
import { attachPerfEvents } from './perf-attach.js';
import { type AttachedProbe, BPF_PROG_TYPE, type ExpandedProbe, type ProbeProvider } from './types.js';

const EVENTS: Record<string, { aliases: string[]; config: number; count: number }> = {
  'cpu-cycles': { aliases: ['cycles'], config: 0, count: 1_000_000 },
  instructions: { aliases: [], config: 1, count: 1_000_000 },
  'cache-references': { aliases: [], config: 2, count: 1_000_000 },
  'cache-misses': { aliases: [], config: 3, count: 1_000_000 },
  'branch-instructions': { aliases: ['branches'], config: 4, count: 100_000 },
  'branch-misses': { aliases: [], config: 5, count: 100_000 },
  'bus-cycles': { aliases: [], config: 6, count: 100_000 },
  'frontend-stalls': { aliases: [], config: 7, count: 1_000_000 },
  'backend-stalls': { aliases: [], config: 8, count: 1_000_000 },
  'ref-cycles': { aliases: [], config: 9, count: 1_000_000 },
};

function open(config: number, period: number, cpu: number): PerfEvent {
  const attr = encodePerfEventAttr({
    type: PerfType.HARDWARE,
    config: BigInt(config),
    flags: PerfFlag.DISABLED,
    samplePeriod: BigInt(period),
  });
  const what = `hardware event ${config} cpu ${cpu}`;
  return new PerfEvent(perfEventOpenRaw(attr, { pid: -1, cpu }, what), what);
}

let pmuChecked: string | null | undefined;

/** null when hardware events can be opened here, else the reason. */
function pmuProblem(): string | null {
  if (pmuChecked !== undefined) return pmuChecked;
  try {
    const ev = open(0, 1_000_000, onlineCpus()[0] ?? 0);
    closeFd(ev.fd);
    pmuChecked = null;
  } catch (e) {
    pmuChecked = (e as Error).message;
  }
  return pmuChecked;
}

export class HardwareProbe implements ExpandedProbe {
  readonly provider = 'hardware';
  readonly progType = BPF_PROG_TYPE.PERF_EVENT;
  readonly args = null;
  readonly name: string;

  constructor(
    readonly attachPoint: AttachPoint,
    readonly event: string,
    readonly config: number,
    readonly count: number,
  ) {
    this.name = `hardware:${event}:${count}`;
  }

  attach(progFd: number): AttachedProbe {
    return attachPerfEvents(
      progFd,
      onlineCpus().map((cpu) => () => open(this.config, this.count, cpu)),
    );
  }
}

export class HardwareProvider implements ProbeProvider {
  readonly names = ['hardware', 'h'] as const;
  readonly supported = true;
  readonly listed = false;

  expand(ap: AttachPoint): ExpandedProbe[] {
    const [name, countText] = ap.parts;
    if (!name || ap.parts.length > 2)
      throw attachPointError(ap, 'hardware probe type requires 1 or 2 arguments: hardware:EVENT[:COUNT]');
    const entry = Object.entries(EVENTS).find(([n, e]) => n === name || e.aliases.includes(name));
    if (!entry) {
      const all = Object.entries(EVENTS).flatMap(([n, e]) => [n, ...e.aliases]);
      throw attachPointError(
        ap,
        `Invalid hardware event: ${name}`,
        didYouMean(closestNames(name, all).map((n) => `hardware:${n}`)),
      );
    }
    const problem = pmuProblem();
    if (problem) {
      throw attachPointError(
        ap,
        'hardware events are not available: this machine has no hardware performance counters (PMU) the kernel exposes',
        'virtual machines often have none; use software events (software:cpu-clock, profile:hz:99) instead',
      );
    }
    let count = entry[1].count;
    if (countText !== undefined) {
      if (!/^\d+$/.test(countText) || Number(countText) < 1)
        throw attachPointError(ap, `Invalid count for hardware:${name}: ${countText}`);
      count = Number(countText);
    }
    return [new HardwareProbe(ap, entry[0], entry[1].config, count)];
  }

  list(search: string): string[] {
    if (pmuProblem()) return [];
    const re = globToRegExp(search || '*');
    return Object.keys(EVENTS)
      .filter((n) => re.test(n))
      .map((n) => `hardware:${n}:`);
  }
}
