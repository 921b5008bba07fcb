/**
 * oomkill (src/tools/oomkill.ts): bcc's line format, and a live run where a workload in a memory-limited cgroup
 * allocates until the OOM killer kills it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { runTool } from '../../src/index.js';
import { formatRow, type OomKillRow, toRow } from '../../src/tools/oomkill.js';
import { workloadPath } from '../helpers/workload.js';
import { createMemoryCgroup, liveSkipReason, memoryCgroupSkipReason, startBpfscope } from './helpers.js';
import { apiRows, jsonRows } from './jsonrun.js';

/** Run the workload in a 32 MB memory cgroup until the OOM killer kills it; its PID. */
function oomWorkload(): number {
  const cg = createMemoryCgroup(32);
  try {
    const w = spawnSync('/bin/sh', ['-c', `${cg.enterCommand}exec ${workloadPath()} comm bpfs_oom alloc-forever`], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.equal(w.signal, 'SIGKILL', `the workload was not OOM-killed: ${w.stderr}`);
    return w.pid ?? 0;
  } finally {
    cg.remove();
  }
}

/** The facts the text test checks: the workload triggered its own kill, with a page count and the load averages. */
function assertKill(rows: OomKillRow[], pid: number): void {
  const mine = rows.filter((r) => r.tpid === pid);
  assert.equal(mine.length, 1, JSON.stringify(rows));
  const r = mine[0]!;
  assert.deepEqual([r.fpid, r.fcomm, r.tpid, r.tcomm], [pid, 'bpfs_oom', pid, 'bpfs_oom']);
  assert.ok(Number.isInteger(r.pages) && r.pages > 0, String(r.pages));
  assert.match(r.time, /^\d\d:\d\d:\d\d$/);
  assert.match(r.loadavg, /^[\d.]+ [\d.]+ [\d.]+ \d+\/\d+ \d+$/);
}

describe('oomkill output (bcc tools/oomkill.py)', () => {
  it('the line', () => {
    const row = toRow(
      { kind: 'kill', fpid: 181, totalVmKb: 36136, tpid: 182, fcomm: 'java', tcomm: 'bpfs_oom' },
      4,
      '09:41:02',
      '0.09 0.13 0.10 1/207 1234',
    );
    assert.equal(row.pages, 9034);
    assert.equal(
      formatRow(row),
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

  it('--json: the same kill as an object', { skip }, async () => {
    let pid = 0;
    const rows = await jsonRows<OomKillRow>(
      ['oomkill'],
      1,
      () => {
        pid = oomWorkload();
      },
      (r) => r.some((x) => x.tpid === pid),
    );
    assertKill(rows, pid);
  });

  it('runTool: the same kill as a row', { skip }, async () => {
    const run = await runTool('oomkill');
    const pid = oomWorkload();
    assertKill(await apiRows(run, (r) => r.some((x) => x.tpid === pid)), pid);
  });
});
