/** Network decoders: inet_ip, ifname, dname (ebpf_exporter's decoder/inet_ip.go, ifname.go, dname.go). */
import { readdirSync, readFileSync } from 'node:fs';
import { isIPv4, isIPv6 } from 'node:net';
import { DecodeError, type Decoder, describe, integer } from './types.js';

/**
 * inet_ip: an IPv4 or IPv6 address as text. Bytes (4 or 16, network order: `buf()` of an address) or an integer
 * holding an IPv4 address as the kernel stores `__be32` (its first byte in memory is the first octet, so on a
 * little-endian machine the integer's lowest byte); text that already is an address (`ntop()`) passes through.
 */
export const inetIp: Decoder = (input) => {
  if (typeof input === 'string' && (isIPv4(input) || isIPv6(input))) return input;
  let bytes: Uint8Array;
  if (input instanceof Uint8Array) bytes = input;
  else {
    const n = BigInt.asUintN(32, integer(input, 'inet_ip'));
    bytes = Uint8Array.from([0, 8, 16, 24].map((s) => Number((n >> BigInt(s)) & 0xffn)));
  }
  if (bytes.length === 4) return [...bytes].join('.');
  if (bytes.length === 16) {
    if (bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) {
      return `::ffff:${[...bytes.slice(12)].join('.')}`;
    }
    const groups: string[] = [];
    for (let i = 0; i < 16; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16));
    // RFC 5952: the longest run (>= 2) of zero groups becomes ::
    let best = -1;
    let bestLen = 1;
    for (let i = 0; i < 8;) {
      let j = i;
      while (j < 8 && groups[j] === '0') j++;
      if (j - i > bestLen) {
        best = i;
        bestLen = j - i;
      }
      i = j === i ? i + 1 : j;
    }
    if (best < 0) return groups.join(':');
    return `${groups.slice(0, best).join(':')}::${groups.slice(best + bestLen).join(':')}`;
  }
  throw new DecodeError(`decoder inet_ip needs 4 or 16 bytes, got ${describe(input)}`);
};

let ifnames: Map<bigint, string> | undefined;

/** ifname: the network interface with that index (/sys/class/net/NAME/ifindex), `unknown:N` for others. */
export const ifname: Decoder = (input) => {
  const idx = integer(input, 'ifname');
  let name = ifnames?.get(idx);
  if (name === undefined) {
    // an interface created since the last read: read the list again
    ifnames = new Map();
    try {
      for (const n of readdirSync('/sys/class/net')) {
        try {
          ifnames.set(BigInt(readFileSync(`/sys/class/net/${n}/ifindex`, 'utf8').trim()), n);
        } catch {
          /* removed meanwhile */
        }
      }
    } catch {
      /* no sysfs */
    }
    name = ifnames.get(idx);
  }
  return name ?? `unknown:${idx}`;
};

/**
 * dname: a DNS name in wire format (length-prefixed labels, as in a DNS packet: `buf()` of it) as dotted text;
 * the empty name is `.`; text passes through.
 */
export const dname: Decoder = (input) => {
  if (typeof input === 'string') return input;
  if (!(input instanceof Uint8Array)) throw new DecodeError(`decoder dname needs bytes, got ${describe(input)}`);
  const parts: string[] = [];
  for (let off = 0; off < input.length;) {
    const n = input[off]!;
    if (n === 0) break;
    if (off + 1 + n > input.length) throw new DecodeError('decoder dname: a label runs past the end of the name');
    parts.push(Buffer.from(input.subarray(off + 1, off + 1 + n)).toString('latin1'));
    off += 1 + n;
  }
  return parts.length ? parts.join('.') : '.';
};
