/**
 * Decoding kernel bytes (map keys and values, ring buffer payloads) into the output model
 * (`runtime/output/model.ts`), following the layouts the code generator uses (`codegen/maps.ts`,
 * `codegen/plan.ts`): integers little-endian at their storage size, strings NUL-terminated in fixed buffers,
 * tuples C-aligned, per-CPU aggregation slots summed (min/max merged over the CPUs whose is_set flag is 1).
 */

import { bucketOffset } from '../codegen/maps.js';
import type { MapPlan } from '../codegen/plan.js';
import { type RecordField, type SType, sizeOf, tupleLayout } from '../lang/types.js';
import type { AggValue, MapDump, MapEntry, Value } from './output/model.js';
import { formatStrftimeBuiltin } from './output/strftime.js';
import { reduceTseriesSlots, type TseriesValue } from './output/tseries.js';

/** Turns stored stack references into text (the session reads the stack maps and symbolizes). */
export interface DecodeContext {
  /** `id` < 0 means the kernel could not record the stack. */
  stack(t: Extract<SType, { kind: 'kstack' | 'ustack' }>, id: bigint, pid: number): string;
  /** `ksym(addr)`: the kernel symbol's name (bpftrace prints the address in hex when unknown). */
  ksym?(addr: bigint): string;
  /** `usym(addr)` in process `pid`. */
  usym?(pid: number, addr: bigint): string;
  /** `strerror(n)`: the C library's message for errno `n`. */
  strerror?(errno: number): string;
  /** `syscall_name(n)`: the system call's name (bpftrace: `Unknown syscall` when there is none). */
  syscall_name?(n: bigint): string;
  /** `signal_name(n)`: strsignal(3) text for 0..64 (bpftrace's table), `N/A` otherwise. */
  signal_name?(n: bigint): string;
  /** `cgroup_path(id, filter)`: `hierarchy:/path` of every matching mounted hierarchy holding the cgroup, `,`-joined. */
  cgroupPath?(id: bigint, filter: string): string;
  /** `username`: the name of a uid (from /etc/passwd), or the number. */
  username?(uid: number): string;
  /**
   * Appended to a string that fills its buffer without a NUL (config `str_trunc_trailer`, current bpftrace's
   * default `..`); none when absent.
   */
  strTruncTrailer?: string;
  /** Wall-clock ns since the epoch minus CLOCK_MONOTONIC ns (for `strftime()`). */
  monotonicToRealtimeNs?: bigint;
}

/** inet_ntop(3) text of an IPv4 (4 bytes) or IPv6 (16 bytes) address. */
export function formatInet(family: number, bytes: Buffer): string {
  if (family === 2) return [...bytes.subarray(0, 4)].join('.');
  if (family !== 10) return '';
  const g: number[] = [];
  for (let i = 0; i < 16; i += 2) g.push(bytes.readUInt16BE(i));
  // IPv4-mapped / compatible forms keep the dotted tail, as glibc prints them
  if (g.slice(0, 5).every((x) => x === 0) && (g[5] === 0xffff || (g[5] === 0 && g[6] !== 0))) {
    const v4 = [...bytes.subarray(12, 16)].join('.');
    return g[5] === 0xffff ? `::ffff:${v4}` : `::${v4}`;
  }
  let best = -1;
  let bestLen = 0;
  for (let i = 0; i < 8;) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = g.map((x) => x.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

/** Decode a value of storage type `t` at `buf[off..]`. */
export function decodeValue(buf: Buffer, off: number, t: SType, ctx?: DecodeContext): Value {
  switch (t.kind) {
    case 'ksym': {
      const addr = buf.readBigUInt64LE(off);
      return { kind: 'string', value: ctx?.ksym ? ctx.ksym(addr) : `0x${addr.toString(16)}` };
    }
    case 'usym': {
      const addr = buf.readBigUInt64LE(off);
      const pid = buf.readUInt32LE(off + 8);
      return { kind: 'string', value: ctx?.usym ? ctx.usym(pid, addr) : `0x${addr.toString(16)}` };
    }
    case 'buffer': {
      const len = Math.min(Number(buf.readBigUInt64LE(off)), t.size);
      const raw = Buffer.from(buf.subarray(off + 8, off + 8 + len));
      let text = '';
      for (const b of raw)
        text += b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`;
      return { kind: 'string', value: text, raw };
    }
    case 'errno': {
      const n = Number(buf.readBigInt64LE(off));
      return { kind: 'string', value: ctx?.strerror ? ctx.strerror(n) : String(n) };
    }
    case 'syscall_name':
    case 'signal_name':
    case 'cgroup_path': {
      const n = buf.readBigInt64LE(off);
      const name = t.kind === 'cgroup_path' ? ctx?.cgroupPath?.(BigInt.asUintN(64, n), t.filter) : ctx?.[t.kind]?.(n);
      return { kind: 'string', value: name ?? String(n) };
    }
    case 'username': {
      const uid = Number(buf.readBigUInt64LE(off));
      return { kind: 'string', value: ctx?.username ? ctx.username(uid) : String(uid) };
    }
    case 'macaddr':
      return {
        kind: 'string',
        value: [...buf.subarray(off, off + 6)].map((b) => b.toString(16).toUpperCase().padStart(2, '0')).join(':'),
      };
    case 'inet':
      return { kind: 'string', value: formatInet(Number(buf.readBigUInt64LE(off)), buf.subarray(off + 8, off + 24)) };
    case 'timestamp': {
      const ns = buf.readBigUInt64LE(off) + (ctx?.monotonicToRealtimeNs ?? 0n);
      return { kind: 'string', value: formatStrftimeBuiltin(t.fmt, ns) };
    }
    case 'kstack':
    case 'ustack': {
      const id = buf.readBigInt64LE(off);
      const pid = buf.readUInt32LE(off + 8);
      return { kind: 'string', value: ctx ? ctx.stack(t, id, pid) : '' };
    }
    case 'int': {
      let v: bigint;
      switch (t.size) {
        case 1:
          v = BigInt(t.signed ? buf.readInt8(off) : buf.readUInt8(off));
          break;
        case 2:
          v = BigInt(t.signed ? buf.readInt16LE(off) : buf.readUInt16LE(off));
          break;
        case 4:
          v = BigInt(t.signed ? buf.readInt32LE(off) : buf.readUInt32LE(off));
          break;
        default:
          v = t.signed ? buf.readBigInt64LE(off) : buf.readBigUInt64LE(off);
      }
      if (t.enum) {
        // an enum value prints as its enumerator (a 4-byte enum's negative constants match by their low 32 bits)
        const name = t.enum.names.get(BigInt.asUintN(64, v)) ?? t.enum.names.get(BigInt.asUintN(32, v));
        return { kind: 'int', value: v, signed: t.signed, size: t.size, symbol: name ?? String(v) };
      }
      return { kind: 'int', value: v, signed: t.signed, size: t.size };
    }
    case 'bool':
      return { kind: 'bool', value: buf[off] !== 0 };
    case 'string': {
      const end = buf.indexOf(0, off);
      if (end < 0 || end >= off + t.size) {
        // no NUL in the buffer: the string was truncated (current bpftrace types_format.cpp adds the trailer)
        const trailer = t.wellFormed ? '' : (ctx?.strTruncTrailer ?? '');
        return { kind: 'string', value: buf.toString('latin1', off, off + t.size) + trailer };
      }
      return { kind: 'string', value: buf.toString('latin1', off, end) };
    }
    case 'tuple': {
      const l = tupleLayout(t.elems);
      const elems = t.elems.map((e, i) => decodeValue(buf, off + l.offsets[i]!, e, ctx));
      if (!t.names) return { kind: 'tuple', elems };
      return { kind: 'record', fields: elems.map((value, i) => ({ name: t.names![i]!, value })) };
    }
    case 'record':
      return {
        kind: 'record',
        fields: t.fields
          .filter((f) => !f.dataLoc && f.name !== '')
          .map((f) => ({ name: f.name, value: decodeField(buf, off, f, ctx) })),
      };
    case 'array': {
      // (char arrays are typed as strings already: btf-types.ts, tracepoint-format.ts, cdefs.ts; a u8/int8 array
      // prints as numbers, `[127,0,0,1]`, as bpftrace prints pton() and `(int8[])"hi"`)
      const step = sizeOf(t.elem);
      const elems: Value[] = [];
      for (let i = 0; i < t.count; i++) elems.push(decodeValue(buf, off + i * step, t.elem, ctx));
      return { kind: 'array', elems };
    }
    case 'pointer': {
      // bpftrace prints pointers in hex
      const v = buf.readBigUInt64LE(off);
      return { kind: 'int', value: v, signed: false, size: 8, symbol: `0x${v.toString(16)}` };
    }
    default:
      return { kind: 'none' };
  }
}

/** One field of a C struct stored at `buf[off..]` (a bitfield: `bitSize` bits from bit `bitOffset` of the struct, as BTF gives them). */
function decodeField(buf: Buffer, off: number, f: RecordField, ctx?: DecodeContext): Value {
  if (f.bitSize === undefined || f.type.kind !== 'int') return decodeValue(buf, off + f.offset, f.type, ctx);
  const shift = (f.bitOffset ?? 0) - f.offset * 8;
  const bytes = Math.ceil((shift + f.bitSize) / 8);
  let word = 0n;
  for (let i = bytes - 1; i >= 0; i--) word = (word << 8n) | BigInt(buf[off + f.offset + i] ?? 0);
  const v = (word >> BigInt(shift)) & ((1n << BigInt(f.bitSize)) - 1n);
  return { kind: 'int', value: v, signed: false, size: f.type.size };
}

/** Decode one map key into its elements (`[]` for scalar maps). */
export function decodeKey(plan: MapPlan, key: Buffer, ctx?: DecodeContext): Value[] {
  return plan.keyTypes.map((t, i) => decodeValue(key, plan.keyOffsets[i]!, t, ctx));
}

/** Merge the per-CPU slots (each `slot` bytes) of an aggregation value. */
export function decodeAggregation(t: SType, slots: Buffer[]): AggValue | null {
  switch (t.kind) {
    case 'count':
    case 'sum': {
      let s = 0n;
      for (const b of slots) s += b.readBigUInt64LE(0);
      const signed = t.kind === 'sum' && t.signed;
      return { kind: t.kind, value: signed ? BigInt.asIntN(64, s) : BigInt.asUintN(64, s), signed };
    }
    case 'min':
    case 'max': {
      let best: bigint | null = null;
      for (const b of slots) {
        if (b.readBigUInt64LE(8) === 0n) continue;
        const v = t.signed ? b.readBigInt64LE(0) : b.readBigUInt64LE(0);
        if (best === null || (t.kind === 'min' ? v < best : v > best)) best = v;
      }
      if (best === null) return null;
      return { kind: t.kind, value: best, signed: t.signed };
    }
    case 'avg':
    case 'stats': {
      let total = 0n;
      let count = 0n;
      for (const b of slots) {
        total += b.readBigUInt64LE(0);
        count += b.readBigUInt64LE(8);
      }
      return {
        kind: t.kind,
        total: t.signed ? BigInt.asIntN(64, total) : BigInt.asUintN(64, total),
        count,
        signed: t.signed,
      };
    }
    default:
      return null;
  }
}

/** A raw map entry: key bytes and per-CPU value slots (one slot for non per-CPU maps). */
export interface RawEntry {
  key: Buffer;
  slots: Buffer[];
}

/** Build the MapDump the formatters print from raw entries of a planned map. */
export function buildMapDump(plan: MapPlan, raw: Iterable<RawEntry>, ctx?: DecodeContext): MapDump {
  const name = plan.name === '' ? '@' : `@${plan.name}`;
  const t = plan.valueType;
  const entries: MapEntry[] = [];
  if (t.kind === 'tseries') {
    // group by the user key; each entry is one bucket, its CPUs reduced to the latest epoch's value
    const groups = new Map<string, { key: Value[]; value: TseriesValue }>();
    const bo = bucketOffset(plan);
    for (const e of raw) {
      const id = e.key.subarray(0, bo).toString('hex');
      let g = groups.get(id);
      if (!g) {
        const value: TseriesValue = {
          kind: 'tseries',
          interval: t.interval,
          count: t.count,
          signed: t.signed,
          points: new Map(),
        };
        g = { key: decodeKey(plan, e.key, ctx), value };
        groups.set(id, g);
      }
      const [epoch, v] = reduceTseriesSlots(e.slots, t.agg, t.signed);
      if (!g.value.points.has(epoch)) g.value.points.set(epoch, v);
    }
    for (const g of groups.values()) entries.push({ key: g.key, value: g.value });
  } else if (t.kind === 'hist' || t.kind === 'lhist') {
    // group by the user key; the trailing u64 is the bucket index
    const groups = new Map<string, { key: Value[]; buckets: Map<number, bigint> }>();
    const bo = bucketOffset(plan);
    for (const e of raw) {
      const userKey = e.key.subarray(0, bo);
      const id = userKey.toString('hex');
      let g = groups.get(id);
      if (!g) {
        g = { key: decodeKey(plan, e.key, ctx), buckets: new Map() };
        groups.set(id, g);
      }
      const idx = Number(e.key.readBigUInt64LE(bo));
      let n = 0n;
      for (const s of e.slots) n += s.readBigUInt64LE(0);
      if (n !== 0n) g.buckets.set(idx, (g.buckets.get(idx) ?? 0n) + n);
    }
    for (const g of groups.values()) {
      const value: AggValue =
        t.kind === 'hist'
          ? { kind: 'hist', bits: t.bits, buckets: g.buckets }
          : { kind: 'lhist', min: t.min, max: t.max, step: t.step, buckets: g.buckets };
      entries.push({ key: g.key, value });
    }
  } else {
    for (const e of raw) {
      const key = decodeKey(plan, e.key, ctx);
      if (plan.perCpu) {
        const v = decodeAggregation(t, e.slots);
        if (v) entries.push({ key, value: v });
      } else {
        entries.push({ key, value: decodeValue(e.slots[0]!, 0, t, ctx) });
      }
    }
  }
  return { name, keyTypes: plan.keyTypes, valueType: t, entries };
}

/** Size in bytes of a value of storage type `t` in a record. */
export function storageSize(t: SType): number {
  return sizeOf(t);
}
