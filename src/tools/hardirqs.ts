/**
 * hardirqs: time spent in (or number of) hard interrupt handlers, by handler name. Follows bcc's
 * `tools/hardirqs.py` (flags, help, "Tracing hard irq event time..." line, `%-26s %11s` table sorted by value,
 * `-d` histograms in `hardirq = <name>` sections, `-N`, `-C`, `-c CPU`, `-T`, `[interval] [outputs]`) on the same
 * tracepoints, `irq:irq_handler_entry` and `irq:irq_handler_exit`, keyed like bcc by (thread, CPU); handlers that
 * return IRQ_NONE are not counted. Names are bcc's 32-byte buffer (at most 31 characters).
 */
import type { Tracer } from '../runtime/tracer.js';
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import { formatIrqInterval, formatIrqTick, type IrqReport, readIrqInterval } from './framework/histmaps.js';
import { runIntervals } from './framework/interval.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { defineTool, toolMain } from './framework/runner.js';

export const SPEC = {
  prog: 'hardirqs',
  description: 'Summarize hard irq event time as histograms',
  raw: true,
  epilog: `examples:
    ./hardirqs            # sum hard irq event time
    ./hardirqs -d         # show hard irq event time as histograms
    ./hardirqs 1 10       # print 1 second summaries, 10 times
    ./hardirqs -NT 1      # 1s summaries, nanoseconds, and timestamps
    ./hardirqs -c 1       # sum hard irq event time on CPU 1 only
`,
  options: [
    { flags: ['-T', '--timestamp'], kind: 'flag', help: 'include timestamp on output' },
    { flags: ['-N', '--nanoseconds'], kind: 'flag', help: 'output in nanoseconds' },
    { flags: ['-C', '--count'], kind: 'flag', help: 'show event counts instead of timing' },
    { flags: ['-d', '--dist'], kind: 'flag', help: 'show distributions as histograms' },
    { flags: ['-c', '--cpu'], kind: 'value', type: INT, help: 'trace this CPU only' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
  positionals: [
    { name: 'interval', help: 'output interval, in seconds', type: INT, default: 99999999 },
    { name: 'outputs', help: 'number of outputs', type: INT, default: 99999999 },
  ],
} as const satisfies ParserSpec;

export interface HardirqsOptions {
  count: boolean;
  dist: boolean;
  nanoseconds: boolean;
  cpu?: number | null;
}

/** bcc's label and divisor: `count`/1, `nsecs`/1 or `usecs`/1000. */
export function unit(o: Pick<HardirqsOptions, 'count' | 'nanoseconds'>): { label: string; factor: number } {
  if (o.count) return { label: 'count', factor: 1 };
  return o.nanoseconds ? { label: 'nsecs', factor: 1 } : { label: 'usecs', factor: 1000 };
}

/** The bpftrace program: `@dist[name]` = count(), sum(ns) or hist(ns / factor). */
export function buildProgram(o: HardirqsOptions): string {
  const { factor } = unit(o);
  const cpu = o.cpu !== null && o.cpu !== undefined ? `cpu == ${o.cpu}` : null;
  let p = configBlock();
  p += `tracepoint:irq:irq_handler_entry${predicate([cpu])} {\n  @name[tid, cpu] = str(args.name, 32);\n`;
  if (!o.count) p += '  @start[tid, cpu] = nsecs;\n';
  p += '}\n';
  // bcc's count mode filters the exit probe by CPU too; its time mode does not (the entry already did).
  p += `tracepoint:irq:irq_handler_exit${predicate([o.count ? cpu : null])} {\n`;
  if (o.count) {
    p +=
      '  if (args.ret != 0) {\n    $n = @name[tid, cpu];\n    if ($n != "") {\n      @dist[$n] = count();\n    }\n  }\n';
  } else {
    p += '  $s = @start[tid, cpu];\n  if (args.ret != 0 && $s != 0) {\n    $n = @name[tid, cpu];\n';
    p += o.dist ? `    @dist[$n] = hist((nsecs - $s) / ${factor});\n` : '    @dist[$n] = sum(nsecs - $s);\n';
    p += '  }\n  delete(@start[tid, cpu]);\n';
  }
  p += '  delete(@name[tid, cpu]);\n}\n';
  return p;
}

/** How hardirqs reads and prints an interval (bcc's table or `hardirq = NAME` histograms). */
function report(o: HardirqsOptions & { timestamp: boolean }): IrqReport {
  return {
    heading: 'HARDIRQ',
    section: 'hardirq',
    width: 26,
    keyName: String,
    ...unit(o),
    dist: o.dist,
    timestamp: o.timestamp,
  };
}

/** One interval's text (bcc's loop body after the sleep). */
export function formatInterval(t: Pick<Tracer, 'readMap'>, o: HardirqsOptions & { timestamp: boolean }): string {
  return formatIrqInterval(t.readMap('dist'), report(o));
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const o = {
    count: a.count,
    dist: a.dist,
    nanoseconds: a.nanoseconds,
    cpu: a.cpu,
    timestamp: a.timestamp,
  };
  if (o.count && (o.dist || o.nanoseconds)) {
    writer.line("The --count option can't be used with time-based options");
    return 0;
  }
  const program = buildProgram(o);
  const r = report(o);
  return runIntervals({
    tool: 'hardirqs',
    program,
    writer,
    seconds: a.interval,
    count: a.outputs,
    onStarted: () =>
      writer.line(
        o.count ? 'Tracing hard irq events... Hit Ctrl-C to end.' : 'Tracing hard irq event time... Hit Ctrl-C to end.',
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
    title: 'Hard IRQ Time Heat Map',
    refuse: (a) => (a.dist ? null : '--heatmap draws the -d histograms: add -d'),
  },
});

/** `bpfscope hardirqs [flags] [interval] [outputs]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
