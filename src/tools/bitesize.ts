/**
 * bitesize: block I/O request sizes as a log2 histogram of Kbytes per process name, printed at Ctrl-C. Follows
 * bcc's `tools/bitesize.py` (the "Tracing block I/O..." line, `Process Name = <comm>` sections, bcc's histogram
 * format) on the same tracepoint, `block:block_rq_issue` (`bytes / 1024` keyed by the tracepoint's comm).
 * bcc's bitesize takes no options; this one accepts `-h` (and `--ebpf`).
 */
import type { Parsed, ParserSpec } from './framework/argparse.js';
import { formatSectionedLog2Hist } from './framework/hist.js';
import { log2Sections } from './framework/histmaps.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { runProgram, toolMain } from './framework/runner.js';

export const SPEC: ParserSpec = {
  prog: 'bitesize',
  description: 'Summarize block I/O size as a histogram, by process name',
  options: [{ flags: ['--ebpf'], kind: 'flag', help: null }],
};

/** The bpftrace program: `@dist[comm] = hist(bytes / 1024)`. */
export function buildProgram(): string {
  return `${configBlock()}tracepoint:block:block_rq_issue {\n  @dist[args.comm] = hist(args.bytes / 1024);\n}\n`;
}

async function run(a: Parsed, writer: ToolWriter): Promise<number> {
  const program = buildProgram();
  return runProgram({
    tool: 'bitesize',
    program,
    writer,
    onStarted: () => writer.line('Tracing block I/O... Hit Ctrl-C to end.'),
    onTick: (t, last) => {
      if (!last) return;
      writer.write(formatSectionedLog2Hist(log2Sections(t.readMap('dist'), String), 'Process Name', 'Kbytes'));
    },
  });
}

/** `bpfscope bitesize`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(SPEC, argv, run);
}
