/**
 * The `software` provider (alias `s`): `software:EVENT:COUNT` (or `software:EVENT` with bpftrace's default count),
 * one perf software event per online CPU (PERF_TYPE_SOFTWARE), sampling every COUNT occurrences. Event names and
 * aliases and the default counts are bpftrace's (`docs/language.md` "software"); config values are the kernel's
 * `enum perf_sw_ids` (include/uapi/linux/perf_event.h).
 */
import { onlineCpus } from '../kernel/cpus.js';
import { openSoftwareEvent } from '../kernel/perf.js';
import type { AttachPoint } from '../lang/ast.js';
import { attachPointError, closestNames, didYouMean } from './errors.js';
import { globToRegExp } from './glob.js';
import { attachPerfEvents } from './perf-attach.js';
import { type AttachedProbe, BPF_PROG_TYPE, type ExpandedProbe, type ProbeProvider } from './types.js';

/** name → [aliases, perf_sw_ids config, bpftrace's default sample count]. */
const EVENTS: Record<string, { aliases: string[]; config: number; count: number }> = {
  'cpu-clock': { aliases: ['cpu'], config: 0, count: 1_000_000 },
  'task-clock': { aliases: [], config: 1, count: 1_000_000 },
  'page-faults': { aliases: ['faults'], config: 2, count: 100 },
  'context-switches': { aliases: ['cs'], config: 3, count: 1000 },
  'cpu-migrations': { aliases: [], config: 4, count: 1 },
  'minor-faults': { aliases: [], config: 5, count: 100 },
  'major-faults': { aliases: [], config: 6, count: 1 },
  'alignment-faults': { aliases: [], config: 7, count: 1 },
  'emulation-faults': { aliases: [], config: 8, count: 1 },
  dummy: { aliases: [], config: 9, count: 1 },
  'bpf-output': { aliases: [], config: 10, count: 1 },
};

function lookup(name: string): [string, (typeof EVENTS)[string]] | undefined {
  for (const [n, e] of Object.entries(EVENTS)) if (n === name || e.aliases.includes(name)) return [n, e];
  return undefined;
}

export class SoftwareProbe implements ExpandedProbe {
  readonly provider = 'software';
  readonly progType = BPF_PROG_TYPE.PERF_EVENT;
  readonly args = null;
  readonly name: string;

  constructor(
    readonly attachPoint: AttachPoint,
    readonly event: string,
    readonly config: number,
    readonly count: number,
  ) {
    this.name = `software:${event}:${count}`;
  }

  /** One event per online CPU, sampling every `count` occurrences. */
  attach(progFd: number): AttachedProbe {
    return attachPerfEvents(
      progFd,
      onlineCpus().map(
        (cpu) => () => openSoftwareEvent(this.config, { samplePeriod: BigInt(this.count) }, { pid: -1, cpu }),
      ),
    );
  }
}

export class SoftwareProvider implements ProbeProvider {
  readonly names = ['software', 's'] as const;
  readonly supported = true;
  readonly listed = false;

  expand(ap: AttachPoint): ExpandedProbe[] {
    const [name, countText] = ap.parts;
    if (!name || ap.parts.length > 2)
      throw attachPointError(ap, 'software probe type requires 1 or 2 arguments: software:EVENT[:COUNT]');
    const ev = lookup(name);
    if (!ev) {
      const all = Object.entries(EVENTS).flatMap(([n, e]) => [n, ...e.aliases]);
      throw attachPointError(
        ap,
        `Invalid software event: ${name}`,
        didYouMean(closestNames(name, all).map((n) => `software:${n}`)),
      );
    }
    let count = ev[1].count;
    if (countText !== undefined) {
      if (!/^\d+$/.test(countText) || Number(countText) < 1)
        throw attachPointError(ap, `Invalid count for software:${name}: ${countText}`);
      count = Number(countText);
    }
    return [new SoftwareProbe(ap, ev[0], ev[1].config, count)];
  }

  list(search: string): string[] {
    const re = globToRegExp(search || '*');
    return Object.keys(EVENTS)
      .filter((n) => re.test(n))
      .map((n) => `software:${n}:`);
  }
}
