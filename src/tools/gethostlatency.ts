/**
 * gethostlatency: show the latency of host name lookups. Follows bcc's `tools/gethostlatency.py` (flags, help,
 * `%-9s %-7s %-16s %10s %s` header and `%-9s %-7d %-16s %10.2f %s` rows with the local time and the latency in
 * ms) with uprobes/uretprobes on libc's `getaddrinfo`, `gethostbyname` and `gethostbyname2`. As in bcc, the
 * process, comm and host name (up to 79 bytes) are taken at entry, keyed by thread, and a lookup is printed when
 * its function returns.
 */
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { type DecodedOf, records } from './framework/record.js';
import { defineTool, runProgram, toolMain } from './framework/runner.js';
import { clockTime } from './framework/system.js';

export const SPEC = {
  prog: 'gethostlatency',
  description: 'Show latency for getaddrinfo/gethostbyname[2] calls',
  raw: true,
  epilog: `examples:
    ./gethostlatency           # time getaddrinfo/gethostbyname[2] calls
    ./gethostlatency -p 181    # only trace PID 181
`,
  options: [
    { flags: ['-p', '--pid'], kind: 'value', type: INT, default: -1, help: 'trace this PID only' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
} as const satisfies ParserSpec;

/** The libc functions bcc traces (each takes the host name as its first argument). */
export const FUNCTIONS = ['getaddrinfo', 'gethostbyname', 'gethostbyname2'] as const;

/** bcc's `char host[80]`: host names are read up to 79 bytes plus the NUL. */
export const HOST_BYTES = 80;

export interface GethostlatencyOptions {
  /** Only this process (bcc attaches its uprobes with `pid=`); -1 or absent: every process. */
  pid?: number;
  /** The library the functions are looked up in (default `libc`, as bcc's `name="c"`). */
  library?: string;
}

/** The program's record: one per lookup (the host name last: it may contain anything). */
export const RECORDS = records({ lookup: { pid: 'u32', deltaNs: 'num', comm: 'str', host: 'str' } });
export type LookupRecord = DecodedOf<typeof RECORDS.decls>;

/** One host name lookup (runTool's row, `--json`'s object). */
export interface LookupRow {
  /** Wall-clock time when the line was printed, HH:MM:SS. */
  time: string;
  pid: number;
  comm: string;
  /** The call's latency in ns (bcc's LATms is this in ms). */
  latencyNs: number;
  /** The host name looked up (at most 79 bytes). */
  host: string;
}

/** The bpftrace program for `o`. */
export function buildProgram(o: GethostlatencyOptions = {}): string {
  const lib = o.library ?? 'libc';
  const who = o.pid !== undefined && o.pid >= 0 ? `pid == ${o.pid}` : null;
  const points = (kind: string): string => FUNCTIONS.map((f) => `${kind}:${lib}:${f}`).join(', ');
  let p = configBlock();
  p += `${points('uprobe')}${predicate(['arg0 != 0', who])} {\n`;
  p += `  @start[tid] = (nsecs, pid, comm, str(arg0, ${HOST_BYTES}));\n}\n`;
  p += `${points('uretprobe')}${predicate(['has_key(@start, tid)'])} {\n`;
  p += '  $v = @start[tid];\n';
  p += `  ${RECORDS.emit('lookup', { pid: '$v.1', deltaNs: 'nsecs - $v.0', comm: '$v.2', host: '$v.3' })}\n`;
  p += '  delete(@start, tid);\n}\n';
  return p;
}

/** bcc's header line. */
export function header(): string {
  return `${pyFormat('%-9s %-7s %-16s %10s %s', 'TIME', 'PID', 'COMM', 'LATms', 'HOST')}\n`;
}

/** The row of one record. */
export function toRow(r: LookupRecord, time: string = clockTime()): LookupRow {
  return { time, pid: r.pid, comm: r.comm, latencyNs: r.deltaNs, host: r.host };
}

/** bcc's line for one row; the latency is printed in ms with 2 decimals. */
export function formatRow(row: LookupRow): string {
  return `${pyFormat('%-9s %-7d %-16s %10.2f %s', row.time, row.pid, row.comm, row.latencyNs / 1e6, row.host)}\n`;
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const program = buildProgram({ pid: a.pid });
  return runProgram({
    tool: 'gethostlatency',
    program,
    writer,
    onStarted: () => writer.write(header()),
    records: RECORDS,
    onRecord: (r: LookupRecord) => writer.emit(toRow(r), formatRow),
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'rows', run });

/** `bpfscope gethostlatency [flags]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
