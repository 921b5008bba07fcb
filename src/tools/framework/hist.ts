/**
 * bcc's histogram output (iovisor/bcc `src/python/bcc/table.py`: `_print_log2_hist`, `_print_linear_hist`,
 * `_stars`, `_get_json_hist`, and the section loop of `print_log2_hist`), fed from our maps' `hist()`/`lhist()`
 * buckets.
 *
 * ## bcc's log2 slots versus bpftrace's hist buckets
 * bcc stores `bpf_log2l(v)` (`bcc/src/cc/export/helpers.h`): slot 1 holds 0 and 1, slot s >= 2 holds
 * [2^(s-1), 2^s - 1], slot 64 holds [2^63, 2^64 - 1]; slot 0 is never used, and the printer starts at slot 1
 * (labelled `0 -> 1`). bpftrace's `hist(v)` (bits 0; layout in `runtime/output/hist.ts`) uses index 1 for 0,
 * 2 for 1, k >= 3 for [2^(k-2), 2^(k-1)) and 0 for values that are negative as int64 (= u64 values >= 2^63).
 * So: index 1 and 2 → slot 1; k >= 3 → slot k - 1; 0 → slot 64 ({@link bccLog2Slots}).
 *
 * ## bcc's linear slots versus bpftrace's lhist buckets
 * bcc's linear histograms index by the value itself. `lhist(v, 0, max, 1)` puts v in [0, max) at index v + 1,
 * v < 0 at 0 and v >= max at max + 1: slot = index - 1, negative values dropped ({@link bccLinearSlots}).
 */
import { pyFormat } from './pyformat.js';

/** bcc's `log2_index_max`: slots 0..64. */
export const LOG2_SLOTS = 65;
/** bcc's `stars_max`. */
const STARS_MAX = 40;

/** bcc log2 slot counts (length 65) from bpftrace `hist()` buckets (index → count, bits must be 0). */
export function bccLog2Slots(buckets: Map<number, bigint>): bigint[] {
  const vals = new Array<bigint>(LOG2_SLOTS).fill(0n);
  for (const [index, count] of buckets) {
    const slot = index === 0 ? 64 : index <= 2 ? 1 : index - 1;
    vals[slot] = vals[slot]! + count;
  }
  return vals;
}

/**
 * bcc linear slot counts from bpftrace `lhist(v, 0, max, 1)` buckets: slot v holds the count of value v; values
 * >= max are counted in slot max (bpftrace's overflow bucket), negative ones are dropped.
 */
export function bccLinearSlots(buckets: Map<number, bigint>): bigint[] {
  let top = -1;
  for (const [index, count] of buckets) if (index >= 1 && count > 0n) top = Math.max(top, index - 1);
  const vals = new Array<bigint>(top + 1).fill(0n);
  for (const [index, count] of buckets) if (index >= 1 && index - 1 <= top) vals[index - 1] = vals[index - 1]! + count;
  return vals;
}

/**
 * bcc's `_stars(val, val_max, width)`: floor(width * val / val_max) stars, at most `width`; computed exactly with
 * integers (Python's float division gives the same floor for counts below 2^47).
 */
export function stars(val: bigint, valMax: bigint, width: number): string {
  if (valMax <= 0n) return '';
  let n = Number((BigInt(width) * val) / valMax);
  if (n > width) n = width;
  let s = '*'.repeat(Math.max(0, n));
  if (val > valMax) s = `${s.slice(0, -1)}+`;
  return s;
}

function maxIndexAndValue(vals: bigint[]): { idxMax: number; valMax: bigint } {
  let idxMax = -1;
  let valMax = 0n;
  for (let i = 0; i < vals.length; i++) {
    const v = vals[i]!;
    if (v > 0n) idxMax = i;
    if (v > valMax) valMax = v;
  }
  return { idxMax, valMax };
}

/**
 * bcc's `_print_log2_hist(vals, val_type, strip_leading_zero)` as text (each line ends in `\n`). `vals` are bcc
 * log2 slots (see {@link bccLog2Slots}). Rows run from slot 1 to the highest non-zero slot; above slot 32 the
 * wide layout (20-digit ranges, 20-star bars) is used. Nothing is printed when no slot above 0 has a count.
 */
export function formatLog2Hist(vals: bigint[], valType: string, stripLeadingZero = false): string {
  const { idxMax, valMax } = maxIndexAndValue(vals);
  const wide = idxMax > 32;
  const header = wide ? '               %-29s : count     distribution' : '     %-19s : count     distribution';
  const body = wide ? '%20d -> %-20d : %-8d |%-*s|' : '%10d -> %-10d : %-8d |%-*s|';
  const width = wide ? STARS_MAX / 2 : STARS_MAX;
  let out = '';
  if (idxMax > 0) out += `${pyFormat(header, valType)}\n`;
  let strip = stripLeadingZero;
  for (let i = 1; i <= idxMax; i++) {
    let low = (1n << BigInt(i)) >> 1n;
    const high = (1n << BigInt(i)) - 1n;
    if (low === high) low -= 1n;
    const val = vals[i] ?? 0n;
    if (strip) {
      if (val === 0n) continue;
      strip = false;
    }
    out += `${pyFormat(body, low, high, val, width, stars(val, valMax, width))}\n`;
  }
  return out;
}

/** bcc's `_print_linear_hist(vals, val_type, strip_leading_zero)` as text; `vals[i]` is the count of value i. */
export function formatLinearHist(vals: bigint[], valType: string, stripLeadingZero = false): string {
  const { idxMax, valMax } = maxIndexAndValue(vals);
  let out = '';
  if (idxMax >= 0) out += `${pyFormat('     %-13s : count     distribution', valType)}\n`;
  let strip = stripLeadingZero;
  for (let i = 0; i <= idxMax; i++) {
    const val = vals[i] ?? 0n;
    if (strip) {
      if (val === 0n) continue;
      strip = false;
    }
    out += `${pyFormat('        %-10d : %-8d |%-*s|', i, val, STARS_MAX, stars(val, valMax, STARS_MAX))}\n`;
  }
  return out;
}

/** One histogram of a keyed (sectioned) table: the printed section value and its slots. */
export interface HistSection {
  label: string;
  vals: bigint[];
}

/**
 * bcc's `print_log2_hist(val_type, section_header, section_print_fn)` for a table with a struct key: for each
 * section `\n<section_header> = <label>\n` followed by its histogram. Sections print in the given order (bcc uses
 * the hash table's order; callers sort for determinism).
 */
export function formatSectionedLog2Hist(sections: HistSection[], sectionHeader: string, valType: string): string {
  let out = '';
  for (const s of sections) out += `\n${sectionHeader} = ${s.label}\n${formatLog2Hist(s.vals, valType)}`;
  return out;
}

/** bcc's sectioned `print_linear_hist`. */
export function formatSectionedLinearHist(sections: HistSection[], sectionHeader: string, valType: string): string {
  let out = '';
  for (const s of sections) out += `\n${sectionHeader} = ${s.label}\n${formatLinearHist(s.vals, valType)}`;
  return out;
}

/** One row of bcc's JSON histogram. */
export interface JsonHistRow {
  'interval-start': number | string;
  'interval-end': number | string;
  count: number | string;
}

function jsonNumber(n: bigint): number | string {
  return n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString();
}

/**
 * bcc's `_get_json_hist(vals, val_type, section_bucket)`: `{ts, val_type, data: [{interval-start, interval-end,
 * count}...], <section>: <label>}` with rows for slots 1..highest non-zero (slot i covers [2^(i-1), 2^i - 1],
 * slot 1 [0, 1]). `ts` is the local time as `%Y-%m-%d %H:%M:%S`. bcc prints this dict with Python's repr (single
 * quotes); callers serialise it as JSON.
 */
export function jsonLog2Hist(
  vals: bigint[],
  valType: string,
  ts: string,
  section?: [string, string],
): Record<string, unknown> {
  let maxNonZero = 0;
  for (let i = 0; i < vals.length; i++) if (vals[i] !== 0n) maxNonZero = i;
  const data: JsonHistRow[] = [];
  let index = 1n;
  let prev = 0n;
  for (let i = 1; i <= maxNonZero; i++) {
    index *= 2n;
    data.push({
      'interval-start': jsonNumber(prev),
      'interval-end': jsonNumber(index - 1n),
      count: jsonNumber(vals[i]!),
    });
    prev = index;
  }
  const hist: Record<string, unknown> = { ts, val_type: valType, data };
  if (section) hist[section[0]] = section[1];
  return hist;
}

/** One row of a printed log2 histogram as data: values in [low, high] were counted `count` times. */
export interface Log2Bucket {
  low: bigint;
  high: bigint;
  count: bigint;
}

/**
 * The rows bcc prints for log2 slots `vals` (slot 1 up to the highest non-empty one; none when all are empty),
 * with bcc's bounds: slot s covers [2^(s-1), 2^s - 1] and slot 1 covers [0, 1].
 */
export function log2Buckets(vals: readonly bigint[]): Log2Bucket[] {
  let top = 0;
  for (let i = 1; i < vals.length; i++) if (vals[i]! > 0n) top = i;
  const out: Log2Bucket[] = [];
  for (let s = 1; s <= top; s++) {
    out.push({ low: (1n << BigInt(s)) >> 1n, high: (1n << BigInt(s)) - 1n, count: vals[s]! });
  }
  return out;
}

/** The log2 slots (length {@link LOG2_SLOTS}) of buckets made by {@link log2Buckets}. */
export function log2SlotsOf(buckets: readonly Log2Bucket[]): bigint[] {
  const vals = new Array<bigint>(LOG2_SLOTS).fill(0n);
  buckets.forEach((b, i) => {
    vals[i + 1] = b.count;
  });
  return vals;
}
