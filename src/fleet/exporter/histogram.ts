/**
 * bpftrace histograms → Prometheus cumulative buckets.
 *
 * A bpftrace bucket counts the integers `low <= v < high` (hist(): [2^k, 2^(k+1)), plus [0, 1) and the negative
 * values; lhist(): [min + i*step, min + (i+1)*step), below `min`, from `max` up). Prometheus's bucket `le="x"`
 * counts every observation `v <= x`. For integer observations the bucket [low, high) ends at `high - 1`, so the
 * exporter labels the cumulative count up to and including that bucket `le = (high - 1) * bucket_multiplier`: the
 * count is exact, with no value of the next bucket counted early or late (ebpf_exporter labels [2^k, 2^(k+1)) as
 * `le = 2^k`, which makes quantiles one bucket low: ebpf_exporter issues #488, #515). The table is in
 * docs/fleet.md.
 */
import type { Hist, LinearHist } from '../../api/index.js';
import type { MetricConfig } from './config.js';

/** One exported histogram: cumulative counts per `le` (ascending, without +Inf), and the total (the +Inf bucket). */
export interface CumulativeHistogram {
  buckets: { le: number; count: bigint }[];
  count: bigint;
}

/** The integer upper ends (before the multiplier) of the exported buckets of metric `m` reading value `v`. */
export function upperEnds(m: MetricConfig, v: Hist | LinearHist): number[] {
  switch (m.bucketType) {
    case 'exp2':
    case 'exp2zero': {
      const out: number[] = m.bucketType === 'exp2zero' ? [0] : [];
      for (let k = m.bucketMin ?? 0; k <= m.bucketMax!; k++) out.push(2 ** (k + 1) - 1);
      return out;
    }
    case 'linear': {
      if (v.kind !== 'lhist') throw new Error(`bucket_type linear needs an lhist() value`);
      const out: number[] = [];
      for (let lo = v.min; lo <= v.max; lo += v.step) out.push(lo - 1);
      return out;
    }
    case 'fixed':
      return [...m.bucketKeys!];
    default:
      throw new Error(`not a histogram metric: ${m.name}`);
  }
}

/** `v * multiplier`, rounded to 15 significant digits (so 3 * 0.000001 prints as 0.000003). */
export function scale(v: number, multiplier: number): number {
  return multiplier === 1 ? v : Number((v * multiplier).toPrecision(15));
}

/**
 * Cumulative buckets of `v` for metric `m`.
 * @throws Error when an upper end falls inside a bucket (the count would be a guess)
 */
export function cumulative(m: MetricConfig, v: Hist | LinearHist): CumulativeHistogram {
  const ends = upperEnds(m, v);
  let total = 0n;
  for (const b of v.buckets) total += b.count;
  const buckets = ends.map((end) => {
    const e = BigInt(end);
    let count = 0n;
    for (const b of v.buckets) {
      if (b.high !== null && b.high - 1n <= e) count += b.count;
      else if ((b.low === null || b.low <= e) && (b.high === null || e < b.high - 1n)) {
        throw new Error(`le ${end} falls inside the bucket [${b.low ?? '-inf'}, ${b.high ?? 'inf'})`);
      }
    }
    return { le: scale(end, m.bucketMultiplier), count };
  });
  return { buckets, count: total };
}
