/**
 * biopattern: random and sequential block I/O per disk. Follows bcc's `tools/biopattern.py` (flags, help, the
 * `TIME DISK %RND %SEQ COUNT KBYTES` header and rows, `-d DISK`, `[interval] [count]`) on the same tracepoint,
 * `block:block_rq_complete`: a completed request is sequential when it starts where the disk's previous completed
 * request ended, random otherwise. As in bcc, each interval starts afresh: the disk's first request of an interval
 * only sets where the next one is expected (bcc deletes its per-disk entry, end sector included, when it reads
 * the table), and its bytes are not counted.
 */
import type { Tracer } from '../runtime/tracer.js';
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import { diskOption, partitionNamer } from './framework/disk.js';
import { scalarValues } from './framework/histmaps.js';
import { runIntervals } from './framework/interval.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat, pyRound } from './framework/pyformat.js';
import { defineTool, toolMain } from './framework/runner.js';
import { clockTime } from './framework/system.js';

export const SPEC = {
  prog: 'biopattern',
  description: 'Show block device I/O pattern.',
  raw: true,
  epilog: `examples:
    ./biopattern            # show block device I/O pattern.
    ./biopattern 1 10       # print 1 second summaries, 10 times
    ./biopattern -d sdb     # show sdb only
`,
  options: [{ flags: ['-d', '--disk'], kind: 'value', help: 'Trace this disk only' }],
  positionals: [
    { name: 'interval', help: 'Output interval in seconds', type: INT, default: 99999999 },
    { name: 'count', help: 'Number of outputs', type: INT, default: 99999999 },
  ],
} as const satisfies ParserSpec;

/**
 * The bpftrace program: per dev_t, `@seq`/`@rnd` request counts and `@bytes` (sum of nr_sector * 512) for the
 * requests after the first; `@last` holds the sector after each disk's last completed request.
 */
export function buildProgram(o: { dev?: number | null } = {}): string {
  const disk = o.dev !== null && o.dev !== undefined ? `args.dev == ${o.dev}` : null;
  let p = configBlock();
  p += `tracepoint:block:block_rq_complete${predicate([disk])} {\n  $l = @last[args.dev];\n  if ($l != 0) {\n`;
  p +=
    '    if ($l == args.sector) {\n      @seq[args.dev] = count();\n    } else {\n      @rnd[args.dev] = count();\n    }\n';
  p += '    @bytes[args.dev] = sum(args.nr_sector * 512);\n  }\n';
  p += '  @last[args.dev] = args.sector + args.nr_sector;\n}\n';
  return p;
}

/** bcc's header line. */
export const HEADER = `${pyFormat('%-9s %-7s %5s %5s %8s %10s', 'TIME', 'DISK', '%RND', '%SEQ', 'COUNT', 'KBYTES')}\n`;

/** One disk's counts in an interval. */
export interface PatternRow {
  /** Kernel dev_t. */
  dev: number;
  random: bigint;
  sequential: bigint;
  bytes: bigint;
}

/** The rows of `@rnd`, `@seq` and `@bytes`, by dev_t ascending (bcc prints its hash table's order). */
export function collectRows(t: Pick<Tracer, 'readMap'>): PatternRow[] {
  const rows = new Map<number, PatternRow>();
  for (const [map, field] of [
    ['rnd', 'random'],
    ['seq', 'sequential'],
    ['bytes', 'bytes'],
  ] as const) {
    for (const { key, value } of scalarValues(t.readMap(map))) {
      const dev = Number(key);
      const r = rows.get(dev) ?? { dev, random: 0n, sequential: 0n, bytes: 0n };
      r[field] = value;
      rows.set(dev, r);
    }
  }
  return [...rows.values()].sort((a, b) => a.dev - b.dev);
}

/** bcc's row: `%RND` is Python's `int(round(random * 100 / total))`; disks without requests print nothing. */
export function formatRow(r: PatternRow, name: (dev: number) => string, time: string = clockTime()): string {
  const total = r.random + r.sequential;
  if (total === 0n) return '';
  const rnd = pyRound((Number(r.random) * 100) / Number(total));
  return `${pyFormat('%-9s %-7s %5d %5d %8d %10d', time, name(r.dev), rnd, 100 - rnd, total, Number(r.bytes) / 1024)}\n`;
}

/** A disk's row of biopattern's interval: {@link PatternRow} with the disk's name. */
export interface PatternTickRow extends PatternRow {
  /** The disk's name (/proc/partitions; `Unknown` when not there). */
  disk: string;
}

/** One interval of biopattern (runTool's interval, `--json`'s object): the disks with requests, by dev_t. */
export interface BiopatternInterval {
  /** Wall-clock time of the rows, HH:MM:SS. */
  time: string;
  rows: PatternTickRow[];
}

/** bcc's text of one interval: a row per disk (see {@link formatRow}). */
export function formatInterval(i: BiopatternInterval): string {
  return i.rows.map((r) => formatRow(r, () => r.disk, i.time)).join('');
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const dev = diskOption(a.disk, writer);
  if (dev === undefined) return 1;
  const name = partitionNamer('Unknown');
  return runIntervals<BiopatternInterval>({
    tool: 'biopattern',
    program: buildProgram({ dev }),
    writer,
    seconds: a.interval,
    count: a.count,
    header: HEADER,
    read: (t, now) => ({
      time: clockTime(now),
      rows: collectRows(t)
        .filter((r) => r.random + r.sequential > 0n)
        .map((r) => ({ ...r, disk: name(r.dev) })),
    }),
    format: formatInterval,
    clear: ['rnd', 'seq', 'bytes', 'last'],
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'intervals', run });

/** `bpfscope biopattern [-d DISK] [interval] [count]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
