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
import { INT, type Parsed, type ParserSpec } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, eventPrintf, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { runProgram, toolMain, unsupported } from './framework/runner.js';
import { dropReasonNames, tracepointFields } from './framework/skb.js';
import { clockTime } from './framework/system.js';
import { IPPROTO_TCP, tcpFlagsText, tcpStateName } from './framework/tcp.js';
import { bccName, SymbolResolver } from '../symbols/resolver.js';
import { parseRawStack } from './stacktool.js';

export const SPEC: ParserSpec = {
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
};

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

/** Event record fields, in order (the stack last: it spans lines). */
export const FIELDS = ['pid', 'ip', 'saddr', 'sport', 'daddr', 'dport', 'state', 'flags', 'reason', 'stack'] as const;

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
    eventPrintf([
      ['%d', 'pid'],
      ['%d', String(ip)],
      ['%s', saddr],
      ['%u', 'bswap($th->source)'],
      ['%s', daddr],
      ['%u', 'bswap($th->dest)'],
      ['%d', '$state'],
      ['%u', '$flags'],
      ['%u', 'args.reason'],
      ['%s', 'kstack(raw)'],
    ]);
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

/**
 * One event's text: bcc's line, then its kernel stack (`frames`, innermost first, as bcc's `b.ksym(addr,
 * show_offset=True)` texts) one per line after a tab, then a blank line. `state` -1 (no socket) prints `-`.
 */
export function formatEvent(f: string[], reasons: Map<number, string>, frames: string[], time = clockTime()): string {
  const [pid, ip, saddr, sport, daddr, dport, stateText, flags, reasonText] = f;
  const state = Number(stateText);
  const reason = Number(reasonText);
  const stateFlags = `${state < 0 ? '-' : tcpStateName(state)} (${tcpFlagsText(Number(flags))})`;
  let s = pyFormat(
    '%-8s %-7d %-2d %-20s > %-20s %-20s %s (%d)',
    time,
    Number(pid),
    Number(ip),
    `${saddr}:${sport}`,
    `${daddr}:${dport}`,
    stateFlags,
    reasons.get(reason) ?? 'UNKNOWN',
    reason,
  );
  s += '\n';
  for (const fr of frames) s += `\t${fr}\n`;
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

async function run(a: Parsed, writer: ToolWriter): Promise<number> {
  let netnsId = a.netns_id as number;
  const pidNs = a.pid_netns as number;
  if (pidNs !== 0) {
    if (netnsId !== 0) {
      writer.line('ERROR: --pid_netns and --netns-id not allowed together');
      return 1;
    }
    netnsId = pidNetns(pidNs);
  }
  const fields = tracepointFields('skb', 'kfree_skb');
  const program = buildProgram({
    ipv4: a.ipv4 as boolean,
    ipv6: a.ipv6 as boolean,
    netnsId,
    rxSk: fields.has('rx_sk'),
  });
  if (a.ebpf) {
    writer.write(program);
    return 0;
  }
  if (!fields.has('reason')) {
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
    fieldCount: FIELDS.length,
    onStarted: () => writer.write(header()),
    onEvent: (f) => {
      const frames = resolver.kernelStack(parseRawStack(f[9] ?? '')).map((fr) => bccName(fr, { showOffset: true }));
      writer.write(formatEvent(f, reasons, frames));
    },
  });
}

/** `bpfscope tcpdrop [flags]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(SPEC, argv, run);
}
