/**
 * cpudist: on-CPU (or, with -O, off-CPU) time per task as a log2 histogram. Follows bcc's `tools/cpudist.py`
 * (flags, help, "Tracing on-CPU time..." line, `-P`/`-L` sections labelled `pid = <pid> <comm>`, `-e` summary,
 * `-I` idle, `[interval] [count]`) on the `sched:sched_switch` tracepoint instead of a finish_task_switch kprobe.
 *
 * bcc keys a task's start time by (pid, cpu for the idle task); so does this. The tracepoint gives thread IDs
 * only: the process ID of the next task (for `-p`, `-P`) comes from a map filled while each thread is on-CPU, as
 * in runqlat.ts; an unknown thread counts as its own process.
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
import { log2Sections, log2Slots, scalarValues } from './framework/histmaps.js';
import { runIntervals } from './framework/interval.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { defineTool, toolMain } from './framework/runner.js';
import { clockTime, readComm } from './framework/system.js';

export const SPEC = {
  prog: 'cpudist',
  description: 'Summarize on- and off-CPU time per task as a histogram.',
  raw: true,
  epilog: `examples:
    cpudist              # summarize on-CPU time as a histogram
    cpudist -O           # summarize off-CPU time as a histogram
    cpudist 1 10         # print 1 second summaries, 10 times
    cpudist -mT 1        # 1s summaries, milliseconds, and timestamps
    cpudist -P           # show each PID separately
    cpudist -p 185       # trace PID 185 only
    cpudist -I           # include CPU idle time
    cpudist -e           # show extension summary (average/total/count)
`,
  options: [
    { flags: ['-O', '--offcpu'], kind: 'flag', help: 'measure off-CPU time' },
    { flags: ['-T', '--timestamp'], kind: 'flag', help: 'include timestamp on output' },
    { flags: ['-m', '--milliseconds'], kind: 'flag', help: 'millisecond histogram' },
    { flags: ['-P', '--pids'], kind: 'flag', help: 'print a histogram per process ID' },
    { flags: ['-L', '--tids'], kind: 'flag', help: 'print a histogram per thread ID' },
    { flags: ['-p', '--pid'], kind: 'value', type: INT, help: 'trace this PID only' },
    { flags: ['-I', '--include-idle'], kind: 'flag', help: 'include CPU idle time' },
    { flags: ['-e', '--extension'], kind: 'flag', help: 'show extension summary (average/total/count)' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
  positionals: [
    { name: 'interval', help: 'output interval, in seconds', type: INT, default: 99999999 },
    { name: 'count', help: 'number of outputs', type: INT, default: 99999999 },
  ],
} as const satisfies ParserSpec;

export interface CpudistOptions {
  offcpu: boolean;
  milliseconds: boolean;
  pids: boolean;
  tids: boolean;
  pid?: number | null;
  includeIdle: boolean;
  extension: boolean;
}

/**
 * The bpftrace program: bcc's `store_start` / `update_hist` on sched_switch, `@dist` (or `@dist[pid|tid]`) log2
 * histogram; with -e `@ext_total`/`@ext_count`.
 */
export function buildProgram(o: CpudistOptions): string {
  const factor = o.milliseconds ? 1000000 : 1000;
  const filterPid = o.pid !== null && o.pid !== undefined && o.pid !== 0;
  const needTgid = filterPid || (o.pids && !o.tids);
  // One task's guard: bcc's PID_FILTER (tgid != PID) and IDLE_FILTER (pid == 0 unless -I).
  const guard = (tgid: string, tid: string): string | null => {
    const c: string[] = [];
    if (filterPid) c.push(`${tgid} == ${o.pid}`);
    if (!o.includeIdle) c.push(`${tid} != 0`);
    return c.length ? c.join(' && ') : null;
  };
  /** Wrap `body` (lines indented by 4) in the guard, or dedent it by 2 when there is none. */
  const guarded = (tgid: string, tid: string, body: string): string => {
    const g = guard(tgid, tid);
    return g ? `  if (${g}) {\n${body}  }\n` : body.replace(/^ {2}/gm, '');
  };
  // bcc's entry_key_t: (pid, cpu for the idle task pid 0, else 0xFFFFFFFF).
  const key = (tid: string): string => `${tid}, (uint32)(${tid} == 0 ? cpu : 0xffffffff)`;
  const store = (tgid: string, tid: string): string => guarded(tgid, tid, `    @start[${key(tid)}] = $ts;\n`);
  const update = (tgid: string, tid: string): string => {
    let s = `    $s = @start[${key(tid)}];\n`;
    s += '    if ($s != 0 && $ts >= $s) {\n';
    s += `      $d = ($ts - $s) / ${factor};\n`;
    s += `      ${o.tids ? `@dist[${tid}] = hist($d);` : o.pids ? `@dist[${tgid}] = hist($d);` : '@dist = hist($d);'}\n`;
    if (o.extension) s += '      @ext_total = sum($d);\n      @ext_count = count();\n';
    s += '    }\n';
    return guarded(tgid, tid, s);
  };
  let p = configBlock();
  p += 'tracepoint:sched:sched_switch {\n  $ts = nsecs;\n';
  if (needTgid) {
    // The previous task is current: remember its process ID; look up the next task's.
    p +=
      '  @tgid[tid] = pid;\n  $ntgid = @tgid[args.next_pid];\n  if ($ntgid == 0) {\n    $ntgid = args.next_pid;\n  }\n';
  }
  const prevTgid = 'pid';
  const nextTgid = needTgid ? '$ntgid' : 'args.next_pid';
  if (o.offcpu) {
    p += store(prevTgid, 'args.prev_pid');
    p += update(nextTgid, 'args.next_pid');
  } else {
    p += update(prevTgid, 'args.prev_pid');
    p += store(nextTgid, 'args.next_pid');
  }
  p += '}\n';
  p += 'tracepoint:sched:sched_process_exit {\n  delete(@start[args.pid, (uint32)0xffffffff]);\n';
  if (needTgid) p += '  delete(@tgid[args.pid]);\n';
  p += '}\n';
  return p;
}

/** The task name of a process or thread, from /proc (without its newline), or null when it is gone. */
export function commOf(id: number): string | null {
  const comm = readComm(id);
  return comm === null ? null : comm.replace(/\n$/, '');
}

/** One interval of cpudist (runTool's interval, `--json`'s object; the framework's {@link HistInterval}). */
export interface CpudistInterval extends HistInterval {
  /** Wall-clock time at the end of the interval, HH:MM:SS (bcc's -T line). */
  time: string;
  /** `usecs` or `msecs` (-m): the unit of the buckets' bounds. */
  unit: 'usecs' | 'msecs';
  /**
   * One histogram, or with -P one per process (`pid`), with -L one per thread (`tid`), in ID order; `comm` is its
   * name from /proc when the interval was read (null: gone).
   */
  histograms: { pid?: number; tid?: number; comm?: string | null; buckets: Log2Bucket[] }[];
  /** -e: the total and count of the interval's times (null without -e, or when there were none). */
  extension: { total: bigint; count: bigint } | null;
}

/** Read one interval from the maps; `comm` names a section's process or thread. */
export function readInterval(
  t: Pick<Tracer, 'readMap'>,
  o: CpudistOptions,
  now: Date = new Date(),
  comm: (id: number) => string | null = commOf,
): CpudistInterval {
  const dist = t.readMap('dist');
  const histograms: CpudistInterval['histograms'] =
    o.pids || o.tids
      ? log2Sections(dist, String).map((s) => {
          const id = Number(s.label);
          return { [o.tids ? 'tid' : 'pid']: id, comm: comm(id), buckets: log2Buckets(s.vals) };
        })
      : [{ buckets: log2Buckets(log2Slots(dist)) }];
  let extension: CpudistInterval['extension'] = null;
  if (o.extension) {
    const total = scalarValues(t.readMap('ext_total'))[0]?.value ?? 0n;
    const count = scalarValues(t.readMap('ext_count'))[0]?.value ?? 0n;
    if (count > 0n) extension = { total, count };
  }
  return { time: clockTime(now), unit: o.milliseconds ? 'msecs' : 'usecs', histograms, extension };
}

/**
 * What one interval prints: a blank line, the time with -T, the histogram(s) (sections labelled as bcc's
 * `pid_to_comm`: `<pid> <comm>` with the comm's newline, or the bare ID), the -e summary.
 */
export function formatTick(i: CpudistInterval, o: { timestamp: boolean }): string {
  const label = i.unit;
  let out = '\n';
  if (o.timestamp) out += pyFormat('%-8s\n', i.time);
  const first = i.histograms[0];
  if (first && (first.pid !== undefined || first.tid !== undefined)) {
    const sections = i.histograms.map((h) => {
      const id = h.pid ?? h.tid;
      return {
        label: h.comm === null || h.comm === undefined ? String(id) : `${id} ${h.comm}\n`,
        vals: log2SlotsOf(h.buckets),
      };
    });
    out += formatSectionedLog2Hist(sections, first.tid !== undefined ? 'tid' : 'pid', label);
  } else if (first) out += formatLog2Hist(log2SlotsOf(first.buckets), label);
  if (i.extension) {
    const { total, count } = i.extension;
    out += `${pyFormat('\navg = %ld %s, total: %ld %s, count: %ld\n', total / count, label, total, label, count)}\n`;
  }
  return out;
}

/** One interval's text from the maps (see {@link formatTick}). */
export function formatInterval(
  t: Pick<Tracer, 'readMap'>,
  o: CpudistOptions & { timestamp: boolean },
  comm: (id: number) => string | null = commOf,
): string {
  return formatTick(readInterval(t, o, new Date(), comm), o);
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const o = {
    offcpu: a.offcpu,
    milliseconds: a.milliseconds,
    pids: a.pids,
    tids: a.tids,
    pid: a.pid,
    includeIdle: a.include_idle,
    extension: a.extension,
    timestamp: a.timestamp,
  };
  const program = buildProgram(o);
  return runIntervals({
    tool: 'cpudist',
    program,
    writer,
    seconds: a.interval,
    count: a.count,
    onStarted: () => writer.line(`Tracing ${o.offcpu ? 'off' : 'on'}-CPU time... Hit Ctrl-C to end.`),
    read: (t, now) => readInterval(t, o, now),
    format: (i) => formatTick(i, o),
    clear: o.extension ? ['dist', 'ext_total', 'ext_count'] : ['dist'],
  });
}

export const TOOL = defineTool({
  spec: SPEC,
  results: 'intervals',
  run,
  heatmap: { kind: 'hist', title: 'CPU Time Heat Map' },
});

/** `bpfscope cpudist [flags] [interval] [count]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
