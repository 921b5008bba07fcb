/**
 * runqlen's `--json` and `runTool('runqlen', ...)` (docs/tools/runqlen.md, "JSON AND API") on the live kernel, with
 * three spinning processes pinned to one CPU, as runqlen.test.ts does for the text output: that CPU's run queue
 * holds the two that are not running at every sample, so nearly all of its samples see a queue of 2 or more.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, describe, it } from 'node:test';
import { runTool } from '../../src/index.js';
import { onlineCpus } from '../../src/kernel/cpus.js';
import type { RunqlenInterval } from '../../src/tools/runqlen.js';
import { startPinnedSpinners } from '../helpers/workload.js';
import { liveSkipReason, runBpfscope } from './helpers.js';
import { jsonLines } from './jsonrun.js';

const N = 3;

describe('runqlen --json and runTool on the live kernel', () => {
  const skip = liveSkipReason();
  const spinners: ChildProcess[] = [];
  const cpus = skip ? [0] : onlineCpus();
  const cpu = cpus[cpus.length - 1]!;
  after(() => {
    for (const c of spinners) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  });

  /** Start N spinners pinned to `cpu` (once); resolves once each one's affinity is that CPU alone. */
  async function spinning(): Promise<void> {
    if (spinners.length) return;
    await startPinnedSpinners('bpfs_rqlj', cpu, N, spinners);
  }

  /** Samples of one histogram, and those that saw at least N - 1 tasks waiting. */
  function queued(counts: readonly (bigint | number)[]): { samples: number; queued: number } {
    let samples = 0;
    let q = 0;
    counts.forEach((n, len) => {
      samples += Number(n);
      if (len >= N - 1) q += Number(n);
    });
    return { samples, queued: q };
  }

  it(
    `runTool -C 1 1: one interval, a histogram per CPU, queue >= ${N - 1} on the spinners' CPU`,
    { skip },
    async () => {
      await spinning();
      const run = await runTool('runqlen', ['-C', '1', '1']);
      const ticks: RunqlenInterval[] = [];
      for await (const t of run.intervals()) ticks.push(t);
      assert.equal(await run.done, 0);
      assert.equal(ticks.length, 1);
      const t = ticks[0]!;
      assert.match(t.time, /^\d\d:\d\d:\d\d$/);
      assert.equal(t.occupancy, null);
      // -C: one histogram per CPU, by CPU, each with its cpu number; counts are bigints
      assert.deepEqual(
        t.histograms.map((h) => h.cpu),
        [...t.histograms.map((h) => h.cpu!)].sort((a, b) => a - b),
      );
      const h = t.histograms.find((x) => x.cpu === cpu);
      assert.ok(
        h,
        JSON.stringify(t, (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v)),
      );
      assert.ok(h.counts.every((n) => typeof n === 'bigint'));
      // the histogram runs from 0 to the longest queue seen: its last count is not zero
      assert.notEqual(h.counts.at(-1), 0n);
      const s = queued(h.counts);
      // 99 Hz for one second; the kernel skips a sample that would nest in another BPF program on that CPU
      assert.ok(s.samples >= 30, `only ${s.samples} samples on CPU ${cpu}`);
      assert.ok(s.queued >= s.samples * 0.9, `${s.queued} of ${s.samples} samples with a queue >= ${N - 1}`);
    },
  );

  it('--json -OC 1 1: one object, histograms and occupancy per CPU from 0, >= 90% on that CPU', { skip }, async () => {
    await spinning();
    const r = await runBpfscope(['runqlen', '--json', '-OC', '1', '1'], { timeoutMs: 40_000 });
    assert.equal(r.code, 0, r.stderr);
    const ticks = jsonLines<{ time: string; histograms: unknown[]; occupancy: { cpu: number; percent: number }[] }>(
      r.stdout,
    );
    assert.equal(ticks.length, 1, r.stdout);
    const t = ticks[0]!;
    assert.deepEqual(Object.keys(t), ['time', 'histograms', 'occupancy']);
    // -O: per CPU from 0 to the highest seen, in order
    assert.deepEqual(
      t.occupancy.map((o) => o.cpu),
      Array.from({ length: t.occupancy.length }, (_, i) => i),
      r.stdout,
    );
    const occ = t.occupancy.find((o) => o.cpu === cpu);
    assert.ok(occ && occ.percent >= 90, r.stdout);
    assert.ok(occ.percent <= 100, r.stdout);
  });

  it('--json -C 1 1: the histograms as JSON numbers, the same shape', { skip }, async () => {
    await spinning();
    const r = await runBpfscope(['runqlen', '--json', '-C', '1', '1'], { timeoutMs: 40_000 });
    assert.equal(r.code, 0, r.stderr);
    const ticks = jsonLines<{ histograms: { cpu: number; counts: number[] }[]; occupancy: null }>(r.stdout);
    assert.equal(ticks.length, 1, r.stdout);
    assert.equal(ticks[0]!.occupancy, null);
    const h = ticks[0]!.histograms.find((x) => x.cpu === cpu);
    assert.ok(h && h.counts.every((n) => Number.isInteger(n)), r.stdout);
    const s = queued(h.counts);
    assert.ok(s.samples >= 30, r.stdout);
    assert.ok(s.queued >= s.samples * 0.9, r.stdout);
  });
});
