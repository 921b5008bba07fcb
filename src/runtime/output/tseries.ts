/**
 * tseries() maps in user space, as bpftrace v0.26 prints them (`src/util/tseries.cpp`, `src/types_format.cpp`
 * `build_time_series`, `src/output/text.cpp` and `json.cpp` `TimeSeries`):
 *
 * - each kernel entry (user key + bucket) holds per CPU `{value, meta, epoch}`; its CPUs are combined for their
 *   latest epoch only ({@link reduceTseriesSlots}); epoch 0 marks a never used slot, and an entry whose slots are
 *   all unused gives epoch 0 with value 0 (bpftrace shows that point);
 * - all keys of a map share one window: the last `count` epochs up to the latest epoch of any key (computed in
 *   u64, so a latest epoch below `count - 1` wraps and gives an empty window); a key's rows start at its first
 *   epoch in the window, epochs without a value print `-`;
 * - text: a 53 column graph between the minimum and maximum value (widened by one on each side when they are
 *   equal), a `.` column at zero when the range spans it, the time of each interval in local time with the
 *   fraction digits of the interval's unit; JSON: `[{"interval_start":"YYYY-MM-DD HH:MM:SS.nnnnnnnnn","value":N}]`
 *   in UTC, without the missing intervals.
 */
import type { TseriesAgg } from '../../lang/types.js';

/** A decoded tseries value of one key: its points by epoch. */
export interface TseriesValue {
  kind: 'tseries';
  /** Interval length in ns. */
  interval: number;
  /** Intervals kept. */
  count: number;
  signed: boolean;
  /** epoch (time / interval) -> value. */
  points: Map<bigint, bigint>;
}

/** One printable time series: a row per interval from the key's first epoch in the window. */
export interface TimeSeries {
  signed: boolean;
  /** Interval start in ns since the epoch of the clock (TAI), and its value (null: nothing recorded). */
  rows: { ns: bigint; value: bigint | null }[];
}

const U64 = (v: bigint): bigint => BigInt.asUintN(64, v);

/**
 * Combine the per-CPU slots of one kernel entry: the latest epoch among them and its value (`[0n, 0n]` when no
 * slot was used).
 */
export function reduceTseriesSlots(slots: readonly Buffer[], agg: TseriesAgg, signed: boolean): [bigint, bigint] {
  const norm = (v: bigint): bigint => (signed ? BigInt.asIntN(64, v) : U64(v));
  const byEpoch = new Map<bigint, { val: bigint; meta: bigint }>();
  let latest = 0n;
  for (const s of slots) {
    const epoch = s.readBigUInt64LE(16);
    if (epoch === 0n) continue;
    const val = norm(s.readBigUInt64LE(0));
    const meta = norm(s.readBigUInt64LE(8));
    if (epoch > latest) latest = epoch;
    const cur = byEpoch.get(epoch);
    if (!cur) {
      byEpoch.set(epoch, { val, meta });
      continue;
    }
    switch (agg) {
      case 'none':
        if (meta > cur.meta) {
          cur.val = val;
          cur.meta = meta;
        }
        break;
      case 'avg':
        cur.val = norm(cur.val + val);
        cur.meta = norm(cur.meta + meta);
        break;
      case 'sum':
        cur.val = norm(cur.val + val);
        break;
      case 'min':
        if (val < cur.val) cur.val = val;
        break;
      case 'max':
        if (val > cur.val) cur.val = val;
        break;
    }
  }
  if (latest === 0n) return [0n, 0n];
  const last = byEpoch.get(latest)!;
  // C++ integer division truncates toward zero, as bigint division does
  const value = agg === 'avg' ? (last.meta === 0n ? 0n : norm(last.val / last.meta)) : last.val;
  return [latest, value];
}

/** The latest epoch of a key's points (0 when it has none): the map's print order and window end. */
export function latestEpoch(v: TseriesValue): bigint {
  let latest = 0n;
  for (const e of v.points.keys()) if (e > latest) latest = e;
  return latest;
}

/** The rows of `v` in the window ending at epoch `last` (the latest epoch of all the map's keys). */
export function buildSeries(v: TseriesValue, last: bigint): TimeSeries {
  const first = U64(last - BigInt(v.count) + 1n);
  let start = last;
  for (const e of v.points.keys()) {
    if (e >= first && e < start) start = e;
  }
  const rows: TimeSeries['rows'] = [];
  for (let e = first; e <= last; e++) {
    if (e >= start) rows.push({ ns: U64(e * BigInt(v.interval)), value: v.points.get(e) ?? null });
  }
  return { signed: v.signed, rows };
}

const GRAPH_WIDTH = 53;
const PADDING = 21;

type Unit = { digits: 0 | 3 | 6 | 9; name: string };

/** bpftrace `util::duration_str`'s unit of an interval of `ns` nanoseconds. */
function unitOf(ns: bigint): Unit {
  if (ns >= 1_000_000_000n) return { digits: 0, name: 's' };
  if (ns >= 1_000_000n) return { digits: 3, name: 'ms' };
  if (ns >= 1_000n) return { digits: 6, name: 'μs' };
  return { digits: 9, name: 'ns' };
}

/** C++ `std::setw(n)` with `std::left`/`std::right`: pads to `n` bytes (UTF-8), never truncates. */
function pad(s: string, n: number, left: boolean): string {
  const fill = ' '.repeat(Math.max(0, n - Buffer.byteLength(s)));
  return left ? s + fill : fill + s;
}

/** `HH:MM:SS[.fraction]` of `ns` since the epoch, in local time. */
function clock(ns: bigint, unit: Unit): string {
  const sec = ns / 1_000_000_000n;
  const frac = ns % 1_000_000_000n;
  const d = new Date(Number(sec) * 1000);
  const two = (n: number): string => String(n).padStart(2, '0');
  let s = `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  if (unit.digits > 0) s += '.' + (frac / 10n ** BigInt(9 - unit.digits)).toString().padStart(unit.digits, '0');
  return s;
}

/** `a * b / c` in C++ `float` arithmetic, truncated to int (the graph's column computations). */
function floatColumn(a: number, b: bigint, c: bigint): number {
  const f = Math.fround;
  return Math.trunc(f(f(f(a) * f(Number(b))) / f(Number(c))));
}

/** The graph of a series, ending in `\n`; `<no data>` (no newline) when it has no rows. */
export function tseriesText(ts: TimeSeries): string {
  if (ts.rows.length === 0) return '<no data>';
  const values = ts.rows.map((r) => r.value).filter((v): v is bigint => v !== null);
  let min = values[0] ?? 0n;
  let max = min;
  for (const v of values) {
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (min === max) {
    const lo = ts.signed ? -(1n << 63n) : 0n;
    const hi = ts.signed ? (1n << 63n) - 1n : (1n << 64n) - 1n;
    if (min > lo) min--;
    if (max < hi) max++;
  }
  const first = ts.rows[0]!.ns;
  const lastNs = ts.rows[ts.rows.length - 1]!.ns;
  const unit = unitOf((lastNs - first) / BigInt(ts.rows.length > 1 ? ts.rows.length - 1 : 1));
  const timeFmt = unit.digits > 0 ? `hh:mm:ss.${unit.name}` : 'hh:mm:ss';
  const timeSize = 8 + (unit.digits > 0 ? 1 + unit.digits : 0);
  const scale = `${pad(min.toString(), PADDING, true)}${pad(max.toString(), GRAPH_WIDTH - PADDING, false)}\n`;
  let out = ' '.repeat(timeSize + 1) + scale;
  out += `${pad(timeFmt, timeSize + 1, true)}|${'_'.repeat(GRAPH_WIDTH - 2)}|\n`;
  const zero = min < 0n && max > 0n ? floatColumn(GRAPH_WIDTH, min, min - max) : 0;
  for (const r of ts.rows) {
    const line = Array<string>(GRAPH_WIDTH).fill(' ');
    line[0] = '|';
    line[GRAPH_WIDTH - 1] = '|';
    if (zero > 0) line[zero] = '.';
    out += `${clock(r.ns, unit)} `;
    if (r.value === null) {
      out += `${line.join('')} -\n`;
      continue;
    }
    const at = min !== max ? floatColumn(GRAPH_WIDTH - 1, min - r.value, min - max) : Math.trunc(GRAPH_WIDTH / 2);
    line[Math.max(0, Math.min(GRAPH_WIDTH - 1, at))] = '*';
    out += `${line.join('')} ${r.value}\n`;
  }
  out += `${' '.repeat(timeSize)} v${'_'.repeat(GRAPH_WIDTH - 2)}v\n`;
  out += `${' '.repeat(timeSize)} ${scale}`;
  return out;
}

/** `YYYY-MM-DD HH:MM:SS.nnnnnnnnn` in UTC (C++ `operator<<` of a `sys_time<nanoseconds>`). */
function utcStamp(ns: bigint): string {
  const d = new Date(Number(ns / 1_000_000_000n) * 1000);
  const iso = d.toISOString(); // YYYY-MM-DDTHH:MM:SS.000Z
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}.${(ns % 1_000_000_000n).toString().padStart(9, '0')}`;
}

/** The JSON array of a series: the intervals that have a value. */
export function tseriesJson(ts: TimeSeries): string {
  const items = ts.rows
    .filter((r) => r.value !== null)
    .map((r) => `{"interval_start":"${utcStamp(r.ns)}","value":${r.value}}`);
  return `[${items.join(',')}]`;
}
