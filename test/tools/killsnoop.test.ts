/**
 * killsnoop (src/tools/killsnoop.ts): bcc's header (PID columns sized from pid_max) and row format, and a live
 * run that sees the SIGKILLs a workload sends to its children.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { buildProgram, formatRow, header, pidColumnWidth } from '../../src/tools/killsnoop.js';
import { workloadPath } from '../helpers/workload.js';
import { liveSkipReason, startBpfscope } from './helpers.js';

describe('killsnoop output format (bcc tools/killsnoop.py)', () => {
  it('the PID column is len(pid_max) + 1 wide', () => {
    assert.equal(pidColumnWidth('32768'), 6);
    assert.equal(pidColumnWidth('4194304'), 8);
    assert.equal(pidColumnWidth(null), 6);
  });

  it('header and rows: "%-9s %-*d %-16s %-4d %-*d %d"', () => {
    assert.equal(header(6), 'TIME      PID    COMM             SIG  TPID   RESULT\n');
    assert.equal(header(8), 'TIME      PID      COMM             SIG  TPID     RESULT\n');
    assert.equal(
      formatRow(['181', '9', '182', '0', 'bash'], 6, '09:41:02'),
      '09:41:02  181    bash             9    182    0\n',
    );
    assert.equal(
      formatRow(['181', '0', '999999', '-3', 'kill'], 8, '09:41:02'),
      '09:41:02  181      kill             0    999999   -3\n',
    );
  });

  it('filters: -p sender, -T target, -s signal list, -x failed', () => {
    const p = buildProgram({ pid: 10, tpid: 20, signals: [9, 15], failed: true });
    assert.match(
      p,
      /sys_enter_kill \/\(\(int32\)args\.pid == 20\) && \(pid == 10\) && \(\(int32\)args\.sig == 9 \|\| \(int32\)args\.sig == 15\)\//,
    );
    assert.match(p, /if \(@seen\[tid\] && args\.ret < 0\)/);
  });
});

describe('killsnoop on the live kernel', () => {
  const skip = liveSkipReason();

  it('sees the SIGKILL sent to each of two children, with sender, target and result', { skip }, async () => {
    const run = startBpfscope(['killsnoop', '-s', '9']);
    assert.ok(await run.waitFor(/RESULT\n/, 20_000), run.stderr());
    const w = spawnSync(workloadPath(), ['comm', 'bpfs_kill', 'kill-self-child', '2', 'kill-self', '1'], {
      encoding: 'utf8',
    });
    assert.equal(w.status, 0, w.stderr);
    const re = /^\d\d:\d\d:\d\d {2}(\d+) +bpfs_kill {8}9 {4}(\d+) +0$/gm;
    assert.ok(await run.waitFor(/bpfs_kill[^\n]*\n[^\n]*bpfs_kill[^\n]*\n/, 10_000), run.stdout());
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const width = pidColumnWidth();
    assert.equal(r.stdout.split('\n')[0], header(width).trimEnd());
    const rows = [...r.stdout.matchAll(re)];
    assert.equal(rows.length, 2, r.stdout);
    assert.equal(rows[0]![1], rows[1]![1], 'one sender');
    assert.notEqual(rows[0]![2], rows[1]![2], 'two different children');
    // -s 9 leaves out the kill(self, 0) calls.
    assert.doesNotMatch(r.stdout, /bpfs_kill +0 /);
    for (const m of rows)
      assert.equal(m[0], formatRow([m[1]!, '9', m[2]!, '0', 'bpfs_kill'], width, m[0].slice(0, 8)).trimEnd());
  });
});
