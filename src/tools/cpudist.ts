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
import { INT, type Parsed, type ParserSpec } from './framework/argparse.js';
import { formatLog2Hist, formatSectionedLog2Hist } from './framework/hist.js';
import { log2Sections, log2Slots, scalarValues } from './framework/histmaps.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { runProgram, toolMain } from './framework/runner.js';
import { clockTime, readComm } from './framework/system.js';

export const SPEC: ParserSpec = {
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
};

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

/** bcc's `pid_to_comm`: `"<pid> <contents of /proc/PID/comm>"` (newline included, as bcc prints it), or the pid. */
export function pidToComm(pid: bigint | string): string {
  const comm = readComm(Number(pid));
  return comm === null ? String(pid) : `${pid} ${comm}`;
}

/** One interval's text: a blank line, the time with -T, the histogram(s), the -e summary. */
export function formatInterval(
  t: Pick<Tracer, 'readMap'>,
  o: CpudistOptions & { timestamp: boolean },
  sectionLabel: (pid: bigint | string) => string = pidToComm,
): string {
  const label = o.milliseconds ? 'msecs' : 'usecs';
  let out = '\n';
  if (o.timestamp) out += pyFormat('%-8s\n', clockTime());
  const dist = t.readMap('dist');
  if (o.pids || o.tids) {
    out += formatSectionedLog2Hist(log2Sections(dist, sectionLabel), o.tids ? 'tid' : 'pid', label);
  } else out += formatLog2Hist(log2Slots(dist), label);
  if (o.extension) {
    const total = scalarValues(t.readMap('ext_total'))[0]?.value ?? 0n;
    const count = scalarValues(t.readMap('ext_count'))[0]?.value ?? 0n;
    if (count > 0n) {
      out += `${pyFormat('\navg = %ld %s, total: %ld %s, count: %ld\n', total / count, label, total, label, count)}\n`;
    }
  }
  return out;
}

async function run(a: Parsed, writer: ToolWriter): Promise<number> {
  const o = {
    offcpu: a.offcpu as boolean,
    milliseconds: a.milliseconds as boolean,
    pids: a.pids as boolean,
    tids: a.tids as boolean,
    pid: a.pid as number | null,
    includeIdle: a.include_idle as boolean,
    extension: a.extension as boolean,
    timestamp: a.timestamp as boolean,
  };
  const program = buildProgram(o);
  return runProgram({
    tool: 'cpudist',
    program,
    writer,
    interval: { seconds: a.interval as number, count: a.count as number },
    onStarted: () => writer.line(`Tracing ${o.offcpu ? 'off' : 'on'}-CPU time... Hit Ctrl-C to end.`),
    onTick: (t) => {
      writer.write(formatInterval(t, o));
      t.clearMap('dist');
      if (o.extension) {
        t.clearMap('ext_total');
        t.clearMap('ext_count');
      }
    },
  });
}

/** `bpfscope cpudist [flags] [interval] [count]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(SPEC, argv, run);
}
