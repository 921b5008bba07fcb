/**
 * statsnoop (src/tools/statsnoop.ts): bcc's header and row format, and a live run that sees the workload's
 * stat calls on a present and a missing path.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runTool } from '../../src/index.js';
import { formatRow, header, type StatRecord, type StatRow, SYS_NAMES, toRow } from '../../src/tools/statsnoop.js';
import { workloadPath } from '../helpers/workload.js';
import { liveSkipReason, removeScratch, startBpfscope, tempDir } from './helpers.js';
import { apiRows, jsonRows } from './jsonrun.js';

describe('statsnoop output format (bcc tools/statsnoop.py)', () => {
  it('headers: "%-7s %-16s %4s %3s", -t "%-14s", -s " %-12s"', () => {
    assert.equal(
      header({ timestamp: false, sysname: false, failed: false }),
      'PID     COMM               FD ERR PATH\n',
    );
    assert.equal(
      header({ timestamp: true, sysname: true, failed: false }),
      'TIME(s)       PID     COMM               FD ERR SYSCALL      PATH\n',
    );
  });

  it('rows: -t seconds from the first shown event (ns), -x drops successes', () => {
    const o = { timestamp: true, sysname: true, failed: false };
    const state = { startTs: 0n };
    const rec = (tsNs: bigint, pid: number, ret: number, type: number, comm: string, path: string): StatRecord => ({
      kind: 'stat',
      tsNs,
      pid,
      ret,
      type,
      comm,
      path,
    });
    const first = toRow(rec(5000000000n, 181, 0, 7, 'ls', '/etc'), o, state)!;
    assert.deepEqual(first, { elapsedNs: 0, pid: 181, comm: 'ls', fd: 0, err: 0, syscall: 'newfstatat', path: '/etc' });
    assert.equal(formatRow(first, o), '0.000000000   181     ls                  0   0 newfstatat   /etc\n');
    assert.equal(
      formatRow(toRow(rec(6250000001n, 181, -2, 2, 'ls', '/nope'), o, state)!, o),
      '1.250000001   181     ls                 -1   2 statx        /nope\n',
    );
    assert.equal(toRow(rec(1n, 1, 0, 7, 'ls', '/etc'), { ...o, failed: true }, { startTs: 0n }), null);
  });
});

describe('statsnoop on the live kernel', () => {
  const skip = liveSkipReason();
  let dir = '';
  let file = '';
  before(() => {
    dir = tempDir();
    file = join(dir, 'stat-me');
    writeFileSync(file, 'x');
  });
  after(() => removeScratch(dir));

  it('sees newfstatat on a present file (FD 0) and a missing one (ERR 2)', { skip }, async () => {
    const run = startBpfscope(['statsnoop', '-s']);
    assert.ok(await run.waitFor(/PATH\n/, 20_000), run.stderr());
    const w = spawnSync(
      workloadPath(),
      ['comm', 'bpfs_stat', 'stat', file, '2', 'stat', '/nonexistent/bpfscope', '3'],
      {
        encoding: 'utf8',
      },
    );
    assert.equal(w.status, 0, w.stderr);
    assert.ok(await run.waitFor(/(bpfs_stat[^\n]*\/nonexistent\/bpfscope\n[^]*){3}/, 10_000), run.stdout());
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.split('\n')[0], 'PID     COMM               FD ERR SYSCALL      PATH');
    const ours = r.stdout.split('\n').filter((l) => / bpfs_stat /.test(l));
    const present = ours.filter((l) => l.endsWith(` ${file}`));
    const missing = ours.filter((l) => l.endsWith(' /nonexistent/bpfscope'));
    assert.equal(present.length, 2, r.stdout);
    assert.equal(missing.length, 3, r.stdout);
    assert.match(present[0]!, new RegExp(`^\\d+ +bpfs_stat {11}0   0 newfstatat   ${file}$`));
    assert.match(missing[0]!, /^\d+ +bpfs_stat {10}-1 {3}2 newfstatat {3}\/nonexistent\/bpfscope$/);
  });

  const stats = (): void => {
    const w = spawnSync(
      workloadPath(),
      ['comm', 'bpfs_stat', 'stat', file, '2', 'stat', '/nonexistent/bpfscope', '3'],
      {
        encoding: 'utf8',
      },
    );
    assert.equal(w.status, 0, w.stderr);
  };
  const five = (r: StatRow[]): boolean => r.filter((x) => x.path === '/nonexistent/bpfscope').length >= 3;
  /** The facts the text test checks: 2 successful newfstatat on the file, 3 failing with ENOENT on the other. */
  function assertStats(rows: StatRow[]): void {
    const ours = rows.filter((r) => r.comm === 'bpfs_stat' && (r.path === file || r.path === '/nonexistent/bpfscope'));
    assert.deepEqual(
      ours.map((r) => [r.fd, r.err, r.syscall, r.path]),
      [
        [0, 0, 'newfstatat', file],
        [0, 0, 'newfstatat', file],
        [-1, 2, 'newfstatat', '/nonexistent/bpfscope'],
        [-1, 2, 'newfstatat', '/nonexistent/bpfscope'],
        [-1, 2, 'newfstatat', '/nonexistent/bpfscope'],
      ],
    );
    assert.equal(new Set(ours.map((r) => r.pid)).size, 1);
  }

  it('--json: the same 5 calls as objects', { skip }, async () => {
    // an enter and an exit link per traced syscall
    const n = SYS_NAMES.slice(1).filter((c) => existsSync(`/sys/kernel/tracing/events/syscalls/sys_enter_${c}`));
    assertStats(await jsonRows<StatRow>(['statsnoop'], 2 * n.length, stats, five));
  });

  it('runTool: the same 5 calls as rows', { skip }, async () => {
    const run = await runTool('statsnoop');
    stats();
    assertStats(await apiRows(run, five));
  });
});
