/**
 * biosnoop: trace block device I/O, one line per completed request with the issuing process and the latency.
 * Follows bcc's `tools/biosnoop.py` (flags, help, header, `%-11.6f %-14.14s %-7s %-9s %-1s %-10s %-7s` rows,
 * `-Q` queue time, `-P` sequential/random pattern, `-d DISK`) on block tracepoints, as bcc's tracepoint variant:
 * `block:block_io_start` records the process (it runs in the submitter's context), `block:block_rq_issue` the
 * issue time and size, `block:block_rq_complete` ends the request. Requests are matched by (dev, sector); the
 * read/write column comes from the tracepoint's `rwbs` text (bcc's `get_rwflag_tp`).
 */
import type { Parsed, ParserSpec } from './framework/argparse.js';
import { diskOption, diskNamer } from './framework/disk.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { runProgram, toolMain } from './framework/runner.js';

export const SPEC: ParserSpec = {
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
};

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

/** bcc's `print_event` for the event fields; `state.startUs` is bcc's `start_ts` (µs of the first event). */
export function formatRow(
  f: string[],
  o: { queue: boolean; pattern: boolean },
  diskName: (dev: number) => string,
  state: { startUs: bigint },
): string {
  const [tsText, issueText, startText, pidText, devText, sectorText, bytes, pattern, rwbs = '', comm = ''] = f;
  const tsNs = BigInt(tsText ?? '0');
  const issue = BigInt(issueText ?? '0');
  const ioStart = BigInt(startText ?? '0');
  // Without a block_io_start record bcc prints "?" as the name and zeros for pid, disk and sector.
  const known = ioStart !== 0n;
  const tsUs = tsNs / 1000n;
  if (state.startUs === 0n) state.startUs = tsUs;
  const delta = tsUs - state.startUs;
  const time = `${delta / 1000000n}.${(delta % 1000000n).toString().padStart(6, '0')}`;
  const rw = rwbs.includes('W') ? 'W' : 'R';
  let out = pyFormat(
    '%-11s %-14.14s %-7s %-9s %-1s %-10s %-7s',
    time,
    known ? comm : '?',
    known ? pidText! : '0',
    diskName(known ? Number(devText) : 0),
    rw,
    known ? sectorText! : '0',
    bytes!,
  );
  if (o.pattern) out += pyFormat('%-1s ', pattern === '1' ? 'S' : pattern === '2' ? 'R' : '?');
  if (o.queue) out += pyFormat('%7.2f ', known ? Number(issue - ioStart) / 1e6 : 0);
  return `${out}${pyFormat('%7.2f', Number(tsNs - issue) / 1e6)}\n`;
}

async function run(a: Parsed, writer: ToolWriter): Promise<number> {
  const dev = diskOption(a.disk as string | null, writer);
  if (dev === undefined) return 1;
  const o = { queue: a.queue as boolean, pattern: a.pattern as boolean };
  const program = buildProgram({ dev, pattern: o.pattern });
  const diskName = diskNamer('<unknown>');
  const state = { startUs: 0n };
  return runProgram({
    tool: 'biosnoop',
    program,
    writer,
    fieldCount: FIELDS.length,
    onStarted: () => writer.write(header(o)),
    onEvent: (f) => writer.write(formatRow(f, o, diskName, state)),
  });
}

/** `bpfscope biosnoop [flags]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(SPEC, argv, run);
}
