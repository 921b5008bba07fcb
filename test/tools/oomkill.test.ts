/**
 * oomkill (src/tools/oomkill.ts): bcc's line format, and a live run where a workload in a memory-limited cgroup
 * allocates until the OOM killer kills it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { formatRow } from '../../src/tools/oomkill.js';
import { workloadPath } from '../helpers/workload.js';
import { createMemoryCgroup, liveSkipReason, memoryCgroupSkipReason, startBpfscope } from './helpers.js';

describe('oomkill output (bcc tools/oomkill.py)', () => {
  it('the line', () => {
    assert.equal(
      formatRow(['181', '36136', '182', 'java', 'bpfs_oom'], 4, '09:41:02', '0.09 0.13 0.10 1/207 1234'),
      '09:41:02 Triggered by PID 181 ("java"), OOM kill of PID 182 ("bpfs_oom"), 9034 pages, loadavg: 0.09 0.13 0.10 1/207 1234\n',
    );
  });
});

describe('oomkill on the live kernel', () => {
  const skip = liveSkipReason() ?? memoryCgroupSkipReason();

  it('a cgroup-limited child that allocates until killed', { skip }, async () => {
    const run = startBpfscope(['oomkill']);
    assert.ok(await run.waitFor(/Tracing OOM kills\.\.\. Ctrl-C to stop\.\n/, 20_000), run.stderr());
    const cg = createMemoryCgroup(32);
    let pid: number;
    try {
      const w = spawnSync('/bin/sh', ['-c', `${cg.enterCommand}exec ${workloadPath()} comm bpfs_oom alloc-forever`], {
        encoding: 'utf8',
        timeout: 20_000,
      });
      pid = w.pid ?? 0;
      assert.equal(w.signal, 'SIGKILL', `the workload was not OOM-killed: ${w.stderr}`);
    } finally {
      cg.remove();
    }
    assert.ok(await run.waitFor(/OOM kill of PID/, 10_000), run.stdout());
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      new RegExp(
        `\\n\\d\\d:\\d\\d:\\d\\d Triggered by PID ${pid} \\("bpfs_oom"\\), OOM kill of PID ${pid} \\("bpfs_oom"\\), \\d+ pages, loadavg: [\\d.]+ [\\d.]+ [\\d.]+ \\d+/\\d+ \\d+\\n`,
      ),
    );
  });
});
