#!/usr/bin/env node
/**
 * The typed API's reader alone, without the kernel (issue 13): CPU per event of decoding integer-only printf records
 * (`printf("%d %d\n", tid, nsecs)`: two u64 arguments) from a ring-buffer-like Buffer into events and reading them
 * through the events queue with `for await` (events()) or per batch (batches()). The producer pushes as many
 * records per macrotask as the queue has room for, as the session does (RingBufOptions.batchLimit). CPU time is
 * this process's user+system time, which the machine's other load disturbs far less than wall time: the figure to
 * compare between builds. Not a test. Usage: node bench/api/reader.mjs [--events N] [--rounds R] [--root DIR]
 * (DIR: a checkout whose dist/ to measure, default this one).
 */
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../lib/env.mjs';

const argv = process.argv.slice(2);
const opt = (name, dflt) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const N = Number(opt('--events', 2_000_000));
const rounds = Number(opt('--rounds', 3));
const root = opt('--root', ROOT);
const { EventQueue, PrintfSink } = await import(pathToFileURL(join(root, 'dist', 'src', 'api', 'events.js')).href);

/** 4096 records of 32 bytes as the ring holds them: 8-byte header, action and id, then the two u64 arguments. */
const RECORDS = 4096;
const ring = Buffer.from(new ArrayBuffer(RECORDS * 32));
for (let i = 0; i < RECORDS; i++) {
  ring.writeBigUInt64LE(BigInt(i), i * 32 + 16);
  ring.writeBigUInt64LE(123456789012n + BigInt(i), i * 32 + 24);
}
const u64 = { kind: 'int', size: 8, signed: false };

async function once(mode) {
  const q = new EventQueue(65536);
  const sink = new PrintfSink(q);
  sink.bind({ printfs: [{ format: '%d %d\n', argTypes: [u64, u64], offsets: [0, 8] }] });
  let produced = 0;
  const produce = () => {
    // builds without EventQueue.room(): the same rule from its fields
    const room = q.room ? q.room() : q.capacity - q.size;
    const n = Math.min(room, RECORDS, N - produced);
    for (let i = 0; i < n; i++) sink.raw(0, ring, i * 32 + 16);
    produced += n;
    if (produced < N) setImmediate(produce);
    else q.end({ kind: 'exit', code: 0, reason: 'exit' });
  };
  const c0 = process.cpuUsage();
  setImmediate(produce);
  let n = 0;
  let sum = 0n;
  const iterate = (next) => ({ [Symbol.asyncIterator]: () => ({ next }) });
  if (mode === 'batches') {
    for await (const b of iterate(() => q.nextBatch()))
      for (const ev of b)
        if (ev.kind === 'printf') {
          n++;
          sum += ev.values[0];
        }
  } else {
    for await (const ev of iterate(() => q.next()))
      if (ev.kind === 'printf') {
        n++;
        sum += ev.values[0];
      }
  }
  const c = process.cpuUsage(c0);
  if (n !== N || q.droppedTotal !== 0 || sum === 0n)
    throw new Error(`read ${n} of ${N} events, ${q.droppedTotal} dropped`);
  return ((c.user + c.system) * 1000) / n;
}

const load0 = loadavg()[0];
const out = { events: [], batches: [] };
for (let r = 0; r < rounds; r++) for (const mode of ['events', 'batches']) out[mode].push(await once(mode));
const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
console.log(
  `${root}: load ${load0.toFixed(1)}, ${N} events x ${rounds} rounds, reader CPU ns/event (median; all): ` +
    `events() ${med(out.events).toFixed(0)} (${out.events.map((x) => x.toFixed(0)).join(' ')}), ` +
    `batches() ${med(out.batches).toFixed(0)} (${out.batches.map((x) => x.toFixed(0)).join(' ')})`,
);
