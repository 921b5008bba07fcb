/**
 * Typed values of the public API: the runtime's decoded output model (`runtime/output/model.ts`) turned into plain
 * JavaScript values, and maps into {@link TraceMap}s.
 *
 * Integers: a value stored in 8 bytes (bpftrace's `int64`/`uint64`: counts, `nsecs`, sums, most map values) is a
 * `bigint`, since it may exceed 2^53; one stored in 1, 2 or 4 bytes (`pid`, `tid`, `cpu`, `uid`, `int32` arguments)
 * is a `number`. The rule depends only on the storage size, so one printf argument always has the same JS type.
 */
import type { SType } from '../lang/types.js';
import { isAgg } from '../runtime/output/format.js';
import { linearBucketBounds, log2BucketBounds } from '../runtime/output/hist.js';
import type { AggValue, MapDump, Value } from '../runtime/output/model.js';

/** A stack (`kstack`/`ustack` in a map key or value): its frames, innermost first, symbolized as bpftrace prints them. */
export interface StackValue {
  readonly stack: 'kernel' | 'user';
  /** One string per frame as bpftrace's text output prints it, without the indentation (e.g. `do_sys_openat2+114`). */
  readonly frames: readonly string[];
}

/**
 * A decoded scalar or composite value: integers as `number` (stored in 1-4 bytes) or `bigint` (8 bytes), `bool` as
 * boolean, strings (also `ksym`, `usym`, `ntop`, `strftime`, ... as bpftrace prints them) as string, `buf()` as a
 * `Uint8Array` of its bytes, tuples and C arrays as arrays, records and C structs as objects keyed by field name,
 * stacks in maps as {@link StackValue}, `none` as null.
 */
export type TraceValue =
  | number
  | bigint
  | boolean
  | string
  | null
  | Uint8Array
  | StackValue
  | readonly TraceValue[]
  | { readonly [field: string]: TraceValue };

/** A map key: the key itself for a one-key map (`@m[comm]` → string), a tuple array for `@m[pid, comm]`, null for `@m`. */
export type TraceKey = TraceValue;

/** One bucket of a histogram: the values `low <= v < high` it counts (`low` null: unbounded below; `high` null: above). */
export interface HistBucket {
  readonly low: bigint | null;
  readonly high: bigint | null;
  readonly count: bigint;
}

/**
 * `hist()`: bpftrace's log2 histogram. With `bits` = 0 a bucket holds [2^k, 2^(k+1)) (plus [0, 1) and, with
 * `low` null, the negative values); with `bits` = b each power of two is split in 2^b equal parts. Only non-empty
 * buckets are listed, in increasing order.
 */
export interface Hist {
  readonly kind: 'hist';
  readonly bits: number;
  readonly buckets: readonly HistBucket[];
}

/** `lhist(v, min, max, step)`: linear buckets [min + i*step, min + (i+1)*step), below `min` and from `max` up. */
export interface LinearHist {
  readonly kind: 'lhist';
  readonly min: number;
  readonly max: number;
  readonly step: number;
  readonly buckets: readonly HistBucket[];
}

/** `avg()` / `stats()`: `average` is `total / count` truncated toward zero as bpftrace prints it (0 when count is 0). */
export interface Stats {
  readonly kind: 'avg' | 'stats';
  readonly count: bigint;
  readonly total: bigint;
  readonly average: bigint;
}

/**
 * `tseries(n, interval, count[, agg])`: the intervals recorded for one key, oldest first; `start` is the interval's
 * start in ns of the TAI clock (`interval` ns long). Entries whose CPUs were never written are left out.
 */
export interface TimeSeriesValue {
  readonly kind: 'tseries';
  readonly interval: number;
  readonly points: readonly { readonly start: bigint; readonly value: bigint }[];
}

/** A map value: `count()`/`sum()`/`min()`/`max()` as `bigint`, avg/stats/hist/lhist/tseries as objects, else a value. */
export type MapValue = bigint | Stats | Hist | LinearHist | TimeSeriesValue | TraceValue;

/** Storage size of an integer type (8 for the types bpftrace stores as u64). */
function isWide(v: Extract<Value, { kind: 'int' }>): boolean {
  return v.size === 8;
}

/** One decoded value as a JS value; `t` (when known) turns stack strings into frames. */
export function toJs(v: Value, t?: SType): TraceValue {
  switch (v.kind) {
    case 'int':
      return isWide(v) ? v.value : Number(v.value);
    case 'bool':
      return v.value;
    case 'string':
      if (v.raw) return new Uint8Array(v.raw);
      if (t && (t.kind === 'kstack' || t.kind === 'ustack')) {
        return { stack: t.kind === 'kstack' ? 'kernel' : 'user', frames: stackFrames(v.value) };
      }
      return v.value;
    case 'tuple': {
      const elems = t?.kind === 'tuple' ? t.elems : undefined;
      if (t?.kind === 'tuple' && t.names) {
        const o: Record<string, TraceValue> = {};
        v.elems.forEach((e, i) => (o[t.names![i]!] = toJs(e, elems?.[i])));
        return o;
      }
      return v.elems.map((e, i) => toJs(e, elems?.[i]));
    }
    case 'record': {
      const o: Record<string, TraceValue> = {};
      for (const f of v.fields) o[f.name] = toJs(f.value);
      return o;
    }
    case 'array':
      return v.elems.map((e) => toJs(e));
    case 'none':
      return null;
  }
}

/** Frames of a stack's text (one per non-empty line, indentation removed). */
export function stackFrames(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const f = line.trim();
    if (f !== '') out.push(f);
  }
  return out;
}

/** One aggregation as a JS value. */
export function aggToJs(a: AggValue): MapValue {
  switch (a.kind) {
    case 'count':
    case 'sum':
    case 'min':
    case 'max':
      return a.value;
    case 'avg':
    case 'stats':
      return { kind: a.kind, count: a.count, total: a.total, average: a.count === 0n ? 0n : a.total / a.count };
    case 'hist':
      return {
        kind: 'hist',
        bits: a.bits,
        buckets: sortedBuckets(a.buckets).map(([i, count]) => {
          const b = log2BucketBounds(i, a.bits);
          return { low: b.lo, high: b.hi, count };
        }),
      };
    case 'lhist':
      return {
        kind: 'lhist',
        min: a.min,
        max: a.max,
        step: a.step,
        buckets: sortedBuckets(a.buckets).map(([i, count]) => {
          const b = linearBucketBounds(i, a.min, a.max, a.step);
          return { low: b.lo, high: b.hi, count };
        }),
      };
    case 'tseries':
      return {
        kind: 'tseries',
        interval: a.interval,
        points: [...a.points]
          .filter(([epoch]) => epoch !== 0n)
          .sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0))
          .map(([epoch, value]) => ({ start: epoch * BigInt(a.interval), value })),
      };
  }
}

function sortedBuckets(m: Map<number, bigint>): [number, bigint][] {
  return [...m].filter(([, c]) => c !== 0n).sort((a, b) => a[0] - b[0]);
}

/** A map value or `print(expr)` value as a JS value. */
export function mapValueToJs(v: Value | AggValue, t?: SType): MapValue {
  return isAgg(v) ? aggToJs(v) : toJs(v, t);
}

/** A string that is equal for equal keys (bigint and number kept apart, arrays and objects by value). */
export function canonicalKey(k: TraceValue): string {
  if (k === null) return 'n';
  switch (typeof k) {
    case 'bigint':
      return `b${k}`;
    case 'number':
      return `d${k}`;
    case 'boolean':
      return k ? 't' : 'f';
    case 'string':
      return `s${JSON.stringify(k)}`;
  }
  if (k instanceof Uint8Array) return `u${Buffer.from(k).toString('hex')}`;
  if (Array.isArray(k)) return `[${k.map((e: TraceValue) => canonicalKey(e)).join(',')}]`;
  if (isStack(k)) return `k${k.stack}${JSON.stringify(k.frames)}`;
  const rec = k as { readonly [field: string]: TraceValue };
  return `{${Object.keys(rec)
    .map((f) => `${JSON.stringify(f)}:${canonicalKey(rec[f]!)}`)
    .join(',')}}`;
}

function isStack(k: object): k is StackValue {
  return 'stack' in k && 'frames' in k && Array.isArray((k as StackValue).frames);
}

/**
 * A snapshot of one map, as a JS `Map` from key to value (in the kernel's iteration order, not sorted). Key equality: a one-key map's keys are strings, numbers or bigints and behave as in any `Map`.
 * Multi-key maps have tuple (array) keys; `get`/`has` of a TraceMap compare such keys by value, so
 * `m.get([1234, 'bash'])` finds the entry (a plain `Map` would compare array identity). Number and bigint keys are
 * distinct (`1` is not `1n`): use the JS type the key's storage size gives (see {@link TraceValue}).
 * `entries()`, iteration and `keys()` give the stored key objects.
 */
export class TraceMap<K extends TraceKey = TraceKey, V extends MapValue = MapValue> extends Map<K, V> {
  readonly #byValue = new Map<string, K>();

  /**
   * @param name the map's name with '@' (`@opens`, `@` for the anonymous map)
   * @param keyCount number of key parts: 0 for a scalar map (`@x`, key null), 1, or more (tuple keys)
   */
  constructor(
    readonly name: string,
    readonly keyCount: number,
    entries: readonly (readonly [K, V])[] = [],
  ) {
    super();
    for (const [k, v] of entries) this.set(k, v);
  }

  override set(key: K, value: V): this {
    if (key !== null && typeof key === 'object') {
      const c = canonicalKey(key);
      const old = this.#byValue.get(c);
      if (old !== undefined) super.delete(old);
      this.#byValue.set(c, key);
    }
    return super.set(key, value);
  }

  override get(key: K): V | undefined {
    return super.get(this.stored(key));
  }

  override has(key: K): boolean {
    return super.has(this.stored(key));
  }

  override delete(key: K): boolean {
    const k = this.stored(key);
    if (key !== null && typeof key === 'object') this.#byValue.delete(canonicalKey(key));
    return super.delete(k);
  }

  override clear(): void {
    this.#byValue.clear();
    super.clear();
  }

  private stored(key: K): K {
    if (key === null || typeof key !== 'object') return key;
    return this.#byValue.get(canonicalKey(key)) ?? key;
  }
}

/** A map dump as a TraceMap (keys: see {@link TraceKey}). */
export function dumpToMap(d: MapDump): TraceMap {
  const m = new TraceMap(d.name, d.keyTypes.length);
  for (const e of d.entries) {
    const key: TraceKey =
      e.key.length === 0
        ? null
        : e.key.length === 1
          ? toJs(e.key[0]!, d.keyTypes[0])
          : e.key.map((k, i) => toJs(k, d.keyTypes[i]));
    m.set(key, mapValueToJs(e.value, d.valueType));
  }
  return m;
}
