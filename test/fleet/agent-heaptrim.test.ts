/**
 * The agent's malloc trimming (src/fleet/agent/heaptrim.ts, kernel/ffi.ts mallocTrim/mallocFreeBytes): when it
 * trims (fake free-byte readings), and that a trim on this machine's glibc gives freed heap pages back (a child node
 * frees ~20 MB of 10,000-byte buffers kept below a live one, so glibc cannot return them by itself; the main
 * arena's resident size, `[heap]` in /proc/self/smaps, is read before and after); and that a check collects garbage
 * first where `--expose-gc` gives it (as the installed agent's node is started): buffers no longer referenced but not
 * collected yet are freed and their pages given back by one check.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe as suite, test } from 'node:test';
import { HeapTrimmer } from '../../src/fleet/agent/heaptrim.js';

const MiB = 1 << 20;

/**
 * Runs `body` in a child node with `--expose-gc` after `imports`, where `heapKb()` reads the main arena's resident
 * kB and ~20 MB of 10,000-byte buffers were allocated below a live one (`keep`) and dropped; returns its JSON line.
 */
function inChild(imports: string, body: string): unknown {
  const script = `
      import { readFileSync } from 'node:fs';
      ${imports}
      const heapKb = () => {
        const s = readFileSync('/proc/self/smaps', 'utf8');
        const at = s.indexOf('[heap]');
        return at < 0 ? 0 : Number(/Rss:\\s+(\\d+)/.exec(s.slice(at))[1]);
      };
      let bufs = [];
      for (let i = 0; i < 2000; i++) bufs.push(Buffer.allocUnsafeSlow(10000).fill(1));
      const keep = Buffer.allocUnsafeSlow(10000).fill(2);
      bufs = null;
      ${body}`;
  const r = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

suite('agent heap trimming', () => {
  test('trims after each check while the free bytes reach the threshold', () => {
    const readings = [0.5 * MiB, 1 * MiB, 20 * MiB, 20 * MiB, 0.9 * MiB];
    let i = 0;
    let trims = 0;
    const t = new HeapTrimmer({
      thresholdBytes: 1 * MiB,
      freeBytes: () => readings[i++],
      trim: () => ++trims > 0,
    });
    assert.deepEqual(
      readings.map(() => t.check()),
      [false, true, true, true, false],
    );
    assert.equal(trims, 3);
    assert.equal(t.trims, 3);
  });

  test('collects garbage before counting the free bytes, when the heap grew by 2 MiB since the last collection', () => {
    const calls: string[] = [];
    // V8's heap + buffers as read before each check (and once more right after a collection)
    const heap = [1 * MiB, 0.5 * MiB, 2 * MiB, 2.5 * MiB, 4.4 * MiB, 4.6 * MiB, 3 * MiB];
    let h = 0;
    const t = new HeapTrimmer({
      collect: () => void calls.push('collect'),
      heapBytes: () => heap[h++]!,
      freeBytes: () => (calls.push('free'), 2 * MiB),
      trim: () => (calls.push('trim'), true),
    });
    for (let i = 0; i < 4; i++) assert.equal(t.check(), true);
    // checks 1-2 read 1 and 0.5 MiB (< 2 MiB since start: no collection); check 3 reads 2 MiB: collects, and 2.5
    // MiB after it; check 4 reads 4.4 (1.9 MiB more: none); check 5 reads 4.6 (2.1 MiB more): collects
    assert.deepEqual(calls, ['free', 'trim', 'free', 'trim', 'collect', 'free', 'trim', 'free', 'trim']);
    assert.equal(t.collections, 1);
    assert.equal(t.check(), true);
    assert.equal(t.collections, 2);
  });

  test('never trims where mallinfo2 is missing', () => {
    let trims = 0;
    const t = new HeapTrimmer({ freeBytes: () => undefined, trim: () => ++trims > 0 });
    assert.equal(t.check(), false);
    assert.equal(trims, 0);
  });

  test('mallocTrim gives freed malloc pages back to the kernel', () => {
    const ffi = fileURLToPath(new URL('../../src/kernel/ffi.js', import.meta.url));
    const m = inChild(
      `const { mallocFreeBytes, mallocTrim } = await import(${JSON.stringify(ffi)});`,
      `for (let i = 0; i < 3; i++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 50)); }
      const before = heapKb(), free = mallocFreeBytes();
      const released = mallocTrim();
      console.log(JSON.stringify({ before, after: heapKb(), free, released, keep: keep[0] }));`,
    ) as { before: number; after: number; free: number; released: boolean };
    assert.ok(m.free >= 15 * MiB, `the freed buffers are free malloc bytes: ${m.free}`);
    assert.ok(m.before >= 15 * 1024, `[heap] holds them before the trim: ${m.before} kB`);
    assert.equal(m.released, true);
    assert.ok(m.before - m.after >= 15 * 1024, `[heap] ${m.before} kB -> ${m.after} kB after the trim`);
  });

  test('with --expose-gc, one check frees unreferenced buffers and gives their pages back', () => {
    const heaptrim = fileURLToPath(new URL('../../src/fleet/agent/heaptrim.js', import.meta.url));
    const m = inChild(
      `const { HeapTrimmer } = await import(${JSON.stringify(heaptrim)});`,
      `const before = heapKb();
      const trimmed = new HeapTrimmer().check();
      console.log(JSON.stringify({ before, after: heapKb(), trimmed, keep: keep[0] }));`,
    ) as { before: number; after: number; trimmed: boolean };
    assert.ok(m.before >= 15 * 1024, `[heap] holds the unreferenced buffers before the check: ${m.before} kB`);
    assert.equal(m.trimmed, true);
    assert.ok(m.before - m.after >= 15 * 1024, `[heap] ${m.before} kB -> ${m.after} kB after one check`);
  });
});
