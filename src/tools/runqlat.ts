/**
 * runqlat: run queue (scheduler) latency as a log2 histogram. Follows bcc's `tools/runqlat.py` (flags, help,
 * "Tracing run queue latency..." line, `-P`/`-L` sections `pid = N`/`tid = N`, `-m`, `-T`, `[interval] [count]`)
 * on the classic tracepoints `sched:sched_wakeup`, `sched:sched_wakeup_new` (enqueue) and `sched:sched_switch`
 * (a preempted task is re-enqueued; the next task's wait ends), instead of bcc's raw tracepoints with task_struct
 * pointers.
 *
 * The tracepoints give thread IDs only, so the process ID (for `-p` and `-P`) comes from a map filled in
 * sched_switch while each thread is on-CPU (`@tgid[tid] = pid`); a thread not seen on-CPU since tracing started
 * counts as its own process for `-P` and is skipped by `-p`. `--pidnss` needs the task's PID namespace
 * (task_struct dereference) and is not supported.
 */
import type { Tracer } from '../runtime/tracer.js';
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import type { HistInterval } from './framework/heatmap.js';
import {
  formatLog2Hist,
  formatSectionedLog2Hist,
  type Log2Bucket,
  log2Buckets,
  log2SlotsOf,
} from './framework/hist.js';
import { log2Sections, log2Slots } from './framework/histmaps.js';
import { runIntervals } from './framework/interval.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { defineTool, toolMain, unsupported } from './framework/runner.js';
import { clockTime } from './framework/system.js';

export const SPEC = {
  prog: 'runqlat',
  description: 'Summarize run queue (scheduler) latency as a histogram',
  raw: true,
  epilog: `examples:
    ./runqlat            # summarize run queue latency as a histogram
    ./runqlat 1 10       # print 1 second summaries, 10 times
    ./runqlat -mT 1      # 1s summaries, milliseconds, and timestamps
    ./runqlat -P         # show each PID separately
    ./runqlat -p 185     # trace PID 185 only
`,
  options: [
    { flags: ['-T', '--timestamp'], kind: 'flag', help: 'include timestamp on output' },
    { flags: ['-m', '--milliseconds'], kind: 'flag', help: 'millisecond histogram' },
    { flags: ['-P', '--pids'], kind: 'flag', help: 'print a histogram per process ID' },
    { flags: ['--pidnss'], kind: 'flag', help: 'print a histogram per PID namespace' },
    { flags: ['-L', '--tids'], kind: 'flag', help: 'print a histogram per thread ID' },
    { flags: ['-p', '--pid'], kind: 'value', type: INT, help: 'trace this PID only' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
  positionals: [
    { name: 'interval', help: 'output interval, in seconds', type: INT, default: 99999999 },
    { name: 'count', help: 'number of outputs', type: INT, default: 99999999 },
  ],
} as const satisfies ParserSpec;

/**
 * sched_switch's `prev_state` for a task that is still runnable: 0 (TASK_RUNNING) or TASK_REPORT_MAX (0x100 on
 * current kernels: the value `__trace_sched_switch_state()` reports for a preempted task).
 */
export const RUNNABLE_PREV_STATE = '(args.prev_state == 0 || args.prev_state == 256)';

export interface RunqlatOptions {
  milliseconds: boolean;
  pids: boolean;
  tids: boolean;
  pid?: number | null;
}

/** The bpftrace program for `o`: `@dist` (or `@dist[pid|tid]`) log2 histogram of the run queue wait. */
export function buildProgram(o: RunqlatOptions): string {
  const factor = o.milliseconds ? 1000000 : 1000;
  const needTgid = Boolean(o.pid) || (o.pids && !o.tids);
  const filterPid = o.pid !== null && o.pid !== undefined && o.pid !== 0;
  let p = configBlock();
  // Enqueue: bcc's trace_enqueue(tgid, pid) skips pid 0 (idle) and, with -p, other processes.
  const wakeFilter = filterPid ? ` && @tgid[args.pid] == ${o.pid}` : '';
  p += 'tracepoint:sched:sched_wakeup,\ntracepoint:sched:sched_wakeup_new {\n';
  p += `  if (args.pid != 0${wakeFilter}) {\n    @start[args.pid] = nsecs;\n  }\n}\n`;
  p += 'tracepoint:sched:sched_switch {\n';
  if (needTgid) p += '  @tgid[tid] = pid;\n';
  // The previous task is current here: `pid` is its process ID.
  p += `  if (${RUNNABLE_PREV_STATE} && args.prev_pid != 0${filterPid ? ` && pid == ${o.pid}` : ''}) {\n`;
  p += '    @start[args.prev_pid] = nsecs;\n  }\n';
  p += '  $next = args.next_pid;\n  $s = @start[$next];\n';
  const nextTgid = needTgid ? '    $g = @tgid[$next];\n    if ($g == 0) {\n      $g = $next;\n    }\n' : '';
  p += `  if ($next != 0 && $s != 0) {\n${nextTgid}`;
  if (filterPid) p += `    if ($g == ${o.pid}) {\n`;
  const ind = filterPid ? '      ' : '    ';
  p += `${ind}$d = (nsecs - $s) / ${factor};\n`;
  p += `${ind}${o.tids ? '@dist[$next] = hist($d);' : o.pids ? '@dist[$g] = hist($d);' : '@dist = hist($d);'}\n`;
  if (filterPid) p += '    }\n';
  p += '    delete(@start[$next]);\n  }\n}\n';
  p += 'tracepoint:sched:sched_process_exit {\n  delete(@start[args.pid]);\n';
  if (needTgid) p += '  delete(@tgid[args.pid]);\n';
  p += '}\n';
  return p;
}

/** One interval of runqlat (runTool's interval, `--json`'s object; the framework's {@link HistInterval}). */
export interface RunqlatInterval extends HistInterval {
  /** Wall-clock time at the end of the interval, HH:MM:SS (bcc's -T line). */
  time: string;
  /** `usecs` or `msecs` (-m): the unit of the buckets' bounds. */
  unit: 'usecs' | 'msecs';
  /** One histogram, or with -P one per process (`pid`), with -L one per thread (`tid`), in ID order. */
  histograms: { pid?: number; tid?: number; buckets: Log2Bucket[] }[];
}

/** Read one interval from the maps (bcc's loop body after the sleep). */
export function readInterval(t: Pick<Tracer, 'readMap'>, o: RunqlatOptions, now: Date = new Date()): RunqlatInterval {
  const dist = t.readMap('dist');
  const histograms: RunqlatInterval['histograms'] =
    o.pids || o.tids
      ? log2Sections(dist, String).map((s) => ({
          [o.tids ? 'tid' : 'pid']: Number(s.label),
          buckets: log2Buckets(s.vals),
        }))
      : [{ buckets: log2Buckets(log2Slots(dist)) }];
  return { time: clockTime(now), unit: o.milliseconds ? 'msecs' : 'usecs', histograms };
}

/** What one interval prints: a blank line, the time with -T, the histogram(s). */
export function formatTick(i: RunqlatInterval, o: { timestamp: boolean }): string {
  let out = '\n';
  if (o.timestamp) out += pyFormat('%-8s\n', i.time);
  const first = i.histograms[0];
  if (first && (first.pid !== undefined || first.tid !== undefined)) {
    const sections = i.histograms.map((h) => ({ label: String(h.pid ?? h.tid), vals: log2SlotsOf(h.buckets) }));
    out += formatSectionedLog2Hist(sections, first.tid !== undefined ? 'tid' : 'pid', i.unit);
  } else if (first) out += formatLog2Hist(log2SlotsOf(first.buckets), i.unit);
  return out;
}

/** One interval's text from the maps. */
export function formatInterval(t: Pick<Tracer, 'readMap'>, o: RunqlatOptions & { timestamp: boolean }): string {
  return formatTick(readInterval(t, o), o);
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  if (a.pidnss) {
    throw unsupported(
      "runqlat: --pidnss needs each task's PID namespace (task_struct->thread_pid->numbers[level].ns), and bpfscope's language cannot dereference kernel structs yet",
    );
  }
  const o = { milliseconds: a.milliseconds, pids: a.pids, tids: a.tids, pid: a.pid, timestamp: a.timestamp };
  const program = buildProgram(o);
  return runIntervals({
    tool: 'runqlat',
    program,
    writer,
    seconds: a.interval,
    count: a.count,
    onStarted: () => writer.line('Tracing run queue latency... Hit Ctrl-C to end.'),
    read: (t, now) => readInterval(t, o, now),
    format: (i) => formatTick(i, o),
    clear: ['dist'],
  });
}

export const TOOL = defineTool({
  spec: SPEC,
  results: 'intervals',
  run,
  heatmap: { kind: 'hist', title: 'Run Queue Latency Heat Map' },
});

/** `bpfscope runqlat [flags] [interval] [count]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
