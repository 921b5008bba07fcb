/**
 * runqslower (src/tools/runqslower.ts): bcc's help and usage errors, the generated program, the line formats,
 * and a live run: two processes spinning on one CPU take turns, so the traced one (-p) waits on the run queue
 * every time the other runs.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { onlineCpus } from '../../src/kernel/cpus.js';
import { parseArgs } from '../../src/tools/framework/argparse.js';
import { runTool } from '../../src/index.js';
import { buildProgram, formatRow, header, SPEC, toRow, type WaitRow } from '../../src/tools/runqslower.js';
import { workloadPath } from '../helpers/workload.js';
import { argparseFixtureTests } from './argparse-fixture.js';
import { liveSkipReason, startBpfscope } from './helpers.js';
import { apiRows, jsonRows } from './jsonrun.js';

describe('runqslower options (bcc tools/runqslower.py argparse)', () => {
  argparseFixtureTests(SPEC, 'runqslower-argparse');
  it('min_us defaults to 10000', () => {
    assert.equal(parseArgs(SPEC, []).min_us, 10000);
  });
});

describe('runqslower program and lines', () => {
  it('wakeups and preemptions start a wait; the switch-in ends it, printed above min_us', () => {
    const p = buildProgram({ minUs: 10000, previous: false });
    assert.match(
      p,
      /rawtracepoint:sched_wakeup,\nrawtracepoint:sched_wakeup_new \{\n {2}if \(args\.p->pid != 0\) \{\n {4}@start\[args\.p->pid\] = nsecs;/,
    );
    assert.match(
      p,
      /if \(args\.prev->__state == 0 && args\.prev->pid != 0\) \{\n {4}@start\[args\.prev->pid\] = nsecs;/,
    );
    assert.match(p, /\$d = \(nsecs - \$s\) \/ 1000;\n {4}if \(\$d > 10000\) \{\n {6}printf\(/);
    assert.match(p, /delete\(@start\[\$tid\]\);/);
  });

  it('min_us 0 prints every wait; -p/-t filter the enqueues; old kernels name the field state', () => {
    const p = buildProgram({ minUs: 0, previous: true, pid: 12, stateField: 'state' });
    assert.ok(!p.includes('$d >'), p);
    assert.match(p, /if \(args\.p->pid != 0 && args\.p->tgid == 12\)/);
    assert.match(p, /if \(args\.prev->state == 0 && args\.prev->pid != 0 && args\.prev->tgid == 12\)/);
    assert.match(buildProgram({ minUs: 5, previous: false, tid: 77 }), /args\.p->pid != 0 && args\.p->pid == 77\)/);
  });

  it('bcc header and rows', () => {
    assert.equal(header(false), 'TIME     COMM             TID           LAT(us)\n');
    assert.equal(header(true), 'TIME     COMM             TID           LAT(us) PREV COMM        PREV TID\n');
    const now = new Date(2024, 0, 1, 10, 2, 3);
    const row = toRow(
      { kind: 'wait', tid: 4952, deltaUs: 33380, prevTid: 5277, prevComm: 'npm exec pretti', comm: 'python3' },
      now,
    );
    assert.deepEqual(row, {
      time: '10:02:03',
      comm: 'python3',
      tid: 4952,
      latencyUs: 33380,
      prevComm: 'npm exec pretti',
      prevTid: 5277,
    });
    assert.equal(formatRow(row, false), '10:02:03 python3          4952            33380\n');
    assert.equal(formatRow(row, true), '10:02:03 python3          4952            33380 npm exec pretti  5277  \n');
  });
});

describe('runqslower on the live kernel', () => {
  const skip = liveSkipReason();

  it('-P -p PID 0: every wait of the traced spinner, behind the other spinner on its CPU', { skip }, async () => {
    const cpus = onlineCpus();
    const cpu = String(cpus[cpus.length - 1]!);
    const target = spawn(workloadPath(), ['comm', 'bpfs_rqsa', 'cpu', cpu, 'wait-stdin', 'spin', '800'], {
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    const targetDone = new Promise((r) => target.on('exit', r));
    const run = startBpfscope(['runqslower', '-P', '-p', String(target.pid), '0']);
    let other: ReturnType<typeof spawn> | undefined;
    try {
      assert.ok(await run.waitFor(/PREV TID\n/, 20_000), run.stderr());
      other = spawn(workloadPath(), ['comm', 'bpfs_rqsb', 'cpu', cpu, 'spin', '1500'], { stdio: 'ignore' });
      target.stdin!.end();
      await targetDone;
      run.child.kill('SIGINT');
      const r = await run.done;
      assert.equal(r.code, 0, r.stderr);
      const lines = r.stdout.split('\n').slice(2, -1);
      const rows = lines.map((l) => /^\d\d:\d\d:\d\d (\S+) +(\d+) +(\d+) (.{16}) (\d+) *$/.exec(l));
      assert.ok(rows.every(Boolean), r.stdout);
      // Only the traced process's waits (its comm changes from the workload's name only before the first step).
      for (const m of rows) assert.equal(m![2], String(target.pid), r.stdout);
      const behindOther = rows.filter((m) => m![4]!.trim() === 'bpfs_rqsb');
      // 800 ms of two spinners on one CPU: the scheduler switches between them every few ms (on a loaded machine
      // other tasks on that CPU take some of those turns).
      assert.ok(behindOther.length >= 2, `${behindOther.length} waits behind bpfs_rqsb\n${r.stdout}`);
      assert.ok(rows.some((m) => m![1] === 'bpfs_rqsa'));
    } finally {
      other?.kill('SIGKILL');
      if (target.exitCode === null) target.kill('SIGKILL');
    }
  });

  /**
   * Two spinners on one CPU (the traced one waits for stdin first); `collect` runs while they spin and returns the
   * rows; then the facts the text test checks: only the traced process's waits, at least 5 behind the other one.
   */
  async function spinners(collect: (targetPid: number, go: () => Promise<void>) => Promise<WaitRow[]>): Promise<void> {
    const cpus = onlineCpus();
    const cpu = String(cpus[cpus.length - 1]!);
    const target = spawn(workloadPath(), ['comm', 'bpfs_rqsa', 'cpu', cpu, 'wait-stdin', 'spin', '800'], {
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    const targetDone = new Promise((r) => target.on('exit', r));
    let other: ReturnType<typeof spawn> | undefined;
    try {
      const rows = await collect(target.pid!, async () => {
        other = spawn(workloadPath(), ['comm', 'bpfs_rqsb', 'cpu', cpu, 'spin', '1500'], { stdio: 'ignore' });
        target.stdin!.end();
        await targetDone;
      });
      for (const r of rows) assert.equal(r.tid, target.pid, JSON.stringify(r));
      const behindOther = rows.filter((r) => r.prevComm === 'bpfs_rqsb');
      assert.ok(behindOther.length >= 2, `${behindOther.length} waits behind bpfs_rqsb\n${JSON.stringify(rows)}`);
      assert.ok(rows.some((r) => r.comm === 'bpfs_rqsa'));
      for (const r of rows) assert.ok(Number.isInteger(r.latencyUs) && r.latencyUs >= 0, JSON.stringify(r));
    } finally {
      other?.kill('SIGKILL');
      if (target.exitCode === null) target.kill('SIGKILL');
    }
  }

  it('--json -P -p PID 0: the same waits as objects', { skip }, async () => {
    await spinners(async (pid, go) => {
      let ended = false;
      return jsonRows<WaitRow>(
        ['runqslower', '-P', '-p', String(pid), '0'],
        3,
        async () => {
          await go();
          ended = true;
        },
        () => ended,
      );
    });
  });

  it('runTool -P -p PID 0: the same waits as rows', { skip }, async () => {
    await spinners(async (pid, go) => {
      const run = await runTool('runqslower', ['-P', '-p', String(pid), '0']);
      let ended = false;
      void go().then(() => {
        ended = true;
        void run.close();
      });
      return apiRows(run, () => ended, 30_000);
    });
  });
});
