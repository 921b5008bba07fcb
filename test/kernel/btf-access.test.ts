/**
 * Kernel structs from BTF: curtask, `->` chains, `(*p).field`, casts to struct pointers, char arrays as strings,
 * bitfields — values checked against what the test knows about the traced process.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runTool, startTool } from '../helpers/cli.js';
import { workloadCommand } from '../helpers/workload.js';

describe('BTF struct access', () => {
  it('curtask fields match the traced command and its parent (bpfscope itself)', async () => {
    const run = startTool('bpfscope', [
      '-e',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { printf("%d %d %s %d %d\\n", curtask->pid == cpid, curtask->real_parent->tgid, curtask->comm, (*curtask).tgid == pid, ((struct task_struct *)curtask)->pid == tid); exit(); }',
      '-c',
      workloadCommand('comm', 'btf_wl', 'getppid', 1),
    ]);
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `1 ${run.pid} btf_wl 1 1\n\n\n`);
  });

  it('walks pointers to pointers (struct file **fd): indexing, arithmetic and -> on the element', async () => {
    // fd 0 of the traced command is /dev/null (stdin closed by the harness) and fd 9 is not open
    const r = await runTool('bpfscope', [
      '-e',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { $fd = curtask->files->fdt->fd; printf("%d %d %d %d\\n", $fd[0] != 0, *($fd + 1) == $fd[1], $fd[0]->f_inode != 0, $fd[9] == 0); }',
      '-c',
      workloadCommand('getppid', 1),
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '1 1 1 1\n\n\n');
  });

  it('`.` on a pointer to a struct dereferences it, as current bpftrace (curtask.comm, args.rqtp.tv_nsec)', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      'tracepoint:syscalls:sys_enter_nanosleep /pid == cpid/ { printf("%s %d %d\\n", curtask.comm, curtask.parent.pid == curtask->real_parent->pid, args.rqtp.tv_nsec); }',
      '-c',
      workloadCommand('comm', 'btf_dot', 'nanosleep', 1, 2500),
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'btf_dot 1 2500000\n\n\n');
  });

  it('reports an unknown field with the struct name', async () => {
    const r = await runTool('bpfscope', ['-e', 'BEGIN { @ = curtask->no_such_field; }']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /ERROR: Can't find field 'no_such_field' in struct task_struct/);
  });

  it('reports an unknown struct in a cast', async () => {
    const r = await runTool('bpfscope', ['-e', 'BEGIN { @ = ((struct nope_nope *)0)->x; }']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /ERROR: Unknown type: 'struct nope_nope'/);
  });
});
