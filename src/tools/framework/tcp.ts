/**
 * Shared pieces of the TCP tools (tcpconnect, tcpaccept, tcplife, tcpretrans, tcpdrop): TCP state numbers and
 * names, address families, bcc's comma-separated port lists, and bpftrace snippets over the tracepoints whose
 * records carry `family`, `saddr`/`daddr` (`__u8[4]`) and `saddr_v6`/`daddr_v6` (`__u8[16]`), such as
 * `sock:inet_sock_set_state`, `tcp:tcp_retransmit_skb` and `tcp:tcp_send_reset`.
 *
 * Sources: `include/net/tcp_states.h` (state numbers), `include/linux/socket.h` (AF_INET 2, AF_INET6 10),
 * `include/uapi/linux/in.h` (IPPROTO_TCP 6), `include/trace/events/sock.h` (the inet_sock_set_state record), and
 * the state names bcc's tcpstates/tcpretrans print (`tools/tcpstates.py`'s `tcpstate` table).
 */

/** TCP states (`include/net/tcp_states.h`). */
export const TCP = {
  ESTABLISHED: 1,
  SYN_SENT: 2,
  SYN_RECV: 3,
  FIN_WAIT1: 4,
  FIN_WAIT2: 5,
  TIME_WAIT: 6,
  CLOSE: 7,
  CLOSE_WAIT: 8,
  LAST_ACK: 9,
  LISTEN: 10,
  CLOSING: 11,
  NEW_SYN_RECV: 12,
} as const;

/** State number → bcc's name (`ESTABLISHED`, `SYN_SENT`, ...). */
export const TCP_STATE_NAMES: Readonly<Record<number, string>> = Object.fromEntries(
  Object.entries(TCP).map(([name, n]) => [n, name]),
);

/** bcc's name of a TCP state, or the number as text when it is unknown. */
export function tcpStateName(state: number): string {
  return TCP_STATE_NAMES[state] ?? String(state);
}

export const AF_INET = 2;
export const AF_INET6 = 10;
export const IPPROTO_TCP = 6;

/** The `sock:inet_sock_set_state` tracepoint (Linux 4.16+), as a bpftrace probe. */
export const SET_STATE_PROBE = 'tracepoint:sock:inet_sock_set_state';

/** The IP version column (4 or 6) of an address family number. */
export function ipVersion(family: number): 4 | 6 {
  return family === AF_INET6 ? 6 : 4;
}

/** A port list that bcc's `int()` conversion rejects: `message` is Python's ValueError text. */
export class PortListError extends Error {
  constructor(readonly text: string) {
    super(`invalid literal for int() with base 10: '${text}'`);
    this.name = 'PortListError';
  }
}

/**
 * bcc's `[int(p) for p in text.split(',')]`: decimal ports (surrounding blanks and a sign allowed, as Python's
 * `int()`). @throws PortListError for an item `int()` rejects, with Python's message.
 */
export function parsePortList(text: string): number[] {
  return text.split(',').map((item) => {
    const t = item.trim();
    if (!/^[+-]?\d+(_\d+)*$/.test(t)) throw new PortListError(item);
    return Number(t.replace(/_/g, ''));
  });
}

/** `(expr == 80 || expr == 81)` for a port list, or null for none (no filter). */
export function portFilter(expr: string, ports: readonly number[] | null | undefined): string | null {
  if (!ports?.length) return null;
  return ports.map((p) => `${expr} == ${p}`).join(' || ');
}

/** The predicate of bcc's `-4`/`-6` on a family expression (default `args.family`), or null for both. */
export function familyFilter(ipv4: boolean, ipv6: boolean, expr = 'args.family'): string | null {
  if (ipv4) return `${expr} == ${AF_INET}`;
  if (ipv6) return `${expr} == ${AF_INET6}`;
  return null;
}

/**
 * A bpftrace statement that runs `body(saddr, daddr, ip)` with the record's addresses as `ntop()` expressions of
 * the right family: `args.saddr`/`args.daddr` for AF_INET, `args.saddr_v6`/`args.daddr_v6` otherwise; `ip` is
 * the literal 4 or 6. `indent` prefixes every line.
 */
export function perFamily(body: (saddr: string, daddr: string, ip: 4 | 6) => string, indent = '  '): string {
  const inner = (s: string): string =>
    s
      .trimEnd()
      .split('\n')
      .map((l) => `${indent}  ${l}`)
      .join('\n');
  return (
    `${indent}if (args.family == ${AF_INET}) {\n${inner(body('ntop(args.saddr)', 'ntop(args.daddr)', 4))}\n` +
    `${indent}} else {\n${inner(body('ntop(args.saddr_v6)', 'ntop(args.daddr_v6)', 6))}\n${indent}}\n`
  );
}

/** TCP header flag bits in bcc's order (`include/net/tcp.h` TCPHDR_FIN ... TCPHDR_CWR). */
const TCP_FLAG_NAMES: readonly (readonly [number, string])[] = [
  [0x01, 'FIN'],
  [0x02, 'SYN'],
  [0x04, 'RST'],
  [0x08, 'PSH'],
  [0x10, 'ACK'],
  [0x20, 'URG'],
  [0x40, 'ECE'],
  [0x80, 'CWR'],
];

/** bcc's `tcp.flags2str`: the set flags of a TCP header's flag byte, `|`-joined (`SYN|ACK`); '' for none. */
export function tcpFlagsText(flags: number): string {
  return TCP_FLAG_NAMES.filter(([bit]) => (flags & bit) !== 0)
    .map(([, name]) => name)
    .join('|');
}

/**
 * Parse bcc's port-list options (`-P 80,81`; null or undefined: option not given → null). On an item Python's
 * `int()` rejects, writes the last line of bcc's traceback (`ValueError: invalid literal ...`) to `err` and
 * returns null: the tool then exits 1, as bcc's uncaught exception does.
 */
export function parsePortOptions(
  texts: readonly unknown[],
  err: { write(text: string): void },
): (number[] | null)[] | null {
  try {
    return texts.map((t) => (typeof t === 'string' ? parsePortList(t) : null));
  } catch (e) {
    if (!(e instanceof PortListError)) throw e;
    err.write(`ValueError: ${e.message}\n`);
    return null;
  }
}
