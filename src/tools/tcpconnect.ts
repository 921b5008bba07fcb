/**
 * tcpconnect: trace active TCP connections (connect()). Follows bcc's `tools/tcpconnect.py` (flags, help, the
 * "Tracing connect" line, `%-7d %-12.12s %-2d %-16s %-16s %-6d %s` rows, `-t`/`-U`/`-L` columns, `-c` counts) on
 * the `sock:inet_sock_set_state` tracepoint instead of kprobes on tcp_v{4,6}_connect(): a connect is a socket
 * entering SYN_SENT, which happens inside connect() in the caller's context, so PID, UID and comm are the
 * caller's as in bcc.
 *
 * The local port is chosen after that state change (`inet_hash_connect()` follows `tcp_set_state(SYN_SENT)`), so
 * with `-L` the details are kept per socket at SYN_SENT and the line is printed when the socket leaves SYN_SENT
 * (handshake done, refused or given up), with the port then known. Not supported: `-d` (kprobes on
 * udp_recvmsg), `--cgroupmap`/`--mntnsmap` (pinned BPF maps).
 */
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { type DecodedOf, records } from './framework/record.js';
import { defineTool, runProgram, toolMain, unsupported } from './framework/runner.js';
import { tracepointExists } from './framework/system.js';
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
  prog: 'tcpconnect',
  description: 'Trace TCP connects',
  raw: true,
  epilog: `examples:
    ./tcpconnect           # trace all TCP connect()s
    ./tcpconnect -t        # include timestamps
    ./tcpconnect -d        # include DNS queries associated with connects
    ./tcpconnect -p 181    # only trace PID 181
    ./tcpconnect -P 80     # only trace port 80
    ./tcpconnect -P 80,81  # only trace port 80 and 81
    ./tcpconnect -4        # only trace IPv4 family
    ./tcpconnect -6        # only trace IPv6 family
    ./tcpconnect -U        # include UID
    ./tcpconnect -u 1000   # only trace UID 1000
    ./tcpconnect -c        # count connects per src ip and dest ip/port
    ./tcpconnect -L        # include LPORT while printing outputs
    ./tcpconnect --cgroupmap mappath  # only trace cgroups in this BPF map
    ./tcpconnect --mntnsmap mappath   # only trace mount namespaces in the map
`,
  options: [
    { flags: ['-t', '--timestamp'], kind: 'flag', help: 'include timestamp on output' },
    { flags: ['-p', '--pid'], kind: 'value', type: INT, help: 'trace this PID only' },
    { flags: ['-P', '--port'], kind: 'value', help: 'comma-separated list of destination ports to trace.' },
    { flags: ['-4', '--ipv4'], kind: 'flag', group: 'family', help: 'trace IPv4 family only' },
    { flags: ['-6', '--ipv6'], kind: 'flag', group: 'family', help: 'trace IPv6 family only' },
    { flags: ['-L', '--lport'], kind: 'flag', help: 'include LPORT on output' },
    { flags: ['-U', '--print-uid'], kind: 'flag', help: 'include UID on output' },
    { flags: ['-u', '--uid'], kind: 'value', type: INT, help: 'trace this UID only' },
    { flags: ['-c', '--count'], kind: 'flag', help: 'count connects per src ip and dest ip/port' },
    { flags: ['--cgroupmap'], kind: 'value', help: 'trace cgroups in this BPF map only' },
    { flags: ['--mntnsmap'], kind: 'value', help: 'trace mount namespaces in this BPF map only' },
    { flags: ['-d', '--dns'], kind: 'flag', help: 'include likely DNS query associated with each connect' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
} as const satisfies ParserSpec;

export interface TcpconnectOptions {
  pid?: number | null;
  uid?: number | null;
  /** Destination ports (`-P`). */
  ports?: number[] | null;
  ipv4?: boolean;
  ipv6?: boolean;
  /** `-L`: print when the socket leaves SYN_SENT, with the local port. */
  lport?: boolean;
}

/** The program's record: one per connect (the local port is 0 without -L; the comm last). */
export const RECORDS = records({
  connect: {
    tsUs: 'num',
    pid: 'u32',
    uid: 'u32',
    ip: 'u32',
    saddr: 'str',
    daddr: 'str',
    lport: 'u32',
    dport: 'u32',
    comm: 'str',
  },
});
export type ConnectRecord = DecodedOf<typeof RECORDS.decls>;

/** One connect (runTool's row, `--json`'s object), without `-c`. */
export interface ConnectRow {
  /** Microseconds since the first connect printed (bcc's -t column is this in seconds). */
  elapsedUs: number;
  /** The connecting process, its UID and name. */
  pid: number;
  uid: number;
  comm: string;
  /** 4 or 6. */
  ip: number;
  saddr: string;
  /** The local port with -L (known once the socket left SYN_SENT), else null. */
  lport: number | null;
  daddr: string;
  dport: number;
}

/** With `-c`: one row per (IP version, source, destination, destination port) when the run ends, largest first. */
export interface ConnectCountRow {
  ip: number;
  laddr: string;
  raddr: string;
  rport: number;
  connects: number;
}

/** The bpftrace program for `o`. */
export function buildProgram(o: TcpconnectOptions): string {
  const conds = [
    `args.protocol == ${IPPROTO_TCP}`,
    `args.newstate == ${TCP.SYN_SENT}`,
    o.pid !== null && o.pid !== undefined ? `pid == ${o.pid}` : null,
    o.uid !== null && o.uid !== undefined ? `uid == ${o.uid}` : null,
    portFilter('args.dport', o.ports),
    familyFilter(o.ipv4 ?? false, o.ipv6 ?? false),
  ];
  let p = configBlock();
  p += `${SET_STATE_PROBE}${predicate(conds)} {\n`;
  if (!o.lport) {
    p += perFamily((s, d, ip) =>
      RECORDS.emit('connect', {
        tsUs: 'nsecs / 1000',
        pid: 'pid',
        uid: 'uid',
        ip: String(ip),
        saddr: s,
        daddr: d,
        lport: '0',
        dport: 'args.dport',
        comm: 'comm',
      }),
    );
    return `${p}}\n`;
  }
  // -L: the local port is assigned after SYN_SENT; keep who connected until the socket leaves that state.
  p += '  @conn[(uint64)args.skaddr] = (nsecs / 1000, pid, uid, comm);\n}\n';
  p += `${SET_STATE_PROBE} /args.protocol == ${IPPROTO_TCP} && args.oldstate == ${TCP.SYN_SENT}/ {\n`;
  p += '  $sk = (uint64)args.skaddr;\n';
  // A socket whose port could not be bound goes back to CLOSE with port 0: connect() failed, bcc prints nothing.
  p += '  if (has_key(@conn, $sk) && args.sport != 0) {\n    $c = @conn[$sk];\n';
  p += perFamily(
    (s, d, ip) =>
      RECORDS.emit('connect', {
        tsUs: '$c.0',
        pid: '$c.1',
        uid: '$c.2',
        ip: String(ip),
        saddr: s,
        daddr: d,
        lport: 'args.sport',
        dport: 'args.dport',
        comm: '$c.3',
      }),
    '    ',
  );
  p += '  }\n  delete(@conn, $sk);\n}\n';
  return p;
}

export interface RowOptions {
  timestamp: boolean;
  printUid: boolean;
  lport: boolean;
}

/** bcc's header line (without `-c`). */
export function header(o: RowOptions): string {
  let h = '';
  if (o.timestamp) h += pyFormat('%-9s', 'TIME(s)');
  if (o.printUid) h += pyFormat('%-6s', 'UID');
  h += o.lport
    ? pyFormat('%-7s %-12s %-2s %-16s %-6s %-16s %-6s', 'PID', 'COMM', 'IP', 'SADDR', 'LPORT', 'DADDR', 'DPORT')
    : pyFormat('%-7s %-12s %-2s %-16s %-16s %-6s', 'PID', 'COMM', 'IP', 'SADDR', 'DADDR', 'DPORT');
  return `${h}\n`;
}

/**
 * The row of one record; `state.startTs` is bcc's `start_ts` (µs of the first connect); `lport`: whether the
 * program sends the local port (-L).
 */
export function toRow(r: ConnectRecord, state: { startTs: number | null }, lport: boolean): ConnectRow {
  if (state.startTs === null) state.startTs = r.tsUs;
  return {
    elapsedUs: r.tsUs - state.startTs,
    pid: r.pid,
    uid: r.uid,
    comm: r.comm,
    ip: r.ip,
    saddr: r.saddr,
    lport: lport ? r.lport : null,
    daddr: r.daddr,
    dport: r.dport,
  };
}

/**
 * bcc's `print_ipv4_event`/`print_ipv6_event` line for one row. The line ends with bcc's empty QUERY column: a
 * space, then `\n`.
 */
export function formatRow(row: ConnectRow, o: RowOptions): string {
  let out = '';
  if (o.timestamp) out += pyFormat('%-9.3f', row.elapsedUs / 1e6);
  if (o.printUid) out += pyFormat('%-6d', row.uid);
  out += o.lport
    ? pyFormat(
        '%-7d %-12.12s %-2d %-16s %-6d %-16s %-6d %s',
        row.pid,
        row.comm,
        row.ip,
        row.saddr,
        row.lport ?? 0,
        row.daddr,
        row.dport,
        '',
      )
    : pyFormat(
        '%-7d %-12.12s %-2d %-16s %-16s %-6d %s',
        row.pid,
        row.comm,
        row.ip,
        row.saddr,
        row.daddr,
        row.dport,
        '',
      );
  return `${out}\n`;
}

/** `-c`: connects counted per (IP version, source address, destination address, destination port). */
export class ConnectCounts {
  private readonly counts = new Map<string, ConnectCountRow>();

  /** Count one connect. */
  add(r: Pick<ConnectRecord, 'ip' | 'saddr' | 'daddr' | 'dport'>): void {
    const key = [r.ip, r.saddr, r.daddr, r.dport].join(' ');
    const e = this.counts.get(key);
    if (e) e.connects++;
    else this.counts.set(key, { ip: r.ip, laddr: r.saddr, raddr: r.daddr, rport: r.dport, connects: 1 });
  }

  /** The report's rows in bcc's order: IPv4 rows, then IPv6 rows, each by count, largest first. */
  rows(): ConnectCountRow[] {
    return [4, 6].flatMap((ip) =>
      [...this.counts.values()].filter((e) => e.ip === ip).sort((a, b) => b.connects - a.connects),
    );
  }

  /** bcc's report header: an empty line, then the column names. */
  static header(): string {
    return `\n${pyFormat('%-25s %-25s %-20s %-10s', 'LADDR', 'RADDR', 'RPORT', 'CONNECTS')}\n`;
  }

  /** bcc's report line for one row. */
  static formatRow(e: ConnectCountRow): string {
    return `${pyFormat('%-25s %-25s %-20s', e.laddr, e.raddr, String(e.rport))} ${pyFormat('%-10d', e.connects)}\n`;
  }

  /** bcc's whole report. */
  format(): string {
    return ConnectCounts.header() + this.rows().map(ConnectCounts.formatRow).join('');
  }
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  if (a.count && a.dns) {
    writer.line('Error: you may not specify -d/--dns with -c/--count.');
    return 0;
  }
  const lists = parsePortOptions([a.port], writer.err);
  if (!lists) return 1;
  const [ports] = lists;
  if (a.dns) {
    throw unsupported(
      'tcpconnect: -d/--dns reads DNS replies with kprobes on udp_recvmsg(), which bpfscope tools do not use',
    );
  }
  if (a.cgroupmap !== null || a.mntnsmap !== null) {
    throw unsupported(
      'tcpconnect: --cgroupmap/--mntnsmap read pinned BPF maps, which bpfscope tools do not support yet',
    );
  }
  if (!tracepointExists('sock', 'inet_sock_set_state')) {
    throw unsupported('tcpconnect: this kernel has no sock:inet_sock_set_state tracepoint (added in Linux 4.16)');
  }
  const rowOpts: RowOptions = { timestamp: a.timestamp, printUid: a.print_uid, lport: a.lport };
  const count = a.count;
  const program = buildProgram({
    pid: a.pid,
    uid: a.uid,
    ports,
    ipv4: a.ipv4,
    ipv6: a.ipv6,
    lport: rowOpts.lport && !count,
  });
  const counts = new ConnectCounts();
  const state = { startTs: null as number | null };
  return runProgram({
    tool: 'tcpconnect',
    program,
    writer,
    onStarted: () => {
      writer.line('Tracing connect ... Hit Ctrl-C to end');
      if (!count) writer.write(header(rowOpts));
    },
    records: RECORDS,
    onRecord: (r: ConnectRecord) => {
      if (count) counts.add(r);
      else writer.emit(toRow(r, state, rowOpts.lport), (x) => formatRow(x, rowOpts));
    },
    ...(count
      ? {
          onTick: (_t, last) => {
            if (!last) return;
            writer.write(ConnectCounts.header());
            for (const e of counts.rows()) writer.emit(e, ConnectCounts.formatRow);
          },
        }
      : {}),
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'rows', run });

/** `bpfscope tcpconnect [flags]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
