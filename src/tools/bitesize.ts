/**
 * bitesize: block I/O request sizes as a log2 histogram of Kbytes per process name, printed at Ctrl-C. Follows
 * bcc's `tools/bitesize.py` (the "Tracing block I/O..." line, `Process Name = <comm>` sections, bcc's histogram
 * format) on the same tracepoint, `block:block_rq_issue` (`bytes / 1024` keyed by the tracepoint's comm).
 * bcc's bitesize takes no options; this one accepts `-h` (and `--ebpf`).
 */
import type { ParserSpec } from './framework/argparse.js';
import { formatSectionedLog2Hist, type Log2Bucket, log2Buckets, log2SlotsOf } from './framework/hist.js';
import { log2Sections } from './framework/histmaps.js';
import { runIntervals } from './framework/interval.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { defineTool, toolMain } from './framework/runner.js';
import { clockTime } from './framework/system.js';

export const SPEC = {
  prog: 'bitesize',
  description: 'Summarize block I/O size as a histogram, by process name',
  options: [{ flags: ['--ebpf'], kind: 'flag', help: null }],
} as const satisfies ParserSpec;

/** The bpftrace program: `@dist[comm] = hist(bytes / 1024)`. */
export function buildProgram(): string {
  return `${configBlock()}tracepoint:block:block_rq_issue {\n  @dist[args.comm] = hist(args.bytes / 1024);\n}\n`;
}

/** What bitesize gathered, at the end of the run (runTool's one interval, `--json`'s object). */
export interface BitesizeInterval {
  /** Wall-clock time at the end, HH:MM:SS. */
  time: string;
  /** One log2 histogram of request sizes in Kbytes (bytes / 1024, truncated) per process name, by name. */
  histograms: { comm: string; buckets: Log2Bucket[] }[];
}

/** bcc's text: a `Process Name = COMM` section with its histogram per process name. */
export function formatInterval(i: BitesizeInterval): string {
  const sections = i.histograms.map((h) => ({ label: h.comm, vals: log2SlotsOf(h.buckets) }));
  return formatSectionedLog2Hist(sections, 'Process Name', 'Kbytes');
}

async function run(_a: unknown, writer: ToolWriter): Promise<number> {
  return runIntervals<BitesizeInterval>({
    tool: 'bitesize',
    program: buildProgram(),
    writer,
    seconds: null,
    header: 'Tracing block I/O... Hit Ctrl-C to end.\n',
    read: (t, now) => ({
      time: clockTime(now),
      histograms: log2Sections(t.readMap('dist'), String).map((s) => ({ comm: s.label, buckets: log2Buckets(s.vals) })),
    }),
    format: formatInterval,
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'intervals', run });

/** `bpfscope bitesize`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
