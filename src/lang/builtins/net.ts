/**
 * Networking (bpftrace `docs/stdlib.md`): `ntop` (printed as an address: the `inet` type), `pton`, `macaddr`,
 * `socket_cookie`. Their checks and code are still in the analyser's `call()` and the generator's `callExpr()`.
 */
import type { BuiltinFunction } from './types.js';

export const NET_FUNCTIONS: readonly BuiltinFunction[] = [
  { name: 'ntop', doc: { usage: '`ntop([af, ]addr)`' } },
  { name: 'pton', doc: { usage: '`pton("addr")`', note: 'IPv4 or IPv6, at compile time' } },
  { name: 'macaddr', doc: { usage: '`macaddr(char[6] or pointer)`', note: '`XX:XX:XX:XX:XX:XX`' } },
  {
    name: 'socket_cookie',
    doc: {
      usage: '`socket_cookie(sk)`',
      note: '`bpf_get_socket_cookie` on a BTF-typed `struct sock *` (fentry/fexit and rawtracepoint arguments)',
    },
  },
];
