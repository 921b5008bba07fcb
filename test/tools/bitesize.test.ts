/**
 * bitesize (src/tools/bitesize.ts): a live run on a loop device the test creates: five 64 KiB and three 4 KiB
 * O_DIRECT reads give the workload's section exactly the histogram bcc would print; --json and runTool give the
 * same buckets.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { runTool } from '../../src/index.js';
import { formatLog2Hist, LOG2_SLOTS } from '../../src/tools/framework/hist.js';
import { workloadPath } from '../helpers/workload.js';
import { liveLoopDevice, startBpfscope } from './helpers.js';
import { jsonLines, startJson } from './jsonrun.js';

describe('bitesize on the live kernel', () => {
  const { skip, device } = liveLoopDevice();

  it('Process Name = bpfs_bite: 4 -> 7 Kbytes x3, 64 -> 127 Kbytes x5', { skip }, async () => {
    const run = startBpfscope(['bitesize']);
    assert.ok(await run.waitFor(/Hit Ctrl-C to end\.\n/, 20_000), run.stderr());
    const w = spawnSync(
      workloadPath(),
      ['comm', 'bpfs_bite', 'odirect-read', device().path, '5', '65536', 'odirect-read', device().path, '3', '4096'],
      { encoding: 'utf8' },
    );
    assert.equal(w.status, 0, w.stderr);
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Tracing block I\/O\.\.\. Hit Ctrl-C to end\.\n/);
    // bcc's slots: bpf_log2l(4) = 3 ("4 -> 7"), bpf_log2l(64) = 7 ("64 -> 127").
    const vals = new Array<bigint>(LOG2_SLOTS).fill(0n);
    vals[3] = 3n;
    vals[7] = 5n;
    const section = `\nProcess Name = bpfs_bite\n${formatLog2Hist(vals, 'Kbytes')}`;
    assert.ok(r.stdout.includes(section), `${r.stdout}\n--- expected section ---${section}`);
  });
});

describe('bitesize --json and runTool', () => {
  const { skip, device } = liveLoopDevice();
  const workload = (comm: string) =>
    spawnSync(
      workloadPath(),
      ['comm', comm, 'odirect-read', device().path, '5', '65536', 'odirect-read', device().path, '3', '4096'],
      { encoding: 'utf8' },
    );
  const expected = [
    { low: 1, high: 1, count: 0 },
    { low: 2, high: 3, count: 0 },
    { low: 4, high: 7, count: 3 },
    { low: 8, high: 15, count: 0 },
    { low: 16, high: 31, count: 0 },
    { low: 32, high: 63, count: 0 },
    { low: 64, high: 127, count: 5 },
  ];

  it(
    'runTool: one result at close() whose bpfs_bitr histogram has 3 x 4..7 and 5 x 64..127 Kbytes',
    { skip },
    async () => {
      const run = await runTool('bitesize');
      const w = workload('bpfs_bitr');
      assert.equal(w.status, 0, w.stderr);
      await run.close();
      const ticks = [];
      for await (const t of run.intervals()) ticks.push(t);
      assert.equal(ticks.length, 1);
      const h = ticks[0]!.histograms.find((x) => x.comm === 'bpfs_bitr');
      // (the first bucket's low bound is left out: framework/hist.ts log2Buckets gives 1 for bcc's "0 -> 1" row)
      assert.deepEqual(
        h?.buckets.map((b) => ({ high: Number(b.high), count: Number(b.count) })),
        expected.map(({ high, count }) => ({ high, count })),
      );
      assert.deepEqual(
        h.buckets.slice(1).map((b) => Number(b.low)),
        expected.slice(1).map((b) => b.low),
      );
    },
  );

  it('--json: one object at Ctrl-C with the same buckets', { skip }, async () => {
    const run = await startJson(['bitesize', '--json']);
    const w = workload('bpfs_bitj');
    assert.equal(w.status, 0, w.stderr);
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const ticks = jsonLines<{ time: string; histograms: { comm: string; buckets: unknown[] }[] }>(r.stdout);
    assert.equal(ticks.length, 1, r.stdout);
    const h = ticks[0]!.histograms.find((x) => x.comm === 'bpfs_bitj');
    assert.deepEqual(h?.buckets.slice(1), expected.slice(1));
    assert.deepEqual(h.buckets.length, expected.length);
  });
});
