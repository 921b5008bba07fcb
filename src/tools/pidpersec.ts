/**
 * pidpersec: new processes (and threads) per second. Follows bcc's `tools/pidpersec.py` ("Tracing... Ctrl-C to
 * end." and one `HH:MM:SS: PIDs/sec: N` line per second; Ctrl-C ends without a partial line). bcc counts calls of
 * the kernel's `sched_fork()` with a kprobe; here `sched:sched_process_fork` counts the same clones (every new task:
 * process or thread) without kprobes, after they succeed (sched_fork() also runs for a clone that later fails).
 * bcc's pidpersec takes no options; this one accepts `-h` and `--ebpf`.
 */
import type { ParserSpec } from './framework/argparse.js';
import { scalarValues } from './framework/histmaps.js';
import { runIntervals } from './framework/interval.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { defineTool, toolMain } from './framework/runner.js';
import { clockTime } from './framework/system.js';

export const SPEC = {
  prog: 'pidpersec',
  description: 'Count new processes (via fork).',
  options: [{ flags: ['--ebpf'], kind: 'flag', help: null }],
} as const satisfies ParserSpec;

/** The bpftrace program: `@count` of new tasks. */
export function buildProgram(): string {
  return `${configBlock()}tracepoint:sched:sched_process_fork {\n  @count = count();\n}\n`;
}

/** One second of pidpersec (runTool's interval, `--json`'s object). */
export interface PidpersecInterval {
  /** Wall-clock time at the end of the second, HH:MM:SS. */
  time: string;
  /** New tasks (processes and threads) in that second. */
  count: bigint;
}

/** bcc's line for one second's `count`. */
export function formatLine(count: bigint, now: Date = new Date()): string {
  return `${pyFormat('%s: PIDs/sec: %d', clockTime(now), count)}\n`;
}

async function run(_a: unknown, writer: ToolWriter): Promise<number> {
  return runIntervals<PidpersecInterval>({
    tool: 'pidpersec',
    program: buildProgram(),
    writer,
    seconds: 1,
    header: 'Tracing... Ctrl-C to end.\n',
    read: (t, now) => ({ time: clockTime(now), count: scalarValues(t.readMap('count'))[0]?.value ?? 0n }),
    format: (i) => `${pyFormat('%s: PIDs/sec: %d', i.time, i.count)}\n`,
    clear: ['count'],
    // bcc exits on Ctrl-C without printing the second in progress.
    last: 'skip',
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'intervals', run });

/** `bpfscope pidpersec`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
