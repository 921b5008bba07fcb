/**
 * biotop: block device I/O by process, as a top-like screen every interval. Follows bcc's `tools/biotop.py`
 * (flags, help, "Tracing... Output every N secs." line, the `loadavg:` line, the `PID COMM D MAJ MIN DISK I/O
 * Kbytes AVGms` table sorted by bytes, largest first, at most `-r` rows, "Detaching..." at the end) on block
 * tracepoints, keyed like bcc by (dev, sector):
 * - `block:block_io_start` (submitter's context; `block_bio_queue` on kernels before 6.5) records the PID and comm;
 * - `block:block_rq_issue` (bcc's `blk_mq_start_request` kprobe) the issue time and the request's size;
 * - `block:block_rq_complete` ends the request: count, bytes and µs of latency are summed per (PID, comm,
 *   read/write, disk). bcc uses `block_io_done` where it exists, but the kernel fires that one only for queues
 *   that keep I/O statistics or have a scheduler; `block_rq_complete` fires for every request.
 *
 * The read/write column comes from the tracepoint's `rwbs` text: `W` is the op character of REQ_OP_WRITE, first
 * or after the `F` of a preflush (kernel `blk_fill_rwbs`), which is bcc's `(cmd_flags & REQ_OP_MASK) ==
 * REQ_OP_WRITE`.
 */
import type { Tracer } from '../runtime/tracer.js';
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import { diskNamer } from './framework/disk.js';
import { keyPart, scalarValues } from './framework/histmaps.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFloatStr, pyFormat } from './framework/pyformat.js';
import { defineTool, toolMain } from './framework/runner.js';
import { tracepointExists } from './framework/system.js';
import { formatTopScreen, runTop, type TopOptions, type TopTick } from './framework/top.js';

export const SPEC = {
  prog: 'biotop',
  description: 'Block device (disk) I/O by process',
  raw: true,
  epilog: `examples:
    ./biotop            # block device I/O top, 1 second refresh
    ./biotop -C         # don't clear the screen
    ./biotop -p 181     # only trace PID 181
    ./biotop 5          # 5 second summaries
    ./biotop 5 10       # 5 second summaries, 10 times only
`,
  options: [
    { flags: ['-C', '--noclear'], kind: 'flag', help: "don't clear the screen" },
    { flags: ['-r', '--maxrows'], kind: 'value', type: INT, default: 20, help: 'maximum rows to print, default 20' },
    { flags: ['-p', '--pid'], kind: 'value', type: INT, metavar: 'PID', help: 'trace this PID only' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
  positionals: [
    { name: 'interval', help: 'output interval, in seconds', type: INT, default: 1 },
    { name: 'count', help: 'number of outputs', type: INT, default: 99999999 },
  ],
} as const satisfies ParserSpec;

export interface BiotopProgramOptions {
  /** Count only I/O issued by this process (bcc's FILTER_PID, applied where the PID is recorded). */
  pid?: number | null;
  /** The tracepoint that records the submitting process: block_io_start, or block_bio_queue before 6.5. */
  startTracepoint?: string;
}

/**
 * The bpftrace program: `@lat` (stats() of the µs from issue to completion: the I/O count and the µs total in
 * one value, so AVGms is consistent when read while requests complete) and `@bytes` (sum of request bytes)
 * completion) keyed by (pid, comm, write ? 1 : 0, dev), dev being the kernel dev_t (`major << 20 | minor`).
 */
export function buildProgram(o: BiotopProgramOptions = {}): string {
  const filter = o.pid !== null && o.pid !== undefined;
  const start = o.startTracepoint ?? 'block_io_start';
  let p = configBlock();
  p += `tracepoint:block:${start}${predicate([filter && `pid == ${o.pid}`])} {\n`;
  p += '  @who[args.dev, args.sector] = (pid, comm);\n}\n';
  p += 'tracepoint:block:block_rq_issue {\n  @start[args.dev, args.sector] = (nsecs, args.bytes);\n}\n';
  p += 'tracepoint:block:block_rq_complete {\n  $s = @start[args.dev, args.sector];\n  if ($s.0 != 0) {\n';
  // A request whose submitter was not seen counts as PID 0 with an empty comm, as in bcc.
  p += '    $i = @who[args.dev, args.sector];\n';
  const ind = filter ? '      ' : '    ';
  if (filter) p += `    if ($i.0 == ${o.pid}) {\n`;
  p += `${ind}$w = (strncmp(args.rwbs, "W", 1) == 0 || strncmp(args.rwbs, "FW", 2) == 0) ? 1 : 0;\n`;
  p += `${ind}@bytes[$i.0, $i.1, $w, args.dev] = sum($s.1);\n`;
  p += `${ind}@lat[$i.0, $i.1, $w, args.dev] = stats((nsecs - $s.0) / 1000);\n`;
  if (filter) p += '    }\n';
  p += '    delete(@start[args.dev, args.sector]);\n    delete(@who[args.dev, args.sector]);\n  }\n}\n';
  return p;
}

/** One row of the table (bcc's `info_t` key and `val_t` value). */
export interface BiotopRow {
  pid: bigint;
  comm: string;
  write: boolean;
  /** Kernel dev_t. */
  dev: number;
  io: bigint;
  bytes: bigint;
  us: bigint;
}

/** The rows of the three maps, joined on their key. */
export function collectRows(t: Pick<Tracer, 'readMap'>): BiotopRow[] {
  const rows = new Map<string, BiotopRow>();
  const row = (key: (bigint | string)[]): BiotopRow => {
    const id = JSON.stringify(key.map(String));
    let r = rows.get(id);
    if (!r) {
      const [pid, comm, w, dev] = key;
      r = {
        pid: BigInt(pid ?? 0),
        comm: String(comm ?? ''),
        write: w === 1n,
        dev: Number(dev ?? 0),
        io: 0n,
        bytes: 0n,
        us: 0n,
      };
      rows.set(id, r);
    }
    return r;
  };
  for (const e of t.readMap('lat').entries) {
    if (e.value.kind !== 'stats') continue;
    const r = row(e.key.map(keyPart));
    r.io = e.value.count;
    r.us = e.value.total;
  }
  const bytes = t.readMap('bytes');
  const values = scalarValues(bytes);
  bytes.entries.forEach((e, i) => {
    row(e.key.map(keyPart)).bytes = values[i]!.value;
  });
  // A request completing between the two reads has bytes but no count: dropped, like the requests that complete
  // between reading and clearing the maps.
  return [...rows.values()].filter((r) => r.io > 0n);
}

/**
 * bcc's order: `reversed(sorted(rows, key=bytes))`, so the most bytes first. bcc's ties come out in the reverse
 * of its hash table's order; here ties are ordered by (PID, comm, R before W, dev), descending, to be stable.
 */
export function sortRows(rows: BiotopRow[]): BiotopRow[] {
  const cmp = (a: BiotopRow, b: BiotopRow): number => {
    if (a.bytes !== b.bytes) return a.bytes < b.bytes ? -1 : 1;
    if (a.pid !== b.pid) return a.pid < b.pid ? -1 : 1;
    if (a.comm !== b.comm) return a.comm < b.comm ? -1 : 1;
    if (a.write !== b.write) return a.write ? 1 : -1;
    return a.dev - b.dev;
  };
  return [...rows].sort(cmp).reverse();
}

/** bcc's table heading. */
export const TABLE_HEADER = `${pyFormat(
  '%-7s %-16s %1s %-3s %-3s %-8s %5s %7s %6s',
  'PID',
  'COMM',
  'D',
  'MAJ',
  'MIN',
  'DISK',
  'I/O',
  'Kbytes',
  'AVGms',
)}\n`;

/**
 * One row as bcc prints it: Kbytes is Python 3's `bytes / 1024` (a float, printed with `%s`: `64.0`), AVGms the
 * mean µs per I/O in ms.
 */
export function formatRow(r: BiotopRow, diskName: (dev: number) => string): string {
  const major = Math.floor(r.dev / 2 ** 20);
  const minor = r.dev % 2 ** 20;
  const avgMs = Number(r.us) / 1000 / Number(r.io);
  return `${pyFormat(
    '%-7d %-16s %1s %-3d %-3d %-8s %5s %7s %6.2f',
    r.pid,
    r.comm,
    r.write ? 'W' : 'R',
    major,
    minor,
    diskName(r.dev),
    r.io,
    pyFloatStr(Number(r.bytes) / 1024),
    avgMs,
  )}\n`;
}

/** One interval's screen: clear (or an empty line with -C), the loadavg line, the heading, the sorted rows. */
export function formatScreen(
  rows: BiotopRow[],
  o: TopOptions,
  diskName: (dev: number) => string,
  now: Date = new Date(),
  loadavg?: string,
): string {
  const lines = sortRows(rows).map((r) => formatRow(r, diskName));
  return formatTopScreen(TABLE_HEADER, lines, o, now, loadavg);
}

/** A row of biotop's interval (runTool, `--json`): {@link BiotopRow} with the disk's name and numbers. */
export interface BiotopTickRow extends BiotopRow {
  major: number;
  minor: number;
  /** The disk's name (/proc/diskstats; `?` when unknown). */
  disk: string;
}

/** One interval of biotop (runTool's interval, `--json`'s object): the screen's rows, most bytes first. */
export type BiotopInterval = TopTick<BiotopTickRow>;

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const diskName = diskNamer('?');
  return runTop<BiotopTickRow>({
    tool: 'biotop',
    program: buildProgram({
      pid: a.pid,
      startTracepoint: tracepointExists('block', 'block_io_start') ? 'block_io_start' : 'block_bio_queue',
    }),
    writer,
    seconds: a.interval,
    count: a.count,
    screen: { noclear: a.noclear, maxrows: a.maxrows },
    heading: TABLE_HEADER,
    rows: (t) =>
      sortRows(collectRows(t)).map((r) => ({
        ...r,
        major: Math.floor(r.dev / 2 ** 20),
        minor: r.dev % 2 ** 20,
        disk: diskName(r.dev),
      })),
    formatRow: (r) => formatRow(r, () => r.disk),
    clear: ['lat', 'bytes'],
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'intervals', run });

/** `bpfscope biotop [-C] [-r MAXROWS] [-p PID] [interval] [count]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
