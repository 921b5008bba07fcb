/**
 * biosnoop: trace block device I/O, one line per completed request with the issuing process and the latency.
 * Follows bcc's `tools/biosnoop.py` (flags, help, header, `%-11.6f %-14.14s %-7s %-9s %-1s %-10s %-7s` rows,
 * `-Q` queue time, `-P` sequential/random pattern, `-d DISK`) on block tracepoints, as bcc's tracepoint variant:
 * `block:block_io_start` records the process (it runs in the submitter's context), `block:block_rq_issue` the
 * issue time and size, `block:block_rq_complete` ends the request. Requests are matched by (dev, sector); the
 * read/write column comes from the tracepoint's `rwbs` text (bcc's `get_rwflag_tp`).
 */
import type { OptionsOf, ParserSpec } from './framework/argparse.js';
import { diskOption, diskNamer } from './framework/disk.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { defineTool, runProgram, toolMain } from './framework/runner.js';

export const SPEC = {
  prog: 'biosnoop',
  description: 'Trace block I/O',
  raw: true,
  epilog: `examples:
    ./biosnoop           # trace all block I/O
    ./biosnoop -Q        # include OS queued time
    ./biosnoop -d sdc    # trace sdc only
    ./biosnoop -P        # display block I/O pattern
`,
  options: [
    { flags: ['-Q', '--queue'], kind: 'flag', help: 'include OS queued time' },
    { flags: ['-d', '--disk'], kind: 'value', help: 'trace this disk only' },
    { flags: ['-P', '--pattern'], kind: 'flag', help: 'display block I/O pattern (sequential or random)' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
} as const satisfies ParserSpec;

/** Event record fields, in order (the comm last). */
export const FIELDS = [
  'ts_ns',
  'issue_ns',
  'start_ns',
  'pid',
  'dev',
  'sector',
  'bytes',
  'pattern',
  'rwbs',
  'comm',
] as const;

/** The bpftrace program; `dev` restricts it to one disk (kernel dev_t). */
export function buildProgram(o: { dev?: number | null; pattern?: boolean }): string {
  const disk = o.dev !== null && o.dev !== undefined ? `args.dev == ${o.dev}` : null;
  let p = configBlock();
  p += `tracepoint:block:block_io_start${predicate([disk])} {\n  @info[args.dev, args.sector] = (nsecs, pid, comm);\n}\n`;
  p += `tracepoint:block:block_rq_issue${predicate([disk])} {\n  @start[args.dev, args.sector] = (nsecs, args.bytes);\n}\n`;
  p += 'tracepoint:block:block_rq_complete {\n  $s = @start[args.dev, args.sector];\n  if ($s.0 != 0) {\n';
  p += '    $i = @info[args.dev, args.sector];\n';
  if (o.pattern) {
    // bcc's last_sectors: the sector after the previous request of the disk (+1 here, so 0 means "none yet").
    p += '    $l = @last[args.dev];\n    $pat = $l == 0 ? 0 : ($l == args.sector + 1 ? 1 : 2);\n';
    p += '    @last[args.dev] = args.sector + $s.1 / 512 + 1;\n';
  } else p += '    $pat = 0;\n';
  p +=
    '    printf("%llu\\x1f%llu\\x1f%llu\\x1f%d\\x1f%u\\x1f%llu\\x1f%u\\x1f%d\\x1f%s\\x1f%s\\n", nsecs, $s.0, $i.0, $i.1,\n';
  p += '      args.dev, args.sector, $s.1, $pat, args.rwbs, $i.2);\n';
  p += '    delete(@start[args.dev, args.sector]);\n    delete(@info[args.dev, args.sector]);\n  }\n}\n';
  return p;
}

/** bcc's header line. */
export function header(o: { queue: boolean; pattern: boolean }): string {
  let h = pyFormat('%-11s %-14s %-7s %-9s %-1s %-10s %-7s', 'TIME(s)', 'COMM', 'PID', 'DISK', 'T', 'SECTOR', 'BYTES');
  if (o.pattern) h += pyFormat('%-1s ', 'P');
  if (o.queue) h += pyFormat('%7s ', 'QUE(ms)');
  return `${h}${pyFormat('%7s', 'LAT(ms)')}\n`;
}

/** One completed request (runTool's row, `--json`'s object): bcc's columns as data. */
export interface BiosnoopRow {
  /** bcc's TIME(s): seconds since the first event, with 6 decimals, as printed. */
  time: string;
  /** Completion time, CLOCK_MONOTONIC nanoseconds (bpftrace's nsecs). */
  tsNs: bigint;
  /** The submitting process (`?` and 0 when the request's start was not seen). */
  comm: string;
  pid: number;
  disk: string;
  rw: 'R' | 'W';
  sector: bigint;
  bytes: number;
  /** -P: `S` sequential, `R` random, `?` the disk's first request. */
  pattern?: 'S' | 'R' | '?';
  /** -Q: time queued in the OS before issue, ns (0 when the start was not seen). */
  queueNs?: bigint;
  /** Issue to completion, ns (bcc's LAT(ms)). */
  latencyNs: bigint;
}

/** One event's fields (see {@link FIELDS}) as a row; `state.startUs` is bcc's `start_ts` (µs of the first event). */
export function decodeRow(
  f: string[],
  o: { queue: boolean; pattern: boolean },
  diskName: (dev: number) => string,
  state: { startUs: bigint },
): BiosnoopRow {
  const [tsText, issueText, startText, pidText, devText, sectorText, bytes, pattern, rwbs = '', comm = ''] = f;
  const tsNs = BigInt(tsText ?? '0');
  const issue = BigInt(issueText ?? '0');
  const ioStart = BigInt(startText ?? '0');
  // Without a block_io_start record bcc prints "?" as the name and zeros for pid, disk and sector.
  const known = ioStart !== 0n;
  const tsUs = tsNs / 1000n;
  if (state.startUs === 0n) state.startUs = tsUs;
  const delta = tsUs - state.startUs;
  const row: BiosnoopRow = {
    time: `${delta / 1000000n}.${(delta % 1000000n).toString().padStart(6, '0')}`,
    tsNs,
    comm: known ? comm : '?',
    pid: known ? Number(pidText) : 0,
    disk: diskName(known ? Number(devText) : 0),
    rw: rwbs.includes('W') ? 'W' : 'R',
    sector: known ? BigInt(sectorText ?? '0') : 0n,
    bytes: Number(bytes),
    latencyNs: tsNs - issue,
  };
  if (o.pattern) row.pattern = pattern === '1' ? 'S' : pattern === '2' ? 'R' : '?';
  if (o.queue) row.queueNs = known ? issue - ioStart : 0n;
  return row;
}

/** bcc's `print_event` line of a row. */
export function formatRowOf(r: BiosnoopRow): string {
  let out = pyFormat(
    '%-11s %-14.14s %-7s %-9s %-1s %-10s %-7s',
    r.time,
    r.comm,
    String(r.pid),
    r.disk,
    r.rw,
    String(r.sector),
    String(r.bytes),
  );
  if (r.pattern !== undefined) out += pyFormat('%-1s ', r.pattern);
  if (r.queueNs !== undefined) out += pyFormat('%7.2f ', Number(r.queueNs) / 1e6);
  return `${out}${pyFormat('%7.2f', Number(r.latencyNs) / 1e6)}\n`;
}

/** bcc's `print_event` for the event fields (see {@link decodeRow}). */
export function formatRow(
  f: string[],
  o: { queue: boolean; pattern: boolean },
  diskName: (dev: number) => string,
  state: { startUs: bigint },
): string {
  return formatRowOf(decodeRow(f, o, diskName, state));
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const dev = diskOption(a.disk, writer);
  if (dev === undefined) return 1;
  const o = { queue: a.queue, pattern: a.pattern };
  const program = buildProgram({ dev, pattern: o.pattern });
  const diskName = diskNamer('<unknown>');
  const state = { startUs: 0n };
  return runProgram({
    tool: 'biosnoop',
    program,
    writer,
    fieldCount: FIELDS.length,
    onStarted: () => writer.write(header(o)),
    onEvent: (f) => writer.emit(decodeRow(f, o, diskName, state), formatRowOf),
  });
}

export const TOOL = defineTool({
  spec: SPEC,
  results: 'rows',
  run,
  heatmap: {
    kind: 'events',
    title: 'Block I/O Latency Heat Map',
    point: (r: BiosnoopRow) => ({ timeUs: Number(r.tsNs / 1000n), latencyUs: Number(r.latencyNs / 1000n) }),
  },
});

/** `bpfscope biosnoop [flags]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
