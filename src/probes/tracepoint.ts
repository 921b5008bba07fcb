/**
 * The `tracepoint` provider (alias `t`): `tracepoint:<category>:<event>`, with `*`/`?`/`[...]` wildcards in either
 * part (`tracepoint:syscalls:sys_enter_*`, `t:*:sched_switch`; `t:*open*` means `t:*:*open*`, as in bpftrace). The
 * program is a BPF_PROG_TYPE_TRACEPOINT program whose context is the event record described by the event's
 * `format` file; it is attached through one `PERF_TYPE_TRACEPOINT` perf event (config = the event id, pid -1, CPU 0),
 * which runs the program for the event on every CPU, linked with BPF_LINK_CREATE (attach type BPF_PERF_EVENT).
 * Sources: bpftrace `src/ast/passes/attachpoint_passes.cpp` (parsing), `src/probe_matcher.cpp` (matching against
 * tracefs `available_events`, `-lv` argument lines), kernel `Documentation/trace/events.rst`.
 */

import { openTracepoint } from '../kernel/perf.js';
import { byteCompare, systemTracefs, type Tracefs } from '../kernel/tracefs.js';
import type { AttachPoint } from '../lang/ast.js';
import type { SType } from '../lang/types.js';
import { attachPointError, closestNames, didYouMean } from './errors.js';
import { globToRegExp, hasWildcard } from './glob.js';
import { attachPerfEvents } from './perf-attach.js';
import {
  parseTracepointFormat,
  type TracepointFormat,
  tracepointArgLines,
  tracepointArgsType,
} from './tracepoint-format.js';
import { type AttachedProbe, BPF_PROG_TYPE, type ExpandedProbe, type ProbeProvider } from './types.js';

/** One concrete tracepoint probe. `format`/`args` are read from tracefs on first use. */
export class TracepointProbe implements ExpandedProbe {
  readonly provider = 'tracepoint';
  readonly progType = BPF_PROG_TYPE.TRACEPOINT;
  readonly name: string;
  private fmt: TracepointFormat | null = null;
  private argsType: SType | null = null;

  constructor(
    readonly attachPoint: AttachPoint,
    readonly category: string,
    readonly event: string,
    /** The tracefs tree the event was found in. */
    readonly fs: Tracefs,
  ) {
    this.name = `tracepoint:${category}:${event}`;
  }

  /** The parsed `format` file. @throws BpfscopeError when it cannot be read. */
  get format(): TracepointFormat {
    this.fmt ??= parseTracepointFormat(this.fs.eventFormat(this.category, this.event));
    return this.fmt;
  }

  /** The event record type (`args`), see `tracepointArgsType`. */
  get args(): SType {
    this.argsType ??= tracepointArgsType(this.category, this.event, this.format);
    return this.argsType;
  }

  /** The tracepoint id (`events/<category>/<event>/id`). @throws BpfscopeError when it cannot be read. */
  get id(): number {
    return this.fs.eventId(this.category, this.event);
  }

  /** Open the PERF_TYPE_TRACEPOINT event on CPU 0 for all processes and link `progFd` to it. */
  attach(progFd: number): AttachedProbe {
    const id = this.id;
    return attachPerfEvents(progFd, [() => openTracepoint(id, { pid: -1, cpu: 0 }, `${this.category}:${this.event}`)]);
  }
}

/** Split a tracepoint attach point's parts into [category glob, event glob] (bpftrace's rules). */
function splitTarget(ap: AttachPoint): [string, string] {
  const parts = ap.parts;
  // `tracepoint:*foo*` lists/attaches `tracepoint:*:*foo*`: the user most likely means the event name.
  if (parts.length === 1 && hasWildcard(parts[0]!)) return ['*', parts[0]!];
  if (parts.length !== 2) {
    throw attachPointError(ap, `tracepoint probe type requires 2 arguments, found ${parts.length}`);
  }
  if (parts[0] === '' || parts[1] === '') throw attachPointError(ap, 'tracepoint probe must have a target');
  return [parts[0]!, parts[1]!];
}

/**
 * The tracepoint provider over a tracefs tree (the system's by default; tests pass a fixture tree).
 * Expansion matches `category:event` against the tracefs event list, so `*` may span the `:` as in bpftrace.
 */
export class TracepointProvider implements ProbeProvider {
  readonly names = ['tracepoint', 't'] as const;
  readonly supported = true;
  readonly listed = true;

  constructor(private readonly tracefs: () => Tracefs = systemTracefs) {}

  /**
   * Concrete probes for `ap`, sorted by `category:event` (byte order).
   * @throws CompileError `No matches for tracepoint CAT:EVENT.` (current bpftrace's wording) at the attach point,
   * with a "Did you mean tracepoint:...?" hint naming the closest existing tracepoints when there are any.
   */
  expand(ap: AttachPoint): TracepointProbe[] {
    const [cat, ev] = splitTarget(ap);
    const fs = this.tracefs();
    const target = `${cat}:${ev}`;
    const matches = hasWildcard(target) ? this.match(fs, target) : fs.hasEvent(cat, ev) ? [target] : [];
    if (matches.length === 0) {
      const hint = hasWildcard(target)
        ? undefined
        : didYouMean(closestNames(target, fs.allTracepoints()).map((n) => `tracepoint:${n}`));
      throw attachPointError(ap, `No matches for tracepoint ${target}.`, hint);
    }
    return matches.map((m) => {
      const colon = m.indexOf(':');
      return new TracepointProbe(ap, m.slice(0, colon), m.slice(colon + 1), fs);
    });
  }

  /** `-l` lines: `tracepoint:CAT:EVENT`, and with `verbose` the format's non-common field declarations. */
  list(search: string, verbose: boolean): string[] {
    const fs = this.tracefs();
    const parts = search.split(':');
    const pattern = parts.length === 1 ? `*:${search || '*'}` : search;
    const out: string[] = [];
    for (const m of this.match(fs, pattern)) {
      out.push(`tracepoint:${m}`);
      if (verbose) {
        const colon = m.indexOf(':');
        const fmt = parseTracepointFormat(fs.eventFormat(m.slice(0, colon), m.slice(colon + 1)));
        out.push(...tracepointArgLines(fmt));
      }
    }
    return out;
  }

  private match(fs: Tracefs, pattern: string): string[] {
    const re = globToRegExp(pattern);
    return fs
      .allTracepoints()
      .filter((t) => re.test(t))
      .sort(byteCompare);
  }
}
