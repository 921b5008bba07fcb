/**
 * Providers for perf counting events sampled every N occurrences on every online CPU: `software:` (PERF_TYPE_SOFTWARE)
 * and `hardware:` (PERF_TYPE_HARDWARE). One shared implementation; each provider is its event table (bpftrace's
 * names, aliases and default counts, `docs/language.md`; configs from include/uapi/linux/perf_event.h) plus an
 * availability check.
 */
import { onlineCpus } from '../kernel/cpus.js';
import { byteCompare } from '../kernel/tracefs.js';
import { encodePerfEventAttr, PerfEvent, PerfFlag, perfEventOpenRaw } from '../kernel/perf.js';
import type { AttachPoint } from '../lang/ast.js';
import { parseIntLiteral } from '../lang/lexer.js';
import { attachPointError, closestNames, didYouMean } from './errors.js';
import { globToRegExp } from './glob.js';
import { attachPerfEvents } from './perf-attach.js';
import { type AttachedProbe, BPF_PROG_TYPE, type ExpandedProbe, type ProbeProvider } from './types.js';

/** name → aliases, perf config and bpftrace's default sample count. */
export type CounterEvents = Record<string, { aliases: string[]; config: number; count: number }>;

/** Open one counting event on `cpu`, sampling every `period` occurrences. @throws KernelError */
export function openCounter(perfType: number, config: number, period: number, cpu: number): PerfEvent {
  const attr = encodePerfEventAttr({
    type: perfType,
    config: BigInt(config),
    flags: PerfFlag.DISABLED,
    samplePeriod: BigInt(period),
  });
  const what = `perf event type ${perfType} config ${config} cpu ${cpu}`;
  return new PerfEvent(perfEventOpenRaw(attr, { pid: -1, cpu }, what), what);
}

export class CounterProbe implements ExpandedProbe {
  readonly progType = BPF_PROG_TYPE.PERF_EVENT;
  readonly args = null;
  readonly name: string;

  constructor(
    readonly attachPoint: AttachPoint,
    readonly provider: string,
    readonly perfType: number,
    readonly event: string,
    readonly config: number,
    readonly count: number,
    /** The event as the attach point spells it (an alias such as `cpu` stays `cpu` in `probe`, as in bpftrace). */
    written: string = event,
  ) {
    this.name = `${provider}:${written}:${count}`;
  }

  /** One event per online CPU, sampling every `count` occurrences. */
  attach(progFd: number): AttachedProbe {
    return attachPerfEvents(
      progFd,
      onlineCpus().map((cpu) => () => openCounter(this.perfType, this.config, this.count, cpu)),
    );
  }
}

export class CounterProvider implements ProbeProvider {
  readonly supported = true;
  /** Shown by a full `-l`, as bpftrace's software and hardware providers are (`show_in_kernel_list`). */
  readonly listed = true;

  /**
   * @param unavailable returns why the events cannot be used on this machine (checked at expansion), or null
   * @param unavailableHint what to use instead
   */
  constructor(
    readonly names: readonly string[],
    private readonly perfType: number,
    private readonly events: CounterEvents,
    private readonly unavailable: () => string | null = () => null,
    private readonly unavailableHint?: string,
  ) {}

  private get kind(): string {
    return this.names[0]!;
  }

  expand(ap: AttachPoint): ExpandedProbe[] {
    const [name, countText] = ap.parts;
    if (!name || ap.parts.length > 2) {
      throw attachPointError(ap, `${this.kind} probe type requires 1 or 2 arguments: ${this.kind}:EVENT[:COUNT]`);
    }
    const entry = Object.entries(this.events).find(([n, e]) => n === name || e.aliases.includes(name));
    if (!entry) {
      const all = Object.entries(this.events).flatMap(([n, e]) => [n, ...e.aliases]);
      throw attachPointError(
        ap,
        `Invalid ${this.kind} event: ${name}`,
        didYouMean(closestNames(name, all).map((n) => `${this.kind}:${n}`)),
      );
    }
    const problem = this.unavailable();
    if (problem) throw attachPointError(ap, problem, this.unavailableHint);
    let count = entry[1].count;
    if (countText !== undefined) {
      // bpftrace's integer syntax (`1e6`, `1_000_000`)
      const r = parseIntLiteral(countText);
      if ('error' in r || r.value < 1n || r.value > BigInt(Number.MAX_SAFE_INTEGER)) {
        throw attachPointError(ap, `Invalid count for ${this.kind}:${name}: ${countText}`);
      }
      count = Number(r.value);
    }
    return [new CounterProbe(ap, this.kind, this.perfType, entry[0], entry[1].config, count, name)];
  }

  /**
   * `-l software:SEARCH`: bpftrace's listing (`probe_matcher.cpp` get_symbols_from_list) has one `NAME:` line per
   * event and per alias (`software:cpu:` as well as `software:cpu-clock:`), sorted; SEARCH is a glob over those
   * lines (`cpu*`), or one name without its colon.
   */
  list(search: string): string[] {
    if (this.unavailable()) return [];
    const re = globToRegExp(search || '*');
    return Object.entries(this.events)
      .flatMap(([n, e]) => [n, ...e.aliases])
      .map((n) => `${n}:`)
      .filter((line) => re.test(line) || re.test(line.slice(0, -1)))
      .sort(byteCompare)
      .map((line) => `${this.kind}:${line}`);
  }
}
