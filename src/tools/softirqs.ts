/**
 * softirqs: time spent in (or number of) soft interrupts, by softirq type. Follows bcc's `tools/softirqs.py`
 * (flags, help, "Tracing soft irq event time..." line, `%-16s %11s` table sorted by value, `-d` histograms in
 * `softirq = <name>` sections, `-N`, `-C` (--events), `-c CPU`, `-T`, `[interval] [count]`) on the same
 * tracepoints, `irq:softirq_entry` and `irq:softirq_exit`, keyed like bcc by (thread, CPU).
 */
import type { Tracer } from '../runtime/tracer.js';
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import { formatIrqInterval, formatIrqTick, type IrqReport, readIrqInterval } from './framework/histmaps.js';
import { runIntervals } from './framework/interval.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { defineTool, toolMain } from './framework/runner.js';

export const SPEC = {
  prog: 'softirqs',
  description: 'Summarize soft irq event time as histograms.',
  raw: true,
  epilog: `examples:
    ./softirqs            # sum soft irq event time
    ./softirqs -C         # show the number of soft irq events
    ./softirqs -d         # show soft irq event time as histograms
    ./softirqs 1 10       # print 1 second summaries, 10 times
    ./softirqs -NT 1      # 1s summaries, nanoseconds, and timestamps
    ./softirqs -c 1       # sum soft irq event time on CPU 1 only
`,
  options: [
    { flags: ['-T', '--timestamp'], kind: 'flag', help: 'include timestamp on output' },
    { flags: ['-N', '--nanoseconds'], kind: 'flag', help: 'output in nanoseconds' },
    { flags: ['-C', '--events'], kind: 'flag', help: 'show the number of soft irq events' },
    { flags: ['-d', '--dist'], kind: 'flag', help: 'show distributions as histograms' },
    { flags: ['-c', '--cpu'], kind: 'value', type: INT, help: 'trace this CPU only' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
  positionals: [
    { name: 'interval', help: 'output interval, in seconds', type: INT, default: 99999999 },
    { name: 'count', help: 'number of outputs', type: INT, default: 99999999 },
  ],
} as const satisfies ParserSpec;

/** The kernel's softirq_to_name[] (kernel/softirq.c), as bcc's vec_to_name. */
export const SOFTIRQ_NAMES = [
  'hi',
  'timer',
  'net_tx',
  'net_rx',
  'block',
  'irq_poll',
  'tasklet',
  'sched',
  'hrtimer',
  'rcu',
];

/** bcc's `vec_to_name`; a vector the table does not know prints as its number. */
export function vecToName(vec: bigint | string | number): string {
  return SOFTIRQ_NAMES[Number(vec)] ?? String(vec);
}

export interface SoftirqsOptions {
  events: boolean;
  dist: boolean;
  nanoseconds: boolean;
  cpu?: number | null;
}

/** bcc's label and divisor. */
export function unit(o: Pick<SoftirqsOptions, 'events' | 'nanoseconds'>): { label: string; factor: number } {
  if (o.events) return { label: 'count', factor: 1 };
  return o.nanoseconds ? { label: 'nsecs', factor: 1 } : { label: 'usecs', factor: 1000 };
}

/** The bpftrace program: `@dist[vec]` = count(), sum(ns) or hist(ns / factor). */
export function buildProgram(o: SoftirqsOptions): string {
  const { factor } = unit(o);
  const cpu = o.cpu !== null && o.cpu !== undefined ? `cpu == ${o.cpu}` : null;
  let p = configBlock();
  if (o.events) return `${p}tracepoint:irq:softirq_entry${predicate([cpu])} {\n  @dist[args.vec] = count();\n}\n`;
  p += `tracepoint:irq:softirq_entry${predicate([cpu])} {\n  @start[tid, cpu] = (nsecs, args.vec);\n}\n`;
  p += `tracepoint:irq:softirq_exit${predicate([cpu])} {\n  $v = @start[tid, cpu];\n  if ($v.0 != 0) {\n`;
  p += o.dist ? `    @dist[$v.1] = hist((nsecs - $v.0) / ${factor});\n` : '    @dist[$v.1] = sum(nsecs - $v.0);\n';
  p += '    delete(@start[tid, cpu]);\n  }\n}\n';
  return p;
}

/** How softirqs reads and prints an interval (bcc's table or `softirq = NAME` histograms). */
function report(o: SoftirqsOptions & { timestamp: boolean }): IrqReport {
  return {
    heading: 'SOFTIRQ',
    section: 'softirq',
    width: 16,
    keyName: vecToName,
    ...unit(o),
    dist: o.dist,
    timestamp: o.timestamp,
  };
}

/** One interval's text (bcc's loop body after the sleep). */
export function formatInterval(t: Pick<Tracer, 'readMap'>, o: SoftirqsOptions & { timestamp: boolean }): string {
  return formatIrqInterval(t.readMap('dist'), report(o));
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const o = {
    events: a.events,
    dist: a.dist,
    nanoseconds: a.nanoseconds,
    cpu: a.cpu,
    timestamp: a.timestamp,
  };
  if (o.events && (o.dist || o.nanoseconds)) {
    writer.line("The --events option can't be used with time-based options");
    return 0;
  }
  const program = buildProgram(o);
  const r = report(o);
  return runIntervals({
    tool: 'softirqs',
    program,
    writer,
    seconds: a.interval,
    count: a.count,
    onStarted: () =>
      writer.line(
        o.events
          ? 'Tracing soft irq events... Hit Ctrl-C to end.'
          : 'Tracing soft irq event time... Hit Ctrl-C to end.',
      ),
    read: (t, now) => readIrqInterval(t.readMap('dist'), r, now),
    format: (i) => formatIrqTick(i, r),
    clear: ['dist'],
  });
}

export const TOOL = defineTool({
  spec: SPEC,
  results: 'intervals',
  run,
  heatmap: {
    kind: 'hist',
    title: 'Soft IRQ Time Heat Map',
    refuse: (a) => (a.dist ? null : '--heatmap draws the -d histograms: add -d'),
  },
});

/** `bpfscope softirqs [flags] [interval] [count]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
