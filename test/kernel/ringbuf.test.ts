import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { BpfMap, MapType } from '../../src/bpf/map.js';
import { type LoadedProgram, loadProgram, ProgType } from '../../src/bpf/program.js';
import { BpfscopeError } from '../../src/errors.js';
import { openTracepoint } from '../../src/kernel/perf.js';
import { systemTracefs } from '../../src/kernel/tracefs.js';
import { RingBufConsumer } from '../../src/runtime/ringbuf.js';
import { outputProgram } from './ringbuf-programs.js';
import { repoRoot, runFixture } from './fixtures/run.js';
import {
  addImm,
  andImm,
  atomicFetchAddDw,
  call,
  exit,
  H,
  ja,
  jeqImm,
  jneImm,
  ldMapFd,
  ldxDw,
  loadedIds,
  movImm,
  movReg,
  prog,
  rshImm,
  stW,
  stxDw,
} from './raw-insns.js';

const key0 = Buffer.alloc(4);

/**
 * raw_tp program: p = ringbuf_reserve(rb, 16, 0); p[0] = ctx[0]; p[1] = ctx[1]; discard when ctx[0] is odd, else
 * submit. 24-byte records (16 + 8 header) regularly straddle the end of a 4 KiB ring.
 */
function reserveProgram(rb: BpfMap): LoadedProgram {
  return loadProgram({
    type: ProgType.RAW_TRACEPOINT,
    name: 'rb_reserve',
    insns: prog(
      movReg(6, 1), // 0
      ldMapFd(1, rb.fd), // 1-2
      movImm(2, 16), // 3
      movImm(3, 0), // 4
      call(H.ringbufReserve), // 5
      jneImm(0, 0, 2), // 6: -> 9
      movImm(0, 0), // 7
      exit(), // 8
      movReg(7, 0), // 9
      ldxDw(1, 6, 0), // 10
      stxDw(7, 0, 1), // 11
      ldxDw(2, 6, 8), // 12
      stxDw(7, 8, 2), // 13
      andImm(1, 1), // 14
      jeqImm(1, 0, 4), // 15: even -> 20
      movReg(1, 7), // 16
      movImm(2, 0), // 17
      call(H.ringbufDiscard), // 18
      ja(3), // 19: -> 23
      movReg(1, 7), // 20
      movImm(2, 0), // 21
      call(H.ringbufSubmit), // 22
      movImm(0, 0), // 23
      exit(), // 24
    ),
  });
}

function run(p: LoadedProgram, ...args: bigint[]): void {
  const ctx = Buffer.alloc(8 * Math.max(1, args.length));
  args.forEach((a, i) => ctx.writeBigUInt64LE(a, i * 8));
  p.testRun({ ctxIn: ctx });
}

test('drain() delivers exactly N records with their payloads, in order', () => {
  const rb = BpfMap.create({ type: MapType.RINGBUF, keySize: 0, valueSize: 0, maxEntries: 16384, name: 'rb_exact' });
  const errs = BpfMap.create({ type: MapType.ARRAY, keySize: 4, valueSize: 8, maxEntries: 1, name: 'rb_errs' });
  const p = outputProgram(rb, errs);
  const got: bigint[] = [];
  const c = new RingBufConsumer(rb, (d) => {
    assert.equal(d.length, 8);
    got.push(d.readBigUInt64LE(0));
  });
  try {
    const N = 200;
    for (let i = 0; i < N; i++) run(p, 1000n + BigInt(i));
    assert.equal(c.pending(), N * 16);
    assert.equal(c.drain(), N);
    assert.deepEqual(
      got,
      Array.from({ length: N }, (_, i) => 1000n + BigInt(i)),
    );
    assert.equal(c.pending(), 0);
    assert.equal(c.drain(), 0);
    assert.equal(errs.lookup(key0)!.readBigUInt64LE(), 0n);
  } finally {
    c.close();
    p.close();
    rb.close();
    errs.close();
  }
});

test('rawRecord delivers offsets into the ring instead of per-record Buffers', () => {
  const rb = BpfMap.create({ type: MapType.RINGBUF, keySize: 0, valueSize: 0, maxEntries: 4096, name: 'rb_raw' });
  const errs = BpfMap.create({ type: MapType.ARRAY, keySize: 4, valueSize: 8, maxEntries: 1, name: 'rb_errs' });
  const p = outputProgram(rb, errs);
  const got: bigint[] = [];
  const c = new RingBufConsumer(rb, () => assert.fail('record callback used'), {
    rawRecord: (ring, off, len) => {
      assert.equal(len, 8);
      got.push(ring.readBigUInt64LE(off));
    },
  });
  try {
    // 3 rounds of 200 16-byte records through a 4 KiB ring: offsets wrap around.
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 200; i++) run(p, BigInt(round * 200 + i));
      assert.equal(c.drain(), 200);
    }
    assert.deepEqual(
      got,
      Array.from({ length: 600 }, (_, i) => BigInt(i)),
    );
  } finally {
    c.close();
    p.close();
    rb.close();
    errs.close();
  }
});

test(
  'batchLimit: a background poll delivers at most the limit; the rest follow without waiting a poll interval',
  { timeout: 60_000 },
  async () => {
    const rb = BpfMap.create({ type: MapType.RINGBUF, keySize: 0, valueSize: 0, maxEntries: 16384, name: 'rb_limit' });
    const errs = BpfMap.create({ type: MapType.ARRAY, keySize: 4, valueSize: 8, maxEntries: 1, name: 'rb_errs' });
    const p = outputProgram(rb, errs);
    const got: bigint[] = [];
    const perPoll: number[] = [];
    let inPoll = 0;
    let done: () => void = () => {};
    const all = new Promise<void>((resolve) => (done = resolve));
    const N = 95;
    // a poll interval far beyond the test's timeout: only the at-once continuation after a cut-short poll can deliver
    // the records beyond the first batch
    const c = new RingBufConsumer(rb, (d) => got.push(d.readBigUInt64LE(0)), {
      pollIntervalMs: 3_600_000,
      keepAlive: true,
      batchLimit: () => 10,
      onBatch: () => {
        perPoll.push(got.length - inPoll);
        inPoll = got.length;
        if (got.length === N) done();
      },
    });
    try {
      for (let i = 0; i < N; i++) run(p, BigInt(i));
      assert.equal(c.drain(0), 0, 'a limit of 0 delivers nothing');
      assert.equal(c.pending(), N * 16);
      c.start();
      await all;
      assert.deepEqual(
        got,
        Array.from({ length: N }, (_, i) => BigInt(i)),
      );
      assert.deepEqual(perPoll, [10, 10, 10, 10, 10, 10, 10, 10, 10, 5]);
    } finally {
      c.close();
      p.close();
      rb.close();
      errs.close();
    }
  },
);

test('a burst larger than the ring: the program sees the drops, the consumer gets the rest', () => {
  const rb = BpfMap.create({ type: MapType.RINGBUF, keySize: 0, valueSize: 0, maxEntries: 4096, name: 'rb_burst' });
  const errs = BpfMap.create({ type: MapType.ARRAY, keySize: 4, valueSize: 8, maxEntries: 1, name: 'rb_errs' });
  const p = outputProgram(rb, errs);
  const got: bigint[] = [];
  const c = new RingBufConsumer(rb, (d) => got.push(d.readBigUInt64LE(0)));
  try {
    for (let i = 0; i < 1000; i++) run(p, BigInt(i));
    c.drain();
    const dropped = Number(errs.lookup(key0)!.readBigUInt64LE());
    // 16-byte records; the kernel keeps one byte free, so 4096 / 16 - 1 fit.
    assert.equal(got.length, 255);
    assert.equal(dropped, 745);
    assert.deepEqual(
      got,
      Array.from({ length: 255 }, (_, i) => BigInt(i)),
    );
    // Space is back after the drain.
    for (let i = 0; i < 10; i++) run(p, 5000n + BigInt(i));
    got.length = 0;
    assert.equal(c.drain(), 10);
    assert.equal(got[9], 5009n);
  } finally {
    c.close();
    p.close();
    rb.close();
    errs.close();
  }
});

test('records that wrap around the ring end arrive whole; discarded records are skipped', () => {
  const rb = BpfMap.create({ type: MapType.RINGBUF, keySize: 0, valueSize: 0, maxEntries: 4096, name: 'rb_wrap' });
  const p = reserveProgram(rb);
  const got: string[] = [];
  const c = new RingBufConsumer(rb, (d) => got.push(`${d.readBigUInt64LE(0)}:${d.readBigUInt64LE(8)}`));
  try {
    const expect: string[] = [];
    for (let round = 0; round < 10; round++) {
      for (let i = 0; i < 100; i++) {
        const v = BigInt(round * 100 + i);
        run(p, v, v * 3n + 1n);
        if (v % 2n === 0n) expect.push(`${v}:${v * 3n + 1n}`);
      }
      assert.equal(c.drain(), 50);
    }
    assert.deepEqual(got, expect);
    assert.equal(c.stats.discarded, 500);
    assert.equal(c.stats.records, 500);
  } finally {
    c.close();
    p.close();
    rb.close();
  }
});

/**
 * Tracepoint program on syscalls:sys_enter_getppid, for this process only: seq = atomic fetch-add on seq[0];
 * ringbuf_output(&seq, 8).
 */
function getppidSequencer(rb: BpfMap, seq: BpfMap): LoadedProgram {
  return loadProgram({
    type: ProgType.TRACEPOINT,
    name: 'rb_getppid',
    insns: prog(
      call(H.getCurrentPidTgid), // 0
      rshImm(0, 32), // 1
      jneImm(0, process.pid, 17), // 2: -> 20
      stW(10, -4, 0), // 3
      ldMapFd(1, seq.fd), // 4-5
      movReg(2, 10), // 6
      addImm(2, -4), // 7
      call(H.mapLookupElem), // 8
      jeqImm(0, 0, 10), // 9: -> 20
      movImm(1, 1), // 10
      atomicFetchAddDw(0, 0, 1), // 11: r1 = old value
      stxDw(10, -16, 1), // 12
      ldMapFd(1, rb.fd), // 13-14
      movReg(2, 10), // 15
      addImm(2, -16), // 16
      movImm(3, 8), // 17
      movImm(4, 0), // 18
      call(H.ringbufOutput), // 19
      movImm(0, 0), // 20
      exit(), // 21
    ),
  });
}

for (const waiter of ['uv', 'thread'] as const) {
  test(`start() (${waiter} waiter): records from a live tracepoint arrive in the background, in order`, async () => {
    const rb = BpfMap.create({ type: MapType.RINGBUF, keySize: 0, valueSize: 0, maxEntries: 65536, name: 'rb_live' });
    const seq = BpfMap.create({ type: MapType.ARRAY, keySize: 4, valueSize: 8, maxEntries: 1, name: 'rb_seq' });
    const p = getppidSequencer(rb, seq);
    const ev = openTracepoint(systemTracefs().eventId('syscalls', 'sys_enter_getppid'));
    const got: bigint[] = [];
    const c = new RingBufConsumer(rb, (d) => got.push(d.readBigUInt64LE(0)), { waiter });
    try {
      ev.attach(p.fd);
      c.start();
      assert.equal(c.waiter, waiter);
      const N = 3000;
      // Bursts separated by idle gaps long enough for the consumer to go back to waiting.
      for (let burst = 0; burst < 3; burst++) {
        for (let i = 0; i < N / 3; i++) void process.ppid;
        await new Promise((r) => setTimeout(r, 60));
      }
      const deadline = Date.now() + 5000;
      while (got.length < N && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      assert.equal(got.length, N);
      assert.deepEqual(
        got,
        Array.from({ length: N }, (_, i) => BigInt(i)),
      );
      assert.ok(c.stats.wakeups >= 3, `wakeups ${c.stats.wakeups}`);
    } finally {
      ev.close();
      c.close();
      p.close();
      rb.close();
      seq.close();
    }
  });
}

test('close() inside the record callback stops delivery safely', async () => {
  const rb = BpfMap.create({ type: MapType.RINGBUF, keySize: 0, valueSize: 0, maxEntries: 16384, name: 'rb_cclose' });
  const errs = BpfMap.create({ type: MapType.ARRAY, keySize: 4, valueSize: 8, maxEntries: 1, name: 'rb_errs' });
  const p = outputProgram(rb, errs);
  let seen = 0;
  const c = new RingBufConsumer(rb, () => {
    seen++;
    if (seen === 10) c.close();
  });
  try {
    for (let i = 0; i < 100; i++) run(p, BigInt(i));
    c.start(); // drains at once: stops at the 10th record
    assert.equal(seen, 10);
    assert.equal(c.closed, true);
    assert.equal(c.drain(), 0);
    assert.equal(c.pending(), 0);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(seen, 10);
  } finally {
    c.close();
    p.close();
    rb.close();
    errs.close();
  }
});

test('callback errors in background consumption go to onError', async () => {
  const rb = BpfMap.create({ type: MapType.RINGBUF, keySize: 0, valueSize: 0, maxEntries: 16384, name: 'rb_err' });
  const errs = BpfMap.create({ type: MapType.ARRAY, keySize: 4, valueSize: 8, maxEntries: 1, name: 'rb_errs' });
  const p = outputProgram(rb, errs);
  const errors: unknown[] = [];
  const got: bigint[] = [];
  const c = new RingBufConsumer(
    rb,
    (d) => {
      const v = d.readBigUInt64LE(0);
      if (v === 3n) throw new Error('boom');
      got.push(v);
    },
    { onError: (e) => errors.push(e) },
  );
  try {
    c.start();
    for (let i = 0; i < 6; i++) run(p, BigInt(i));
    const deadline = Date.now() + 3000;
    while (got.length < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    assert.deepEqual(got, [0n, 1n, 2n, 4n, 5n]);
    assert.equal(errors.length, 1);
    assert.equal((errors[0] as Error).message, 'boom');
  } finally {
    c.close();
    p.close();
    rb.close();
    errs.close();
  }
});

function bpfMappings(): string[] {
  return readFileSync('/proc/self/maps', 'utf8')
    .split('\n')
    .filter((l) => l.includes('anon_inode:bpf-map'));
}

test('after close() nothing is left: no mappings, and bpftool lists neither map nor program', async () => {
  const before = bpfMappings().length;
  const rb = BpfMap.create({ type: MapType.RINGBUF, keySize: 0, valueSize: 0, maxEntries: 8192, name: 'rb_leak' });
  const errs = BpfMap.create({ type: MapType.ARRAY, keySize: 4, valueSize: 8, maxEntries: 1, name: 'rb_errs' });
  const p = outputProgram(rb, errs);
  const c = new RingBufConsumer(rb, () => {}, { waiter: 'thread' });
  c.start();
  assert.equal(bpfMappings().length, before + 2);
  const ids = { rb: rb.info().id, errs: errs.info().id, prog: p.info().id };
  c.close();
  p.close();
  rb.close();
  errs.close();
  assert.equal(bpfMappings().length, before);
  // The program releases its maps after an RCU grace period: allow the kernel a moment.
  const gone = () => {
    const now = loadedIds();
    return !now.maps.has(ids.rb) && !now.maps.has(ids.errs) && !now.progs.has(ids.prog);
  };
  const deadline = Date.now() + 3000;
  while (!gone() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const now = loadedIds();
  assert.equal(now.progs.has(ids.prog), false);
  assert.equal(now.maps.has(ids.rb), false);
  assert.equal(now.maps.has(ids.errs), false);
});

for (const waiter of ['uv', 'thread'] as const) {
  test(`an idle consumer does not keep Node alive; process.exit() is not held up (${waiter})`, () => {
    const idle = runFixture('ringbuf-exit', [waiter, 'idle', '100']);
    assert.equal(idle.code, 0, idle.stderr);
    const a = JSON.parse(idle.stdout);
    assert.equal(a.waiter, waiter);
    // uv: the poll handle is unref'd, exit at once; thread: after the pending bounded wait (100 ms). Generous
    // bounds for a loaded machine: a consumer that held the loop would never exit (the fixture times out).
    assert.ok(a.startToExitMs < (waiter === 'uv' ? 500 : 1000), idle.stdout);
    // A 10 s wait in flight must not delay process.exit() (the exit hook wakes the thread).
    const ex = runFixture('ringbuf-exit', [waiter, 'exit', '10000']);
    assert.equal(ex.code, 0, ex.stderr);
    assert.ok(ex.ms < 8000, `took ${ex.ms} ms`);
    // keepAlive holds the process until close().
    const keep = runFixture('ringbuf-exit', [waiter, 'keep', '10000']);
    assert.equal(keep.code, 0, keep.stderr);
    const k = JSON.parse(keep.stdout);
    assert.ok(k.startToExitMs >= 290 && k.startToExitMs < 2000, keep.stdout);
  });

  test(`close() from a SIGTERM handler lets the process end (${waiter})`, async () => {
    const fromSource = import.meta.url.endsWith('.ts');
    const file = join(
      repoRoot,
      fromSource ? 'test' : 'dist/test',
      'kernel/fixtures',
      `ringbuf-signal.${fromSource ? 'ts' : 'js'}`,
    );
    const child = spawn(process.execPath, [...(fromSource ? ['--import', 'tsx'] : []), file, waiter], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stderr.on('data', (d) => {
      err += d;
    });
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    await new Promise<void>((resolve) =>
      child.stdout.on('data', (d) => {
        out += d;
        if (out.includes('ready')) resolve();
      }),
    );
    await new Promise((r) => setTimeout(r, 100));
    const t0 = performance.now();
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15000);
    const code = await exited;
    clearTimeout(timer);
    assert.equal(code, 0, err);
    assert.match(out, /closed/);
    assert.ok(performance.now() - t0 < 5000, `exit took ${performance.now() - t0} ms`);
  });
}

test('ring sizes that are not a power-of-2 multiple of the page are refused before mmap', () => {
  for (const maxEntries of [0, 3000, 4096 * 3]) {
    assert.throws(
      () => new RingBufConsumer({ fd: -1, maxEntries }, () => {}),
      (e: unknown) => e instanceof BpfscopeError && /power-of-2/.test(e.message),
    );
  }
});
