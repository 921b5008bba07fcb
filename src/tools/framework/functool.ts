/**
 * What bcc's pattern-driven tools (`funccount`, `funclatency`, `stackcount`) share: turning the pattern into
 * concrete targets and bpftrace attach points, the expression that names the firing target in a map key, and the
 * lines every interval prints ("\n", the `-T` time, ... "Detaching..." at the end). Sources: iovisor/bcc
 * `tools/funccount.py`, `funclatency.py`, `stackcount.py` (HEAD 6d0a964c).
 */
import type { ToolWriter } from './output.js';
import {
  matchTargets,
  type ParseProbeOptions,
  parseProbeSpec,
  type ProbeSpec,
  ProbeSpecError,
  toAttachPoint,
  verifyLimit,
} from './probespec.js';
import { pyFormat } from './pyformat.js';
import { clockTime } from './system.js';

/** A pattern resolved to what bcc would attach. */
export interface Targets {
  spec: ProbeSpec;
  /** Matched names (functions; `cat:event` for tracepoints; `provider:name` for USDT), in attach order. */
  names: string[];
  /** One bpftrace attach point per name. */
  attachPoints: string[];
}

/**
 * Parse and expand `pattern` (see probespec.ts); `names` may be empty (each tool has its own message for that).
 * @throws ProbeSpecError (bcc's messages; kernel functions on a kernel without kprobes), BpfscopeError
 */
export function resolveTargets(pattern: string, opts: ParseProbeOptions = {}): Targets {
  const spec = parseProbeSpec(pattern, opts);
  const names = matchTargets(spec);
  verifyLimit(names.length);
  return { spec, names, attachPoints: names.map((n) => toAttachPoint(spec, n)) };
}

/**
 * {@link resolveTargets} as funccount and stackcount use it: a bad pattern writes the ProbeSpecError's message,
 * and a pattern that matches nothing writes bcc's `No functions matched by pattern <regex>` (funccount.py,
 * stackcount.py), to `writer`'s stdout; both return null (the tool exits 1).
 * @throws BpfscopeError and any error other than ProbeSpecError
 */
export function resolveTargetsOrReport(pattern: string, regexp: boolean, writer: ToolWriter): Targets | null {
  let t: Targets;
  try {
    t = resolveTargets(pattern, { regexp });
  } catch (e) {
    if (!(e instanceof ProbeSpecError)) throw e;
    writer.line(e.message);
    return null;
  }
  if (t.names.length === 0) {
    writer.line(`No functions matched by pattern ${t.spec.regex}`);
    return null;
  }
  return t;
}

/**
 * The builtin that names the firing target inside a probe body: `func` for functions (the symbol name), `probe`
 * for tracepoints and USDT probes (`tracepoint:cat:event`, `usdt:PATH:provider:name`).
 */
export function targetBuiltin(spec: ProbeSpec): 'func' | 'probe' {
  return spec.kind === 'tracepoint' || spec.kind === 'usdt' ? 'probe' : 'func';
}

/**
 * What bcc prints for a target, from the value of {@link targetBuiltin}: the function name, `cat:event` for a
 * tracepoint, the probe name for USDT (bcc's `trace_functions` entries).
 */
export function targetLabel(spec: ProbeSpec, key: string): string {
  if (spec.kind === 'tracepoint') return key.replace(/^tracepoint:/, '');
  if (spec.kind === 'usdt') return key.slice(key.lastIndexOf(':') + 1);
  return key;
}

/** Index of a target label in `names` (attach order), for bcc's tie order; names.length when not found. */
export function targetIndex(t: Targets, label: string): number {
  const i = t.names.findIndex((n) => (t.spec.kind === 'usdt' ? n.slice(n.lastIndexOf(':') + 1) : n) === label);
  return i < 0 ? t.names.length : i;
}

/** `Tracing N functions for "PATTERN"... Hit Ctrl-C to end.` */
export function tracingLine(count: number, pattern: string): string {
  return `Tracing ${count} functions for "${pattern}"... Hit Ctrl-C to end.\n`;
}

/** The start of every interval's output: an empty line, then with `-T` the time as `%-8s\n`. */
export function intervalPrefix(timestamp: boolean, now: Date = new Date()): string {
  return `\n${timestamp ? pyFormat('%-8s\n', clockTime(now)) : ''}`;
}

/** bcc's interval defaults: `-d` without `-i` makes the interval the duration; no interval means "at the end". */
export function intervalOf(interval: number | null, duration: number | null): number | null {
  if (interval) return interval;
  if (duration) return duration;
  return null;
}
