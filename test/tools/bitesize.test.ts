/**
 * bitesize (src/tools/bitesize.ts): a live run on a loop device the test creates: five 64 KiB and three 4 KiB
 * O_DIRECT reads give the workload's section exactly the histogram bcc would print.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { formatLog2Hist, LOG2_SLOTS } from '../../src/tools/framework/hist.js';
import { workloadPath } from '../helpers/workload.js';
import { liveLoopDevice, startBpfscope } from './helpers.js';

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
    await new Promise((r) => setTimeout(r, 300));
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
