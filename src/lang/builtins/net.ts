/**
 * Networking (bpftrace `docs/stdlib.md`): `ntop` (printed as an address: the `inet` type), `pton`, `macaddr`,
 * `socket_cookie`. Their code is still in the generator's `callExpr()`.
 */
import { net } from '../../builtins.js';
import { sizeOf, typeName, U64 } from '../types.js';
import type { BuiltinFunction } from './types.js';

/** inet_pton(3) of an IPv4 or IPv6 address literal (bpftrace's `pton()`), or undefined when invalid. */
export function ptonBytes(text: string): Buffer | undefined {
  const kind = net().isIP(text);
  if (kind === 4) return Buffer.from(text.split('.').map(Number));
  if (kind !== 6) return undefined;
  // an embedded IPv4 tail (`::ffff:1.2.3.4`) becomes its two 16-bit groups
  const v4 = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  const t = v4
    ? `${v4[1]}${((Number(v4[2]) << 8) | Number(v4[3])).toString(16)}:${((Number(v4[4]) << 8) | Number(v4[5])).toString(16)}`
    : text;
  const hex = (part: string): number[] => (part ? part.split(':').map((x) => parseInt(x, 16)) : []);
  const gap = t.indexOf('::');
  const head = hex(gap < 0 ? t : t.slice(0, gap));
  const tail = gap < 0 ? [] : hex(t.slice(gap + 2));
  const groups = gap < 0 ? head : [...head, ...new Array(8 - head.length - tail.length).fill(0), ...tail];
  if (groups.length !== 8) return undefined;
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(g, i * 2));
  return out;
}

export const NET_FUNCTIONS: readonly BuiltinFunction[] = [
  {
    name: 'ntop',
    arity: [1, 2],
    check(c, a) {
      const args = c.args;
      const types = args.map((x) => a.expr(x));
      const addr = types[types.length - 1];
      if (types.length === 2 && types[0] && types[0].kind !== 'int') {
        a.error(args[0]!.pos, `ntop() expects an integer address family (${typeName(types[0])} provided)`);
      }
      if (addr) {
        const size = addr.kind === 'string' ? addr.size : addr.kind === 'array' ? addr.count * sizeOf(addr.elem) : 0;
        if (addr.kind !== 'int' && size !== 4 && size !== 16) {
          a.error(
            args[args.length - 1]!.pos,
            `ntop() expects an integer or a 4 or 16 byte array (${typeName(addr)} provided)`,
          );
        }
      }
      return { kind: 'inet' };
    },
    doc: { usage: '`ntop([af, ]addr)`' },
  },
  {
    name: 'pton',
    arity: [1, 1],
    check(c, a) {
      const x = c.args[0]!;
      const bytes = x.kind === 'StrLit' ? ptonBytes(x.value) : undefined;
      if (!bytes) {
        a.error(x.pos, 'pton() expects a string literal IPv4 or IPv6 address');
        return null;
      }
      return { kind: 'array', elem: { kind: 'int', size: 1, signed: false }, count: bytes.length };
    },
    doc: { usage: '`pton("addr")`', note: 'IPv4 or IPv6, at compile time' },
  },
  {
    name: 'macaddr',
    arity: [1, 1],
    check(c, a) {
      const t = a.expr(c.args[0]!);
      c.space = a.addressSpace(c.args[0]!);
      const size = t?.kind === 'array' ? t.count * sizeOf(t.elem) : t?.kind === 'string' ? t.size : null;
      if (t && t.kind !== 'pointer' && t.kind !== 'int' && (size === null || size < 6)) {
        a.error(c.args[0]!.pos, `macaddr() expects a 6-byte array or a pointer (${typeName(t)} provided)`);
        return null;
      }
      return { kind: 'macaddr' };
    },
    doc: { usage: '`macaddr(char[6] or pointer)`', note: '`XX:XX:XX:XX:XX:XX`' },
  },
  {
    name: 'socket_cookie',
    arity: [1, 1],
    check(c, a) {
      // bpf_get_socket_cookie on a BTF-typed socket pointer (fentry/fexit, rawtracepoint args)
      const t = a.expr(c.args[0]!);
      if (!t) return null;
      const to = t.kind === 'pointer' && t.to.kind === 'record' ? t.to.name.replace(/^struct\s+/, '') : '';
      if (to !== 'sock' && to !== 'sock_common') {
        a.error(c.args[0]!.pos, `socket_cookie() expects a 'struct sock *' (${typeName(t)} provided)`);
        return null;
      }
      if (!['fentry', 'fexit', 'rawtracepoint'].includes(a.probe.provider)) {
        a.error(
          c.pos,
          `socket_cookie() needs the kernel's typed socket pointer: use it in fentry, fexit or rawtracepoint probes`,
        );
        return null;
      }
      return U64;
    },
    doc: {
      usage: '`socket_cookie(sk)`',
      note: '`bpf_get_socket_cookie` on a BTF-typed `struct sock *` (fentry/fexit and rawtracepoint arguments)',
    },
  },
];
