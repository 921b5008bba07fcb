/**
 * threadsnoop (src/tools/threadsnoop.ts): the help text (CPython's argparse on bcc's parser, fixture
 * test/tools/fixtures/proc-tools-argparse.json), the header and row format, the libc probe, and a live run that sees
 * the threads of a C program (test/tools/fixtures/threads.c) with their start routine named.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runTool } from '../../src/index.js';
import {
  buildProgram,
  formatRow,
  header,
  pthreadCreateProbe,
  SPEC,
  type ThreadRow,
  toRow,
} from '../../src/tools/threadsnoop.js';
import { ccSkipReason } from '../helpers/compile.js';
import { assertBccHelp } from './argparse-fixture.js';
import { liveSkipReason, startBpfscope } from './helpers.js';
import { apiRows, jsonRows } from './jsonrun.js';
import { startThreadsProg, THREAD_FUNCTION, THREADS_COMM } from './threadsprog.js';

describe('threadsnoop options and format (bcc tools/threadsnoop.py)', () => {
  it('-h equals argparse on bcc parser', () => {
    assertBccHelp(SPEC, 'threadsnoop', 'proc-tools-argparse');
  });

  it('header and rows: "%-10d %-7d %-16s %s", ms since the first event, unnamed routines in hex', () => {
    assert.equal(header(), 'TIME(ms)   PID     COMM             FUNC\n');
    const state = { startNs: null as bigint | null };
    const row = (tsNs: bigint, pid: number, start: bigint, func: string, comm: string): ThreadRow =>
      toRow({ kind: 'thread', tsNs, pid, start, func, comm }, state);
    const first = row(5000000000n, 181, 4198400n, 'worker', 'app');
    assert.deepEqual(first, { elapsedMs: 0, pid: 181, comm: 'app', func: 'worker', start: 4198400n });
    assert.equal(formatRow(first), '0          181     app              worker\n');
    assert.equal(
      formatRow(row(5002999999n, 181, 4198400n, '0x401000', 'app')),
      '2          181     app              0x401000\n',
    );
    assert.equal(
      formatRow(row(6234567890n, 18, 255n, '[unknown]', 'a-very-long-comm')),
      '1234       18      a-very-long-comm 0xff\n',
    );
  });

  it("probes libc's pthread_create (libpthread has none since glibc 2.34) and sends its third argument", () => {
    const ap = pthreadCreateProbe();
    assert.match(ap ?? '', /^uprobe:\/\S+\/lib(c|pthread)\.so[.\d]*:pthread_create$/);
    assert.equal(pthreadCreateProbe(['bpfs_no_such_library']), undefined);
    assert.equal(
      buildProgram('uprobe:/lib/libc.so.6:pthread_create'),
      'config = { max_map_keys = 10240 }\nuprobe:/lib/libc.so.6:pthread_create {\n' +
        '  printf("0\\x1f%lu\\x1f%u\\x1f%lu\\x1f%s\\x1f%s\\n", nsecs, pid, arg2, usym(arg2), comm);\n}\n',
    );
  });
});

describe('threadsnoop on the live kernel', () => {
  const skip = liveSkipReason() ?? ccSkipReason();

  it('sees each of 4 threads of a program, named by their start routine', { skip }, async () => {
    const run = startBpfscope(['threadsnoop']);
    assert.ok(await run.waitFor(/FUNC\n/, 20_000), run.stderr());
    const prog = startThreadsProg(4);
    const pid = prog.pid!;
    const rowRe = new RegExp(`^(\\d+) +${pid} +${THREADS_COMM} +(\\S+)$`, 'gm');
    const four = new RegExp(`(^\\d+ +${pid} .*\\n[^]*){4}`, 'm');
    const seen = await run.waitFor(four, 15_000);
    prog.stdin!.end();
    const progExit = new Promise((resolve) => prog.on('exit', resolve));
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.equal(await progExit, 0);
    assert.ok(seen, r.stdout);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.split('\n')[0], 'TIME(ms)   PID     COMM             FUNC');
    const rows = [...r.stdout.matchAll(rowRe)];
    assert.equal(rows.length, 4, r.stdout);
    for (const m of rows) assert.equal(m[2], THREAD_FUNCTION, m[0]);
    // TIME(ms) counts from the first event the tool saw, and never goes back.
    const times = rows.map((m) => Number(m[1]));
    assert.deepEqual(
      [...times].sort((a, b) => a - b),
      times,
    );
  });

  /** The facts the text test checks: 4 rows of the program, each naming the start routine, in time order. */
  function assertThreads(rows: ThreadRow[], pid: number): void {
    const mine = rows.filter((r) => r.pid === pid);
    assert.equal(
      mine.length,
      4,
      JSON.stringify(rows, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)),
    );
    for (const r of mine) assert.deepEqual([r.comm, r.func], [THREADS_COMM, THREAD_FUNCTION]);
    const times = mine.map((r) => r.elapsedMs);
    assert.deepEqual(
      [...times].sort((a, b) => a - b),
      times,
    );
  }

  /** Start the program with 4 threads (it waits on stdin, so its start routine can be named); `end()` ends it. */
  function threads(): { pid: number; end(): Promise<void> } {
    const prog = startThreadsProg(4);
    const exit = new Promise((resolve) => prog.on('exit', resolve));
    return {
      pid: prog.pid!,
      end: async () => {
        prog.stdin!.end();
        assert.equal(await exit, 0);
      },
    };
  }

  it('--json: the same 4 threads as objects', { skip }, async () => {
    let prog: ReturnType<typeof threads> | undefined;
    try {
      const rows = await jsonRows<ThreadRow>(
        ['threadsnoop'],
        1,
        () => {
          prog = threads();
        },
        (r) => r.filter((x) => x.pid === prog?.pid).length >= 4,
      );
      assertThreads(rows, prog!.pid);
    } finally {
      await prog?.end();
    }
  });

  it('runTool: the same 4 threads as rows', { skip }, async () => {
    const run = await runTool('threadsnoop');
    const prog = threads();
    try {
      assertThreads(await apiRows(run, (r) => r.filter((x) => x.pid === prog.pid).length >= 4), prog.pid);
    } finally {
      await prog.end();
    }
  });
});
