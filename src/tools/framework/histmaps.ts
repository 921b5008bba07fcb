/**
 * Reading a tool's aggregation maps into bcc's shapes: log2 histograms (one, or one per key: bcc's struct-keyed
 * `BPF_HISTOGRAM`) and plain per-key values (counts and sums).
 */
import type { AggValue, MapDump, Value } from '../../runtime/output/model.js';
import type { HistInterval } from './heatmap.js';
import {
  bccLog2Slots,
  formatSectionedLog2Hist,
  type HistSection,
  LOG2_SLOTS,
  type Log2Bucket,
  log2Buckets,
  log2SlotsOf,
} from './hist.js';
import { pyFormat } from './pyformat.js';
import { clockTime } from './system.js';

/** A decoded map key element as a bigint (integers) or string (strings); other kinds as their JSON text. */
export function keyPart(v: Value | undefined): bigint | string {
  if (!v) return '';
  if (v.kind === 'int') return v.value;
  if (v.kind === 'string') return v.value;
  if (v.kind === 'bool') return v.value ? 1n : 0n;
  return JSON.stringify(v);
}

function compareParts(a: bigint | string, b: bigint | string): number {
  if (typeof a === 'bigint' && typeof b === 'bigint') return a < b ? -1 : a > b ? 1 : 0;
  const x = String(a);
  const y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

function histBuckets(v: Value | AggValue): Map<number, bigint> | null {
  return v.kind === 'hist' ? v.buckets : null;
}

/** bcc log2 slots of an unkeyed `@m = hist(x)` map (all zero when the map is empty). */
export function log2Slots(dump: MapDump): bigint[] {
  const vals = new Array<bigint>(LOG2_SLOTS).fill(0n);
  for (const e of dump.entries) {
    const b = histBuckets(e.value);
    if (!b) continue;
    const s = bccLog2Slots(b);
    for (let i = 0; i < LOG2_SLOTS; i++) vals[i] = vals[i]! + s[i]!;
  }
  return vals;
}

/**
 * One section per key of a keyed `@m[k] = hist(x)` map, ordered by key (numbers ascending, strings in byte
 * order; bcc prints its hash table's order), labelled by `label(key)`.
 */
export function log2Sections(dump: MapDump, label: (key: bigint | string) => string): HistSection[] {
  const rows = dump.entries
    .map((e) => ({ key: keyPart(e.key[0]), b: histBuckets(e.value) }))
    .filter((r): r is { key: bigint | string; b: Map<number, bigint> } => r.b !== null)
    .sort((a, b) => compareParts(a.key, b.key));
  return rows.map((r) => ({ label: label(r.key), vals: bccLog2Slots(r.b) }));
}

/** Key → value of a `count()`/`sum()` map with one key (or none: key ''), as bigints. */
export function scalarValues(dump: MapDump): { key: bigint | string; value: bigint }[] {
  const out: { key: bigint | string; value: bigint }[] = [];
  for (const e of dump.entries) {
    const v = e.value;
    let n = 0n;
    if (v.kind === 'count' || v.kind === 'sum' || v.kind === 'min' || v.kind === 'max') n = v.value;
    else if (v.kind === 'int') n = v.value;
    out.push({ key: keyPart(e.key[0]), value: n });
  }
  return out;
}

/** Sort rows by value, largest first (ties by key), as bcc's `sorted(..., key=-value)` tables print. */
export function byValueDesc<T extends { key: bigint | string; value: bigint }>(rows: T[]): T[] {
  return [...rows].sort((a, b) => (b.value > a.value ? 1 : b.value < a.value ? -1 : compareParts(a.key, b.key)));
}

/**
 * Python's `json.dumps(obj)` with its default separators (`, ` and `: `), for bcc's JSON histogram records.
 * Handles what those records hold: objects, arrays, strings, numbers, null.
 */
export function pyJson(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return `[${v.map(pyJson).join(', ')}]`;
  if (typeof v === 'object') {
    return `{${Object.entries(v as Record<string, unknown>)
      .map(([k, x]) => `${JSON.stringify(k)}: ${pyJson(x)}`)
      .join(', ')}}`;
  }
  if (typeof v === 'bigint') return v.toString();
  return JSON.stringify(v);
}

/** How an irq-style tool prints one interval of `@dist` (hardirqs, softirqs). */
export interface IrqReport {
  /** The key column's heading (`HARDIRQ`) and histogram section label (`hardirq`). */
  heading: string;
  section: string;
  /** Width of the key column in the totals table (bcc: 26 for hardirqs, 16 for softirqs). */
  width: number;
  /** Text of a key. */
  keyName: (key: bigint | string) => string;
  /** `count`, `usecs` or `nsecs`, and the divisor of the sums. */
  label: string;
  factor: number;
  /** `-d`: sectioned log2 histograms instead of totals. */
  dist: boolean;
  /** `-T`: the time before the table. */
  timestamp: boolean;
}

/** One interval's text of an irq-style tool, as bcc prints it after each sleep. */
export function formatIrqInterval(dist: MapDump, r: IrqReport): string {
  return formatIrqTick(readIrqInterval(dist, r), r);
}

/**
 * One interval of an irq-style tool (hardirqs, softirqs; runTool's interval, `--json`'s object): with `-d` one
 * histogram per handler (`name`, in name order), otherwise the totals table (`totals`, largest first, in `unit`:
 * `usecs`, `nsecs`, or `count` with -C).
 */
export interface IrqInterval extends HistInterval {
  time: string;
  unit: 'usecs' | 'nsecs' | 'count';
  /** -d: one log2 histogram per handler; empty without -d. */
  histograms: { name: string; buckets: Log2Bucket[] }[];
  /** Without -d: each handler's total time (in `unit`) or count, largest first; empty with -d. */
  totals: { name: string; value: bigint }[];
}

/** Read one interval of an irq-style tool from its `@dist` map (`r.timestamp` does not apply). */
export function readIrqInterval(dist: MapDump, r: Omit<IrqReport, 'timestamp'>, now: Date = new Date()): IrqInterval {
  const unit = r.label as IrqInterval['unit'];
  if (r.dist) {
    const histograms = log2Sections(dist, r.keyName).map((s) => ({ name: s.label, buckets: log2Buckets(s.vals) }));
    return { time: clockTime(now), unit, histograms, totals: [] };
  }
  const totals = byValueDesc(scalarValues(dist)).map((row) => ({
    name: r.keyName(row.key),
    value: row.value / BigInt(r.factor),
  }));
  return { time: clockTime(now), unit, histograms: [], totals };
}

/** The text of an irq-style tool's interval, as bcc prints it after each sleep. */
export function formatIrqTick(
  i: IrqInterval,
  r: Pick<IrqReport, 'heading' | 'section' | 'width' | 'dist' | 'timestamp'>,
): string {
  let out = '\n';
  if (r.timestamp) out += pyFormat('%-8s\n', i.time);
  if (r.dist) {
    const sections = i.histograms.map((h) => ({ label: h.name, vals: log2SlotsOf(h.buckets) }));
    return out + formatSectionedLog2Hist(sections, r.section, i.unit);
  }
  out += `${pyFormat(`%-${r.width}s %11s`, r.heading, `TOTAL_${i.unit}`)}\n`;
  for (const row of i.totals) out += `${pyFormat(`%-${r.width}s %11d`, row.name, row.value)}\n`;
  return out;
}
