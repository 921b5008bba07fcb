/**
 * funccount: count calls of the functions, tracepoints or USDT probes a pattern matches. Follows bcc's
 * `tools/funccount.py` (flags, help, bcc probe specifiers with `*` wildcards or `-r` regexps, "Tracing N
 * functions for ..." line, `%-36s %8s` FUNC/COUNT table sorted by count, `-i`/`-d` intervals, `-T` times,
 * "Detaching...") with one bpftrace probe over every matched target, counting by `func` (functions) or `probe`
 * (tracepoints, USDT) — bcc's per-location array instead has one BPF function per target.
 */
import type { MapDump } from '../runtime/output/model.js';
import { INT, type Parsed, type ParserSpec } from './framework/argparse.js';
import {
  intervalOf,
  intervalPrefix,
  resolveTargetsOrReport,
  type Targets,
  targetBuiltin,
  targetIndex,
  targetLabel,
  tracingLine,
} from './framework/functool.js';
import { scalarValues } from './framework/histmaps.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { runProgram, toolMain } from './framework/runner.js';

export const SPEC: ParserSpec = {
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
};

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

/**
 * One interval's table: `FUNC`/`COUNT` header (`%-36s %8s`) and one `%-36s %8d` row per target that fired,
 * ascending by count (ties in attach order, as bcc's array).
 */
export function formatCounts(t: Targets, counts: MapDump): string {
  const rows = scalarValues(counts)
    .map((r) => ({ label: targetLabel(t.spec, String(r.key)), value: r.value }))
    .filter((r) => r.value > 0n)
    .map((r) => ({ ...r, index: targetIndex(t, r.label) }))
    .sort((a, b) => (a.value < b.value ? -1 : a.value > b.value ? 1 : a.index - b.index));
  let out = pyFormat('%-36s %8s\n', 'FUNC', 'COUNT');
  for (const r of rows) out += pyFormat('%-36s %8d\n', r.label, r.value);
  return out;
}

async function run(a: Parsed, writer: ToolWriter): Promise<number> {
  const pattern = a.pattern as string;
  const t = resolveTargetsOrReport(pattern, a.regexp as boolean, writer);
  if (!t) return 1;
  const program = buildProgram(t, { pid: a.pid as number | null, cpu: a.cpu as number | null });
  if (a.debug) writer.write(program);
  const interval = intervalOf(a.interval as number | null, a.duration as number | null);
  return runProgram({
    tool: 'funccount',
    program,
    writer,
    interval: { seconds: interval },
    durationSec: a.duration as number | null,
    onStarted: () => writer.write(tracingLine(t.names.length, pattern)),
    onTick: (tracer, last) => {
      writer.write(intervalPrefix(a.timestamp as boolean) + formatCounts(t, tracer.readMap('counts')));
      if (last) writer.line('Detaching...');
      else tracer.clearMap('counts');
    },
  });
}

/** `bpfscope funccount [flags] pattern`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(SPEC, argv, run);
}
