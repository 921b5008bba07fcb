import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BPF_NOEXIST, BpfMap, MapType, sumPerCpuU64 } from '../../src/bpf/map.js';
import { loadProgram, ProgType } from '../../src/bpf/program.js';
import { BpfscopeError, KernelError } from '../../src/errors.js';
import { BPF_F_TEST_RUN_ON_CPU } from '../../src/kernel/bpf.js';
import { numPossibleCpus, onlineCpus } from '../../src/kernel/cpus.js';
import { Errno } from '../../src/kernel/ffi.js';
import { exit, incrementArray0, loadedIds, movImm, prog } from './raw-insns.js';

const u32 = (v: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v);
  return b;
};
const u64 = (v: bigint) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(v);
  return b;
};
const nCpus = numPossibleCpus();

/** A per-CPU value with slot i = base + i (u64 slots). */
function perCpuValue(base: bigint): Buffer {
  const b = Buffer.alloc(8 * nCpus);
  for (let i = 0; i < nCpus; i++) b.writeBigUInt64LE(base + BigInt(i), i * 8);
  return b;
}

const hashLike = [
  { type: MapType.HASH, name: 'HASH', perCpu: false },
  { type: MapType.LRU_HASH, name: 'LRU_HASH', perCpu: false },
  { type: MapType.PERCPU_HASH, name: 'PERCPU_HASH', perCpu: true },
  { type: MapType.LRU_PERCPU_HASH, name: 'LRU_PERCPU_HASH', perCpu: true },
];

for (const t of hashLike) {
  test(`${t.name}: CRUD, keys, entries (batch = walk), clear`, () => {
    const m = BpfMap.create({ type: t.type, keySize: 4, valueSize: 8, maxEntries: 256, name: `t_${t.name}` });
    try {
      assert.equal(m.perCpu, t.perCpu);
      assert.equal(m.valueBytes, t.perCpu ? 8 * nCpus : 8);
      const val = (i: number) => (t.perCpu ? perCpuValue(BigInt(i) * 100n) : u64(BigInt(i) * 100n));
      for (let i = 1; i <= 100; i++) m.update(u32(i), val(i));
      assert.deepEqual(m.lookup(u32(5)), val(5));
      assert.equal(m.lookup(u32(500)), undefined);
      assert.throws(
        () => m.update(u32(5), val(6), BPF_NOEXIST),
        (e: unknown) => e instanceof KernelError && e.errno === Errno.EEXIST,
      );
      assert.equal(m.delete(u32(5)), true);
      assert.equal(m.delete(u32(5)), false);
      const keys = [...m.keys()].map((k) => k.readUInt32LE()).sort((a, b) => a - b);
      assert.deepEqual(
        keys,
        Array.from({ length: 100 }, (_, i) => i + 1).filter((k) => k !== 5),
      );
      const batched = m.entries();
      const walked = m.entries({ useBatch: false });
      assert.equal(m.dump().batched, true);
      const norm = (es: Array<[Buffer, Buffer]>) =>
        es.map(([k, v]) => `${k.readUInt32LE()}=${v.toString('hex')}`).sort();
      assert.equal(batched.length, 99);
      assert.deepEqual(norm(batched), norm(walked));
      for (const [k, v] of batched) assert.deepEqual(v, val(k.readUInt32LE()));
      if (t.perCpu) {
        const slices = m.lookupPerCpu(u32(7))!;
        assert.equal(slices.length, nCpus);
        // 700 + 701 + ... per CPU
        const expect = Array.from({ length: nCpus }, (_, i) => 700n + BigInt(i)).reduce((a, b) => a + b, 0n);
        assert.equal(sumPerCpuU64(slices), expect);
      }
      m.clear();
      assert.deepEqual([...m.keys()], []);
      assert.equal(m.entries().length, 0);
    } finally {
      m.close();
    }
  });
}

for (const t of [
  { type: MapType.ARRAY, name: 'ARRAY', perCpu: false },
  { type: MapType.PERCPU_ARRAY, name: 'PERCPU_ARRAY', perCpu: true },
]) {
  test(`${t.name}: every index exists, delete is EINVAL, clear zeroes`, () => {
    const m = BpfMap.create({ type: t.type, keySize: 4, valueSize: 8, maxEntries: 16, name: `t_${t.name}` });
    try {
      const zero = Buffer.alloc(m.valueBytes);
      assert.deepEqual(m.lookup(u32(15)), zero);
      assert.equal(m.lookup(u32(16)), undefined, 'out of range index is absent');
      const v = t.perCpu ? perCpuValue(10n) : u64(10n);
      m.update(u32(3), v);
      assert.deepEqual(m.lookup(u32(3)), v);
      assert.throws(
        () => m.delete(u32(3)),
        (e: unknown) => e instanceof KernelError && e.errno === Errno.EINVAL,
      );
      assert.equal([...m.keys()].length, 16);
      const es = m.entries();
      assert.equal(es.length, 16);
      assert.deepEqual(es[3]![1], v);
      assert.deepEqual(
        m.entries({ useBatch: false }).map(([k, x]) => [k.readUInt32LE(), x.toString('hex')]),
        es.map(([k, x]) => [k.readUInt32LE(), x.toString('hex')]),
      );
      m.clear();
      assert.deepEqual(m.lookup(u32(3)), zero);
    } finally {
      m.close();
    }
  });
}

test('per-CPU slots are roundup(value_size, 8) bytes; slices are value_size bytes', () => {
  const m = BpfMap.create({ type: MapType.PERCPU_HASH, keySize: 4, valueSize: 4, maxEntries: 4, name: 't_pc4' });
  try {
    assert.equal(m.slotSize, 8);
    assert.equal(m.valueBytes, 8 * nCpus);
    const v = Buffer.alloc(m.valueBytes);
    for (let i = 0; i < nCpus; i++) v.writeUInt32LE(0xa0 + i, i * 8);
    m.update(u32(1), v);
    const slices = m.lookupPerCpu(u32(1))!;
    assert.deepEqual(
      slices.map((s) => s.length),
      Array(nCpus).fill(4),
    );
    assert.deepEqual(
      slices.map((s) => s.readUInt32LE()),
      Array.from({ length: nCpus }, (_, i) => 0xa0 + i),
    );
    // A value of the wrong size is refused before reaching the kernel.
    assert.throws(() => m.update(u32(1), Buffer.alloc(4)), BpfscopeError);
  } finally {
    m.close();
  }
});

test('per-CPU counters written by a program on each CPU sum exactly', () => {
  const m = BpfMap.create({ type: MapType.PERCPU_ARRAY, keySize: 4, valueSize: 8, maxEntries: 1, name: 't_pcount' });
  const p = loadProgram({
    type: ProgType.RAW_TRACEPOINT,
    name: 't_pcount',
    insns: prog(incrementArray0(m.fd), movImm(0, 0), exit()),
  });
  try {
    const cpus = onlineCpus();
    // CPU c runs the program c + 1 times.
    for (const c of cpus) {
      for (let i = 0; i <= c; i++) p.testRun({ ctxIn: Buffer.alloc(8), flags: BPF_F_TEST_RUN_ON_CPU, cpu: c });
    }
    const slices = m.lookupPerCpu(u32(0))!;
    for (const c of cpus) assert.equal(slices[c]!.readBigUInt64LE(), BigInt(c + 1), `cpu ${c}`);
    assert.equal(sumPerCpuU64(slices), BigInt(cpus.reduce((a, c) => a + c + 1, 0)));
  } finally {
    p.close();
    m.close();
  }
});

test('STACK_TRACE maps have no batch ops: entries() walks', () => {
  const m = BpfMap.create({ type: MapType.STACK_TRACE, keySize: 4, valueSize: 8 * 127, maxEntries: 64, name: 't_st' });
  try {
    const d = m.dump();
    assert.equal(d.batched, false);
    assert.equal(d.count, 0);
  } finally {
    m.close();
  }
});

test('info() reports the kernel view; after close() bpftool no longer lists the map', () => {
  const m = BpfMap.create({ type: MapType.HASH, keySize: 8, valueSize: 16, maxEntries: 32, name: 't_info' });
  const info = m.info();
  assert.deepEqual(
    { type: info.type, keySize: info.keySize, valueSize: info.valueSize, maxEntries: info.maxEntries, name: info.name },
    { type: MapType.HASH, keySize: 8, valueSize: 16, maxEntries: 32, name: 't_info' },
  );
  assert.ok(loadedIds().maps.has(info.id));
  m.close();
  m.close(); // idempotent
  assert.equal(m.closed, true);
  assert.throws(() => m.fd, BpfscopeError);
  assert.equal(loadedIds().maps.has(info.id), false);
});
