/**
 * pidpersec: new processes (and threads) per second. Follows bcc's `tools/pidpersec.py` ("Tracing... Ctrl-C to
 * end." and one `HH:MM:SS: PIDs/sec: N` line per second; Ctrl-C ends without a partial line). bcc counts calls of
 * the kernel's `sched_fork()` with a kprobe; here `sched:sched_process_fork` counts the same clones (every new task:
 * process or thread) without kprobes, after they succeed (sched_fork() also runs for a clone that later fails).
 * bcc's pidpersec takes no options; this one accepts `-h` and `--ebpf`.
 */
import type { Parsed, ParserSpec } from './framework/argparse.js';
import { scalarValues } from './framework/histmaps.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { runProgram, toolMain } from './framework/runner.js';
import { clockTime } from './framework/system.js';

export const SPEC: ParserSpec = {
  prog: 'pidpersec',
  description: 'Count new processes (via fork).',
  options: [{ flags: ['--ebpf'], kind: 'flag', help: null }],
};

/** The bpftrace program: `@count` of new tasks. */
export function buildProgram(): string {
  return `${configBlock()}tracepoint:sched:sched_process_fork {\n  @count = count();\n}\n`;
}

/** bcc's line for one second's `count`. */
export function formatLine(count: bigint, now: Date = new Date()): string {
  return `${pyFormat('%s: PIDs/sec: %d', clockTime(now), count)}\n`;
}

async function run(a: Parsed, writer: ToolWriter): Promise<number> {
  const program = buildProgram();
  return runProgram({
    tool: 'pidpersec',
    program,
    writer,
    interval: { seconds: 1 },
    onStarted: () => writer.line('Tracing... Ctrl-C to end.'),
    onTick: (t, last) => {
      // bcc exits on Ctrl-C without printing the second in progress.
      if (last) return;
      writer.write(formatLine(scalarValues(t.readMap('count'))[0]?.value ?? 0n));
      t.clearMap('count');
    },
  });
}

/** `bpfscope pidpersec`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(SPEC, argv, run);
}
