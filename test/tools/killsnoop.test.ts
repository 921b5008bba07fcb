/**
 * killsnoop (src/tools/killsnoop.ts): bcc's header (PID columns sized from pid_max) and row format, and a live
 * run that sees the SIGKILLs a workload sends to its children.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { runTool } from '../../src/index.js';
import { buildProgram, formatRow, header, type KillRow, pidColumnWidth, toRow } from '../../src/tools/killsnoop.js';
import { workloadPath } from '../helpers/workload.js';
import { liveSkipReason, startBpfscope } from './helpers.js';
import { apiRows, jsonRows } from './jsonrun.js';

describe('killsnoop output format (bcc tools/killsnoop.py)', () => {
  it('the PID column is len(pid_max) + 1 wide', () => {
    assert.equal(pidColumnWidth('32768'), 6);
    assert.equal(pidColumnWidth('4194304'), 8);
    assert.equal(pidColumnWidth(null), 6);
  });

  it('header and rows: "%-9s %-*d %-16s %-4d %-*d %d"', () => {
    assert.equal(header(6), 'TIME      PID    COMM             SIG  TPID   RESULT\n');
    assert.equal(header(8), 'TIME      PID      COMM             SIG  TPID     RESULT\n');
    const row = toRow({ kind: 'kill', pid: 181, sig: 9, tpid: 182, ret: 0, comm: 'bash' }, '09:41:02');
    assert.deepEqual(row, { time: '09:41:02', pid: 181, comm: 'bash', sig: 9, tpid: 182, ret: 0 });
    assert.equal(formatRow(row, 6), '09:41:02  181    bash             9    182    0\n');
    assert.equal(
      formatRow(toRow({ kind: 'kill', pid: 181, sig: 0, tpid: 999999, ret: -3, comm: 'kill' }, '09:41:02'), 8),
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
    // bcc sizes the PID columns by the length of /proc/sys/kernel/pid_max's text (with its newline)
    const pidMaxDigits = readFileSync('/proc/sys/kernel/pid_max', 'utf8').trim().length;
    const headers: Record<number, string> = {
      5: 'TIME      PID    COMM             SIG  TPID   RESULT',
      7: 'TIME      PID      COMM             SIG  TPID     RESULT',
    };
    assert.ok(headers[pidMaxDigits], `no header written out for a ${pidMaxDigits}-digit pid_max`);
    assert.equal(r.stdout.split('\n')[0], headers[pidMaxDigits]);
    const rows = [...r.stdout.matchAll(re)];
    assert.equal(rows.length, 2, r.stdout);
    assert.equal(rows[0]![1], rows[1]![1], 'one sender');
    assert.notEqual(rows[0]![2], rows[1]![2], 'two different children');
    // -s 9 leaves out the kill(self, 0) calls.
    assert.doesNotMatch(r.stdout, /bpfs_kill +0 /);
    for (const m of rows) {
      const row = { time: m[0].slice(0, 8), pid: Number(m[1]), comm: 'bpfs_kill', sig: 9, tpid: Number(m[2]), ret: 0 };
      assert.equal(m[0], formatRow(row, pidMaxDigits + 1).trimEnd());
    }
  });

  /** The facts the text test checks: one sender's SIGKILL to each of two children, both succeeded. */
  function assertKills(rows: KillRow[]): void {
    const mine = rows.filter((r) => r.comm === 'bpfs_kill');
    assert.equal(mine.length, 2, JSON.stringify(rows));
    assert.equal(mine[0]!.pid, mine[1]!.pid, 'one sender');
    assert.notEqual(mine[0]!.tpid, mine[1]!.tpid, 'two different children');
    for (const r of mine) assert.deepEqual([r.sig, r.ret], [9, 0]);
  }
  const kills = (): void => {
    const w = spawnSync(workloadPath(), ['comm', 'bpfs_kill', 'kill-self-child', '2', 'kill-self', '1'], {
      encoding: 'utf8',
    });
    assert.equal(w.status, 0, w.stderr);
  };
  const two = (r: KillRow[]): boolean => r.filter((x) => x.comm === 'bpfs_kill').length >= 2;

  it('--json -s 9: the same two kills as objects', { skip }, async () => {
    assertKills(await jsonRows<KillRow>(['killsnoop', '-s', '9'], 2, kills, two));
  });

  it('runTool -s 9: the same two kills as rows', { skip }, async () => {
    const run = await runTool('killsnoop', ['-s', '9']);
    kills();
    assertKills(await apiRows(run, two));
  });
});
