/**
 * log2 (`hist()`) and linear (`lhist()`) histogram bucket math, shared by the code generator (which must compute
 * the same bucket index in BPF) and the output formatters (which turn bucket counts into labelled rows).
 *
 * Source: bpftrace v0.26 `src/ast/passes/codegen_llvm.cpp` (`createLog2Function`, `createLinearFunction`) for the
 * index math and `src/types_format.cpp` (`build_histogram`, `hist_index_label`, `build_linear_histogram`,
 * `lhist_index_label`) for the labels. bpftrace appends the bucket index (a u64) to the map key; the value is a
 * per-CPU u64 count.
 *
 * ## log2 histogram, `hist(n, k)` with k = bits in 0..5 (default 0)
 * Each power of two is split into 2^k sub-buckets. With `j = index - 1`:
 * | index            | values in the bucket                                                          |
 * |------------------|-------------------------------------------------------------------------------|
 * | 0                | n < 0 (n read as int64: unsigned values >= 2^63 land here too, as in bpftrace)  |
 * | 1 .. 2^k         | exactly n = index - 1                                                         |
 * | > 2^k            | e = j >> k (>= 1), x = j & (2^k - 1): [2^(e-1) * (2^k + x), 2^(e-1) * (2^k + x + 1)) |
 * For k = 0: index 0 is `(..., 0)`, 1 is `[0]`, 2 is `[1]`, 3 is `[2, 4)`, 4 is `[4, 8)`, ..., 64 is `[4E, 8E)`.
 * The largest index is `(64 - k) << k` (n = 2^63 - 1). bpftrace sizes its bucket vector at 65 * 32.
 *
 * ## linear histogram, `lhist(n, min, max, step)` (min, max >= 0, step >= 1, (max - min) / step <= 1000)
 * With `B = floor((max - min) / step)`:
 * | index      | values in the bucket                                         |
 * |------------|--------------------------------------------------------------|
 * | 0          | n < min (n read as int64)                                    |
 * | 1 .. B     | [min + (index - 1) * step, min + index * step)               |
 * | B + 1      | n >= min + B * step (so n == max lands here, as in bpftrace) |
 */

/** Read a bigint as a two's-complement int64, as bpftrace's BPF code does after widening the argument. */
function asI64(n: bigint): bigint {
  return BigInt.asIntN(64, n);
}

/**
 * The log2 histogram bucket index bpftrace's BPF code computes for value `n` with `bits` sub-bucket bits (0..5).
 * `n` is taken modulo 2^64 and read as int64. Returns an index in 0 .. `(64 - bits) << bits`.
 * Throws RangeError when `bits` is not an integer in 0..5.
 */
export function log2BucketIndex(n: bigint, bits = 0): number {
  if (!Number.isInteger(bits) || bits < 0 || bits > 5) throw new RangeError(`hist: bits ${bits} must be 0..5`);
  const v = asI64(n);
  if (v < 0n) return 0;
  const k = BigInt(bits);
  const mask = (1n << k) - 1n;
  if (v <= mask) return Number(v) + 1;
  // Position of the most significant set bit (0-based); v >= 2^k >= 1 here.
  const l = BigInt(v.toString(2).length - 1);
  const shift = l - k;
  const x = (v >> shift) & mask;
  return Number(((shift + 1n) << k) + x + 1n);
}

/**
 * The bounds of log2 bucket `index` for `bits` sub-bucket bits: values `lo <= n < hi`; `lo` is null for bucket 0
 * (all negative values, `hi` = 0). Inverse of {@link log2BucketIndex}.
 */
export function log2BucketBounds(index: number, bits = 0): { lo: bigint | null; hi: bigint } {
  if (index === 0) return { lo: null, hi: 0n };
  const k = BigInt(bits);
  const j = BigInt(index - 1);
  if (j < 1n << k) return { lo: j, hi: j + 1n };
  const e = j >> k;
  const x = j & ((1n << k) - 1n);
  const unit = 1n << (e - 1n);
  return { lo: unit * ((1n << k) + x), hi: unit * ((1n << k) + x + 1n) };
}

/**
 * The lhist bucket index bpftrace's BPF code computes for value `n` (taken modulo 2^64 and read as int64) with
 * the given `min`, `max` and `step` (non-negative integers, step >= 1, as bpftrace's checks require).
 */
export function linearBucketIndex(n: bigint, min: number, max: number, step: number): number {
  const v = asI64(n);
  const lo = BigInt(min);
  const hi = BigInt(max);
  const st = BigInt(step);
  if (v < lo) return 0;
  if (v > hi) return Number((hi - lo) / st + 1n);
  return Number((v - lo) / st + 1n);
}

/**
 * The bounds of lhist bucket `index`: values `lo <= n < hi`; `lo` null means unbounded below (bucket 0), `hi`
 * null unbounded above (the last bucket, index `floor((max - min) / step) + 1`).
 */
export function linearBucketBounds(
  index: number,
  min: number,
  max: number,
  step: number,
): { lo: bigint | null; hi: bigint | null } {
  const buckets = Math.floor((max - min) / step);
  if (index === 0) return { lo: null, hi: BigInt(min) };
  const lo = BigInt(min) + BigInt(index - 1) * BigInt(step);
  if (index > buckets) return { lo, hi: null };
  return { lo, hi: lo + BigInt(step) };
}

/**
 * A bucket boundary label. `num` is its numeric value; `text` how text output prints it (`4K`, `100`);
 * `plain` marks a plain integer label (bpftrace's int64 primitive, as opposed to a `Symbolic` one): only two
 * adjacent plain labels make a single-value row like `[1]`.
 */
export interface HistLabel {
  num: bigint;
  text: string;
  plain: boolean;
}

/**
 * A histogram ready to print (bpftrace's `output::Value::Histogram`): `counts[i]` is the count of row i, whose
 * range is [labels[i-1], labels[i]) — row 0 starts at `lower` (absent: unbounded below); a row with no label
 * (`i >= labels.length`) is unbounded above. Empty `counts` when every bucket is zero.
 */
export interface Histogram {
  lower?: HistLabel;
  labels: HistLabel[];
  counts: bigint[];
}

function plain(n: bigint): HistLabel {
  return { num: n, text: n.toString(), plain: true };
}

const LOG2_SUFFIXES = ['', 'K', 'M', 'G', 'T', 'P', 'E'];

/** Upper bound label of log2 bucket `index` (> 2 << bits), with a K/M/G/T/P/E suffix per power of 1024. */
function log2Label(index: number, bits: number): HistLabel {
  const n = 1 << bits;
  const interval = BigInt(index & (n - 1));
  let power = (index >> bits) - 1;
  const num = (1n << BigInt(power)) * (BigInt(n) + interval);
  const decade = Math.floor(power / 10);
  power -= 10 * decade;
  const text = ((1n << BigInt(power)) * (BigInt(n) + interval)).toString() + (LOG2_SUFFIXES[decade] ?? '');
  return { num, text, plain: false };
}

/** Lowest and highest bucket index with a count > 0, or null when there is none. */
function usedRange(buckets: Map<number, bigint>): [number, number] | null {
  let lo = -1;
  let hi = -1;
  for (const [i, c] of buckets) {
    if (c <= 0n) continue;
    if (lo === -1 || i < lo) lo = i;
    if (hi === -1 || i > hi) hi = i;
  }
  return lo === -1 ? null : [lo, hi];
}

/**
 * Build the printable form of a log2 histogram from its non-zero buckets (index → count), dividing each count by
 * `div` (integer division; `print(@h, top, div)`). Rows run from the lowest to the highest non-zero bucket,
 * including the zero buckets between them.
 */
export function buildLog2Histogram(buckets: Map<number, bigint>, bits: number, div = 1n): Histogram {
  const hist: Histogram = { labels: [], counts: [] };
  const range = usedRange(buckets);
  if (!range) return hist;
  const [lo, hi] = range;
  const plainLimit = 2 << bits;
  if (lo !== 0) hist.lower = lo - 1 <= plainLimit ? plain(BigInt(lo - 1)) : log2Label(lo - 1, bits);
  const d = div === 0n ? 1n : div;
  for (let i = lo; i <= hi; i++) {
    hist.labels.push(i <= plainLimit ? plain(BigInt(i)) : log2Label(i, bits));
    hist.counts.push((buckets.get(i) ?? 0n) / d);
  }
  return hist;
}

/** lhist label: with a step that is a multiple of 1024, multiples of 1M/1K print as `NM`/`NK` (bpftrace 0.26). */
function linearLabel(num: number, step: number): HistLabel {
  const n = BigInt(num);
  if (step % 1024 !== 0) return plain(n);
  let text: string;
  if (num === 0) text = '0';
  else if (num % (1024 * 1024) === 0) text = `${num / (1024 * 1024)}M`;
  else if (num % 1024 === 0) text = `${num / 1024}K`;
  else text = String(num);
  return { num: n, text, plain: false };
}

/**
 * Build the printable form of a linear histogram from its non-zero buckets (index → count). bpftrace ignores the
 * `div` argument of `print()` for lhist maps, so there is none here.
 */
export function buildLinearHistogram(buckets: Map<number, bigint>, min: number, max: number, step: number): Histogram {
  const hist: Histogram = { labels: [], counts: [] };
  const range = usedRange(buckets);
  if (!range) return hist;
  const [lo, hi] = range;
  if (lo !== 0) hist.lower = linearLabel(min + (lo - 1) * step, step);
  for (let i = lo; i <= hi; i++) {
    const bound = min + i * step;
    if (bound <= max) hist.labels.push(linearLabel(bound, step));
    hist.counts.push(buckets.get(i) ?? 0n);
  }
  return hist;
}

/** Sum of all bucket counts (bpftrace orders keyed histogram maps by it). */
export function histTotal(buckets: Map<number, bigint>): bigint {
  let sum = 0n;
  for (const c of buckets.values()) sum += c;
  return sum;
}
