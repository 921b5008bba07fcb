/** rawtracepoint (tp_btf) probes: BTF-typed `args`, pointer fields, `argN`, listing, unknown names. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runTool } from '../helpers/cli.js';
import { workloadCommand } from '../helpers/workload.js';

describe('rawtracepoint', () => {
  it('counts a syscall through sys_enter with BTF argument names', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      'rawtracepoint:sys_enter /pid == cpid && args.id == 110/ { @calls = count(); @regs[args.regs->ax == (uint64)-38] = count(); } rt:sys_exit /pid == cpid && arg1 == 110/ { }',
      '-c',
      workloadCommand('getppid', 5),
    ]);
    assert.equal(r.code, 0, r.stderr);
    // x86-64 enters syscalls with ax = -ENOSYS in pt_regs
    assert.equal(r.stdout, '\n\n@calls: 5\n@regs[true]: 5\n');
  });

  it('lists arguments with -lv', async () => {
    const r = await runTool('bpfscope', ['-lv', 'rawtracepoint:sched_switch']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      'rawtracepoint:vmlinux:sched_switch\n    bool preempt\n    struct task_struct * prev\n    struct task_struct * next\n    unsigned int prev_state\n',
    );
  });

  it('rejects a module that is not loaded with BTF (tests/runtime/probe "rawtracepoint_module_missing")', async () => {
    const r = await runTool('bpfscope', ['-e', 'rawtracepoint:nonsense:sys_exit { }']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^stdin:1:1-32: ERROR: No matches for rawtracepoint nonsense:sys_exit\.$/m);
    const w = await runTool('bpfscope', [
      '-e',
      'config = { missing_probes = warn } rawtracepoint:nonsense:sys_exit { } BEGIN { exit(); }',
    ]);
    assert.equal(w.code, 0, w.stderr);
    assert.match(w.stderr, /^stdin:1:36-67: WARNING: No matches for rawtracepoint nonsense:sys_exit\. Skipping\.$/m);
    const v = await runTool('bpfscope', ['-e', 'rawtracepoint:vmlinux:sys_exit { exit(); }']);
    assert.equal(v.code, 0, v.stderr);
  });

  it('an unknown raw tracepoint leaves the probe without attach points (tests/runtime/probe "rawtracepoint_missing")', async () => {
    const r = await runTool('bpfscope', ['-e', 'rawtracepoint:sched_swich { }']);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /^stdin:1:1-26: ERROR: Probe has no valid attach points\. If this is expected, set the 'missing_probes' config variable to 'warn'\.\n/,
    );
    assert.match(r.stderr, /HINT: Did you mean rawtracepoint:sched_switch\?/);
    const w = await runTool('bpfscope', [
      '-e',
      'config = { missing_probes = warn } rawtracepoint:sched_swich { } BEGIN { exit(); }',
    ]);
    assert.equal(w.code, 0, w.stderr);
    assert.match(
      w.stderr,
      /^stdin:1:36-61: WARNING: Probe has no valid attach points\. It is being removed which may cause issues with program behavior\.$/m,
    );
  });
});
