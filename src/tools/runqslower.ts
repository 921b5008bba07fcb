/**
 * runqslower: one line per run queue wait longer than a threshold. Follows bcc's `tools/runqslower.py` (flags,
 * help, "Tracing run queue latency higher than N us" line, `TIME COMM TID LAT(us)` rows, `-P` previous task,
 * `-p PID` / `-t TID`, `min_us`) on the same raw tracepoints, here as BTF-typed `rawtracepoint:` probes:
 * - `sched_wakeup` and `sched_wakeup_new` start the wait of `args.p`;
 * - `sched_switch`: a `prev` still TASK_RUNNING (preempted) starts waiting again; `next`'s wait ends, and waits
 *   longer than `min_us` microseconds (all with 0) are printed with the task switched out.
 *
 * `-p` and `-t` restrict which tasks start a wait (bcc's FILTER_TGID / FILTER_PID in its enqueue path), so only
 * their waits end in a line. bcc keeps a wait's start time in a pid_max-sized array and clears it only when it
 * prints; here the start is deleted at every switch-in (a hash map cannot be pid_max large), so a task switched
 * in twice without a wakeup in between is not reported the second time with a stale start.
 */
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import { kernelStructHasField } from './framework/kstruct.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { type DecodedOf, records } from './framework/record.js';
import { defineTool, runProgram, toolMain } from './framework/runner.js';
import { clockTime } from './framework/system.js';

export const SPEC = {
  prog: 'runqslower',
  description: 'Trace high run queue latency',
  raw: true,
  epilog: `examples:
    ./runqslower         # trace run queue latency higher than 10000 us (default)
    ./runqslower 1000    # trace run queue latency higher than 1000 us
    ./runqslower -p 123  # trace pid 123
    ./runqslower -t 123  # trace tid 123 (use for threads only)
    ./runqslower -P      # also show previous task comm and TID
`,
  options: [
    { flags: ['-P', '--previous'], kind: 'flag', help: 'also show previous task name and TID' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
    { flags: ['-p', '--pid'], kind: 'value', type: INT, metavar: 'PID', group: 'thread', help: 'trace this PID only' },
    { flags: ['-t', '--tid'], kind: 'value', type: INT, metavar: 'TID', group: 'thread', help: 'trace this TID only' },
  ],
  positionals: [
    { name: 'min_us', help: 'minimum run queue latency to trace, in us (default 10000)', type: INT, default: 10000 },
  ],
} as const satisfies ParserSpec;

export interface RunqslowerOptions {
  /** Print waits longer than this (µs); 0 prints every wait. */
  minUs: number;
  previous: boolean;
  pid?: number | null;
  tid?: number | null;
  /** task_struct's state member: `__state` (Linux 5.14+) or `state`. */
  stateField?: string;
}

/** The program's record: one per wait printed (the task switched in, its wait in µs, the task switched out). */
export const RECORDS = records({
  wait: { tid: 'u32', deltaUs: 'num', prevTid: 'u32', prevComm: 'str', comm: 'str' },
});
export type WaitRecord = DecodedOf<typeof RECORDS.decls>;

/** One run queue wait longer than the threshold (runTool's row, `--json`'s object). */
export interface WaitRow {
  /** Wall-clock time when the line was printed, HH:MM:SS. */
  time: string;
  /** The task that waited (bcc's COMM and TID: a thread ID). */
  comm: string;
  tid: number;
  /** How long it waited on the run queue, in µs. */
  latencyUs: number;
  /** The task it replaced on the CPU (bcc's -P columns). */
  prevComm: string;
  prevTid: number;
}

/** The bpftrace program: `@start[tid]` holds each waiting task's enqueue time (ns); switch-ins print events. */
export function buildProgram(o: RunqslowerOptions): string {
  const state = o.stateField ?? '__state';
  // bcc's trace_enqueue: skip pid 0 (idle) and, with -t/-p, other threads/processes.
  const enqueueOk = (t: string): string => {
    const c = [`${t}->pid != 0`];
    if (o.tid) c.push(`${t}->pid == ${o.tid}`);
    if (o.pid) c.push(`${t}->tgid == ${o.pid}`);
    return c.join(' && ');
  };
  let p = configBlock();
  p += 'rawtracepoint:sched_wakeup,\nrawtracepoint:sched_wakeup_new {\n';
  p += `  if (${enqueueOk('args.p')}) {\n    @start[args.p->pid] = nsecs;\n  }\n}\n`;
  p += 'rawtracepoint:sched_switch {\n';
  // A preempted task (still TASK_RUNNING) waits again from now.
  p += `  if (args.prev->${state} == 0 && ${enqueueOk('args.prev')}) {\n    @start[args.prev->pid] = nsecs;\n  }\n`;
  p += '  $tid = args.next->pid;\n  $s = @start[$tid];\n  if ($s != 0) {\n';
  p += '    $d = (nsecs - $s) / 1000;\n';
  const emit = RECORDS.emit('wait', {
    tid: '$tid',
    deltaUs: '$d',
    prevTid: 'args.prev->pid',
    prevComm: 'args.prev->comm',
    comm: 'args.next->comm',
  });
  const print = `      ${emit}\n`;
  p += o.minUs ? `    if ($d > ${o.minUs}) {\n${print}    }\n` : print.slice(2);
  p += '    delete(@start[$tid]);\n  }\n}\n';
  return p;
}

/** bcc's header line. */
export function header(previous: boolean): string {
  return previous
    ? `${pyFormat('%-8s %-16s %-6s %14s %-16s %-6s', 'TIME', 'COMM', 'TID', 'LAT(us)', 'PREV COMM', 'PREV TID')}\n`
    : `${pyFormat('%-8s %-16s %-6s %14s', 'TIME', 'COMM', 'TID', 'LAT(us)')}\n`;
}

/** The row of one record; the time is when the line is printed. */
export function toRow(r: WaitRecord, now: Date = new Date()): WaitRow {
  return {
    time: clockTime(now),
    comm: r.comm,
    tid: r.tid,
    latencyUs: r.deltaUs,
    prevComm: r.prevComm,
    prevTid: r.prevTid,
  };
}

/** bcc's `print_event` line for one row. */
export function formatRow(row: WaitRow, previous: boolean): string {
  return previous
    ? `${pyFormat('%-8s %-16s %-6d %14d %-16s %-6d', row.time, row.comm, row.tid, row.latencyUs, row.prevComm, row.prevTid)}\n`
    : `${pyFormat('%-8s %-16s %-6d %14d', row.time, row.comm, row.tid, row.latencyUs)}\n`;
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const o: RunqslowerOptions = {
    minUs: a.min_us,
    previous: a.previous,
    pid: a.pid,
    tid: a.tid,
    stateField: kernelStructHasField('task_struct', '__state') ? '__state' : 'state',
  };
  const program = buildProgram(o);
  return runProgram({
    tool: 'runqslower',
    program,
    writer,
    onStarted: () => {
      writer.line(pyFormat('Tracing run queue latency higher than %d us', o.minUs));
      writer.write(header(o.previous));
    },
    records: RECORDS,
    onRecord: (r: WaitRecord) => writer.emit(toRow(r), (x) => formatRow(x, o.previous)),
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'rows', run });

/** `bpfscope runqslower [-P] [-p PID | -t TID] [min_us]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
