/**
 * funccount: count calls of the functions, tracepoints or USDT probes a pattern matches. Follows bcc's
 * `tools/funccount.py` (flags, help, bcc probe specifiers with `*` wildcards or `-r` regexps, "Tracing N
 * functions for ..." line, `%-36s %8s` FUNC/COUNT table sorted by count, `-i`/`-d` intervals, `-T` times,
 * "Detaching...") with one bpftrace probe over every matched target, counting by `func` (functions) or `probe`
 * (tracepoints, USDT) — bcc's per-location array instead has one BPF function per target.
 */
import type { MapDump } from '../runtime/output/model.js';
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import {
  intervalOf,
  resolveTargetsOrReport,
  type Targets,
  targetBuiltin,
  targetIndex,
  targetLabel,
  tracingLine,
} from './framework/functool.js';
import { scalarValues } from './framework/histmaps.js';
import { runIntervals } from './framework/interval.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { defineTool, toolMain } from './framework/runner.js';
import { clockTime } from './framework/system.js';

export const SPEC = {
  prog: 'funccount',
  description: 'Count functions, tracepoints, and USDT probes',
  raw: true,
  epilog: `examples:
    ./funccount 'vfs_*'             # count kernel fns starting with "vfs"
    ./funccount -r '^vfs.*'         # same as above, using regular expressions
    ./funccount -Ti 5 'vfs_*'       # output every 5 seconds, with timestamps
    ./funccount -d 10 'vfs_*'       # trace for 10 seconds only
    ./funccount -p 185 'vfs_*'      # count vfs calls for PID 181 only
    ./funccount t:sched:sched_fork  # count calls to the sched_fork tracepoint
    ./funccount -p 185 u:node:gc*   # count all GC USDT probes in node, PID 185
    ./funccount c:malloc            # count all malloc() calls in libc
    ./funccount go:os.*             # count all "os.*" calls in libgo
    ./funccount -p 185 go:os.*      # count all "os.*" calls in libgo, PID 185
    ./funccount ./test:read*        # count "read*" calls in the ./test binary
    ./funccount -c 1 'vfs_*'        # count vfs calls on CPU 1 only
    `,
  options: [
    { flags: ['-p', '--pid'], kind: 'value', type: INT, help: 'trace this PID only' },
    { flags: ['-i', '--interval'], kind: 'value', type: INT, help: 'summary interval, seconds' },
    { flags: ['-d', '--duration'], kind: 'value', type: INT, help: 'total duration of trace, seconds' },
    { flags: ['-T', '--timestamp'], kind: 'flag', help: 'include timestamp on output' },
    {
      flags: ['-r', '--regexp'],
      kind: 'flag',
      help: 'use regular expressions. Default is "*" wildcards only.',
    },
    {
      flags: ['-D', '--debug'],
      kind: 'flag',
      help: 'print BPF program before starting (for debugging purposes)',
    },
    { flags: ['-c', '--cpu'], kind: 'value', type: INT, help: 'trace this CPU only' },
  ],
  positionals: [{ name: 'pattern', help: 'search expression for events', required: true }],
} as const satisfies ParserSpec;

export interface FunccountOptions {
  pid?: number | null;
  cpu?: number | null;
}

/** The bpftrace program: one probe over every target, `@counts[func|probe] = count()`. */
export function buildProgram(t: Targets, o: FunccountOptions): string {
  const conds = [
    o.pid !== null && o.pid !== undefined ? `pid == ${o.pid}` : null,
    o.cpu !== null && o.cpu !== undefined ? `cpu == ${o.cpu}` : null,
  ];
  let p = configBlock();
  p += `${t.attachPoints.join(',\n')}${predicate(conds)} {\n`;
  p += `  @counts[${targetBuiltin(t.spec)}] = count();\n}\n`;
  return p;
}

/** One target's count in an interval. */
export interface FunccountRow {
  /** The function (or `category:event` tracepoint, USDT probe) as bcc prints it. */
  name: string;
  count: bigint;
}

/** One interval of funccount (runTool's interval, `--json`'s object). */
export interface FunccountInterval {
  /** Wall-clock time of the interval's end, HH:MM:SS (the `-T` line). */
  time: string;
  /** The targets that fired, ascending by count (ties in attach order), as printed. */
  rows: FunccountRow[];
}

/** The rows of a `@counts` map: the targets that fired, ascending by count, ties in attach order (bcc's array). */
export function countRows(t: Targets, counts: MapDump): FunccountRow[] {
  return scalarValues(counts)
    .map((r) => ({ name: targetLabel(t.spec, String(r.key)), count: r.value }))
    .filter((r) => r.count > 0n)
    .map((r) => ({ ...r, index: targetIndex(t, r.name) }))
    .sort((a, b) => (a.count < b.count ? -1 : a.count > b.count ? 1 : a.index - b.index))
    .map(({ name, count }) => ({ name, count }));
}

/** bcc's table: `FUNC`/`COUNT` header (`%-36s %8s`) and one `%-36s %8d` row per target. */
export function formatRows(rows: FunccountRow[]): string {
  let out = pyFormat('%-36s %8s\n', 'FUNC', 'COUNT');
  for (const r of rows) out += pyFormat('%-36s %8d\n', r.name, r.count);
  return out;
}

/**
 * One interval's table: `FUNC`/`COUNT` header (`%-36s %8s`) and one `%-36s %8d` row per target that fired,
 * ascending by count (ties in attach order, as bcc's array).
 */
export function formatCounts(t: Targets, counts: MapDump): string {
  return formatRows(countRows(t, counts));
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const pattern = a.pattern;
  const t = resolveTargetsOrReport(pattern, a.regexp, writer);
  if (!t) return 1;
  const program = buildProgram(t, { pid: a.pid, cpu: a.cpu });
  if (a.debug) writer.write(program);
  return runIntervals<FunccountInterval>({
    tool: 'funccount',
    program,
    writer,
    seconds: intervalOf(a.interval, a.duration),
    durationSec: a.duration,
    header: tracingLine(t.names.length, pattern),
    read: (tracer, now) => ({ time: clockTime(now), rows: countRows(t, tracer.readMap('counts')) }),
    format: (i) => `\n${a.timestamp ? pyFormat('%-8s\n', i.time) : ''}${formatRows(i.rows)}`,
    clear: ['counts'],
    detach: 'always',
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'intervals', run });

/** `bpfscope funccount [flags] pattern`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
