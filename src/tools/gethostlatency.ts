/**
 * gethostlatency: show the latency of host name lookups. Follows bcc's `tools/gethostlatency.py` (flags, help,
 * `%-9s %-7s %-16s %10s %s` header and `%-9s %-7d %-16s %10.2f %s` rows with the local time and the latency in
 * ms) with uprobes/uretprobes on libc's `getaddrinfo`, `gethostbyname` and `gethostbyname2`. As in bcc, the
 * process, comm and host name (up to 79 bytes) are taken at entry, keyed by thread, and a lookup is printed when
 * its function returns.
 */
import { INT, type Parsed, type ParserSpec } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, eventPrintf, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { runProgram, toolMain } from './framework/runner.js';
import { clockTime } from './framework/system.js';

export const SPEC: ParserSpec = {
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
};

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

/** Event record fields, in order (the host name last: it may contain anything). */
export const FIELDS = ['pid', 'delta_ns', 'comm', 'host'] as const;

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
  p += `  ${eventPrintf([
    ['%d', '$v.1'],
    ['%llu', 'nsecs - $v.0'],
    ['%s', '$v.2'],
    ['%s', '$v.3'],
  ])}\n`;
  p += '  delete(@start, tid);\n}\n';
  return p;
}

/** bcc's header line. */
export function header(): string {
  return `${pyFormat('%-9s %-7s %-16s %10s %s', 'TIME', 'PID', 'COMM', 'LATms', 'HOST')}\n`;
}

/** One output line for the event fields (see {@link FIELDS}); the latency is printed in ms with 2 decimals. */
export function formatRow(f: string[], time: string = clockTime()): string {
  const [pid, delta, comm = '', host = ''] = f;
  return `${pyFormat('%-9s %-7d %-16s %10.2f %s', time, Number(pid), comm, Number(delta) / 1e6, host)}\n`;
}

async function run(a: Parsed, writer: ToolWriter): Promise<number> {
  const program = buildProgram({ pid: a.pid as number });
  return runProgram({
    tool: 'gethostlatency',
    program,
    writer,
    fieldCount: FIELDS.length,
    onStarted: () => writer.write(header()),
    onEvent: (f) => writer.write(formatRow(f)),
  });
}

/** `bpfscope gethostlatency [flags]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(SPEC, argv, run);
}
