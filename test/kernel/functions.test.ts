/**
 * Builtin functions beyond the basics: ntop, strftime, strlen, strncmp, bswap, has_key, ksym, usym, signal, join,
 * strcontains, len, macaddr, cgroupid, cgroup_path, usermode.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { formatInet } from '../../src/runtime/decode.js';
import { ATTACHED_PATTERN, runTool, startTool } from '../helpers/cli.js';
import { workloadCommand, workloadPath } from '../helpers/workload.js';

describe('functions', () => {
  it('ntop, strlen, strncmp, bswap, has_key and strftime', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      'BEGIN { printf("%s|%d|%d|%d|%x|%s\\n", ntop(0x0100007f), strlen("hello"), strncmp("abcd", "abxx", 2), strncmp("abcd", "abxx", 3), bswap((uint32)0x11223344), strftime("%Y", nsecs)); @before = has_key(@m, 1); @m[1] = 1; @after = has_key(@m, 1); exit(); }',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const year = new Date().getFullYear();
    assert.equal(r.stdout, `127.0.0.1|5|0|1|44332211|${year}\n\n\n@after: true\n@before: false\n@m[1]: 1\n`);
  });

  it('has_key: multi-key maps take a tuple; a scalar map or a key of the wrong type is an error (tests/runtime/basic "has_key error *")', async () => {
    const ok = await runTool('bpfscope', [
      '-e',
      'BEGIN { @g[1, "hi"] = 2; printf("%d %d\\n", has_key(@g, (1, "hi")), has_key(@g, (2, "hi"))); clear(@g); exit(); }',
    ]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.stdout, '1 0\n\n\n');
    const scalar = await runTool('bpfscope', ['-e', 'BEGIN { @g = 2; if (has_key(@g, 2)) { printf("ok\\n"); } }']);
    assert.equal(scalar.code, 1);
    assert.match(scalar.stderr, /^stdin:1:29-31: ERROR: call to has_key\(\) expects a map with explicit keys/m);
    const mismatch = await runTool('bpfscope', ['-e', 'BEGIN { @g[1, "hi"] = 2; if (has_key(@g, (1, 2))) { } }']);
    assert.equal(mismatch.code, 1);
    // bpftrace's message (runtime test basic "has_key error type mismatch"): literals are int8, the map's key as
    // first written
    assert.match(
      mismatch.stderr,
      /^stdin:1:42-48: ERROR: Argument mismatch for @g: trying to access with arguments: '\(int8,int8\)' when map expects arguments: '\(int8,string\[3\]\)'$/m,
    );
  });

  it('formats IPv6 like inet_ntop', () => {
    const b = (hex: string) => Buffer.from(hex, 'hex');
    assert.equal(formatInet(10, b('00000000000000000000000000000001')), '::1');
    assert.equal(formatInet(10, b('20010db8000000000000000000000001')), '2001:db8::1');
    assert.equal(formatInet(10, b('00000000000000000000ffff7f000001')), '::ffff:127.0.0.1');
    assert.equal(formatInet(10, b('20010db8000100000001000000000001')), '2001:db8:1:0:1::1');
    assert.equal(formatInet(2, b('0a000001')), '10.0.0.1');
  });

  it('ksym of a kernel function pointer, usym of a user instruction pointer', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      'tracepoint:timer:hrtimer_start /pid == cpid/ { @k[ksym(args.function)] = count(); } uprobe:libc:getppid /pid == cpid/ { @u[usym(reg("ip"))] = count(); }',
      '-c',
      workloadCommand('nanosleep', 1, 1000),
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^@k\[hrtimer_wakeup\]: 1$/m);
    // user symbols are resolved when the map is printed, so the process must still be alive then (as in bpftrace):
    // the target waits on its stdin until bpfscope has attached, makes its two calls, and waits again while bpfscope
    // (told by the two `hit` lines that both calls were seen) is interrupted and prints the map
    const child = spawn(workloadPath(), ['wait-stdin', 'getppid', '2', 'wait-stdin'], {
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    const exited = new Promise((r) => child.on('close', r));
    child.stdin!.on('error', () => {});
    try {
      const run = startTool('bpfscope', [
        '-p',
        String(child.pid),
        '-e',
        `uprobe:libc:syscall /pid == ${child.pid} && arg0 == 110/ { @u[usym(reg("ip"))] = count(); printf("hit\\n"); }`,
      ]);
      assert.ok(await run.waitFor(ATTACHED_PATTERN, 20_000), 'no attach notice');
      child.stdin!.write('g');
      assert.ok(await run.waitFor(/^hit\nhit\n/m, 20_000), 'the two getppid calls were not seen');
      run.signal('SIGINT');
      const u = await run.done;
      assert.equal(u.code, 0, u.stderr);
      assert.equal(u.stdout, 'hit\nhit\n\n\n@u[syscall]: 2\n');
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
  });

  it('signal() needs --unsafe and then kills the traced command', async () => {
    const prog = 'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { signal("KILL"); }';
    const safe = await runTool('bpfscope', ['-e', prog, '-c', workloadCommand('getppid', 1)]);
    assert.equal(safe.code, 1);
    assert.match(safe.stderr, /signal\(\) is an unsafe function being used in safe mode/);
    const r = await runTool(
      'bpfscope',
      ['--unsafe', '-e', `${prog} END { printf("done\\n"); }`, '-c', workloadCommand('getppid', 1, 'sleep-ms', 5000)],
      {
        timeoutMs: 10_000,
      },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.ok(!r.timedOut, 'the command should have been killed long before its 5 s sleep ended');
    assert.match(r.stdout, /done/);
  });
});

describe('more builtins and software events', () => {
  it('ppid, username, ncpus, cgroup, jiffies, rand', async () => {
    const { availableParallelism } = await import('node:os');
    const run = startTool('bpfscope', [
      '-e',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { printf("%d %s %d %d %d\\n", ppid, username, ncpus, cgroup > 0, jiffies > 0); @r = rand; }',
      '-c',
      workloadCommand('getppid', 1),
    ]);
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    // the traced command's parent is bpfscope itself (it starts the command)
    assert.equal(r.stdout.split('\n')[0], `${run.pid} root ${availableParallelism()} 1 1`);
  });

  it('software events count page faults and context switches of a command', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      'software:page-faults:1 /pid == cpid/ { @faults = count(); } software:cs:1 /pid == cpid/ { @cs = count(); }',
      '-c',
      workloadCommand('sleep-ms', 20, 'sleep-ms', 20),
    ]);
    assert.equal(r.code, 0, r.stderr);
    const faults = Number(/^@faults: (\d+)$/m.exec(r.stdout)?.[1]);
    const cs = Number(/^@cs: (\d+)$/m.exec(r.stdout)?.[1]);
    assert.ok(faults > 10, r.stdout);
    assert.ok(cs >= 2, r.stdout);
  });

  it('`probe` keeps an event alias as written; counts use bpftrace integer syntax (tests/runtime/probe)', async () => {
    const r = await runTool('bpfscope', ['-e', 'software:cpu:100000 { print(probe); exit(); }']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.split('\n')[0], 'software:cpu:100000');
    const e = await runTool('bpfscope', ['-e', 'software:cpu-clock:1e6 { print(probe); exit(); }']);
    assert.equal(e.code, 0, e.stderr);
    assert.equal(e.stdout.split('\n')[0], 'software:cpu-clock:1000000');
    const zero = await runTool('bpfscope', ['-e', 'software:cpu:0 { }']);
    assert.equal(zero.code, 1);
    assert.match(zero.stderr, /ERROR: Invalid count for software:cpu: 0\n/);
  });

  it('rejects an unknown software event with a suggestion', async () => {
    const r = await runTool('bpfscope', ['-e', 'software:page-fault:1 { }']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /Invalid software event: page-fault\n[\s\S]*HINT: Did you mean .*software:page-faults/);
  });
});

describe('join', () => {
  it('prints an execve argv like bpftrace 0.17', async () => {
    const prog = (arrow: string) =>
      `tracepoint:syscalls:sys_enter_execve /pid == cpid/ { join(args${arrow}argv); join(args${arrow}argv, ","); exit(); }`;
    const ours = await runTool('bpfscope', ['-e', prog('.'), '-c', '/bin/true a "b c" d']);
    assert.equal(ours.code, 0, ours.stderr);
    // -c splits on whitespace without shell quoting, as bpftrace does; `pid == cpid`: only the command's execve,
    // not another process's on a busy machine (bpftrace 0.17 once printed a concurrent `ls` here)
    assert.equal(ours.stdout, '/bin/true a "b c" d\n/bin/true,a,"b,c",d\n\n\n');
    const oracle = await runTool('bpftrace', ['-e', prog('->'), '-c', '/bin/true a "b c" d']);
    if (oracle.code === 0) assert.equal(ours.stdout, oracle.stdout.replace(/^Attaching.*\n/, ''));
  });
});

describe('hardware events', () => {
  it('say clearly when the machine has no PMU (the development VM), or count cycles when it has one', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      'hardware:cycles:100000 /pid == cpid/ { @c = count(); }',
      '-c',
      workloadCommand('spin', 50),
    ]);
    if (r.code === 0) {
      assert.match(r.stdout, /^@c: \d+$/m);
    } else {
      assert.equal(r.code, 1);
      assert.match(
        r.stderr,
        /ERROR: hardware events are not available: this machine has no hardware performance counters/,
      );
      assert.doesNotMatch(r.stderr, /\n\s+at /);
    }
  });
});

describe('pointers in maps, uptr/kptr, max_strlen', () => {
  it('keeps a filename pointer in a map and reads it at syscall exit, with a longer max_strlen', async () => {
    const long = `/tmp/${'x'.repeat(90)}`;
    const r = await runTool('bpfscope', [
      '-e',
      `config = { max_strlen = 128 } tracepoint:syscalls:sys_enter_openat /pid == cpid/ { @p[tid] = args.filename; } tracepoint:syscalls:sys_exit_openat /pid == cpid && @p[tid] != 0/ { @[str(uptr(@p[tid])), args.ret] = count(); delete(@p[tid]); }`,
      '-c',
      workloadCommand('openat', long, 2),
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^@\\[${long}, -2\\]: 2$`, 'm'));
  });

  it('rejects a max_strlen beyond what a frame map holds', async () => {
    const r = await runTool('bpfscope', ['-e', 'config = { max_strlen = 20000 } BEGIN { exit(); }']);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /^stdin:1:12-30: ERROR: max_strlen 20000 is larger than bpfscope supports \(16384 bytes\)$/m,
    );
  });
});

describe('system, cat, strerror, kaddr, sizeof, offsetof', () => {
  it('match bpftrace 0.17 where it has them', async () => {
    const prog =
      'BEGIN { system("echo hi %d", 5); cat("/proc/sys/kernel/ostype"); printf("%s|%s|%d\\n", strerror(2), ksym(kaddr("do_nanosleep")), sizeof(uint32)); exit(); }';
    const ours = await runTool('bpfscope', ['--unsafe', '-e', prog]);
    assert.equal(ours.code, 0, ours.stderr);
    assert.equal(ours.stdout, 'hi 5\nLinux\nNo such file or directory|do_nanosleep|4\n\n\n');
    const oracle = await runTool('bpftrace', ['--unsafe', '-e', prog]);
    if (oracle.code === 0) assert.equal(ours.stdout, oracle.stdout.replace(/^Attaching.*\n/, ''));
  });

  it('system() needs --unsafe; sizeof/offsetof use BTF', async () => {
    const r = await runTool('bpfscope', ['-e', 'BEGIN { system("true"); }']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /system\(\) is an unsafe function being used in safe mode/);
    const s = await runTool('bpfscope', [
      '-e',
      'BEGIN { printf("%d %d\\n", offsetof(struct task_struct, pid) == offsetof(struct task_struct, tgid) - 4, sizeof(struct task_struct) > 1000); exit(); }',
    ]);
    assert.equal(s.code, 0, s.stderr);
    assert.equal(s.stdout, '1 1\n\n\n');
  });
});

describe('strcontains, len, macaddr, cgroupid, usermode', () => {
  it('strcontains (a bool, as current bpftrace) with literal and variable needles, on literals and kernel strings', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      'BEGIN { $h = "hello world"; $n = "o w"; $e = ""; $x = "worldly"; ' +
        'printf("%d %d %d %d %d %d %d %d\\n", strcontains("hello world", "o w"), strcontains($h, $n), ' +
        'strcontains($h, "hello world!"), strcontains($h, $e), strcontains($h, ""), strcontains($h, $x), ' +
        'strcontains($h, "d"), strcontains("", "a")); exit(); }',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '1 1 0 1 1 0 1 0\n\n\n');
    const t = await runTool('bpfscope', [
      '-e',
      'tracepoint:syscalls:sys_enter_openat /pid == cpid/ { $n = "ssing-f"; @[strcontains(str(args.filename), "missing"), strcontains(str(args.filename), $n), strcontains(comm, "s_wl")] = count(); }',
      '-c',
      workloadCommand('comm', 'bpfs_wl', 'openat', '/tmp/bpfs-missing-file', 3, 'openat', '/tmp/bpfs-other', 2),
    ]);
    assert.equal(t.code, 0, t.stderr);
    assert.match(t.stdout, /^@\[true, true, true\]: 3$/m);
    // the dynamic loader's opens happen before the comm is set (bpfs_workload has no "s_wl")
    assert.match(t.stdout, /^@\[false, false, true\]: 2$/m);
  });

  it('len(kstack) and len(ustack) count the frames the stack prints', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { $k = kstack; @k = len($k); @u = len(ustack(perf)); @ks[$k] = count(); }',
      '-c',
      workloadCommand('getppid', 2),
    ]);
    assert.equal(r.code, 0, r.stderr);
    const k = Number(/^@k: (\d+)$/m.exec(r.stdout)?.[1]);
    const u = Number(/^@u: (\d+)$/m.exec(r.stdout)?.[1]);
    const frames = /^@ks\[\n([\s\S]*?)\n\]: 2$/m.exec(r.stdout)?.[1]?.split('\n') ?? [];
    assert.ok(k >= 3, r.stdout);
    assert.equal(k, frames.length, r.stdout);
    assert.ok(u >= 1, r.stdout);
  });

  it('macaddr() prints six bytes as upper-case hex pairs', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      'BEGIN { $a = pton("1234:5678:9abc::"); printf("%s\\n", macaddr($a)); @[macaddr($a)] = count(); exit(); }',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '12:34:56:78:9A:BC\n\n\n@[12:34:56:78:9A:BC]: 1\n');
  });

  /** Where cgroup v2 is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on hybrid systems). */
  const cgroup2 = readFileSync('/proc/mounts', 'utf8').match(/^\S+ (\S+) cgroup2 /m)?.[1];
  it(
    "cgroupid() is the cgroup's ID as the cgroup builtin sees it; a missing path is an error",
    { skip: cgroup2 ? undefined : 'no cgroup v2 hierarchy mounted' },
    async () => {
      // a fresh child cgroup, so the ID is not the root's 1; the traced shell moves itself there and runs the workload
      const path = `${cgroup2}/bpfscope-test-${process.pid}`;
      mkdirSync(path);
      const script = join(mkdtempSync(join(tmpdir(), 'bpfs-cg-')), 'run.sh');
      writeFileSync(
        script,
        `echo $$ > ${path}/cgroup.procs\nexec ${workloadCommand('comm', 'bpfs_cg', 'getppid', 4)}\n`,
      );
      try {
        const r = await runTool('bpfscope', [
          '-e',
          `tracepoint:syscalls:sys_enter_getppid /cgroup == cgroupid("${path}")/ { @[comm] = count(); @p[cgroup_path(cgroup, "unified")] = count(); } END { printf("%d\\n", cgroupid("${path}")); }`,
          '-c',
          `/bin/sh ${script}`,
        ]);
        assert.equal(r.code, 0, r.stderr);
        const id = statSync(path, { bigint: true }).ino;
        assert.ok(id > 1n);
        // cgroup_path(): the cgroup v2 hierarchy is named "unified" (bpftrace `src/util/cgroup.cpp`)
        assert.equal(r.stdout, `${id}\n\n\n@[bpfs_cg]: 4\n@p[unified:/bpfscope-test-${process.pid}]: 4\n`);
      } finally {
        rmSync(dirname(script), { recursive: true, force: true });
        rmdirSync(path);
      }
      const bad = await runTool('bpfscope', ['-e', 'BEGIN { print(cgroupid("/sys/fs/cgroup/no-such-cgroup")); }']);
      assert.equal(bad.code, 1);
      assert.match(
        bad.stderr,
        /^stdin:1:24-55: ERROR: Failed to resolve cgroup ID for path: \/sys\/fs\/cgroup\/no-such-cgroup$/m,
      );
    },
  );

  it('usermode is 1 in a uprobe, 0 in the kernel and in tracepoints', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      'uprobe:libc:syscall /pid == cpid/ { @u[usermode] = count(); } software:page-faults:1 /pid == cpid/ { @f = 1; }',
      '-c',
      workloadCommand('getppid', 3),
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^@u\[1\]: \d+$/m);
    assert.doesNotMatch(r.stdout, /^@u\[0\]/m);
    const k = await runTool('bpfscope', [
      '-e',
      'profile:hz:999 /pid == cpid/ { @[usermode] = count(); }',
      '-c',
      workloadCommand('read', 3000, 65536),
    ]);
    assert.equal(k.code, 0, k.stderr);
    assert.match(k.stdout, /^@\[0\]: \d+$/m, 'samples inside read(2) from /dev/zero are in kernel mode');
    // tracepoints have no registers of the task: 0, as bpftrace folds it (tests/runtime/builtin
    // "usermode_builtin_in_kprobe_fentry" has the same for fentry)
    const t = await runTool('bpfscope', [
      '-e',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @[usermode] = count(); }',
      '-c',
      workloadCommand('getppid', 3),
    ]);
    assert.equal(t.code, 0, t.stderr);
    assert.match(t.stdout, /^@\[0\]: 3$/m);
  });
});

describe('exit(code)', () => {
  it('ends the run with the given exit status after printing the maps; exit() is 0', async () => {
    const r = await runTool('bpfscope', ['-e', 'interval:ms:50 { @ = 1; exit(69); }']);
    assert.equal(r.code, 69, r.stderr);
    assert.equal(r.stdout, '\n\n@: 1\n');
    const z = await runTool('bpfscope', ['-e', 'BEGIN { exit(); }']);
    assert.equal(z.code, 0, z.stderr);
    const bad = await runTool('bpfscope', ['-e', 'BEGIN { exit("x"); }']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /exit\(\) expects an integer exit code \(string\[2\] provided\)/);
  });
});

describe('errorf and warnf', () => {
  it('print the formatted message on stderr at the call, as current bpftrace; --no-warnings silences warnf', async () => {
    const prog = 'BEGIN { errorf("bad %d, %s", 10, "arg2"); warnf("meh %x\\n", 255); printf("out\\n"); exit(); }';
    const r = await runTool('bpfscope', ['-e', prog]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'out\n\n\n');
    assert.equal(
      r.stderr,
      'Attached 1 probe\n' +
        `stdin:1:9-41: ERROR: bad 10, arg2\n${prog}\n        ${'~'.repeat(32)}\n` +
        `stdin:1:43-65: WARNING: meh ff\n${prog}\n${' '.repeat(42)}${'~'.repeat(22)}\n`,
    );
    const q = await runTool('bpfscope', ['--no-warnings', '-e', prog]);
    assert.equal(q.code, 0, q.stderr);
    assert.doesNotMatch(q.stderr, /WARNING/);
    assert.match(q.stderr, /ERROR: bad 10, arg2/);
  });
});

describe('nsecs(clock)', () => {
  it('reads CLOCK_MONOTONIC, CLOCK_BOOTTIME and CLOCK_TAI; an unknown clock is an error', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      'BEGIN { $m = nsecs(monotonic); $b = nsecs(boot); printf("%d %d %llu\\n", $b >= $m, nsecs >= $m, nsecs(tai)); exit(); }',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const [ordered, plain, tai] = r.stdout.split('\n')[0]!.split(' ');
    assert.equal(`${ordered} ${plain}`, '1 1');
    // CLOCK_TAI is the wall clock plus the kernel's TAI offset (0 unless NTP set it, 37 s today)
    const offset = Number(BigInt(tai!) / 1000000n) - Date.now();
    assert.ok(offset > -5_000 && offset < 45_000, `TAI - now = ${offset} ms`);
    const bad = await runTool('bpfscope', ['-e', 'BEGIN { @ = nsecs(utc); }']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /nsecs\(\) expects a clock: monotonic, boot, tai, sw_tai/);
  });
});

describe('pointer arithmetic in maps and variables', () => {
  it('++, --, += and -= move a pointer by whole elements (bpftrace runtime tests "pointers")', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      'BEGIN { @a = (int32 *)0x32; @a += 6; @b = (int16 *)0x32; @b++; @c = (int32 *)0x32; @c--; @d = (int8 *)0x32; @d -= 1; ' +
        '$p = (int64 *)0x32; $p++; $p += 2; @e = $p; @n = 1; @n += 2; exit(); }',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '\n\n@a: 0x4a\n@b: 0x34\n@c: 0x2e\n@d: 0x31\n@e: 0x4a\n@n: 3\n');
  });
});

describe('string indexing', () => {
  it('s[i] is the i-th byte (int8), constant or run-time index, 0 past the buffer', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      'BEGIN { $a = "foo"; $j = 2; $far = (uint64)10; printf("%c%c %d %d %d\\n", $a[0], $a[$j], $a[1], $a[$far], $a[7]); exit(); }',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'fo 111 0 0\n\n\n');
  });
});
