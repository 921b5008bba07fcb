/**
 * tcplife: one line per TCP session when it closes, with its addresses, ports, bytes and duration. Follows the
 * tracepoint version of bcc's `tools/tcplife.py` (flags, help, the default 80-column, `-w` and `-s` CSV formats,
 * `-T`/`-t` columns) on `sock:inet_sock_set_state`:
 * - any change to a state below FIN_WAIT1 records the socket's birth time (each one overwrites it, as bcc's
 *   `birth.update` does, so a connecting socket's life starts at ESTABLISHED);
 * - SYN_SENT (the connecting process) and LAST_ACK (the process closing a passively closed socket) record the
 *   PID and comm of the current task for the socket;
 * - CLOSE prints the session: PID/comm recorded earlier, or the current task's; TX_KB/RX_KB from
 *   `tcp_sock.bytes_acked`/`bytes_received` (as tcp_get_info() reports them; they count the SYN and FIN as one
 *   byte each), and the lifespan in ms.
 * `-L`/`-D` forget sockets on other ports at every state change, `-p` applies at SYN_SENT/LAST_ACK and CLOSE,
 * `-4`/`-6` at CLOSE, all as bcc does.
 */
import type { OptionsOf, ParserSpec } from './framework/argparse.js';
import { INT } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
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
  prog: 'tcplife',
  description: 'Trace the lifespan of TCP sessions and summarize',
  raw: true,
  epilog: `examples:
    ./tcplife           # trace all TCP connect()s
    ./tcplife -T        # include time column (HH:MM:SS)
    ./tcplife -w        # wider columns (fit IPv6)
    ./tcplife -stT      # csv output, with times & timestamps
    ./tcplife -p 181    # only trace PID 181
    ./tcplife -L 80     # only trace local port 80
    ./tcplife -L 80,81  # only trace local ports 80 and 81
    ./tcplife -D 80     # only trace remote port 80
    ./tcplife -4        # only trace IPv4 family
    ./tcplife -6        # only trace IPv6 family
`,
  options: [
    { flags: ['-T', '--time'], kind: 'flag', help: 'include time column on output (HH:MM:SS)' },
    { flags: ['-t', '--timestamp'], kind: 'flag', help: 'include timestamp on output (seconds)' },
    { flags: ['-w', '--wide'], kind: 'flag', help: 'wide column output (fits IPv6 addresses)' },
    { flags: ['-s', '--csv'], kind: 'flag', help: 'comma separated values output' },
    { flags: ['-p', '--pid'], kind: 'value', type: INT, help: 'trace this PID only' },
    { flags: ['-L', '--localport'], kind: 'value', help: 'comma-separated list of local ports to trace.' },
    { flags: ['-D', '--remoteport'], kind: 'value', help: 'comma-separated list of remote ports to trace.' },
    { flags: ['-4', '--ipv4'], kind: 'flag', group: 'family', help: 'trace IPv4 family only' },
    { flags: ['-6', '--ipv6'], kind: 'flag', group: 'family', help: 'trace IPv6 family only' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
} as const satisfies ParserSpec;

export interface TcplifeOptions {
  pid?: number | null;
  localPorts?: number[] | null;
  remotePorts?: number[] | null;
  ipv4?: boolean;
  ipv6?: boolean;
}

/** The program's record: one per closed session. Bytes are bytes, times are µs. */
export const RECORDS = records({
  session: {
    tsUs: 'u64',
    pid: 'u32',
    ip: 'u32',
    laddr: 'str',
    lport: 'u32',
    raddr: 'str',
    rport: 'u32',
    txBytes: 'num',
    rxBytes: 'num',
    spanUs: 'num',
    comm: 'str',
  },
});
export type SessionRecord = DecodedOf<typeof RECORDS.decls>;

/** One TCP session that ended (runTool's row, `--json`'s object). */
export interface TcpSessionRow {
  /** Wall-clock time of the close, HH:MM:SS (bcc's -T column). */
  time: string;
  /** Microseconds since the first session printed (bcc's -t column is this in seconds). */
  elapsedUs: number;
  /** The process that opened or closed the session (bcc's rules), and its name. */
  pid: number;
  comm: string;
  /** 4 or 6. */
  ip: number;
  laddr: string;
  lport: number;
  raddr: string;
  rport: number;
  /** Bytes acknowledged by the peer (tcp_sock.bytes_acked) and received (bytes_received). */
  txBytes: number;
  rxBytes: number;
  /** The session's life, in µs (bcc prints it as MS with 2 decimals). */
  spanUs: number;
}

/** The bpftrace program for `o`. */
export function buildProgram(o: TcplifeOptions): string {
  const pidOk = o.pid !== null && o.pid !== undefined ? `$pid == ${o.pid}` : null;
  let p = configBlock();
  p += `${SET_STATE_PROBE} /args.protocol == ${IPPROTO_TCP}/ {\n`;
  p += '  $sk = (uint64)args.skaddr;\n';
  for (const [expr, ports] of [
    ['args.sport', o.localPorts],
    ['args.dport', o.remotePorts],
  ] as const) {
    const ok = portFilter(expr, ports);
    if (ok) p += `  if (!(${ok})) {\n    delete(@birth, $sk);\n    return;\n  }\n`;
  }
  p += `  if (args.newstate < ${TCP.FIN_WAIT1}) {\n    @birth[$sk] = nsecs;\n  }\n`;
  p += '  $pid = pid;\n';
  p += `  if (args.newstate == ${TCP.SYN_SENT} || args.newstate == ${TCP.LAST_ACK}) {\n`;
  if (pidOk) p += `    if (!(${pidOk})) {\n      return;\n    }\n`;
  p += '    @who[$sk] = (pid, comm);\n  }\n';
  p += `  if (args.newstate != ${TCP.CLOSE}) {\n    return;\n  }\n`;
  p += '  if (!has_key(@birth, $sk)) {\n    delete(@who, $sk);\n    return;\n  }\n';
  p += '  $span_us = (nsecs - @birth[$sk]) / 1000;\n  delete(@birth, $sk);\n';
  p += '  $comm = comm;\n  if (has_key(@who, $sk)) {\n    $pid = @who[$sk].0;\n    $comm = @who[$sk].1;\n';
  p += '    delete(@who, $sk);\n  }\n';
  const checks = [pidOk, familyFilter(o.ipv4 ?? false, o.ipv6 ?? false)].filter((c): c is string => c !== null);
  if (checks.length) p += `  if (!(${checks.join(' && ')})) {\n    return;\n  }\n`;
  p += '  $tp = (struct tcp_sock *)args.skaddr;\n';
  p += perFamily((s, d, ip) =>
    RECORDS.emit('session', {
      tsUs: 'nsecs / 1000',
      pid: '$pid',
      ip: String(ip),
      laddr: s,
      lport: 'args.sport',
      raddr: d,
      rport: 'args.dport',
      txBytes: '$tp->bytes_acked',
      rxBytes: '$tp->bytes_received',
      spanUs: '$span_us',
      comm: '$comm',
    }),
  );
  return `${p}}\n`;
}

export interface RowOptions {
  time: boolean;
  timestamp: boolean;
  wide: boolean;
  csv: boolean;
}

function formats(o: RowOptions): { head: string; row: string } {
  if (o.csv) return { head: '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s', row: '%d,%s,%s,%s,%s,%s,%d,%d,%d,%.2f' };
  if (o.wide) {
    return {
      head: '%-5s %-16.16s %-2s %-26s %-5s %-26s %-5s %6s %6s %s',
      row: '%-5d %-16.16s %-2s %-26s %-5s %-26s %-5d %6d %6d %.2f',
    };
  }
  return {
    head: '%-5s %-10.10s %s%-15s %-5s %-15s %-5s %5s %5s %s',
    row: '%-5d %-10.10s %s%-15s %-5d %-15s %-5d %5d %5d %.2f',
  };
}

/** bcc's header line. */
export function header(o: RowOptions): string {
  let h = '';
  if (o.time) h += o.csv ? 'TIME,' : pyFormat('%-8s ', 'TIME');
  if (o.timestamp) h += o.csv ? 'TIME(s),' : pyFormat('%-9s ', 'TIME(s)');
  const ip = o.wide || o.csv ? 'IP' : '';
  return `${h}${pyFormat(formats(o).head, 'PID', 'COMM', ip, 'LADDR', 'LPORT', 'RADDR', 'RPORT', 'TX_KB', 'RX_KB', 'MS')}\n`;
}

/** The row of one record; `state.startTs` is bcc's `start_ts` (µs of the first session). */
export function toRow(r: SessionRecord, state: { startTs: bigint | null }, time: string = clockTime()): TcpSessionRow {
  if (state.startTs === null) state.startTs = r.tsUs;
  return {
    time,
    elapsedUs: Number(r.tsUs - state.startTs),
    pid: r.pid,
    comm: r.comm,
    ip: r.ip,
    laddr: r.laddr,
    lport: r.lport,
    raddr: r.raddr,
    rport: r.rport,
    txBytes: r.txBytes,
    rxBytes: r.rxBytes,
    spanUs: r.spanUs,
  };
}

/**
 * bcc's `print_ipv4_event`/`print_ipv6_event` for one row: KB columns are `bytes / 1024` truncated by `%d`, MS is
 * the span in ms with 2 decimals.
 */
export function formatRow(row: TcpSessionRow, o: RowOptions): string {
  let out = '';
  if (o.time) out += o.csv ? `${row.time},` : pyFormat('%-8s ', row.time);
  if (o.timestamp) {
    const delta = row.elapsedUs / 1e6;
    out += o.csv ? pyFormat('%.6f,', delta) : pyFormat('%-9.6f ', delta);
  }
  // Python's %d of a float truncates toward zero; the byte counts are non-negative.
  const kb = (bytes: number): number => Math.floor(bytes / 1024);
  const line = pyFormat(
    formats(o).row,
    row.pid,
    row.comm,
    o.wide || o.csv ? String(row.ip) : '',
    row.laddr,
    o.wide || o.csv ? String(row.lport) : row.lport,
    row.raddr,
    row.rport,
    kb(row.txBytes),
    kb(row.rxBytes),
    row.spanUs / 1000,
  );
  return `${out}${line}\n`;
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  // bcc converts -D before -L.
  const lists = parsePortOptions([a.remoteport, a.localport], writer.err);
  if (!lists) return 1;
  const [remotePorts, localPorts] = lists;
  if (!tracepointExists('sock', 'inet_sock_set_state')) {
    throw unsupported('tcplife: this kernel has no sock:inet_sock_set_state tracepoint (added in Linux 4.16)');
  }
  const program = buildProgram({ pid: a.pid, localPorts, remotePorts, ipv4: a.ipv4, ipv6: a.ipv6 });
  const rowOpts: RowOptions = { time: a.time, timestamp: a.timestamp, wide: a.wide, csv: a.csv };
  const state = { startTs: null as bigint | null };
  return runProgram({
    tool: 'tcplife',
    program,
    writer,
    onStarted: () => writer.write(header(rowOpts)),
    records: RECORDS,
    onRecord: (r: SessionRecord) => writer.emit(toRow(r, state), (x) => formatRow(x, rowOpts)),
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'rows', run });

/** `bpfscope tcplife [flags]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
