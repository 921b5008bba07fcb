/**
 * The events queue's undecoded printf slots (EventQueue.pushRaw through PrintfSink.raw): order against other
 * events, drops counted without decoding, the batch bound, and records at unaligned addresses.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EventQueue, PrintfSink, type TraceEvent } from '../../src/api/events.js';
import type { CompiledProgram } from '../../src/codegen/plan.js';

const u64 = { kind: 'int', size: 8, signed: false } as const;
const i32 = { kind: 'int', size: 4, signed: true } as const;
/** printf 0: `%d %lu` of two u64 at offsets 0 and 8; printf 1: `%d` of one s32 at offset 0. */
const PROGRAM = {
  printfs: [
    { format: '%d %lu\n', argTypes: [u64, u64], offsets: [0, 8] },
    { format: '%d\n', argTypes: [i32], offsets: [0] },
  ],
} as unknown as CompiledProgram;

/** A ring-like Buffer holding one printf-0 record's arguments (a, b) at byte `at`. */
function record(a: bigint, b: bigint, at = 0): Buffer {
  const buf = Buffer.alloc(at + 16 + 8);
  buf.writeBigUInt64LE(a, at);
  buf.writeBigUInt64LE(b, at + 8);
  return buf;
}

function sinkOf(capacity: number): { q: EventQueue; sink: PrintfSink } {
  const q = new EventQueue(capacity);
  const sink = new PrintfSink(q);
  sink.bind(PROGRAM);
  return { q, sink };
}

const brief = (ev: TraceEvent): unknown =>
  ev.kind === 'printf' ? [ev.id, ...ev.values] : ev.kind === 'lost' ? ['lost', ev.source, ev.count] : [ev.kind];

describe('events queue: printf records kept undecoded', () => {
  it('keeps the order of printf records and other events, and their values and text', async () => {
    const { q, sink } = sinkOf(16);
    assert.equal(sink.raw(0, record(1n, 1099511627776n), 0), true);
    q.push({ kind: 'time', text: '12:00:00\n' });
    const s32 = Buffer.alloc(8);
    s32.writeInt32LE(-7, 0);
    assert.equal(sink.raw(1, s32, 0), true);
    q.end({ kind: 'exit', code: 0, reason: 'exit' });
    const got: TraceEvent[] = [];
    for (;;) {
      const r = await q.next();
      if (r.done) break;
      got.push(r.value);
    }
    assert.deepEqual(got.map(brief), [[0, 1n, 1099511627776n], ['time'], [1, -7], ['exit']]);
    const first = got[0]!;
    assert.ok(first.kind === 'printf');
    assert.equal(first.text(), '1 1099511627776\n');
    assert.deepEqual(Object.keys(first), ['id', 'values', 'kind']);
  });

  it('drops records that find the queue full, counts them, and reports the loss after the queued events', async () => {
    const { q, sink } = sinkOf(3);
    for (let i = 1n; i <= 5n; i++) sink.raw(0, record(i, i * 10n), 0);
    assert.equal(q.droppedTotal, 2);
    const r = await q.nextBatch();
    assert.equal(r.done, false);
    assert.deepEqual(r.value!.map(brief), [
      [0, 1n, 10n],
      [0, 2n, 20n],
      [0, 3n, 30n],
      ['lost', 'consumer', 2],
    ]);
    sink.raw(0, record(6n, 60n), 0);
    const r2 = await q.nextBatch();
    assert.deepEqual(r2.value!.map(brief), [[0, 6n, 60n]]);
  });

  it('gives at most 4096 events per batch, the rest in the next one', async () => {
    const { q, sink } = sinkOf(5000);
    for (let i = 0n; i < 5000n; i++) sink.raw(0, record(i, 0n), 0);
    const a = await q.nextBatch();
    const b = await q.nextBatch();
    assert.equal(a.value!.length, 4096);
    assert.equal(b.value!.length, 904);
    assert.deepEqual(brief(a.value![4095]!), [0, 4095n, 0n]);
    assert.deepEqual(brief(b.value![0]!), [0, 4096n, 0n]);
    assert.deepEqual(brief(b.value![903]!), [0, 4999n, 0n]);
  });

  it('copies records at unaligned addresses and from several source buffers', async () => {
    const { q, sink } = sinkOf(8);
    sink.raw(0, record(0x0102030405060708n, 42n, 3), 3);
    sink.raw(0, record(9n, 8n, 8), 8);
    sink.raw(0, record(7n, 6n, 1), 1);
    const r = await q.nextBatch();
    assert.deepEqual(r.value!.map(brief), [
      [0, 0x0102030405060708n, 42n],
      [0, 9n, 8n],
      [0, 7n, 6n],
    ]);
  });
});
