/**
 * Turns a decoded map dump into what both output formats print: entries in bpftrace's print order, `top` applied,
 * values divided by `div`, aggregations reduced (avg → average, stats → count/average/total, hist/lhist → rows).
 *
 * Ordering follows bpftrace v0.26 `src/types_format.cpp` `format(BPFtrace&, ..., const BpfMap&, top, div)`:
 * - count/sum/int values: ascending by value (signed or unsigned per the type);
 * - min/max: ascending by value compared as u64 (bpftrace reads them as uint64 for sorting, so negative values
 *   sort after positive ones);
 * - avg/stats: ascending by average;
 * - hist/lhist: ascending by the sum of all bucket counts;
 * - anything else (strings, bools, tuples): by key, where integer key fields compare as signed integers of their
 *   size and string fields bytewise, the first key field first; other key field kinds do not order.
 * bpftrace leaves the order of equal values unspecified (hash-map iteration order); we break ties by the key
 * order above, then by the order the entries were given, so output is deterministic.
 * `top` keeps the last `top` entries of that order; `div` (0 means 1) divides count/sum/min/max/int values, the
 * average of avg and stats (not their count/total) and hist counts; it does not apply to lhist (as bpftrace).
 */
import { buildLinearHistogram, buildLog2Histogram, type Histogram, histTotal } from './hist.js';
import type { AggValue, MapDump, Value } from './model.js';
import { buildSeries, latestEpoch, type TimeSeries } from './tseries.js';

/** One printable value: a plain value, a stats() record, or a histogram. */
export type Display =
  | { kind: 'value'; value: Value }
  | { kind: 'stats'; count: bigint; average: bigint; total: bigint }
  | { kind: 'hist'; hist: Histogram }
  | { kind: 'tseries'; series: TimeSeries };

/** The JSON message type of a map (`map`, `stats` for avg/stats maps, `hist` for hist/lhist maps). */
export type MapMessageType = 'map' | 'stats' | 'hist' | 'tseries';

export interface DisplayMap {
  name: string;
  /** A map without keys (`@x`): printed as `@x: value` / `{"@x": value}`. */
  scalar: boolean;
  type: MapMessageType;
  /** `key` is the single key value, or a tuple of the key values for a multi-key map; null for scalar maps. */
  entries: { key: Value | null; value: Display }[];
}

/** Whether a decoded map value is an aggregation (count, sum, ..., hist, lhist) rather than a plain value. */
export function isAgg(v: Value | AggValue): v is AggValue {
  switch (v.kind) {
    case 'count':
    case 'sum':
    case 'min':
    case 'max':
    case 'avg':
    case 'stats':
    case 'hist':
    case 'lhist':
    case 'tseries':
      return true;
    default:
      return false;
  }
}

/** Normalize an int Value's bigint to its declared size and signedness. */
export function intOf(v: Extract<Value, { kind: 'int' }>): bigint {
  const bits = v.size * 8;
  return v.signed ? BigInt.asIntN(bits, v.value) : BigInt.asUintN(bits, v.value);
}

function norm64(value: bigint, signed: boolean): bigint {
  return signed ? BigInt.asIntN(64, value) : BigInt.asUintN(64, value);
}

/** Average of an avg/stats aggregation: total / count (truncating), 0 when count is 0. */
export function averageOf(v: { count: bigint; total: bigint; signed: boolean }): bigint {
  const count = norm64(v.count, v.signed);
  const total = norm64(v.total, v.signed);
  if (count <= 0n) return 0n;
  return norm64(total / count, v.signed);
}

function int64(value: bigint, signed: boolean): Value {
  return { kind: 'int', value, signed, size: 8 };
}

/** The printable form of one value, with `div` (>= 1) applied as described in the module docstring. */
export function toDisplay(v: Value | AggValue, div = 1n): Display {
  const d = div === 0n ? 1n : div;
  if (!isAgg(v)) {
    if (v.kind === 'int' && v.symbol === undefined && d !== 1n) {
      return { kind: 'value', value: { ...v, value: intOf(v) / d } };
    }
    return { kind: 'value', value: v };
  }
  switch (v.kind) {
    case 'count':
      return { kind: 'value', value: int64(BigInt.asUintN(64, v.value) / d, false) };
    case 'sum':
    case 'min':
    case 'max':
      return { kind: 'value', value: int64(norm64(v.value, v.signed) / d, v.signed) };
    case 'avg':
      return { kind: 'value', value: int64(averageOf(v) / d, v.signed) };
    case 'stats':
      return {
        kind: 'stats',
        count: norm64(v.count, v.signed),
        average: averageOf(v) / d,
        total: norm64(v.total, v.signed),
      };
    case 'hist':
      return { kind: 'hist', hist: buildLog2Histogram(v.buckets, v.bits, d) };
    case 'lhist':
      return { kind: 'hist', hist: buildLinearHistogram(v.buckets, v.min, v.max, v.step) };
    case 'tseries':
      // alone (print of a value): its own window; formatMap gives a map's keys their shared window
      return { kind: 'tseries', series: buildSeries(v, latestEpoch(v)) };
  }
}

/** The value bpftrace sorts a map entry by, or null when the map is ordered by key. */
function sortValue(v: Value | AggValue): bigint | null {
  switch (v.kind) {
    case 'int':
      return intOf(v);
    case 'count':
      return BigInt.asUintN(64, v.value);
    case 'sum':
      return norm64(v.value, v.signed);
    case 'min':
    case 'max':
      return BigInt.asUintN(64, v.value);
    case 'avg':
    case 'stats':
      return averageOf(v);
    case 'hist':
    case 'lhist':
      return histTotal(v.buckets);
    case 'tseries':
      return latestEpoch(v);
    default:
      return null;
  }
}

/** Compare two strings by their UTF-8 bytes (bpftrace compares the NUL-padded key buffers). */
export function compareBytes(a: string, b: string): number {
  if (a === b) return 0;
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

function keyFields(key: Value[]): Value[] {
  const first = key[0];
  if (key.length === 1 && first !== undefined && first.kind === 'tuple') return first.elems;
  return key;
}

/** bpftrace's key order (`sort_by_key`): int fields as signed ints of their size, string fields bytewise. */
export function compareKeys(a: Value[], b: Value[]): number {
  const fa = keyFields(a);
  const fb = keyFields(b);
  const n = Math.min(fa.length, fb.length);
  for (let i = 0; i < n; i++) {
    const x = fa[i]!;
    const y = fb[i]!;
    if (x.kind === 'int' && y.kind === 'int') {
      const vx = BigInt.asIntN(x.size * 8, x.value);
      const vy = BigInt.asIntN(y.size * 8, y.value);
      if (vx !== vy) return vx < vy ? -1 : 1;
    } else if (x.kind === 'string' && y.kind === 'string') {
      const c = compareBytes(x.value, y.value);
      if (c !== 0) return c;
    }
  }
  return 0;
}

function messageType(dump: MapDump): MapMessageType {
  const v = dump.entries[0]?.value;
  const kind = v ? v.kind : dump.valueType.kind;
  if (kind === 'avg' || kind === 'stats') return 'stats';
  if (kind === 'hist' || kind === 'lhist') return 'hist';
  if (kind === 'tseries') return 'tseries';
  return 'map';
}

/**
 * Order, trim and reduce a map dump for printing. `top` 0 means all entries; `div` 0 means 1.
 * Numbers in `opts` may also be bigints (they come from `print(@m, top, div)` arguments).
 */
export function formatMap(dump: MapDump, opts: { top?: number | bigint; div?: number | bigint } = {}): DisplayMap {
  const top = Number(opts.top ?? 0);
  const div = BigInt(opts.div ?? 1);
  const scalar = dump.keyTypes.length === 0;
  const rows = dump.entries.map((e, idx) => ({ e, idx, sv: sortValue(e.value) }));
  rows.sort((a, b) => {
    if (a.sv !== null && b.sv !== null && a.sv !== b.sv) return a.sv < b.sv ? -1 : 1;
    return compareKeys(a.e.key, b.e.key) || a.idx - b.idx;
  });
  const kept = top > 0 && rows.length > top ? rows.slice(rows.length - top) : rows;
  // tseries: every key shows the window ending at the latest epoch of all keys (bpftrace types_format.cpp)
  let lastEpoch = 0n;
  for (const r of rows) if (r.e.value.kind === 'tseries' && r.sv !== null && r.sv > lastEpoch) lastEpoch = r.sv;
  const display = (v: Value | AggValue): Display =>
    v.kind === 'tseries' ? { kind: 'tseries', series: buildSeries(v, lastEpoch) } : toDisplay(v, div);
  return {
    name: dump.name,
    scalar,
    type: messageType(dump),
    entries: kept.map(({ e }) => ({
      key: scalar ? null : e.key.length === 1 ? e.key[0]! : { kind: 'tuple', elems: e.key },
      value: display(e.value),
    })),
  };
}

/** Compare map names as bpftrace's `std::map<std::string, BpfMap>` does (bytewise), for the exit print order. */
export function compareMapNames(a: string, b: string): number {
  return compareBytes(a, b);
}
