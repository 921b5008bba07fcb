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
import { INT, type Parsed, type ParserSpec } from './framework/argparse.js';
import { diskOption, diskNamer } from './framework/disk.js';
import { formatLog2Hist, formatSectionedLog2Hist, jsonLog2Hist } from './framework/hist.js';
import { log2Sections, log2Slots, pyJson, scalarValues } from './framework/histmaps.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { runProgram, toolMain } from './framework/runner.js';
import { clockTime, dateTime, tracepointExists } from './framework/system.js';

export const SPEC: ParserSpec = {
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
};

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

/** What one interval prints (bcc's loop body after the sleep). */
export function formatInterval(
  t: Pick<Tracer, 'readMap'>,
  o: BiolatencyOptions & { timestamp: boolean; json: boolean },
  diskName: (dev: number) => string,
  now: Date = new Date(),
): string {
  const label = o.milliseconds ? 'msecs' : 'usecs';
  let out = '\n';
  if (o.timestamp) out += pyFormat('%-8s\n', clockTime(now));
  const dist = t.readMap('dist');
  if (o.json) {
    if (o.disks) {
      for (const s of log2Sections(dist, (k) => diskName(Number(k)))) {
        out += `${pyJson(jsonLog2Hist(s.vals, label, dateTime(now), ['disk', s.label]))}\n`;
      }
    } else out += `${pyJson(jsonLog2Hist(log2Slots(dist), label, dateTime(now)))}\n`;
    return out;
  }
  out += o.disks
    ? formatSectionedLog2Hist(
        log2Sections(dist, (k) => diskName(Number(k))),
        'disk',
        label,
      )
    : formatLog2Hist(log2Slots(dist), label);
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
  if (a.flags && a.disks) {
    writer.line('ERROR: can only use -D or -F. Exiting.');
    return 1;
  }
  const dev = diskOption(a.disk as string | null, writer);
  if (dev === undefined) return 1;
  if (a.flags) {
    // bcc says this when only block tracepoints are available (no blk_account_io_* kprobes), as here.
    writer.line("ERROR: blk_account_io_start/done probes not available. Can't use -F.");
    return 1;
  }
  const o: BiolatencyOptions & { timestamp: boolean; json: boolean } = {
    queued: a.queued as boolean,
    milliseconds: a.milliseconds as boolean,
    disks: a.disks as boolean,
    extension: a.extension as boolean,
    dev,
    queuedTracepoint: tracepointExists('block', 'block_io_start') ? 'block_io_start' : 'block_bio_queue',
    timestamp: a.timestamp as boolean,
    json: a.json as boolean,
  };
  const program = buildProgram(o);
  if (a.ebpf) {
    writer.write(program);
    return 0;
  }
  const diskName = diskNamer('?');
  return runProgram({
    tool: 'biolatency',
    program,
    writer,
    interval: { seconds: a.interval as number, count: a.count as number },
    onStarted: () => {
      if (!o.json) writer.line('Tracing block device I/O... Hit Ctrl-C to end.');
    },
    onTick: (t) => {
      writer.write(formatInterval(t, o, diskName));
      t.clearMap('dist');
      if (o.extension) {
        t.clearMap('ext_total');
        t.clearMap('ext_count');
      }
    },
  });
}

/** `bpfscope biolatency [flags] [interval] [count]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(SPEC, argv, run);
}
