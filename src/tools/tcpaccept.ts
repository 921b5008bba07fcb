/**
 * tcpaccept: trace passive TCP connections (accept()). Follows bcc's `tools/tcpaccept.py` (flags, help,
 * `%-7d %-12.12s %-2d %-16s %-5d %-16s %-5d` rows, `-T` clock and `-t` seconds columns) on tracepoints instead of a
 * kretprobe on inet_csk_accept():
 * - `sock:inet_sock_set_state` SYN_RECV → ESTABLISHED marks a passively opened TCP socket and records its
 *   addresses and ports. That state change runs in softirq context, where the current task is whichever task
 *   the packet interrupted (on loopback, the connecting client), so no PID is taken there;
 * - `syscalls:sys_exit_accept4` / `sys_exit_accept` find the socket behind the returned descriptor
 *   (`curtask->files->fdt->fd[ret]->private_data->sk`) and print the marked ones with the accepting process's
 *   PID and comm, as bcc does. A socket closed before it is accepted is forgotten at CLOSE.
 *
 * Not seen (bcc sees them): sockets accepted without the accept system calls (io_uring, in-kernel users), and
 * TCP Fast Open sockets accepted before their handshake ends. Not supported: `--cgroupmap`/`--mntnsmap`.
 */
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { type DecodedOf, records } from './framework/record.js';
import { defineTool, runProgram, toolMain, unsupported } from './framework/runner.js';
import { clockTime, tracepointExists } from './framework/system.js';
import {
  familyFilter,
  IPPROTO_TCP,
  parsePortOptions,
  perFamily,
  portFilter,
  SET_STATE_PROBE,
  TCP,
} from './framework/tcp.js';

export const SPEC = {
  prog: 'tcpaccept',
  description: 'Trace TCP accepts',
  raw: true,
  epilog: `examples:
    ./tcpaccept           # trace all TCP accept()s
    ./tcpaccept -t        # include timestamps
    ./tcpaccept -P 80,81  # only trace port 80 and 81
    ./tcpaccept -p 181    # only trace PID 181
    ./tcpaccept --cgroupmap mappath  # only trace cgroups in this BPF map
    ./tcpaccept --mntnsmap mappath   # only trace mount namespaces in the map
    ./tcpaccept -4        # trace IPv4 family
    ./tcpaccept -6        # trace IPv6 family
`,
  options: [
    { flags: ['-T', '--time'], kind: 'flag', help: 'include time column on output (HH:MM:SS)' },
    { flags: ['-t', '--timestamp'], kind: 'flag', help: 'include timestamp on output' },
    { flags: ['-p', '--pid'], kind: 'value', type: INT, help: 'trace this PID only' },
    { flags: ['-P', '--port'], kind: 'value', help: 'comma-separated list of local ports to trace' },
    { flags: ['-4', '--ipv4'], kind: 'flag', group: 'family', help: 'trace IPv4 family only' },
    { flags: ['-6', '--ipv6'], kind: 'flag', group: 'family', help: 'trace IPv6 family only' },
    { flags: ['--cgroupmap'], kind: 'value', help: 'trace cgroups in this BPF map only' },
    { flags: ['--mntnsmap'], kind: 'value', help: 'trace mount namespaces in this BPF map only' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
} as const satisfies ParserSpec;

export interface TcpacceptOptions {
  pid?: number | null;
  /** Local ports (`-P`). */
  ports?: number[] | null;
  ipv4?: boolean;
  ipv6?: boolean;
  /** The accept system calls this kernel has tracepoints for: some of `accept`, `accept4`. */
  syscalls: string[];
}

/** The program's record: one per accepted connection (the comm last). */
export const RECORDS = records({
  accept: {
    tsUs: 'num',
    pid: 'u32',
    ip: 'u32',
    raddr: 'str',
    rport: 'u32',
    laddr: 'str',
    lport: 'u32',
    comm: 'str',
  },
});
export type AcceptRecord = DecodedOf<typeof RECORDS.decls>;

/** One accepted TCP connection (runTool's row, `--json`'s object). */
export interface AcceptRow {
  /** Wall-clock time when the line was printed, HH:MM:SS (bcc's -T column). */
  time: string;
  /** Microseconds since the first connection printed (bcc's -t column is this in seconds). */
  elapsedUs: number;
  /** The accepting process and its name. */
  pid: number;
  comm: string;
  /** 4 or 6. */
  ip: number;
  /** The remote (connecting) end and the local (listening) end. */
  raddr: string;
  rport: number;
  laddr: string;
  lport: number;
}

/** The bpftrace program for `o`. */
export function buildProgram(o: TcpacceptOptions): string {
  const est = [
    `args.protocol == ${IPPROTO_TCP}`,
    `args.oldstate == ${TCP.SYN_RECV}`,
    `args.newstate == ${TCP.ESTABLISHED}`,
    portFilter('args.sport', o.ports),
    familyFilter(o.ipv4 ?? false, o.ipv6 ?? false),
  ];
  let p = configBlock();
  p += `${SET_STATE_PROBE}${predicate(est)} {\n`;
  p += perFamily((s, d, ip) => `@acc[(uint64)args.skaddr] = (${ip}, ${d}, args.dport, ${s}, args.sport);`);
  p += '}\n';
  p += `${SET_STATE_PROBE} /args.protocol == ${IPPROTO_TCP} && args.newstate == ${TCP.CLOSE}/ {\n`;
  p += '  delete(@acc, (uint64)args.skaddr);\n}\n';
  const exits = o.syscalls.map((sc) => `tracepoint:syscalls:sys_exit_${sc}`).join(',\n');
  const who = o.pid !== null && o.pid !== undefined ? `pid == ${o.pid}` : null;
  p += `${exits}${predicate(['args.ret >= 0', who])} {\n`;
  // fd[ret] of the task's descriptor table, read as a pointer (the language has no pointer arithmetic).
  p += '  $file = (struct file *)*(uint64 *)((uint64)curtask->files->fdt->fd + args.ret * 8);\n';
  p += '  $sk = (uint64)((struct socket *)$file->private_data)->sk;\n';
  p += '  if (has_key(@acc, $sk)) {\n    $a = @acc[$sk];\n';
  const emit = RECORDS.emit('accept', {
    tsUs: 'nsecs / 1000',
    pid: 'pid',
    ip: '$a.0',
    raddr: '$a.1',
    rport: '$a.2',
    laddr: '$a.3',
    lport: '$a.4',
    comm: 'comm',
  });
  p += `    ${emit}\n`;
  p += '    delete(@acc, $sk);\n  }\n}\n';
  return p;
}

export interface RowOptions {
  time: boolean;
  timestamp: boolean;
}

/** bcc's header line. */
export function header(o: RowOptions): string {
  let h = '';
  if (o.time) h += pyFormat('%-9s', 'TIME');
  if (o.timestamp) h += pyFormat('%-9s', 'TIME(s)');
  return `${h}${pyFormat('%-7s %-12s %-2s %-16s %-5s %-16s %-5s', 'PID', 'COMM', 'IP', 'RADDR', 'RPORT', 'LADDR', 'LPORT')}\n`;
}

/** The row of one record; `state.startTs` is bcc's `start_ts` (µs of the first connection). */
export function toRow(r: AcceptRecord, state: { startTs: number | null }, time: string = clockTime()): AcceptRow {
  if (state.startTs === null) state.startTs = r.tsUs;
  return {
    time,
    elapsedUs: r.tsUs - state.startTs,
    pid: r.pid,
    comm: r.comm,
    ip: r.ip,
    raddr: r.raddr,
    rport: r.rport,
    laddr: r.laddr,
    lport: r.lport,
  };
}

/** bcc's `print_ipv4_event`/`print_ipv6_event` line for one row. */
export function formatRow(row: AcceptRow, o: RowOptions): string {
  let out = '';
  if (o.time) out += pyFormat('%-9s', row.time);
  if (o.timestamp) out += pyFormat('%-9.3f', row.elapsedUs / 1e6);
  out += pyFormat(
    '%-7d %-12.12s %-2d %-16s %-5d %-16s %-5d',
    row.pid,
    row.comm,
    row.ip,
    row.raddr,
    row.rport,
    row.laddr,
    row.lport,
  );
  return `${out}\n`;
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const lists = parsePortOptions([a.port], writer.err);
  if (!lists) return 1;
  const [ports] = lists;
  if (a.cgroupmap !== null || a.mntnsmap !== null) {
    throw unsupported(
      'tcpaccept: --cgroupmap/--mntnsmap read pinned BPF maps, which bpfscope tools do not support yet',
    );
  }
  const syscalls = ['accept', 'accept4'].filter((sc) => tracepointExists('syscalls', `sys_exit_${sc}`));
  if (!syscalls.length) {
    throw unsupported('tcpaccept: this kernel has no syscalls:sys_exit_accept4 tracepoint (CONFIG_FTRACE_SYSCALLS)');
  }
  if (!tracepointExists('sock', 'inet_sock_set_state')) {
    throw unsupported('tcpaccept: this kernel has no sock:inet_sock_set_state tracepoint (added in Linux 4.16)');
  }
  const program = buildProgram({ pid: a.pid, ports, ipv4: a.ipv4, ipv6: a.ipv6, syscalls });
  const rowOpts: RowOptions = { time: a.time, timestamp: a.timestamp };
  const state = { startTs: null as number | null };
  return runProgram({
    tool: 'tcpaccept',
    program,
    writer,
    onStarted: () => writer.write(header(rowOpts)),
    records: RECORDS,
    onRecord: (r: AcceptRecord) => writer.emit(toRow(r, state), (x) => formatRow(x, rowOpts)),
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'rows', run });

/** `bpfscope tcpaccept [flags]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
