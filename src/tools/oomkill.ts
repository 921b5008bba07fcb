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
import type { Parsed, ParserSpec } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { runProgram, toolMain } from './framework/runner.js';
import { clockTime, loadAvg, pageSizeKb } from './framework/system.js';

export const SPEC: ParserSpec = {
  prog: 'oomkill',
  description: 'Trace the out-of-memory killer',
  options: [{ flags: ['--ebpf'], kind: 'flag', help: null }],
};

/** Event record fields, in order (the victim's comm last). */
export const FIELDS = ['fpid', 'total_vm_kb', 'tpid', 'fcomm', 'tcomm'] as const;

/** The bpftrace program. The task running the OOM killer (current) is bcc's "triggered by" process. */
export function buildProgram(): string {
  return `${configBlock()}tracepoint:oom:mark_victim {\n  printf("%d\\x1f%llu\\x1f%d\\x1f%s\\x1f%s\\n", pid, args.total_vm, args.pid, comm, str(args.comm));\n}\n`;
}

/** bcc's line for the event fields; `pageKb` is the page size in kB. */
export function formatRow(
  f: string[],
  pageKb: number,
  time: string = clockTime(),
  loadavg: string = loadAvg(),
): string {
  const [fpid, totalVmKb, tpid, fcomm = '', tcomm = ''] = f;
  const pages = BigInt(totalVmKb ?? '0') / BigInt(pageKb);
  return `${pyFormat(
    '%s Triggered by PID %d ("%s"), OOM kill of PID %d ("%s"), %d pages, loadavg: %s',
    time,
    Number(fpid),
    fcomm,
    Number(tpid),
    tcomm,
    pages,
    loadavg,
  )}\n`;
}

async function run(a: Parsed, writer: ToolWriter): Promise<number> {
  const program = buildProgram();
  const pageKb = pageSizeKb();
  return runProgram({
    tool: 'oomkill',
    program,
    writer,
    fieldCount: FIELDS.length,
    onStarted: () => writer.line('Tracing OOM kills... Ctrl-C to stop.'),
    onEvent: (f) => writer.write(formatRow(f, pageKb)),
  });
}

/** `bpfscope oomkill`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(SPEC, argv, run);
}
