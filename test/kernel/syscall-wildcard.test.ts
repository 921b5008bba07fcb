/**
 * Syscall tracepoint wildcards as one raw_syscalls program (issue 19, probes/syscalls.ts): `probe` names and counts
 * equal the per-tracepoint path's for classic syscalls, for the events whose kernel name differs from the UAPI
 * table's (`newuname`, `newstat`, `sendfile64`, `umount`) and for syscalls newer than the headers, on entry and on
 * exit; 32-bit compat syscalls are not counted (the syscall tracepoints skip them); one perf event stands for the
 * matched events. Expected values are written out from the workload's steps.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { describe as describeRun, repoRoot, runTool, startTool } from '../helpers/cli.js';
import { ccSkipReason, compileFixture } from '../helpers/compile.js';
import { workloadCommand } from '../helpers/workload.js';

const skip = process.arch !== 'x64' ? 'the raw_syscalls rewrite is x86-64 only' : ccSkipReason();

// After `comm bpfs_wl` (prctl runs under the old comm): getppid x7, then by number (x86-64): uname (63) x3,
// stat (4) x2, sendfile (40) x4, umount2 (166) x1, cachestat (451) x1, file_setattr (469) x2; then exit_group.
// The prctl of the comm step enters under the old comm and returns under the new one.
const STEPS = ['comm', 'bpfs_wl', 'getppid', 7, 'syscall', 63, 3, 'syscall', 4, 2, 'syscall', 40, 4, 'syscall', 166, 1];
const NEWER = ['syscall', 451, 1, 'syscall', 469, 2];

function expected(dir: 'enter' | 'exit', newer: boolean): string {
  // bpftrace's order: by count, then by key
  const rows: [string, number][] = [
    ...(newer ? ([['cachestat', 1]] as [string, number][]) : []),
    // exit_group never returns; prctl (the comm step) returns under the new comm
    ...(dir === 'enter' ? ([['exit_group', 1]] as [string, number][]) : ([['prctl', 1]] as [string, number][])),
    ['umount', 1],
    ...(newer ? ([['file_setattr', 2]] as [string, number][]) : []),
    ['newstat', 2],
    ['newuname', 3],
    ['sendfile64', 4],
    ['getppid', 7],
  ];
  return `\n\n${rows.map(([n, c]) => `@[tracepoint:syscalls:sys_${dir}_${n}]: ${c}`).join('\n')}\n`;
}

/** The newest syscalls exist as tracepoints on this kernel (6.15+ for file_setattr). */
function hasNewer(): boolean {
  try {
    return readdirSync('/sys/kernel/tracing/events/syscalls').includes('sys_enter_file_setattr');
  } catch {
    return false;
  }
}

describe('syscall tracepoint wildcards on raw_syscalls', { skip }, () => {
  const newer = hasNewer();
  const cmd = workloadCommand(...STEPS, ...(newer ? NEWER : []));

  for (const dir of ['enter', 'exit'] as const) {
    it(`sys_${dir}_*: probe names and exact counts (classic, renamed${newer ? ', newer' : ''} syscalls)`, async () => {
      const r = await runTool(
        'bpfscope',
        [
          '-e',
          `tracepoint:syscalls:sys_${dir}_* /pid == cpid && comm == "bpfs_wl"/ { @[probe] = count(); }`,
          '-c',
          cmd,
        ],
        { timeoutMs: 60_000 },
      );
      assert.equal(r.code, 0, describeRun(r));
      assert.equal(r.stdout, expected(dir, newer));
    });
  }

  it('the same program reading args (one program per tracepoint) prints the same', async () => {
    const r = await runTool(
      'bpfscope',
      [
        '-e',
        'tracepoint:syscalls:sys_enter_* /pid == cpid && comm == "bpfs_wl" && args.__syscall_nr >= 0/ { @[probe] = count(); }',
        '-c',
        cmd,
      ],
      { timeoutMs: 180_000 },
    );
    assert.equal(r.code, 0, describeRun(r));
    assert.equal(r.stdout, expected('enter', newer));
  });

  it('32-bit compat syscalls are not counted (as the syscall tracepoints), though raw_syscalls sees them', async (t) => {
    let bin: string;
    try {
      bin = compileFixture(join(repoRoot(), 'test/fixtures/compat32.c'), 'bpfs_c32', [
        '-m32',
        '-nostdlib',
        '-static',
        '-O1',
        '-fno-pic',
        '-fno-stack-protector',
      ]);
    } catch (e) {
      t.skip(`cannot build a 32-bit binary here: ${(e as Error).message.split('\n')[0]}`);
      return;
    }
    // a kernel (or hypervisor, e.g. a PVM guest) that cannot run 32-bit code refuses the binary (ENOEXEC); the
    // fixture itself exits 0
    const alone = spawnSync(bin, { encoding: 'utf8' });
    if (alone.status !== 0) {
      t.skip(`32-bit binaries do not run on this machine (${alone.error?.message ?? `exit ${alone.status}`})`);
      return;
    }
    // positive control: raw_syscalls:sys_enter fires for the compat calls (ia32 getppid 64 x5, exit 1 x1)
    const raw = await runTool(
      'bpfscope',
      ['-e', 'tracepoint:raw_syscalls:sys_enter /comm == "bpfs_c32"/ { @[args.id] = count(); }', '-c', bin],
      { timeoutMs: 60_000 },
    );
    assert.equal(raw.code, 0, describeRun(raw));
    assert.equal(raw.stdout, '\n\n@[1]: 1\n@[64]: 5\n');
    // the wildcard on raw_syscalls skips them: no semget (64) or write (1) from this process
    const r = await runTool(
      'bpfscope',
      [
        '-e',
        'tracepoint:syscalls:sys_enter_* /comm == "bpfs_c32"/ { @[probe] = count(); } END { printf("end\\n"); }',
        '-c',
        bin,
      ],
      { timeoutMs: 60_000 },
    );
    assert.equal(r.code, 0, describeRun(r));
    assert.equal(r.stdout, 'end\n\n\n');
  });

  it('one perf event stands for the matched events', async () => {
    const run = startTool('bpfscope', ['-e', 'tracepoint:syscalls:sys_enter_* { @ = count(); }'], {
      timeoutMs: 60_000,
    });
    try {
      const m = (await run.waitFor(/Attached (\d+) probes/, 60_000)) && /Attached (\d+) probes/.exec(run.stderr());
      assert.ok(m, `not attached\n${run.stderr()}`);
      // the notice counts every matched event, as bpftrace's
      assert.ok(Number(m[1]) > 300, m[0]);
      const fds = readdirSync(`/proc/${run.pid}/fd`).map((f) => {
        try {
          return readlinkSync(`/proc/${run.pid}/fd/${f}`);
        } catch {
          return '';
        }
      });
      const perf = fds.filter((l) => l === 'anon_inode:[perf_event]').length;
      // raw_syscalls:sys_enter, plus one per event without a known number (uprobe/uretprobe on 6.18)
      assert.ok(perf >= 1 && perf <= 8, `${perf} perf events`);
    } finally {
      run.signal('SIGINT');
      const r = await run.done;
      assert.equal(r.code, 0, describeRun(r));
    }
  });
});
