import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isPerCpuMapType, MapType, sumPerCpuS64, sumPerCpuU64 } from '../../src/bpf/map.js';

test('map type numbers (enum bpf_map_type) and which are per-CPU', () => {
  assert.deepEqual(
    [MapType.HASH, MapType.ARRAY, MapType.PERCPU_HASH, MapType.PERCPU_ARRAY, MapType.STACK_TRACE],
    [1, 2, 5, 6, 7],
  );
  assert.deepEqual([MapType.LRU_HASH, MapType.LRU_PERCPU_HASH, MapType.RINGBUF], [9, 10, 27]);
  const perCpu = Object.entries(MapType)
    .filter(([, v]) => isPerCpuMapType(v))
    .map(([k]) => k);
  assert.deepEqual(perCpu, ['PERCPU_HASH', 'PERCPU_ARRAY', 'LRU_PERCPU_HASH']);
});

test('per-CPU sums: u64 wraps like the kernel counters, s64 keeps the sign', () => {
  const slot = (v: bigint, signed = false) => {
    const b = Buffer.alloc(8);
    if (signed) b.writeBigInt64LE(v);
    else b.writeBigUInt64LE(v);
    return b;
  };
  assert.equal(sumPerCpuU64([slot(1n), slot(2n), slot(39n)]), 42n);
  assert.equal(sumPerCpuU64([slot(2n ** 64n - 1n), slot(2n)]), 1n);
  assert.equal(sumPerCpuS64([slot(-5n, true), slot(3n, true)]), -2n);
  assert.equal(sumPerCpuU64([]), 0n);
});
