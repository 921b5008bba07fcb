/**
 * exitsnoop: trace process termination (exit or fatal signal), one line per process. Follows bcc's
 * `tools/exitsnoop.py` (flags, help, the `PCOMM PID PPID TID AGE(s) EXIT_CODE` header, `%-16s %-7d %-7d %-7d
 * %-7.2f` rows, `code N` / `signal N (NAME)` / `, core dumped` exit descriptions, `-t`/`--utc` time stamps with
 * milliseconds, `--label`, `-x`, `-p` and `--per-thread`) on the same `sched:sched_process_exit` tracepoint, with
 * the exit code, parent and start time read from `curtask` as bcc does.
 *
 * Like bcc, `-p PID` ends the run once that process has exited.
 */
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { type DecodedOf, records } from './framework/record.js';
import { defineTool, runProgram, toolMain } from './framework/runner.js';
import { timeZoneAbbreviation } from './framework/system.js';
import { PYTHON_SIGNAL_NAMES } from './data/signals.js';
import type { Tracer } from '../runtime/tracer.js';

export const SPEC = {
  prog: 'exitsnoop',
  description: 'Trace all process termination (exit, fatal signal)',
  raw: true,
  epilog: `examples:
    exitsnoop                # trace all process termination
    exitsnoop -x             # trace only fails, exclude exit(0)
    exitsnoop -t             # include timestamps (local time)
    exitsnoop --utc          # include timestamps (UTC)
    exitsnoop -p 181         # only trace PID 181
    exitsnoop --label=exit   # label each output line with 'exit'
    exitsnoop --per-thread   # trace per thread termination
`,
  options: [
    { flags: ['-t', '--timestamp'], kind: 'flag', help: 'include timestamp (local time default)' },
    { flags: ['--utc'], kind: 'flag', help: 'include timestamp in UTC (-t implied)' },
    { flags: ['-p', '--pid'], kind: 'value', type: INT, help: 'trace this PID only' },
    { flags: ['--label'], kind: 'value', help: 'label each line' },
    { flags: ['-x', '--failed'], kind: 'flag', help: 'trace only fails, exclude exit(0)' },
    { flags: ['--per-thread'], kind: 'flag', help: 'trace per thread termination' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
    // bcc's RHEL 7.6 switch (task->start_time as a struct timespec); BTF gives the type, so it changes nothing.
    { flags: ['--timespec'], kind: 'flag', help: null },
  ],
} as const satisfies ParserSpec;

export interface ExitsnoopOptions {
  pid?: number | null;
  perThread?: boolean;
  failed?: boolean;
}

/** The program's record: one per exit (age in ns, task->exit_code as the kernel keeps it). */
export const RECORDS = records({
  exit: { ageNs: 'num', pid: 'u32', tid: 'u32', ppid: 'u32', exitCode: 's32', comm: 'str' },
});
export type ExitRecord = DecodedOf<typeof RECORDS.decls>;

/** One process (or thread) that ended (runTool's row, `--json`'s object). */
export interface ExitRow {
  /** When the line was printed, HH:MM:SS.mmm, local time or UTC with --utc (bcc's -t column). */
  time: string;
  /** `--label`'s text (`exit` when given empty); null without --label. */
  label: string | null;
  comm: string;
  pid: number;
  ppid: number;
  tid: number;
  /** How long the task lived, in ns (bcc's AGE(s) is this in seconds). */
  ageNs: number;
  /** task->exit_code as wait(2) reports it: exit code in bits 8-15, signal in bits 0-6, core dump flag 0x80. */
  exitCode: number;
  /** bcc's EXIT_CODE text: `0`, `code N`, `signal N (NAME)`, `, core dumped `. */
  exit: string;
}

/**
 * The bpftrace program for `o`. As bcc: without `--per-thread` only a process's main thread (tid == tgid) is
 * reported; `-x` drops exit code 0; the age is now minus task->start_time (both CLOCK_MONOTONIC ns).
 */
export function buildProgram(o: ExitsnoopOptions): string {
  const hasPid = o.pid !== null && o.pid !== undefined;
  const conds = [
    hasPid ? `pid == ${o.pid}` : null,
    o.perThread ? null : 'tid == pid',
    o.failed ? 'curtask->exit_code != 0' : null,
  ];
  let p = configBlock();
  p += `tracepoint:sched:sched_process_exit${predicate(conds)} {\n`;
  const emit = RECORDS.emit('exit', {
    ageNs: 'nsecs - curtask->start_time',
    pid: 'pid',
    tid: 'tid',
    ppid: 'curtask->real_parent->tgid',
    exitCode: 'curtask->exit_code',
    comm: 'comm',
  });
  p += `  ${emit}\n}\n`;
  return p;
}

export interface RowOptions {
  timestamp: boolean;
  utc: boolean;
  /** `--label`: null without the flag; an empty label prints as `exit`. */
  label: string | null;
}

/** bcc's header line; `zone` is the local time zone's abbreviation (`strftime("%Z")`). */
export function header(o: RowOptions, zone: string = timeZoneAbbreviation()): string {
  let h = '';
  if (o.timestamp) h += pyFormat('%-13s', `TIME-${o.utc ? 'UTC' : zone}`);
  if (o.label !== null) h += pyFormat('%-6s', 'LABEL');
  return `${h}${pyFormat('%-16s %-7s %-7s %-7s %-7s %-10s', 'PCOMM', 'PID', 'PPID', 'TID', 'AGE(s)', 'EXIT_CODE')}\n`;
}

/** `HH:MM:SS.mmm` of `d`, in UTC or local time (bcc: `strftime("%H:%M:%S.%f")[:-3]`). */
export function clockTimeMs(d: Date, utc: boolean): string {
  const parts = utc
    ? [d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()]
    : [d.getHours(), d.getMinutes(), d.getSeconds()];
  const ms = utc ? d.getUTCMilliseconds() : d.getMilliseconds();
  return `${parts.map((n) => String(n).padStart(2, '0')).join(':')}.${String(ms).padStart(3, '0')}`;
}

/**
 * How the process ended, from `task->exit_code` (wait status layout: exit code in bits 8-15, signal in bits 0-6,
 * core dump flag 0x80): `0`, `code N`, `signal N (NAME)` and/or `, core dumped ` as bcc prints them.
 */
export function exitDescription(exitCode: number): string {
  const code = exitCode >> 8;
  const sigInfo = exitCode & 0xff;
  if (sigInfo === 0) return code === 0 ? '0' : `code ${code}`;
  let out = '';
  const sig = sigInfo & 0x7f;
  if (sig) out += `signal ${sig} (${PYTHON_SIGNAL_NAMES[sig] ?? 'unknown'})`;
  if (sigInfo & 0x80) out += ', core dumped ';
  return out;
}

/** The row of one record. */
export function toRow(r: ExitRecord, o: Pick<RowOptions, 'utc' | 'label'>, now: Date = new Date()): ExitRow {
  return {
    time: clockTimeMs(now, o.utc),
    label: o.label === null ? null : o.label.length ? o.label : 'exit',
    comm: r.comm,
    pid: r.pid,
    ppid: r.ppid,
    tid: r.tid,
    ageNs: r.ageNs,
    exitCode: r.exitCode,
    exit: exitDescription(r.exitCode),
  };
}

/** bcc's line for one row (with `\n`). */
export function formatRow(row: ExitRow, o: Pick<RowOptions, 'timestamp'>): string {
  let out = '';
  if (o.timestamp) out += pyFormat('%-13s', row.time);
  if (row.label !== null) out += pyFormat('%-6s', row.label);
  const age = row.ageNs / 1e9;
  out += pyFormat('%-16s %-7d %-7d %-7d %-7.2f ', row.comm, row.pid, row.ppid, row.tid, age);
  return `${out}${row.exit}\n`;
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const pid = a.pid;
  const program = buildProgram({ pid, perThread: a.per_thread, failed: a.failed });
  const rowOpts: RowOptions = { timestamp: a.timestamp || a.utc, utc: a.utc, label: a.label };
  let tracer: Tracer | undefined;
  return runProgram({
    tool: 'exitsnoop',
    program,
    writer,
    onStarted: (t) => {
      tracer = t;
      writer.write(header(rowOpts));
    },
    records: RECORDS,
    onRecord: (r: ExitRecord) => {
      writer.emit(toRow(r, rowOpts), (x) => formatRow(x, rowOpts));
      // bcc returns after the poll that delivered the traced PID's exit.
      if (pid !== null) tracer?.stop();
    },
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'rows', run });

/** `bpfscope exitsnoop [flags]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
