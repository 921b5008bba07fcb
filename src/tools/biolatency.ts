/**
 * biolatency: block device I/O latency as a log2 histogram. Follows bcc's `tools/biolatency.py` (flags, help,
 * "Tracing block device I/O..." line, bcc's histogram format, `-D` per-disk sections, `-e` average/total line,
 * `-j` JSON records, `[interval] [count]`) on the block tracepoints, keyed like bcc's tracepoint variant by
 * (dev, sector): `block:block_rq_issue` (I/O issued to the device; bcc's blk_mq_start_request kprobe) or, with
 * `-Q`, `block:block_io_start` (I/O queued in the OS) to `block:block_rq_complete`.
 *
 * `-F` needs the request's cmd_flags (struct request): bcc refuses it with block tracepoints too, with the same
 * message. `-j` prints each record as JSON (bcc prints Python dict reprs with single quotes).
 */
import type { Tracer } from '../runtime/tracer.js';
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import { diskOption, diskNamer } from './framework/disk.js';
import { formatLog2Hist, jsonLog2Hist, type Log2Bucket, log2Buckets, log2SlotsOf } from './framework/hist.js';
import { log2Sections, log2Slots, pyJson, scalarValues } from './framework/histmaps.js';
import type { HistInterval } from './framework/heatmap.js';
import { runIntervals } from './framework/interval.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { defineTool, toolMain } from './framework/runner.js';
import { clockTime, dateTime, tracepointExists } from './framework/system.js';

export const SPEC = {
  prog: 'biolatency',
  description: 'Summarize block device I/O latency as a histogram',
  raw: true,
  epilog: `examples:
    ./biolatency                    # summarize block I/O latency as a histogram
    ./biolatency 1 10               # print 1 second summaries, 10 times
    ./biolatency -mT 1              # 1s summaries, milliseconds, and timestamps
    ./biolatency -Q                 # include OS queued time in I/O time
    ./biolatency -D                 # show each disk device separately
    ./biolatency -F                 # show I/O flags separately
    ./biolatency -j                 # print a dictionary
    ./biolatency -e                 # show extension summary(total, average)
    ./biolatency -d sdc             # Trace sdc only
`,
  options: [
    { flags: ['-T', '--timestamp'], kind: 'flag', help: 'include timestamp on output' },
    { flags: ['-Q', '--queued'], kind: 'flag', help: 'include OS queued time in I/O time' },
    { flags: ['-m', '--milliseconds'], kind: 'flag', help: 'millisecond histogram' },
    { flags: ['-D', '--disks'], kind: 'flag', help: 'print a histogram per disk device' },
    { flags: ['-F', '--flags'], kind: 'flag', help: 'print a histogram per set of I/O flags' },
    { flags: ['-e', '--extension'], kind: 'flag', help: 'summarize average/total value' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
    { flags: ['-j', '--json'], kind: 'flag', help: 'json output' },
    { flags: ['-d', '--disk'], kind: 'value', help: 'Trace this disk only' },
  ],
  positionals: [
    { name: 'interval', help: 'output interval, in seconds', type: INT, default: 99999999 },
    { name: 'count', help: 'number of outputs', type: INT, default: 99999999 },
  ],
} as const satisfies ParserSpec;

export interface BiolatencyOptions {
  /** Start at block_io_start (OS queue) instead of block_rq_issue. */
  queued: boolean;
  milliseconds: boolean;
  disks: boolean;
  extension: boolean;
  /** Kernel dev_t to trace only. */
  dev?: number | null;
  /** The start tracepoint to use with -Q (block_io_start, or block_bio_queue on kernels before 6.5). */
  queuedTracepoint?: string;
}

/** The bpftrace program for `o`: @dist (or @dist[dev]) log2 histogram; with -e, @ext_total and @ext_count. */
export function buildProgram(o: BiolatencyOptions): string {
  const start = o.queued ? (o.queuedTracepoint ?? 'block_io_start') : 'block_rq_issue';
  const factor = o.milliseconds ? 1000000 : 1000;
  const disk = o.dev !== null && o.dev !== undefined ? `args.dev == ${o.dev}` : null;
  let p = configBlock();
  p += `tracepoint:block:${start}${predicate([disk])} {\n  @start[args.dev, args.sector] = nsecs;\n}\n`;
  p += 'tracepoint:block:block_rq_complete {\n';
  p += '  $s = @start[args.dev, args.sector];\n  if ($s != 0) {\n';
  p += `    $d = (nsecs - $s) / ${factor};\n`;
  p += o.disks ? '    @dist[args.dev] = hist($d);\n' : '    @dist = hist($d);\n';
  if (o.extension) p += '    @ext_total = sum($d);\n    @ext_count = count();\n';
  p += '    delete(@start[args.dev, args.sector]);\n  }\n}\n';
  return p;
}

/** One interval of biolatency (runTool's interval, `--json`'s object; the framework's {@link HistInterval}). */
export interface BiolatencyInterval extends HistInterval {
  /** Wall-clock time at the end of the interval, HH:MM:SS (bcc's -T line). */
  time: string;
  /** `usecs` or `msecs` (-m): the unit of the buckets' bounds. */
  unit: 'usecs' | 'msecs';
  /** One histogram, or one per disk with -D (`disk` is its name), in device order. */
  histograms: { disk?: string; buckets: Log2Bucket[] }[];
  /** -e: the total and count of the interval's latencies (null without -e, or when there were none). */
  extension: { total: bigint; count: bigint } | null;
}

/** Read one interval from the maps (bcc's loop body after the sleep). */
export function readInterval(
  t: Pick<Tracer, 'readMap'>,
  o: BiolatencyOptions,
  diskName: (dev: number) => string,
  now: Date = new Date(),
): BiolatencyInterval {
  const dist = t.readMap('dist');
  const histograms = o.disks
    ? log2Sections(dist, (k) => diskName(Number(k))).map((s) => ({ disk: s.label, buckets: log2Buckets(s.vals) }))
    : [{ buckets: log2Buckets(log2Slots(dist)) }];
  let extension: BiolatencyInterval['extension'] = null;
  if (o.extension) {
    const total = scalarValues(t.readMap('ext_total'))[0]?.value ?? 0n;
    const count = scalarValues(t.readMap('ext_count'))[0]?.value ?? 0n;
    if (count > 0n) extension = { total, count };
  }
  return { time: clockTime(now), unit: o.milliseconds ? 'msecs' : 'usecs', histograms, extension };
}

/** What one interval prints (bcc's text, or with -j bcc's JSON records dated `now`). */
export function formatTick(
  i: BiolatencyInterval,
  o: BiolatencyOptions & { timestamp: boolean; json: boolean },
  now: Date = new Date(),
): string {
  const label = i.unit;
  let out = '\n';
  if (o.timestamp) out += pyFormat('%-8s\n', i.time);
  if (o.json) {
    for (const h of i.histograms) {
      const vals = log2SlotsOf(h.buckets);
      const extra = h.disk !== undefined ? (['disk', h.disk] as [string, string]) : undefined;
      out += `${pyJson(jsonLog2Hist(vals, label, dateTime(now), ...(extra ? [extra] : [])))}\n`;
    }
    return out;
  }
  for (const h of i.histograms) {
    if (h.disk !== undefined) out += `\ndisk = ${h.disk}\n`;
    out += formatLog2Hist(log2SlotsOf(h.buckets), label);
  }
  if (i.extension) {
    const { total, count } = i.extension;
    out += `${pyFormat('\navg = %ld %s, total: %ld %s, count: %ld\n', total / count, label, total, label, count)}\n`;
  }
  return out;
}

/** What one interval prints (bcc's loop body after the sleep). */
export function formatInterval(
  t: Pick<Tracer, 'readMap'>,
  o: BiolatencyOptions & { timestamp: boolean; json: boolean },
  diskName: (dev: number) => string,
  now: Date = new Date(),
): string {
  return formatTick(readInterval(t, o, diskName, now), o, now);
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  if (a.flags && a.disks) {
    writer.line('ERROR: can only use -D or -F. Exiting.');
    return 1;
  }
  const dev = diskOption(a.disk, writer);
  if (dev === undefined) return 1;
  if (a.flags) {
    // bcc says this when only block tracepoints are available (no blk_account_io_* kprobes), as here.
    writer.line("ERROR: blk_account_io_start/done probes not available. Can't use -F.");
    return 1;
  }
  const o: BiolatencyOptions & { timestamp: boolean; json: boolean } = {
    queued: a.queued,
    milliseconds: a.milliseconds,
    disks: a.disks,
    extension: a.extension,
    dev,
    queuedTracepoint: tracepointExists('block', 'block_io_start') ? 'block_io_start' : 'block_bio_queue',
    timestamp: a.timestamp,
    json: a.json,
  };
  const program = buildProgram(o);
  const diskName = diskNamer('?');
  return runIntervals({
    tool: 'biolatency',
    program,
    writer,
    seconds: a.interval,
    count: a.count,
    onStarted: () => {
      if (!o.json) writer.line('Tracing block device I/O... Hit Ctrl-C to end.');
    },
    read: (t, now) => readInterval(t, o, diskName, now),
    format: (i, now) => formatTick(i, o, now),
    clear: o.extension ? ['dist', 'ext_total', 'ext_count'] : ['dist'],
  });
}

export const TOOL = defineTool({
  spec: SPEC,
  results: 'intervals',
  run,
  heatmap: { kind: 'hist', title: 'Block I/O Latency Heat Map' },
});

/** `bpfscope biolatency [flags] [interval] [count]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
