/**
 * capable (src/tools/capable.ts): bcc's -h text (test/tools/fixtures/bcc-help-fs-cap-llc.json), header and rows,
 * the tracepoint and kprobe programs, and a live run that sees the CAP_CHOWN checks of `chown UID f1 f2` (root
 * giving two files it owns to another user: chown_ok() asks capable(CAP_CHOWN) once per file).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runTool } from '../../src/index.js';
import { buildProgram, type CapCheckRow, capName, formatRow, header, SPEC, toRow } from '../../src/tools/capable.js';
import { tracepointExists } from '../../src/tools/framework/system.js';
import { assertBccHelp } from './argparse-fixture.js';
import { liveSkipReason, removeScratch, startBpfscope, tempDir } from './helpers.js';
import { apiRows, jsonRows } from './jsonrun.js';

describe('capable options and output (bcc tools/capable.py)', () => {
  it('-h and usage errors equal argparse', () => {
    assertBccHelp(SPEC, 'capable', 'bcc-help-fs-cap-llc');
  });

  it('header: "%-9s %-6s %-6s %-16s %-4s %-20s %-6s", -x adds TID and INSETID', () => {
    assert.equal(header(false), 'TIME      UID    PID    COMM             CAP  NAME                 AUDIT \n');
    assert.equal(
      header(true),
      'TIME      UID    PID    TID    COMM             CAP  NAME                 AUDIT  INSETID\n',
    );
  });

  it('rows: capability names from linux/capability.h, N/A for what the tracepoint lacks', () => {
    assert.equal(capName(0), 'CAP_CHOWN');
    assert.equal(capName(21), 'CAP_SYS_ADMIN');
    assert.equal(capName(40), 'CAP_CHECKPOINT_RESTORE');
    assert.equal(capName(99), '?');
    const none = { kernel: false, user: false };
    const rec = (uid: number, pid: number, tid: number, cap: number, audit: number, insetid: number, comm: string) =>
      ({ kind: 'check', uid, pid, tid, cap, audit, insetid, comm, kstack: '', ustack: '' }) as const;
    const chown = toRow(rec(0, 181, 182, 0, -1, -1, 'chown'), none, '09:41:02');
    assert.deepEqual(chown, {
      time: '09:41:02',
      uid: 0,
      pid: 181,
      tid: 182,
      comm: 'chown',
      cap: 0,
      name: 'CAP_CHOWN',
      audit: null,
      insetid: null,
      kernelStack: null,
      userStack: null,
    });
    assert.equal(
      formatRow(chown, false),
      '09:41:02  0      181    chown            0    CAP_CHOWN            N/A   \n',
    );
    assert.equal(
      formatRow(toRow(rec(1000, 181, 182, 21, 1, 0, 'bash'), none, '09:41:02'), true),
      '09:41:02  1000   181    182    bash             21   CAP_SYS_ADMIN        1      0\n',
    );
    const stacked = toRow(
      { ...rec(0, 1, 1, 7, 0, 1, 'x'), kstack: '\n        cap_capable+0\n        f+1\n' },
      { kernel: true, user: false },
      'T',
    );
    assert.deepEqual([stacked.kernelStack, stacked.userStack], [['cap_capable+0', 'f+1'], null]);
    assert.equal(
      formatRow(stacked, false),
      'T         0      1      x                7    CAP_SETUID           0     \n        cap_capable+0\n        f+1\n',
    );
  });

  it('programs: the tracepoint, or kprobe:cap_capable with bcc audit/insetid bits; own PID left out', () => {
    const tp = buildProgram({ probe: 'tracepoint', selfPid: 77, pid: 181, kernelStack: true });
    assert.match(tp, /^tracepoint:capability:cap_capable \/\(pid != 77\) && \(pid == 181\)\/ \{$/m);
    assert.match(tp, /, args\.cap, -1, -1, comm, kstack, ""\);/);
    const kp = buildProgram({ probe: 'kprobe', selfPid: 77 });
    assert.match(kp, /^kprobe:cap_capable \/\(pid != 77\) && \(\(arg3 & 2\) == 0\)\/ \{$/m);
    assert.match(kp, /\(int32\)arg2, \(arg3 & 2\) == 0 \? 1 : 0, \(arg3 & 4\) != 0 \? 1 : 0, comm, "", ""\);/);
    assert.doesNotMatch(buildProgram({ probe: 'kprobe', selfPid: 77, verbose: true }), /arg3 & 2\) == 0\)\//);
    const uniq = buildProgram({ probe: 'tracepoint', selfPid: 1, unique: true, userStack: true });
    assert.match(uniq, /if \(@seen\[args\.cap, pid, ustack\] == 0\) \{\n {4}@seen\[args\.cap, pid, ustack\] = 1;/);
  });
});

describe('capable on the live kernel', () => {
  const skip =
    liveSkipReason() ??
    (tracepointExists('capability', 'cap_capable')
      ? undefined
      : 'no capability:cap_capable tracepoint (the kprobe path is tested in test/matrix/fs-tools.test.ts)');

  it('sees two CAP_CHOWN checks of one chown process, with its PID and TID', { skip }, async () => {
    const dir = tempDir();
    try {
      const files = [join(dir, 'f1'), join(dir, 'f2')];
      for (const f of files) writeFileSync(f, '');
      const run = startBpfscope(['capable', '-x']);
      assert.ok(await run.waitFor(/INSETID\n/, 20_000), run.stderr());
      const c = spawnSync('chown', ['54321', ...files], { encoding: 'utf8' });
      assert.equal(c.status, 0, c.stderr);
      const re = new RegExp(
        `^\\d\\d:\\d\\d:\\d\\d {2}0 {6}${c.pid} +${c.pid} +chown +0 {4}CAP_CHOWN {12}N/A {4}N/A$`,
        'gm',
      );
      await run.waitFor(new RegExp(`${c.pid} +chown +0 [^\\n]*\\n[^]*${c.pid} +chown +0 `), 10_000);
      run.child.kill('SIGINT');
      const r = await run.done;
      assert.equal(r.code, 0, r.stderr);
      assert.equal(
        r.stdout.split('\n')[0],
        'TIME      UID    PID    TID    COMM             CAP  NAME                 AUDIT  INSETID',
      );
      assert.equal(
        [...r.stdout.matchAll(re)].length,
        2,
        r.stdout
          .split('\n')
          .filter((l) => l.includes('chown'))
          .join('\n'),
      );
      // The tool's own checks (bpf(), perf_event_open()) are left out.
      assert.doesNotMatch(r.stdout, new RegExp(`^\\S+ +\\d+ +${run.pid} `, 'm'));
    } finally {
      removeScratch(dir);
    }
  });

  /** chown two files; the facts the text test checks: two CAP_CHOWN checks of that process, UID 0, N/A columns. */
  async function chownChecks(collect: (act: () => number) => Promise<CapCheckRow[]>): Promise<void> {
    const dir = tempDir();
    try {
      const files = [join(dir, 'f1'), join(dir, 'f2')];
      for (const f of files) writeFileSync(f, '');
      let pid = 0;
      const rows = await collect(() => {
        const c = spawnSync('chown', ['54321', ...files], { encoding: 'utf8' });
        assert.equal(c.status, 0, c.stderr);
        pid = c.pid;
        return pid;
      });
      const mine = rows.filter((r) => r.pid === pid && r.cap === 0);
      assert.equal(mine.length, 2, JSON.stringify(rows.filter((r) => r.comm === 'chown')));
      for (const r of mine) {
        assert.deepEqual(
          [r.uid, r.tid, r.comm, r.name, r.audit, r.insetid, r.kernelStack],
          [0, pid, 'chown', 'CAP_CHOWN', null, null, null],
        );
      }
    } finally {
      removeScratch(dir);
    }
  }
  const twoOf = (pid: () => number) => (r: CapCheckRow[]) =>
    r.filter((x) => x.pid === pid() && x.cap === 0).length >= 2;

  it('--json -x: the same two checks as objects', { skip }, async () => {
    await chownChecks(async (act) => {
      let pid = 0;
      return jsonRows<CapCheckRow>(
        ['capable', '-x'],
        1,
        () => {
          pid = act();
        },
        twoOf(() => pid),
      );
    });
  });

  it('runTool -x: the same two checks as rows', { skip }, async () => {
    await chownChecks(async (act) => {
      const run = await runTool('capable', ['-x']);
      const pid = act();
      return apiRows(
        run,
        twoOf(() => pid),
      );
    });
  });
});
