/**
 * tcpretrans: trace or count TCP retransmits (and, with -l, tail loss probes). Follows bcc's `tools/tcpretrans.py`
 * (flags, help, `%-8s %-7s %-2s %-20s %1s> %-20s` header and rows with the local time, bcc's state names, -s
 * sequence numbers, -c per-flow counts printed at the end sorted by count) on the `tcp:tcp_retransmit_skb`
 * tracepoint, as bcc does where the kernel has it. The sequence number is the segment's `TCP_SKB_CB(skb)->seq`
 * (the first u32 of `skb->cb`, `include/net/tcp.h`), read as bcc reads it.
 *
 * `-l` adds bcc's kprobe on `tcp_send_loss_probe()` (there is no tracepoint for tail loss probes): on kernels
 * without kprobes the tool says so and exits.
 */
import type { OptionsOf, ParserSpec } from './framework/argparse.js';
import { keyPart } from './framework/histmaps.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { type DecodedOf, records } from './framework/record.js';
import { defineTool, runProgram, toolMain, unsupported } from './framework/runner.js';
import { clockTime } from './framework/system.js';
import { AF_INET, AF_INET6, familyFilter, perFamily, tcpStateName } from './framework/tcp.js';
import { kprobesAvailable } from './framework/probespec.js';
import type { Tracer } from '../runtime/tracer.js';

export const SPEC = {
  prog: 'tcpretrans',
  description: 'Trace TCP retransmits',
  raw: true,
  epilog: `examples:
    ./tcpretrans           # trace TCP retransmits
    ./tcpretrans -l        # include TLP attempts
    ./tcpretrans -4        # trace IPv4 family only
    ./tcpretrans -6        # trace IPv6 family only
`,
  options: [
    { flags: ['-s', '--sequence'], kind: 'flag', help: 'display TCP sequence numbers' },
    { flags: ['-l', '--lossprobe'], kind: 'flag', help: 'include tail loss probe attempts' },
    { flags: ['-c', '--count'], kind: 'flag', help: 'count occurred retransmits per flow' },
    { flags: ['-4', '--ipv4'], kind: 'flag', group: 'family', help: 'trace IPv4 family only' },
    { flags: ['-6', '--ipv6'], kind: 'flag', group: 'family', help: 'trace IPv6 family only' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
} as const satisfies ParserSpec;

export interface TcpretransOptions {
  /** -l: also trace tail loss probes (kprobe on tcp_send_loss_probe). */
  lossprobe?: boolean;
  /** -c: count per flow in maps `@ipv4`/`@ipv6` instead of printing events. */
  count?: boolean;
  ipv4?: boolean;
  ipv6?: boolean;
  /** -s: read the segment's sequence number (otherwise 0 is sent). */
  sequence?: boolean;
}

/**
 * The program's record: one per retransmit (`type` is bcc's `R`) or tail loss probe (`L`); `seq` is 0 without -s.
 */
export const RECORDS = records({
  retransmit: {
    pid: 'u32',
    ip: 'u32',
    lport: 'u32',
    dport: 'u32',
    state: 's32',
    seq: 'u32',
    saddr: 'str',
    type: 'str',
    daddr: 'str',
  },
});
export type RetransRecord = DecodedOf<typeof RECORDS.decls>;

/** One retransmit or tail loss probe (runTool's row, `--json`'s object), without `-c`. */
export interface RetransRow {
  /** Wall-clock time when the line was printed, HH:MM:SS. */
  time: string;
  /** The process on CPU when the kernel retransmitted (often 0, the softirq context), as bcc's PID column. */
  pid: number;
  /** 4 or 6. */
  ip: number;
  /** Local address and port. */
  saddr: string;
  lport: number;
  /** `R`: retransmit; `L`: tail loss probe (-l). */
  type: 'R' | 'L';
  /** Remote address and port. */
  daddr: string;
  dport: number;
  /** The socket's TCP state, bcc's name (`ESTABLISHED`, ...). */
  state: string;
  /** -s: the segment's TCP sequence number (0 for a tail loss probe); null without -s. */
  seq: number | null;
}

/** With `-c`: one row per flow when the run ends, in bcc's print order (IPv4 then IPv6, ascending count). */
export interface RetransCountRow {
  /** 4 or 6. */
  ip: number;
  saddr: string;
  lport: number;
  daddr: string;
  dport: number;
  retransmits: bigint;
}

/** The statement that reports one retransmit: an event, or a count keyed by the flow (-c). */
function report(
  o: TcpretransOptions,
  ip: 4 | 6,
  t: { saddr: string; lport: string; daddr: string; dport: string },
  type: 'R' | 'L',
  state: string,
  seq: string,
): string {
  if (o.count) return `@ipv${ip}[${t.saddr}, ${t.lport}, ${t.daddr}, ${t.dport}] = count();`;
  return RECORDS.emit('retransmit', {
    pid: 'pid',
    ip: String(ip),
    saddr: t.saddr,
    lport: t.lport,
    type: `"${type}"`,
    daddr: t.daddr,
    dport: t.dport,
    state,
    seq,
  });
}

/** The bpftrace program for `o`. */
export function buildProgram(o: TcpretransOptions): string {
  let p = configBlock();
  p += `tracepoint:tcp:tcp_retransmit_skb${predicate([familyFilter(Boolean(o.ipv4), Boolean(o.ipv6))])} {\n`;
  const seq = o.sequence && !o.count ? '$seq' : '0';
  if (seq === '$seq') {
    // TCP_SKB_CB(skb)->seq: struct tcp_skb_cb lives in skb->cb and starts with the sequence number.
    p += '  $seq = args.skbaddr != 0 ? *(uint32 *)(args.skbaddr + offsetof(struct sk_buff, cb)) : 0;\n';
  }
  p += perFamily((saddr, daddr, ip) =>
    report(o, ip, { saddr, lport: 'args.sport', daddr, dport: 'args.dport' }, 'R', 'args.state', seq),
  );
  p += '}\n';
  if (o.lossprobe) p += lossProbeBlock(o);
  return p;
}

/** bcc's kprobe for tail loss probes (-l): `tcp_send_loss_probe(struct sock *sk)`. */
export const TLP_PROBE = { attach: 'kprobe:tcp_send_loss_probe', sock: 'arg0' } as const;

/**
 * The -l probe, as bcc's `trace_tlp`: the socket's addresses and ports, type `L`, sequence 0 (there is no skb).
 * `probe` names the attach point and the expression of the `struct sock *` there (tests use a tracepoint with the
 * same socket on kernels without kprobes).
 */
export function lossProbeBlock(o: TcpretransOptions, probe: { attach: string; sock: string } = TLP_PROBE): string {
  const c = '$sk->__sk_common';
  const family = familyFilter(Boolean(o.ipv4), Boolean(o.ipv6), `${c}.skc_family`);
  let p = `${probe.attach} {\n  $sk = (struct sock *)${probe.sock};\n`;
  if (family) p += `  if (!(${family})) { return; }\n`;
  const ports = { lport: `${c}.skc_num`, dport: `bswap(${c}.skc_dport)` };
  const v4 = { saddr: `ntop(${c}.skc_rcv_saddr)`, daddr: `ntop(${c}.skc_daddr)`, ...ports };
  const v6 = {
    saddr: `ntop(${c}.skc_v6_rcv_saddr.in6_u.u6_addr8)`,
    daddr: `ntop(${c}.skc_v6_daddr.in6_u.u6_addr8)`,
    ...ports,
  };
  p += `  if (${c}.skc_family == ${AF_INET}) {\n    ${report(o, 4, v4, 'L', `${c}.skc_state`, '0')}\n`;
  p += `  } else if (${c}.skc_family == ${AF_INET6}) {\n    ${report(o, 6, v6, 'L', `${c}.skc_state`, '0')}\n  }\n}\n`;
  return p;
}

/** bcc's header line of the event mode (with -s: STATE and SEQ columns). */
export function header(sequence: boolean): string {
  let h = pyFormat('%-8s %-7s %-2s %-20s %1s> %-20s', 'TIME', 'PID', 'IP', 'LADDR:LPORT', 'T', 'RADDR:RPORT');
  h += sequence ? pyFormat(' %-12s %-10s', 'STATE', 'SEQ') : pyFormat(' %-4s', 'STATE');
  return `${h}\n`;
}

/** The row of one record (`sequence`: -s). */
export function toRow(r: RetransRecord, sequence: boolean, time: string = clockTime()): RetransRow {
  return {
    time,
    pid: r.pid,
    ip: r.ip,
    saddr: r.saddr,
    lport: r.lport,
    type: r.type === 'L' ? 'L' : 'R',
    daddr: r.daddr,
    dport: r.dport,
    state: tcpStateName(r.state),
    seq: sequence ? r.seq : null,
  };
}

/** bcc's event line for one row (with the SEQ column when the row has a sequence number, -s). */
export function formatRow(row: RetransRow): string {
  let s = pyFormat(
    '%-8s %-7d %-2d %-20s %1s> %-20s',
    row.time,
    row.pid,
    row.ip,
    `${row.saddr}:${row.lport}`,
    row.type,
    `${row.daddr}:${row.dport}`,
  );
  s += row.seq !== null ? pyFormat(' %-12s %s', row.state, String(row.seq)) : ` ${row.state}`;
  return `${s}\n`;
}

/** One flow of the -c report. */
export interface FlowCount {
  saddr: string;
  lport: number;
  daddr: string;
  dport: number;
  count: bigint;
}

/** Flows of the `@ipv4`/`@ipv6` count map `name` (`ipv4`, `ipv6`; none when the program has no such map). */
export function flowCounts(tracer: Pick<Tracer, 'readMap' | 'mapNames'>, name: string): FlowCount[] {
  if (!tracer.mapNames().includes(name)) return [];
  return tracer.readMap(name).entries.map((e) => ({
    saddr: String(keyPart(e.key[0])),
    lport: Number(keyPart(e.key[1])),
    daddr: String(keyPart(e.key[2])),
    dport: Number(keyPart(e.key[3])),
    count: 'value' in e.value && typeof e.value.value === 'bigint' ? e.value.value : 0n,
  }));
}

/** bcc's -c report header: a blank line, then the column names. */
export function countsHeader(): string {
  return `\n${pyFormat('%-25s %-25s %-10s', 'LADDR:LPORT', 'RADDR:RPORT', 'RETRANSMITS')}\n`;
}

/** The key text of a flow in bcc's -c report: `[addr]#port <-> [addr]#port` padded to 20 each. */
function flowKey(f: Pick<FlowCount, 'saddr' | 'lport' | 'daddr' | 'dport'>): string {
  return pyFormat('%-20s <-> %-20s', `[${f.saddr}]#${f.lport}`, `[${f.daddr}]#${f.dport}`);
}

/**
 * The -c report's rows in bcc's order: the IPv4 flows then the IPv6 flows, each sorted by ascending count (ties,
 * which bcc leaves in hash order, by their text).
 */
export function countRows(v4: FlowCount[], v6: FlowCount[]): RetransCountRow[] {
  const out: RetransCountRow[] = [];
  for (const [ip, flows] of [
    [4, v4],
    [6, v6],
  ] as const) {
    const rows = flows.map((f) => ({ f, key: flowKey(f) }));
    rows.sort((a, b) =>
      a.f.count < b.f.count ? -1 : a.f.count > b.f.count ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0,
    );
    for (const { f } of rows) {
      out.push({ ip, saddr: f.saddr, lport: f.lport, daddr: f.daddr, dport: f.dport, retransmits: f.count });
    }
  }
  return out;
}

/** bcc's -c report line of one flow: `[addr]#port <-> [addr]#port  count`. */
export function formatCountRow(r: RetransCountRow): string {
  return `${pyFormat('%s %10d', flowKey(r), r.retransmits)}\n`;
}

/** bcc's whole -c report (see {@link countRows}). */
export function formatCounts(v4: FlowCount[], v6: FlowCount[]): string {
  return countsHeader() + countRows(v4, v6).map(formatCountRow).join('');
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const o: TcpretransOptions = {
    lossprobe: a.lossprobe,
    count: a.count,
    ipv4: a.ipv4,
    ipv6: a.ipv6,
    sequence: a.sequence,
  };
  const program = buildProgram(o);
  if (o.lossprobe && writer.mode !== 'ebpf' && !kprobesAvailable()) {
    throw unsupported(
      'tcpretrans: -l traces tail loss probes with a kprobe on tcp_send_loss_probe(), and this kernel has no kprobes (CONFIG_KPROBES)',
    );
  }
  const sequence = Boolean(o.sequence);
  return runProgram({
    tool: 'tcpretrans',
    program,
    writer,
    onStarted: () => {
      writer.line('Tracing retransmits ... Hit Ctrl-C to end');
      if (!o.count) writer.write(header(sequence));
    },
    records: RECORDS,
    onRecord: (r: RetransRecord) => writer.emit(toRow(r, sequence), formatRow),
    ...(o.count
      ? {
          onTick: (t: Tracer, last: boolean) => {
            if (!last) return;
            writer.write(countsHeader());
            for (const row of countRows(flowCounts(t, 'ipv4'), flowCounts(t, 'ipv6'))) {
              writer.emit(row, formatCountRow);
            }
          },
        }
      : {}),
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'rows', run });

/** `bpfscope tcpretrans [flags]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
