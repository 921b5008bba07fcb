/**
 * The ring buffer's wake control (runtime/ringbuf.ts `wakeControl`): the consumer keeps BPF_RB_NO_WAKEUP in an
 * mmapable ARRAY while it polls and 0 while it sleeps, and the programs pass that value as ringbuf_output's flags,
 * so producers only pay for a wakeup when somebody waits for one. Checked on the live kernel with PROG_TEST_RUN
 * producers; `nudge()` collects records committed without a wakeup while the consumer slept.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { BpfMap, MapFlags, MapType } from '../../src/bpf/map.js';
import type { LoadedProgram } from '../../src/bpf/program.js';
import { BPF_RB_NO_WAKEUP, RingBufConsumer } from '../../src/runtime/ringbuf.js';
import { outputProgram } from './ringbuf-programs.js';

const key0 = Buffer.alloc(4);

function send(p: LoadedProgram, v: bigint): void {
  const ctx = Buffer.alloc(8);
  ctx.writeBigUInt64LE(v);
  p.testRun({ ctxIn: ctx });
}

test('the wake flag is NO_WAKEUP while the consumer polls and 0 while it waits; nudge() finds silent records', async () => {
  const rb = BpfMap.create({ type: MapType.RINGBUF, keySize: 0, valueSize: 0, maxEntries: 16384, name: 'rb_wake' });
  const wake = BpfMap.create({
    type: MapType.ARRAY,
    keySize: 4,
    valueSize: 8,
    maxEntries: 1,
    name: 'rb_wake_ctl',
    flags: MapFlags.MMAPABLE,
  });
  const errs = BpfMap.create({ type: MapType.ARRAY, keySize: 4, valueSize: 8, maxEntries: 1, name: 'rb_wake_errs' });
  const loud = outputProgram(rb, errs);
  const silent = outputProgram(rb, errs, Number(BPF_RB_NO_WAKEUP));
  const flag = () => wake.lookup(key0)!.readBigUInt64LE(0);
  const seen: bigint[] = [];
  const flagsSeen: bigint[] = [];
  const c = new RingBufConsumer(
    rb,
    (d) => {
      seen.push(d.readBigUInt64LE(0));
      flagsSeen.push(flag());
    },
    { wakeControl: wake, keepAlive: true },
  );
  try {
    c.start();
    assert.equal(flag(), 0n, 'waiting: wake me');
    send(loud, 1n);
    for (let i = 0; i < 200 && seen.length < 1; i++) await sleep(5);
    assert.deepEqual(seen, [1n]);
    assert.equal(flagsSeen[0], BPF_RB_NO_WAKEUP, 'polling while delivering: no wakeups');
    assert.equal(c.stats.wakeups, 1);
    // idle for more than idlePolls (4) x 1 ms: back to waiting, asking for wakeups again
    for (let i = 0; i < 200 && flag() !== 0n; i++) await sleep(5);
    assert.equal(flag(), 0n);
    // a record committed without a wakeup while the consumer sleeps (the race the flag leaves open) waits for nudge()
    send(silent, 2n);
    await sleep(50);
    assert.deepEqual(seen, [1n]);
    c.nudge();
    for (let i = 0; i < 200 && seen.length < 2; i++) await sleep(5);
    assert.deepEqual(seen, [1n, 2n]);
  } finally {
    c.close();
    loud.close();
    silent.close();
    wake.close();
    errs.close();
    rb.close();
  }
});
