/**
 * iter probes (BPF iterators, probes/iter.ts) on the live kernel: a process this test starts is found by
 * iter:task, iter:task_file and iter:task_vma with what /proc says about it, printf goes through bpf_seq_printf,
 * the run ends once the iterator is read, `-p` limits it, and the errors bpftrace gives (and those bpfscope adds).
 * bpftrace 0.17 cannot run iter probes on this kernel ("iter task not available"), so there is no oracle run.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { runTool } from '../helpers/cli.js';

describe('iter probes', () => {
  let child: ChildProcess;
  let pid: number;
  before(() => {
    // stdio ignored: the child's fds 0, 1 and 2 are /dev/null
    child = spawn('sleep', ['600'], { stdio: 'ignore' });
    pid = child.pid!;
  });
  after(() => {
    child.kill('SIGKILL');
  });

  it('iter:task finds a process by pid with its comm (tests/runtime/call "iter:task")', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      `iter:task { if (ctx.task.pid == ${pid}) { printf("%d %s\\n", ctx.task.tgid, ctx.task.comm); } }`,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `${pid} sleep\n\n\n`);
    assert.equal(r.stderr, 'Attached 1 probe\n');
  });

  it('printf takes several values of the kinds bpf_seq_printf formats ("iter printf multiple values")', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      `iter:task { if (ctx.task.pid == ${pid}) { printf("%s: %d|%c|%-4s|%04d|%+d|%lld|%llu|%X|%i|%lx|%%\\n", "hello", 0, 65, "ab", 7, 5, -3, 18446744073709551615, 255, -1, 4096); } }`,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'hello: 0|A|ab  |0007|+5|-3|18446744073709551615|FF|-1|1000|%\n\n\n');
  });

  it('iter:task_file gives each open file of a task with its fd', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      `iter:task_file { if (ctx.task.pid == ${pid}) { printf("%d %s\\n", ctx.fd, ctx.task.comm); } }`,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(readlinkSync(`/proc/${pid}/fd/0`), '/dev/null');
    // 0, 1, 2 and whatever else the test runner left open in the child
    const fds = readdirSync(`/proc/${pid}/fd`)
      .map(Number)
      .sort((a, b) => a - b);
    assert.deepEqual(fds.slice(0, 3), [0, 1, 2]);
    assert.equal(r.stdout, `${fds.map((fd) => `${fd} sleep\n`).join('')}\n\n`);
  });

  it('iter:task_vma gives the mappings /proc/PID/maps lists', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      `iter:task_vma { if (ctx.task.pid == ${pid}) { printf("%lx-%lx\\n", ctx.vma.vm_start, ctx.vma.vm_end); } }`,
    ]);
    assert.equal(r.code, 0, r.stderr);
    // /proc prints the addresses zero-padded to 8 digits; [vsyscall] is not a VMA of the task (the gate area)
    const maps = readFileSync(`/proc/${pid}/maps`, 'utf8')
      .split('\n')
      .filter((l) => l && !l.endsWith('[vsyscall]'))
      .map((l) => l.split(' ')[0]!.replace(/(^|-)0+(?=[0-9a-f])/g, '$1'));
    assert.ok(maps.length >= 5, maps.join('\n'));
    assert.deepEqual(r.stdout.trimEnd().split('\n'), maps);
  });

  it('exit() does not stop the iterator: the whole iteration is read, then the maps are printed', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      `iter:task { if (ctx.task.pid == ${pid}) { printf("found\\n"); @found = count(); } @all = count(); exit(); }`,
    ]);
    assert.equal(r.code, 0, r.stderr);
    const m = /^found\n\n\n@all: (\d+)\n@found: 1\n$/.exec(r.stdout);
    assert.ok(m, r.stdout);
    // every task (thread) of the system: at least this test's node, its threads and the child
    assert.ok(Number(m[1]) > 3, r.stdout);
  });

  it('begin runs before the iterator and end after it', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      `begin { printf("b\\n"); } iter:task { if (ctx.task.pid == ${pid}) { printf("t\\n"); } } end { printf("e\\n"); }`,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'b\nt\ne\n\n\n');
    assert.equal(r.stderr, 'Attached 3 probes\n');
  });

  it('-p PID iterates only that process', async () => {
    const r = await runTool('bpfscope', ['-p', String(pid), '-e', 'iter:task { printf("%d\\n", ctx.task.pid); }']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `${pid}\n\n\n`);
  });

  it('iter:NAME:PIN pins the iterator; reading the pinned file runs the program', async (t) => {
    const mounted = () => readFileSync('/proc/mounts', 'utf8').includes(' /sys/fs/bpf bpf ');
    // a bpffs at /sys/fs/bpf (mounted here when missing, and unmounted again)
    let mountedHere = false;
    if (!mounted() && existsSync('/sys/fs/bpf')) {
      mountedHere = spawnSync('mount', ['-t', 'bpf', 'bpf', '/sys/fs/bpf']).status === 0;
    }
    if (!mounted()) {
      t.skip('no bpffs at /sys/fs/bpf');
      return;
    }
    const path = `/sys/fs/bpf/bpfscope_iter_test_${process.pid}`;
    t.after(() => {
      if (mountedHere) spawnSync('umount', ['/sys/fs/bpf']);
    });
    try {
      const r = await runTool('bpfscope', [
        '-e',
        `iter:task:bpfscope_iter_test_${process.pid} { if (ctx.task.pid == ${pid}) { printf("pinned %d\\n", ctx.task.pid); } }`,
      ]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, `Program pinned to ${path}\n\n\n`);
      assert.equal(readFileSync(path, 'utf8'), `pinned ${pid}\n`);
    } finally {
      rmSync(path, { force: true });
    }
  });

  it('lists the kernel iterators (tests/runtime/basic "it lists iter with regex filter")', async () => {
    const r = await runTool('bpfscope', ['-l', 'iter:*']);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split('\n');
    for (const n of ['iter:task', 'iter:task_file', 'iter:task_vma']) assert.ok(lines.includes(n), r.stdout);
    assert.ok(!lines.some((l) => l.includes('safe_trusted')), r.stdout);
    const v = await runTool('bpfscope', ['-lv', 'iter:task_file']);
    assert.equal(v.code, 0, v.stderr);
    assert.equal(v.stdout, 'iter:task_file\n    struct task_struct * task\n    u32 fd\n    struct file * file\n');
  });

  it('refuses what bpftrace refuses, and iter next to other probes', async () => {
    const cases: [string, string][] = [
      ['iter:task* { }', 'stdin:1:1-11: ERROR: iter probe type does not support wildcards'],
      ['iter:nope { }', 'stdin:1:1-10: ERROR: iter nope not available for your kernel version.'],
      [
        'iter:task { } interval:s:1 { exit(); }',
        'stdin:1:15-27: ERROR: an iter probe cannot be used with interval probes: the iterator is read once, then the run ends (only begin and end may accompany it)',
      ],
      [
        'iter:task { } iter:task_file { }',
        'stdin:1:15-29: ERROR: only one iter probe is allowed in a program: it is read once, then the run ends',
      ],
      [
        'iter:task { printf("%o\\n", 1); }',
        "stdin:1:20-26: ERROR: the conversion %o is not supported in an iter probe: the kernel's bpf_seq_printf formats only %d %i %u %x %X (with l or ll), %s, %c and %p, with the flags 0 + - space and a width",
      ],
      [
        'iter:task { printf("%s\\n", 1); }',
        'stdin:1:28-29: ERROR: printf in an iter probe cannot print a value of type int64 with %s: %s takes a string there (the kernel formats it)',
      ],
    ];
    for (const [prog, first] of cases) {
      const r = await runTool('bpfscope', ['-e', prog]);
      assert.equal(r.code, 1, prog);
      assert.equal(r.stderr.split('\n')[0], first, prog);
      assert.ok(!/internal|\n\s+at /.test(r.stderr), r.stderr);
    }
  });
});
