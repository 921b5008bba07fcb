/**
 * tcpdrop: trace TCP packets the kernel drops, with the addresses and ports from the packet's headers, the socket's
 * state, the TCP flags, the drop reason and the kernel stack. Follows bcc's `tools/tcpdrop.py` (flags, help,
 * `%-8s %-7d %-2d %-20s > %-20s %-20s %s (%d)` rows, stack frames as `\tfunc+0xoff` and a blank line) on its
 * `skb:kfree_skb` path: drops with a reason above `NOT_SPECIFIED`, read through the skb's BTF types
 * (`skb->head + skb->network_header` is the IP header, `+ skb->transport_header` the TCP header).
 *
 * Differences from bcc, each because bcc's choice hides drops or mislabels them on current kernels:
 * - the socket is the tracepoint's `rx_sk` (Linux 6.11+; the socket a received packet was dropped by) when set,
 *   else `skb->sk` (bcc's only source), and packets without any socket are shown too (netfilter and routing drops
 *   on input happen before the socket lookup), when their IP header says TCP; their STATE is `-`;
 * - the family comes from the packet (`protocol` 0x0800 IPv4 / 0x86DD IPv6), and IPv6 addresses from its IPv6
 *   header, as bcc reads IPv4 ones (bcc reads IPv6 ones from the socket);
 * - reason names come from this kernel's `enum skb_drop_reason` (BTF): bcc's fixed table is off by several entries
 *   on 6.x kernels;
 * - `--netns-id`/`--pid-netns` compare the socket's network namespace, or for packets without a socket, that of
 *   the device they arrived on; bcc's "tcp_drop() ... not found" warning is not printed (kfree_skb is the method).
 */
import { statSync } from 'node:fs';
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { type DecodedOf, records } from './framework/record.js';
import { defineTool, runProgram, toolMain, unsupported } from './framework/runner.js';
import { dropReasonNames, tracepointFields } from './framework/skb.js';
import { clockTime } from './framework/system.js';
import { IPPROTO_TCP, tcpFlagsText, tcpStateName } from './framework/tcp.js';
import { bccName, SymbolResolver } from '../symbols/resolver.js';
import { parseRawStack } from './stacktool.js';

export const SPEC = {
  prog: 'tcpdrop',
  description: 'Trace TCP drops by the kernel',
  raw: true,
  epilog: `examples:
    ./tcpdrop           # trace kernel TCP drops
    ./tcpdrop -4        # trace IPv4 family only
    ./tcpdrop -6        # trace IPv6 family only
`,
  options: [
    { flags: ['-4', '--ipv4'], kind: 'flag', group: 'family', help: 'trace IPv4 family only' },
    { flags: ['-6', '--ipv6'], kind: 'flag', group: 'family', help: 'trace IPv6 family only' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
    { flags: ['--netns-id'], kind: 'value', type: INT, default: 0, help: 'the netns id to filter by' },
    { flags: ['--pid-netns'], kind: 'value', type: INT, default: 0, help: 'the pid whose netns to filter by' },
  ],
} as const satisfies ParserSpec;

/** ETH_P_IP and ETH_P_IPV6 (`include/uapi/linux/if_ether.h`), as kfree_skb's `protocol` (host order) has them. */
export const ETH_P_IP = 0x0800;
export const ETH_P_IPV6 = 0x86dd;

/** `SKB_DROP_REASON_NOT_SPECIFIED`: bcc reports reasons above it (0 and 1 are "not dropped" and "consumed"). */
const NOT_SPECIFIED = 2;

export interface TcpdropOptions {
  ipv4?: boolean;
  ipv6?: boolean;
  /** Only this network namespace (its inode number); 0: all. */
  netnsId?: number;
  /** The record has `rx_sk` (Linux 6.11+). */
  rxSk?: boolean;
}

/**
 * The program's record: one per dropped TCP packet; `state` is -1 without a socket, `flags` the TCP header's flag
 * byte, `stack` the kernel stack as `kstack(raw)` text (last: it spans lines).
 */
export const RECORDS = records({
  drop: {
    pid: 'u32',
    ip: 'u32',
    sport: 'u32',
    dport: 'u32',
    state: 's32',
    flags: 'u32',
    reason: 'u32',
    saddr: 'str',
    daddr: 'str',
    stack: 'str',
  },
});
export type DropRecord = DecodedOf<typeof RECORDS.decls>;

/** One dropped packet (runTool's row, `--json`'s object). */
export interface DropRow {
  /** Wall-clock time when the line was printed, HH:MM:SS. */
  time: string;
  /** The process on the CPU when the packet was freed (often 0, the softirq context), as bcc's PID column. */
  pid: number;
  /** 4 or 6. */
  ip: number;
  /** Source and destination address and port, from the packet's IP and TCP headers. */
  saddr: string;
  sport: number;
  daddr: string;
  dport: number;
  /** The socket's TCP state, bcc's name, or null for a packet without a socket (printed `-`). */
  state: string | null;
  /** The TCP flags, bcc's text (`PSH|ACK`). */
  flags: string;
  /** The drop reason's name from the kernel's `enum skb_drop_reason` (`UNKNOWN` if absent) and its number. */
  reason: string;
  reasonCode: number;
  /** The kernel stack, innermost first, as bcc prints each frame: `func+0xoff`. */
  stack: string[];
}

/** The bpftrace program for `o`. */
export function buildProgram(o: TcpdropOptions): string {
  const protos = [o.ipv6 ? null : ETH_P_IP, o.ipv4 ? null : ETH_P_IPV6].filter((x) => x !== null);
  const proto = protos.map((p) => `args.protocol == 0x${p.toString(16)}`).join(' || ');
  let p = configBlock();
  p += `tracepoint:skb:kfree_skb${predicate([`args.reason > ${NOT_SPECIFIED}`, proto])} {\n`;
  p += '  $skb = (struct sk_buff *)args.skbaddr;\n';
  p += o.rxSk ? '  $sk = (struct sock *)args.rx_sk;\n  if ($sk == 0) { $sk = $skb->sk; }\n' : '  $sk = $skb->sk;\n';
  if (o.netnsId) {
    p += '  $ns = (uint64)0;\n';
    p += '  if ($sk != 0) { $ns = $sk->__sk_common.skc_net.net->ns.inum; }\n';
    p += '  else if ($skb->dev != 0) { $ns = $skb->dev->nd_net.net->ns.inum; }\n';
    p += `  if ($ns != ${o.netnsId}) { return; }\n`;
  }
  p += '  $state = $sk != 0 ? (int64)$sk->__sk_common.skc_state : -1;\n';
  p += '  $th = (struct tcphdr *)($skb->head + $skb->transport_header);\n';
  // tcp_flag_byte(th): byte 13 of the TCP header (include/net/tcp.h).
  p += '  $flags = *(uint8 *)($skb->head + $skb->transport_header + 13);\n';
  const row = (ip: 4 | 6, saddr: string, daddr: string): string =>
    RECORDS.emit('drop', {
      pid: 'pid',
      ip: String(ip),
      saddr,
      sport: 'bswap($th->source)',
      daddr,
      dport: 'bswap($th->dest)',
      state: '$state',
      flags: '$flags',
      reason: 'args.reason',
      stack: 'kstack(raw)',
    });
  const branches: string[] = [];
  if (!o.ipv6) {
    branches.push(
      `if (args.protocol == 0x${ETH_P_IP.toString(16)}) {\n` +
        '    $ip = (struct iphdr *)($skb->head + $skb->network_header);\n' +
        `    if ($ip->protocol == ${IPPROTO_TCP}) {\n      ${row(4, 'ntop($ip->saddr)', 'ntop($ip->daddr)')}\n    }\n  }`,
    );
  }
  if (!o.ipv4) {
    // A TCP socket also vouches for packets whose first next header is an extension header.
    branches.push(
      `if (args.protocol == 0x${ETH_P_IPV6.toString(16)}) {\n` +
        '    $ip6 = (struct ipv6hdr *)($skb->head + $skb->network_header);\n' +
        `    if ($ip6->nexthdr == ${IPPROTO_TCP} || ($sk != 0 && $sk->sk_protocol == ${IPPROTO_TCP})) {\n` +
        `      ${row(6, 'ntop($ip6->saddr.in6_u.u6_addr8)', 'ntop($ip6->daddr.in6_u.u6_addr8)')}\n    }\n  }`,
    );
  }
  p += `  ${branches.join(' else ')}\n}\n`;
  return p;
}

/** bcc's header line. */
export function header(): string {
  return `${pyFormat('%-8s %-7s %-2s %-20s > %-20s %-20s %s', 'TIME', 'PID', 'IP', 'SADDR:SPORT', 'DADDR:DPORT', 'STATE (FLAGS)', 'REASON (CODE)')}\n`;
}

/** The row of one record: `reasons` names the drop reasons, `frames` are the stack's frames as bcc prints them. */
export function toRow(
  r: DropRecord,
  reasons: ReadonlyMap<number, string>,
  frames: string[],
  time: string = clockTime(),
): DropRow {
  return {
    time,
    pid: r.pid,
    ip: r.ip,
    saddr: r.saddr,
    sport: r.sport,
    daddr: r.daddr,
    dport: r.dport,
    state: r.state < 0 ? null : tcpStateName(r.state),
    flags: tcpFlagsText(r.flags),
    reason: reasons.get(r.reason) ?? 'UNKNOWN',
    reasonCode: r.reason,
    stack: frames,
  };
}

/**
 * One event's text: bcc's line, then its kernel stack (innermost first) one frame per line after a tab, then a
 * blank line. A packet without a socket prints `-` as its state.
 */
export function formatEvent(row: DropRow): string {
  let s = pyFormat(
    '%-8s %-7d %-2d %-20s > %-20s %-20s %s (%d)',
    row.time,
    row.pid,
    row.ip,
    `${row.saddr}:${row.sport}`,
    `${row.daddr}:${row.dport}`,
    `${row.state ?? '-'} (${row.flags})`,
    row.reason,
    row.reasonCode,
  );
  s += '\n';
  for (const fr of row.stack) s += `\t${fr}\n`;
  return `${s}\n`;
}

/** bcc's `--pid-netns`: the inode number of `/proc/PID/ns/net`. @throws BpfscopeError when it cannot be read. */
export function pidNetns(pid: number): number {
  try {
    return statSync(`/proc/${pid}/ns/net`).ino;
  } catch (e) {
    throw unsupported(`tcpdrop: cannot read the network namespace of PID ${pid}: ${(e as Error).message}`);
  }
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  let netnsId = a.netns_id;
  const pidNs = a.pid_netns;
  if (pidNs !== 0) {
    if (netnsId !== 0) {
      writer.line('ERROR: --pid_netns and --netns-id not allowed together');
      return 1;
    }
    netnsId = pidNetns(pidNs);
  }
  const fields = tracepointFields('skb', 'kfree_skb');
  const program = buildProgram({ ipv4: a.ipv4, ipv6: a.ipv6, netnsId, rxSk: fields.has('rx_sk') });
  if (!fields.has('reason') && writer.mode !== 'ebpf') {
    throw unsupported(
      'tcpdrop: this kernel has no skb:kfree_skb tracepoint with a drop reason (Linux 5.17+), and bpfscope does not trace tcp_drop() with a kprobe',
    );
  }
  const reasons = dropReasonNames();
  const resolver = new SymbolResolver();
  return runProgram({
    tool: 'tcpdrop',
    program,
    writer,
    onStarted: () => writer.write(header()),
    records: RECORDS,
    onRecord: (r: DropRecord) => {
      const frames = resolver.kernelStack(parseRawStack(r.stack)).map((fr) => bccName(fr, { showOffset: true }));
      writer.emit(toRow(r, reasons, frames), formatEvent);
    },
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'rows', run });

/** `bpfscope tcpdrop [flags]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
