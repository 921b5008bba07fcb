/** The typed API's pure parts: value conversion, TraceMap key equality, the bounded event queue, error classes. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EventQueue, type TraceEvent } from '../../src/api/events.js';
import { aggToJs, TraceMap, toJs } from '../../src/api/values.js';
import { KernelError, PermissionError } from '../../src/errors.js';
import { VerifierError } from '../../src/kernel/bpf.js';
import { ProgramRejected } from '../../src/runtime/loader.js';

describe('typed values', () => {
  it('integers by storage size, strings, buf() bytes, tuples, records, stacks as frames', () => {
    assert.equal(toJs({ kind: 'int', value: 5n, signed: false, size: 8 }), 5n);
    assert.equal(toJs({ kind: 'int', value: -3n, signed: true, size: 4 }), -3);
    assert.equal(toJs({ kind: 'bool', value: true }), true);
    assert.deepEqual(toJs({ kind: 'string', value: '\\x01A', raw: Buffer.from([1, 65]) }), new Uint8Array([1, 65]));
    assert.deepEqual(
      toJs({
        kind: 'tuple',
        elems: [
          { kind: 'string', value: 'x' },
          { kind: 'int', value: 1n, signed: true, size: 8 },
        ],
      }),
      ['x', 1n],
    );
    assert.deepEqual(
      toJs({ kind: 'record', fields: [{ name: 'a', value: { kind: 'int', value: 2n, signed: true, size: 2 } }] }),
      { a: 2 },
    );
    assert.deepEqual(
      toJs(
        { kind: 'string', value: '\n        f1+4\n        f2+8\n' },
        { kind: 'kstack', limit: 127, mode: 'bpftrace' },
      ),
      { stack: 'kernel', frames: ['f1+4', 'f2+8'] },
    );
    assert.equal(toJs({ kind: 'none' }), null);
  });

  it('aggregations: bigint scalars, avg/stats with a truncated average, hist buckets [2^k, 2^(k+1))', () => {
    assert.equal(aggToJs({ kind: 'count', value: 7n, signed: false }), 7n);
    assert.deepEqual(aggToJs({ kind: 'avg', count: 3n, total: -10n, signed: true }), {
      kind: 'avg',
      count: 3n,
      total: -10n,
      average: -3n,
    });
    assert.deepEqual(aggToJs({ kind: 'stats', count: 0n, total: 0n, signed: false }), {
      kind: 'stats',
      count: 0n,
      total: 0n,
      average: 0n,
    });
    // bpftrace's bucket indexes: 0 negative, 1 [0,1), 2 [1,2), 3 [2,4), k+2 [2^k, 2^(k+1))
    const h = aggToJs({
      kind: 'hist',
      bits: 0,
      buckets: new Map([
        [13, 4n],
        [0, 1n],
        [1, 2n],
        [3, 0n],
      ]),
    });
    assert.deepEqual(h, {
      kind: 'hist',
      bits: 0,
      buckets: [
        { low: null, high: 0n, count: 1n },
        { low: 0n, high: 1n, count: 2n },
        { low: 2048n, high: 4096n, count: 4n },
      ],
    });
    const l = aggToJs({
      kind: 'lhist',
      min: 10,
      max: 20,
      step: 5,
      buckets: new Map([
        [0, 1n],
        [2, 2n],
        [3, 3n],
      ]),
    });
    assert.deepEqual(l, {
      kind: 'lhist',
      min: 10,
      max: 20,
      step: 5,
      buckets: [
        { low: null, high: 10n, count: 1n },
        { low: 15n, high: 20n, count: 2n },
        { low: 20n, high: null, count: 3n },
      ],
    });
  });

  it('TraceMap compares tuple keys by value, keeps number and bigint apart', () => {
    const m = new TraceMap<[bigint, string], bigint>('@m', 2, [
      [[1n, 'a'], 10n],
      [[2n, 'b'], 20n],
    ]);
    assert.equal(m.get([1n, 'a']), 10n);
    assert.equal(m.has([2n, 'b']), true);
    assert.equal((m as unknown as TraceMap).has([2, 'b']), false);
    m.set([1n, 'a'], 11n);
    assert.equal(m.size, 2);
    assert.equal(m.get([1n, 'a']), 11n);
    assert.equal(m.delete([2n, 'b']), true);
    assert.deepEqual([...m], [[[1n, 'a'], 11n]]);
    const s = new TraceMap<string, bigint>('@s', 1, [['x', 1n]]);
    assert.equal(s.get('x'), 1n);
  });
});

describe('EventQueue', () => {
  const ev = (n: number) => ({ kind: 'time' as const, text: String(n) });
  const drain = async (q: EventQueue) => {
    const out: string[] = [];
    for (;;) {
      const r = await q.next();
      if (r.done) return out;
      const e = r.value;
      out.push(e.kind === 'time' ? e.text : e.kind === 'lost' ? `lost ${e.count}` : e.kind);
    }
  };

  const drain2 = async (q: EventQueue) => {
    const out: string[] = [];
    for (let i = 0; i < 2; i++) {
      const e = (await q.next()).value!;
      out.push(e.kind === 'time' ? e.text : e.kind === 'lost' ? `lost ${e.count}` : e.kind);
    }
    return out;
  };

  it('holds at most capacity events; the dropped ones are one lost event in their place', async () => {
    const q = new EventQueue(3);
    for (let i = 1; i <= 7; i++) q.push(ev(i));
    assert.equal((await q.next()).value?.kind, 'time'); // frees room for the loss notice and one event
    q.push(ev(8));
    q.push(ev(9)); // full again (2, 3, lost 4, 8): dropped
    q.end({ kind: 'exit', code: 0, reason: 'exit' });
    q.push(ev(10)); // after the end: ignored
    assert.deepEqual(await drain(q), ['2', '3', 'lost 4', '8', 'lost 1', 'exit']);
    assert.equal(q.droppedTotal, 5);
  });

  it('a waiting reader gets the next event at once; end() with a failure rejects after the last event', async () => {
    const q = new EventQueue(2);
    const p = q.next();
    q.push(ev(1));
    assert.deepEqual((await p).value, ev(1));
    const failure = new RangeError('x');
    q.end({ kind: 'exit', code: 0, reason: 'stopped' }, failure);
    assert.equal((await q.next()).value?.kind, 'exit');
    await assert.rejects(q.next(), RangeError);
    assert.equal((await q.next()).done, true);
  });

  it('a reader that drained the queue gets the loss notice at once', async () => {
    const q = new EventQueue(1);
    q.push(ev(1));
    q.push(ev(2));
    assert.deepEqual(await drain2(q), ['1', 'lost 1']);
  });

  it('nextBatch(): everything queued at once, then a loss notice; a waiting reader gets a whole producer run', async () => {
    const q = new EventQueue(2);
    for (let i = 1; i <= 4; i++) q.push(ev(i));
    const b = (await q.nextBatch()).value!;
    assert.deepEqual(
      b.map((e: TraceEvent) => (e.kind === 'lost' ? `lost ${e.count}` : e.kind)),
      ['time', 'time', 'lost 2'],
    );
    const p = q.nextBatch();
    q.push(ev(5));
    q.push(ev(6));
    assert.equal((await p).value!.length, 2);
    q.end({ kind: 'exit', code: 0, reason: 'exit' });
    assert.equal((await q.nextBatch()).value![0]!.kind, 'exit');
    assert.equal((await q.nextBatch()).done, true);
  });

  it('discard() ends a waiting reader', async () => {
    const q = new EventQueue(2);
    const p = q.next();
    q.discard();
    assert.equal((await p).done, true);
  });
});

describe('error classes', () => {
  it('PermissionError, VerifierError and ProgramRejected are KernelErrors with errno (and the verifier log)', () => {
    const p = new PermissionError('bpf(BPF_MAP_CREATE)', 1, 'no');
    assert.ok(p instanceof KernelError);
    assert.equal(p.name, 'PermissionError');
    const v = new VerifierError(13, 'line1\nR1 invalid mem access\n', 'prog');
    assert.ok(v instanceof KernelError);
    assert.equal(v.errno, 13);
    assert.equal(v.verifierLog, 'line1\nR1 invalid mem access\n');
    const r = new ProgramRejected('rejected', undefined, ['tail'], 'full log', 22);
    assert.ok(r instanceof KernelError);
    assert.equal(r.errno, 22);
    assert.equal(r.verifierLog, 'full log');
    assert.equal(r.syscall, 'bpf(BPF_PROG_LOAD)');
  });
});
