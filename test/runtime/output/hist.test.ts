import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  buildLinearHistogram,
  buildLog2Histogram,
  linearBucketBounds,
  linearBucketIndex,
  log2BucketBounds,
  log2BucketIndex,
} from '../../../src/runtime/output/hist.js';

const I64_MIN = -(1n << 63n);
const I64_MAX = (1n << 63n) - 1n;

describe('log2BucketIndex (bpftrace createLog2Function)', () => {
  it('maps k=0 values to bpftrace buckets: <0 -> 0, 0 -> 1, 1 -> 2, [2^(i-2), 2^(i-1)) -> i', () => {
    const cases: [bigint, number][] = [
      [-1n, 0],
      [I64_MIN, 0],
      [0n, 1],
      [1n, 2],
      [2n, 3],
      [3n, 3],
      [4n, 4],
      [7n, 4],
      [8n, 5],
      [1023n, 11],
      [1024n, 12],
      [(1n << 62n) - 1n, 63],
      [1n << 62n, 64],
      [I64_MAX, 64],
    ];
    for (const [n, want] of cases) assert.equal(log2BucketIndex(n), want, `n=${n}`);
  });

  it('reads n as int64: unsigned values >= 2^63 go to the negative bucket, as bpftrace', () => {
    assert.equal(log2BucketIndex(1n << 63n), 0);
    assert.equal(log2BucketIndex((1n << 64n) - 1n), 0);
  });

  it('matches the worked example in bpftrace codegen: 225 with k=2 -> 28', () => {
    assert.equal(log2BucketIndex(225n, 2), 28);
  });

  it('sub-buckets for k=3 (bpftrace tests/runtime/outputs/hist_2args.json: 16..17 share a bucket, 960..1023 too)', () => {
    for (let n = 0; n < 16; n++) assert.equal(log2BucketIndex(BigInt(n), 3), n + 1);
    assert.equal(log2BucketIndex(16n, 3), log2BucketIndex(17n, 3));
    assert.notEqual(log2BucketIndex(17n, 3), log2BucketIndex(18n, 3));
    assert.equal(log2BucketIndex(960n, 3), log2BucketIndex(1023n, 3));
    assert.notEqual(log2BucketIndex(959n, 3), log2BucketIndex(960n, 3));
  });

  it('largest index is (64 - k) << k', () => {
    for (let k = 0; k <= 5; k++) assert.equal(log2BucketIndex(I64_MAX, k), (64 - k) << k, `k=${k}`);
  });

  it('rejects bits outside 0..5', () => {
    assert.throws(() => log2BucketIndex(1n, 6), RangeError);
    assert.throws(() => log2BucketIndex(1n, -1), RangeError);
  });

  it('log2BucketBounds inverts it: every int64 lies in the bounds of its bucket (property)', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: I64_MIN, max: I64_MAX }), fc.integer({ min: 0, max: 5 }), (n, k) => {
        const i = log2BucketIndex(n, k);
        const { lo, hi } = log2BucketBounds(i, k);
        return (lo === null || lo <= n) && n < hi;
      }),
      { numRuns: 5000 },
    );
  });

  it('buckets are contiguous: the upper bound of bucket i is the lower bound of bucket i+1', () => {
    for (let k = 0; k <= 5; k++) {
      const last = (64 - k) << k;
      for (let i = 1; i < last; i++) {
        assert.equal(log2BucketBounds(i, k).hi, log2BucketBounds(i + 1, k).lo, `k=${k} i=${i}`);
      }
      assert.equal(log2BucketBounds(last, k).hi, 1n << 63n);
    }
  });
});

describe('linearBucketIndex (bpftrace createLinearFunction)', () => {
  it('lhist(n, 0, 100, 10): below min -> 0, [0,10) -> 1, ..., [90,100) -> 10, >= 100 -> 11', () => {
    const cases: [bigint, number][] = [
      [-1n, 0],
      [0n, 1],
      [9n, 1],
      [10n, 2],
      [99n, 10],
      [100n, 11],
      [1000n, 11],
      [1n << 63n, 0], // read as int64: negative
    ];
    for (const [n, want] of cases) assert.equal(linearBucketIndex(n, 0, 100, 10), want, `n=${n}`);
  });

  it('a range not divisible by the step: (max - min) / step + 1 is both the last partial bucket and overflow', () => {
    assert.equal(linearBucketIndex(19n, 0, 25, 10), 2);
    assert.equal(linearBucketIndex(20n, 0, 25, 10), 3);
    assert.equal(linearBucketIndex(25n, 0, 25, 10), 3);
    assert.equal(linearBucketIndex(26n, 0, 25, 10), 3);
  });

  it('non-zero min', () => {
    assert.equal(linearBucketIndex(5n, 10, 110, 10), 0);
    assert.equal(linearBucketIndex(10n, 10, 110, 10), 1);
    assert.equal(linearBucketIndex(109n, 10, 110, 10), 10);
    assert.equal(linearBucketIndex(110n, 10, 110, 10), 11);
  });

  it('linearBucketBounds contains the value (property)', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: -1000n, max: 100000n }),
        fc.integer({ min: 0, max: 500 }),
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 1, max: 100 }),
        (n, min, range, step) => {
          const max = min + Math.max(range, step);
          const i = linearBucketIndex(n, min, max, step);
          const { lo, hi } = linearBucketBounds(i, min, max, step);
          return (lo === null || lo <= n) && (hi === null || n < hi);
        },
      ),
      { numRuns: 3000 },
    );
  });
});

describe('histogram labels', () => {
  const labels = (h: ReturnType<typeof buildLog2Histogram>) => h.labels.map((l) => l.text);

  it('log2 labels: plain integers up to 2 << k, then powers with K/M/G/T/P/E suffixes', () => {
    const b = new Map<number, bigint>([
      [0, 1n],
      [64, 1n],
    ]);
    const h = buildLog2Histogram(b, 0);
    assert.equal(h.lower, undefined);
    const t = labels(h);
    assert.equal(t.length, 65);
    assert.deepEqual(t.slice(0, 6), ['0', '1', '2', '4', '8', '16']);
    assert.deepEqual(t.slice(10, 13), ['512', '1K', '2K']);
    assert.deepEqual(t.slice(-4), ['1E', '2E', '4E', '8E']);
    assert.equal(h.labels[64]!.num, 1n << 63n);
    assert.deepEqual(
      h.counts.filter((c) => c > 0n),
      [1n, 1n],
    );
  });

  it('log2 lower bound of the first non-empty bucket; counts divided by div', () => {
    const h = buildLog2Histogram(new Map([[11, 7n]]), 0, 2n);
    assert.deepEqual(h.lower, { num: 512n, text: '512', plain: false });
    assert.deepEqual(labels(h), ['1K']);
    assert.deepEqual(h.counts, [3n]);
  });

  it('log2 with k=2 sub-buckets: 2<<k plain labels, then [8, 10), [10, 12), ...', () => {
    const h = buildLog2Histogram(
      new Map([
        [1, 1n],
        [12, 1n],
      ]),
      2,
    );
    assert.deepEqual(labels(h), ['1', '2', '3', '4', '5', '6', '7', '8', '10', '12', '14', '16']);
  });

  it('empty histogram when every bucket is zero (zero(@h))', () => {
    assert.deepEqual(buildLog2Histogram(new Map([[3, 0n]]), 0), { labels: [], counts: [] });
    assert.deepEqual(buildLinearHistogram(new Map(), 0, 10, 1), { labels: [], counts: [] });
  });

  it('lhist labels use K/M only when the step is a multiple of 1024 (bpftrace 0.26 tests/output.cpp)', () => {
    const k = buildLinearHistogram(
      new Map([
        [1, 1n],
        [5, 1n],
      ]),
      0,
      5 * 1024,
      1024,
    );
    assert.deepEqual(labels(k), ['1K', '2K', '3K', '4K', '5K']);
    const m = buildLinearHistogram(new Map([[2, 1n]]), 0, 4 << 20, 1 << 20);
    assert.equal(m.lower!.text, '1M');
    assert.deepEqual(labels(m), ['2M']);
    const plain = buildLinearHistogram(
      new Map([
        [1, 1n],
        [6, 1n],
      ]),
      610000,
      670000,
      10000,
    );
    assert.deepEqual(labels(plain), ['620000', '630000', '640000', '650000', '660000', '670000']);
  });

  it('lhist overflow bucket has no label', () => {
    const h = buildLinearHistogram(new Map([[11, 1n]]), 0, 100, 10);
    assert.equal(h.lower!.text, '100');
    assert.deepEqual(h.labels, []);
    assert.deepEqual(h.counts, [1n]);
  });
});
