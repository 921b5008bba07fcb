/**
 * oomkill: trace the kernel's out-of-memory killer, one line per victim with the load averages. Follows bcc's
 * `tools/oomkill.py` line (`HH:MM:SS Triggered by PID N ("comm"), OOM kill of PID N ("comm"), N pages, loadavg:
 * ...`) on the `oom:mark_victim` tracepoint instead of a kprobe on oom_kill_process.
 *
 * Differences, both from the tracepoint's fields: "pages" is the victim's total VM size in pages (mark_victim's
 * `total_vm`, in kB, divided by the page size), not bcc's `oc->totalpages` (the size of the memory the OOM
 * killer chose from: not in the tracepoint); bcc's newest version follows each line with the trigger's user
 * stack, which is left out (as bcc 0.26 prints).
 */
import type { ParserSpec } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { type DecodedOf, records } from './framework/record.js';
import { defineTool, runProgram, toolMain } from './framework/runner.js';
import { clockTime, loadAvg, pageSizeKb } from './framework/system.js';

export const SPEC = {
  prog: 'oomkill',
  description: 'Trace the out-of-memory killer',
  options: [{ flags: ['--ebpf'], kind: 'flag', help: null }],
} as const satisfies ParserSpec;

/** The program's record: one per OOM victim (`f`: the task that triggered the kill, `t`: the victim). */
export const RECORDS = records({
  kill: { fpid: 'u32', totalVmKb: 'num', tpid: 'u32', fcomm: 'str', tcomm: 'str' },
});
export type KillRecord = DecodedOf<typeof RECORDS.decls>;

/** One OOM kill (runTool's row, `--json`'s object). */
export interface OomKillRow {
  /** Wall-clock time when the line was printed, HH:MM:SS. */
  time: string;
  /** The process that triggered the OOM killer (the task running it), and its name. */
  fpid: number;
  fcomm: string;
  /** The process killed, and its name. */
  tpid: number;
  tcomm: string;
  /** The victim's total VM size in pages (mark_victim's `total_vm` kB / the page size; see the module comment). */
  pages: number;
  /** /proc/loadavg's text when the line was printed. */
  loadavg: string;
}

/** The bpftrace program. The task running the OOM killer (current) is bcc's "triggered by" process. */
export function buildProgram(): string {
  const emit = RECORDS.emit('kill', {
    fpid: 'pid',
    totalVmKb: 'args.total_vm',
    tpid: 'args.pid',
    fcomm: 'comm',
    tcomm: 'str(args.comm)',
  });
  return `${configBlock()}tracepoint:oom:mark_victim {\n  ${emit}\n}\n`;
}

/** The row of one record; `pageKb` is the page size in kB. */
export function toRow(
  r: KillRecord,
  pageKb: number,
  time: string = clockTime(),
  loadavg: string = loadAvg(),
): OomKillRow {
  const pages = Math.floor(r.totalVmKb / pageKb);
  return { time, fpid: r.fpid, fcomm: r.fcomm, tpid: r.tpid, tcomm: r.tcomm, pages, loadavg };
}

/** bcc's line for one row. */
export function formatRow(row: OomKillRow): string {
  return `${pyFormat(
    '%s Triggered by PID %d ("%s"), OOM kill of PID %d ("%s"), %d pages, loadavg: %s',
    row.time,
    row.fpid,
    row.fcomm,
    row.tpid,
    row.tcomm,
    row.pages,
    row.loadavg,
  )}\n`;
}

async function run(_a: unknown, writer: ToolWriter): Promise<number> {
  const pageKb = pageSizeKb();
  return runProgram({
    tool: 'oomkill',
    program: buildProgram(),
    writer,
    onStarted: () => writer.line('Tracing OOM kills... Ctrl-C to stop.'),
    records: RECORDS,
    onRecord: (r: KillRecord) => writer.emit(toRow(r, pageKb), formatRow),
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'rows', run });

/** `bpfscope oomkill`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
