/**
 * exitsnoop (src/tools/exitsnoop.ts): the help text (CPython's argparse on bcc's parser, fixture
 * test/tools/fixtures/proc-tools-argparse.json), the generated filters, header and row formats (exit codes, signals,
 * core dumps, labels, time stamps), and live runs: a child exiting with a known code, one killed by a known signal,
 * `-p` ending the run when its process exits, and `--per-thread` with a threaded program.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import {
  buildProgram,
  clockTimeMs,
  exitDescription,
  formatRow,
  header,
  type RowOptions,
  SPEC,
  type ExitRow,
  toRow,
} from '../../src/tools/exitsnoop.js';
import { runTool } from '../../src/index.js';
import { ccSkipReason } from '../helpers/compile.js';
import { assertBccHelp } from './argparse-fixture.js';
import { liveSkipReason, startBpfscope } from './helpers.js';
import { apiRows, jsonRows } from './jsonrun.js';
import { startThreadsProg, THREADS_COMM } from './threadsprog.js';

const plain: RowOptions = { timestamp: false, utc: false, label: null };

describe('exitsnoop options and format (bcc tools/exitsnoop.py)', () => {
  it('-h equals argparse on bcc parser; a bad flag gives its usage error', () => {
    assert.ok(assertBccHelp(SPEC, 'exitsnoop', 'proc-tools-argparse') > 0);
  });

  it('filters: main threads only unless --per-thread; -p; -x drops exit code 0', () => {
    const body =
      '  printf("0\\x1f%ld\\x1f%u\\x1f%u\\x1f%u\\x1f%d\\x1f%s\\n", nsecs - curtask->start_time, pid, tid, ' +
      'curtask->real_parent->tgid, curtask->exit_code, comm);\n}\n';
    const head = 'config = { max_map_keys = 10240 }\ntracepoint:sched:sched_process_exit';
    assert.equal(buildProgram({}), `${head} /tid == pid/ {\n${body}`);
    assert.equal(buildProgram({ perThread: true }), `${head} {\n${body}`);
    assert.equal(
      buildProgram({ pid: 181, failed: true }),
      `${head} /(pid == 181) && (tid == pid) && (curtask->exit_code != 0)/ {\n${body}`,
    );
    assert.equal(buildProgram({ pid: 181, perThread: true }), `${head} /pid == 181/ {\n${body}`);
  });

  it('exit descriptions from task->exit_code, with Python signal module names', () => {
    assert.equal(exitDescription(0), '0');
    assert.equal(exitDescription(3 << 8), 'code 3');
    assert.equal(exitDescription(9), 'signal 9 (KILL)');
    assert.equal(exitDescription(6), 'signal 6 (ABRT)');
    assert.equal(exitDescription(0x80 | 11), 'signal 11 (SEGV), core dumped ');
    // Python's SIGNUM_TO_SIGNAME only keeps names matching ^SIG[A-Z]+$: SIGUSR1 is unknown.
    assert.equal(exitDescription(10), 'signal 10 (unknown)');
    assert.equal(exitDescription(17), 'signal 17 (CHLD)');
  });

  it('header and rows: "%-16s %-7d %-7d %-7d %-7.2f ", -t/--utc time stamps, --label', () => {
    assert.equal(header(plain, 'CEST'), 'PCOMM            PID     PPID    TID     AGE(s)  EXIT_CODE \n');
    assert.equal(
      header({ timestamp: true, utc: false, label: '' }, 'CEST'),
      'TIME-CEST    LABEL PCOMM            PID     PPID    TID     AGE(s)  EXIT_CODE \n',
    );
    assert.equal(header({ timestamp: true, utc: true, label: null }, 'CEST').slice(0, 13), 'TIME-UTC     ');
    const rec = (ageNs: number, pid: number, tid: number, ppid: number, exitCode: number, comm: string) =>
      ({ kind: 'exit', ageNs, pid, tid, ppid, exitCode, comm }) as const;
    const d = new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 67));
    const first = toRow(rec(1234567890, 181, 181, 1, 512, 'sh'), { utc: true, label: null }, d);
    assert.deepEqual(first, {
      time: '03:04:05.067',
      label: null,
      comm: 'sh',
      pid: 181,
      ppid: 1,
      tid: 181,
      ageNs: 1234567890,
      exitCode: 512,
      exit: 'code 2',
    });
    assert.equal(formatRow(first, plain), 'sh               181     1       181     1.23    code 2\n');
    assert.equal(clockTimeMs(d, true), '03:04:05.067');
    const utc = { timestamp: true, utc: true, label: '' };
    assert.equal(
      formatRow(toRow(rec(5000000, 9, 10, 2, 15, 'worker'), utc, d), utc),
      '03:04:05.067 exit  worker           9       2       10      0.01    signal 15 (TERM)\n',
    );
    const gone = { ...plain, label: 'gone' };
    assert.equal(
      formatRow(toRow(rec(0, 9, 9, 2, 0, 'x'), gone), gone),
      'gone  x                9       2       9       0.00    0\n',
    );
  });
});

/** The row of process `pid` in exitsnoop's output, as [whole line, ppid, tid, age, exit description]. */
function rowOf(stdout: string, pid: number, comm: string): RegExpMatchArray | null {
  return new RegExp(`^${comm} +${pid} +(\\d+) +(\\d+) +(\\d+\\.\\d\\d) +(.*)$`, 'm').exec(stdout);
}

describe('exitsnoop on the live kernel', () => {
  const skip = liveSkipReason();

  it('a child exiting with code 3 and one killed by SIGTERM', { skip }, async () => {
    const run = startBpfscope(['exitsnoop']);
    assert.ok(await run.waitFor(/EXIT_CODE \n/, 20_000), run.stderr());
    const a = spawnSync('/bin/sh', ['-c', 'exit 3']);
    const b = spawnSync('/bin/sh', ['-c', 'kill -TERM $$']);
    assert.equal(a.status, 3);
    assert.equal(b.signal, 'SIGTERM');
    const seen = await run.waitFor(new RegExp(`^sh +${b.pid} .*\\n`, 'm'), 10_000);
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.ok(seen, r.stdout);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.split('\n')[0], 'PCOMM            PID     PPID    TID     AGE(s)  EXIT_CODE ');
    const ra = rowOf(r.stdout, a.pid, 'sh');
    const rb = rowOf(r.stdout, b.pid, 'sh');
    assert.ok(ra && rb, r.stdout);
    assert.deepEqual([ra[1], ra[2], ra[4]], [String(process.pid), String(a.pid), 'code 3']);
    assert.deepEqual([rb[1], rb[2], rb[4]], [String(process.pid), String(b.pid), 'signal 15 (TERM)']);
    assert.ok(Number(ra[3]) < 60, ra[0]);
  });

  it('-x -p PID: reports the SIGKILL of that process and ends the run', { skip }, async () => {
    const cat = spawn('/bin/cat', [], { stdio: ['pipe', 'ignore', 'ignore'] });
    const pid = cat.pid!;
    const run = startBpfscope(['exitsnoop', '-x', '-p', String(pid)]);
    assert.ok(await run.waitFor(/EXIT_CODE \n/, 20_000), run.stderr());
    cat.kill('SIGKILL');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.signal, null);
    const rows = r.stdout.split('\n').slice(1, -1);
    assert.equal(rows.length, 1, r.stdout);
    assert.equal(rowOf(rows[0]!, pid, 'cat')?.[4], 'signal 9 (KILL)', r.stdout);
  });

  it(
    '--per-thread: one row per thread, the main thread last; without it only the process',
    { skip: skip ?? ccSkipReason() },
    async () => {
      const perThread = startBpfscope(['exitsnoop', '--per-thread']);
      const perProcess = startBpfscope(['exitsnoop']);
      assert.ok(await perThread.waitFor(/EXIT_CODE \n/, 20_000), perThread.stderr());
      assert.ok(await perProcess.waitFor(/EXIT_CODE \n/, 20_000), perProcess.stderr());
      const prog = startThreadsProg(3);
      const pid = prog.pid!;
      prog.stdin!.end();
      assert.equal(await new Promise((resolve) => prog.on('exit', resolve)), 0);
      const main = new RegExp(`^${THREADS_COMM} +${pid} +\\d+ +${pid} .*\\n`, 'm');
      const seen = (await perThread.waitFor(main, 10_000)) && (await perProcess.waitFor(main, 10_000));
      perThread.child.kill('SIGINT');
      perProcess.child.kill('SIGINT');
      const [t, p] = await Promise.all([perThread.done, perProcess.done]);
      assert.ok(seen, `${t.stdout}\n---\n${p.stdout}`);
      const rowsOf = (out: string): string[][] =>
        [...out.matchAll(new RegExp(`^${THREADS_COMM} +${pid} +(\\d+) +(\\d+) +\\S+ +(.*)$`, 'gm'))].map((m) => [
          m[2]!,
          m[3]!,
        ]);
      const threads = rowsOf(t.stdout);
      assert.equal(threads.length, 4, t.stdout);
      assert.equal(new Set(threads.map((x) => x[0])).size, 4, 'four different TIDs');
      assert.deepEqual(threads[3], [String(pid), '0'], 'the main thread exits last, with code 0');
      for (const x of threads.slice(0, 3)) assert.notEqual(x[0], String(pid));
      assert.deepEqual(rowsOf(p.stdout), [[String(pid), '0']]);
    },
  );

  /** The facts the first text test checks: this test's two children, code 3 and SIGTERM. */
  function assertExits(rows: ExitRow[], a: number, b: number): void {
    const ra = rows.find((r) => r.pid === a);
    const rb = rows.find((r) => r.pid === b);
    assert.ok(ra && rb, JSON.stringify(rows));
    assert.deepEqual([ra.comm, ra.ppid, ra.tid, ra.exitCode, ra.exit], ['sh', process.pid, a, 3 << 8, 'code 3']);
    assert.deepEqual([rb.comm, rb.ppid, rb.tid, rb.exitCode, rb.exit], ['sh', process.pid, b, 15, 'signal 15 (TERM)']);
    assert.ok(ra.ageNs > 0 && ra.ageNs < 60e9, String(ra.ageNs));
  }
  const children = (): [number, number] => {
    const a = spawnSync('/bin/sh', ['-c', 'exit 3']);
    const b = spawnSync('/bin/sh', ['-c', 'kill -TERM $$']);
    assert.equal(a.status, 3);
    assert.equal(b.signal, 'SIGTERM');
    return [a.pid, b.pid];
  };

  it('--json: the same two exits as objects', { skip }, async () => {
    let pids: [number, number] = [0, 0];
    const rows = await jsonRows<ExitRow>(
      ['exitsnoop'],
      1,
      () => {
        pids = children();
      },
      (r) => r.some((x) => x.pid === pids[1]),
    );
    assertExits(rows, ...pids);
  });

  it('runTool: the same two exits as rows', { skip }, async () => {
    const run = await runTool('exitsnoop');
    const pids = children();
    assertExits(await apiRows(run, (r) => r.some((x) => x.pid === pids[1])), ...pids);
  });
});
