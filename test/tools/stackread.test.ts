/**
 * A stack tool's report read from the map's bytes (src/tools/stackread.ts, issue 19: a full 40,960-key profile map
 * took about a minute to report): each distinct stored stack is looked up once and symbolized once (kernel stacks
 * once, user stacks once per process), and the entries equal what the general path (`readMap`'s stack text,
 * parsed back by `symbolizeEntries`) gives. Fake maps, no kernel.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BpfMap } from '../../src/bpf/map.js';
import type { MapPlan } from '../../src/codegen/plan.js';
import type { SType } from '../../src/lang/types.js';
import type { MapDump } from '../../src/runtime/output/model.js';
import { Kallsyms } from '../../src/symbols/kallsyms.js';
import { SymbolResolver } from '../../src/symbols/resolver.js';
import { readStackEntries, type StackReadStats } from '../../src/tools/stackread.js';
import { symbolizeEntries, type StackEntry } from '../../src/tools/stacktool.js';

const KALLSYMS = 'ffffffff81000000 T _text\nffffffff81000100 T do_nanosleep\nffffffff81000200 T __schedule\n';
/** pid_max is at most 2^22: no such process, so its user frames are unknown (addresses only). */
const GONE = [4194400, 4194401];
const LIMIT = 127;

/** Kernel stacks by id: frames innermost first. */
const KSTACKS = new Map<bigint, bigint[]>([
  [11n, [0xffffffff81000204n, 0xffffffff81000108n]],
  [12n, [0xffffffff81000108n]],
  [13n, [0xffffffff81000210n, 0xffffffff81000204n, 0xffffffff81000104n]],
]);
const USTACKS = new Map<bigint, bigint[]>([
  [21n, [0x401000n, 0x402000n]],
  [22n, [0x401000n, 0xffffffffffffffffn]],
]);
const N = 1000;

function frameBytes(frames: bigint[]): Buffer {
  const b = Buffer.alloc(8 * LIMIT);
  frames.forEach((a, i) => b.writeBigUInt64LE(a, i * 8));
  return b;
}

/** A fake stack map answering lookups by id, counting them. */
function stackMap(stacks: Map<bigint, bigint[]>, counter: { n: number }): BpfMap {
  return {
    lookup: (key: Buffer) => {
      counter.n++;
      const f = stacks.get(key.readBigInt64LE(0));
      return f ? frameBytes(f) : undefined;
    },
  } as unknown as BpfMap;
}

const KEY_TYPES: SType[] = [
  { kind: 'kstack', limit: LIMIT, mode: 'raw' },
  { kind: 'ustack', limit: LIMIT, mode: 'raw' },
  { kind: 'string', size: 16 } as SType,
  { kind: 'int', size: 4, signed: false } as SType,
];
const OFFSETS = [0, 16, 32, 48];

/** Entry i: kernel stack 11 + i%3, user stack 21 + i%2, process GONE[i%2], count i+1 over 2 CPUs. */
function rawEntries(): Array<[Buffer, Buffer]> {
  const out: Array<[Buffer, Buffer]> = [];
  for (let i = 0; i < N; i++) {
    const k = Buffer.alloc(56);
    const pid = GONE[i % 2]!;
    k.writeBigInt64LE(11n + BigInt(i % 3), 0);
    k.writeBigInt64LE(21n + BigInt((i >> 1) % 2), 16);
    k.writeUInt32LE(pid, 24);
    k.write(`app${i % 5}`, 32, 'latin1');
    k.writeUInt32LE(pid, 48);
    const v = Buffer.alloc(16);
    v.writeBigUInt64LE(BigInt(i), 0);
    v.writeBigUInt64LE(1n, 8);
    out.push([k, v]);
  }
  return out;
}

function fakeTracer(counter: { n: number }): Parameters<typeof readStackEntries>[0] {
  const plan = { name: '', keyTypes: KEY_TYPES, keyOffsets: OFFSETS, valueType: { kind: 'count' }, perCpu: true };
  const map = {
    perCpu: true,
    entries: () => rawEntries(),
    perCpuValues: (v: Buffer) => [v.subarray(0, 8), v.subarray(8, 16)],
  };
  return {
    rawMap: () => ({ plan: plan as unknown as MapPlan, map: map as unknown as BpfMap }),
    stackStore: (kind: 'k' | 'u', limit: number) =>
      limit === LIMIT ? stackMap(kind === 'k' ? KSTACKS : USTACKS, counter) : undefined,
  };
}

/** The general path's input: the same entries as readMap decodes them (stacks as raw hex text). */
function textDump(): MapDump {
  const text = (frames: bigint[]): string =>
    `\n${frames.map((a) => (a === 0xffffffffffffffffn ? '        <unwind failure>' : a.toString(16))).join('\n')}\n`;
  return {
    name: '@',
    keyTypes: KEY_TYPES,
    valueType: { kind: 'count' } as SType,
    entries: rawEntries().map(([k, v]) => ({
      key: [
        { kind: 'string', value: text(KSTACKS.get(k.readBigInt64LE(0))!) },
        { kind: 'string', value: text(USTACKS.get(k.readBigInt64LE(16))!) },
        { kind: 'string', value: k.toString('latin1', 32, k.indexOf(0, 32)) },
        { kind: 'int', value: BigInt(k.readUInt32LE(48)), signed: false, size: 4 },
      ],
      value: { kind: 'count', value: v.readBigUInt64LE(0) + v.readBigUInt64LE(8), signed: false },
    })),
  };
}

const pidOf = (key: MapDump['entries'][number]['key']): number => Number((key[3] as { value: bigint }).value);

function plain(entries: StackEntry[]): unknown[] {
  return entries.map((e) => ({
    comm: e.comm,
    id: e.id,
    value: e.value,
    kernel: e.kernel!.map((f) => [f.addr, f.name, f.offset, f.module]),
    user: e.user!.map((f) => [f.addr, f.name, f.offset, f.module]),
  }));
}

describe('stack tool report from the map bytes', () => {
  it(`${N} keys over 3 kernel and 2 user stacks in 2 processes: 5 stack lookups, each address symbolized once`, () => {
    const counter = { n: 0 };
    const resolver = new SymbolResolver({ kallsyms: Kallsyms.fromBuffer(KALLSYMS), perfMaps: false });
    const stats: StackReadStats = { entries: 0, stackLookups: 0, symbolized: 0 };
    const { dump, entries } = readStackEntries(
      fakeTracer(counter),
      '',
      { kernel: 0, user: 1, comm: 2, id: 3 },
      resolver,
      pidOf,
      undefined,
      stats,
    );
    assert.equal(dump.entries.length, N);
    assert.equal(entries.length, N);
    assert.equal(counter.n, 5);
    // 3 kernel stacks + (2 user stacks x 2 processes)
    assert.deepEqual(stats, { entries: N, stackLookups: 5, symbolized: 7 });
    // kernel: 4 distinct addresses; user: 0x401000 and 0x402000 in each of 2 processes (u64 -1 is no lookup)
    assert.equal(resolver.stats.misses, 4 + 4);
    const e = entries[4]!; // kernel stack 12, user stack 21, GONE[0], app4, count 4 + 1
    assert.equal(e.comm, 'app4');
    assert.equal(e.id, GONE[0]);
    assert.equal(e.value, 5n);
    assert.deepEqual(
      e.kernel!.map((f) => [f.name, f.offset]),
      [['do_nanosleep', 8]],
    );
    assert.deepEqual(
      e.user!.map((f) => f.addr),
      [0x401000n, 0x402000n],
    );
  });

  it('gives the entries the general path (stack text parsed back) gives', () => {
    const fresh = (): SymbolResolver =>
      new SymbolResolver({ kallsyms: Kallsyms.fromBuffer(KALLSYMS), perfMaps: false });
    const layout = { kernel: 0, user: 1, comm: 2, id: 3 };
    const fast = readStackEntries(fakeTracer({ n: 0 }), '', layout, fresh(), pidOf).entries;
    const general = symbolizeEntries(textDump(), layout, fresh(), pidOf);
    assert.deepEqual(plain(fast), plain(general));
    // the unwind-failure marker ends user stack 22 in both
    assert.deepEqual(
      fast[2]!.user!.map((f) => f.addr),
      [0x401000n, 0xffffffffffffffffn],
    );
  });
});
