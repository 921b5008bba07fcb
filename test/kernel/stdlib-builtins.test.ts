/**
 * Current bpftrace's stdlib builtins bpfscope rewrites into other expressions (lang/passes/stdlib.ts) and the
 * config checks of lang/passes/config.ts, against the outputs bpftrace's runtime tests (revision e1b7c393) expect:
 * `pcomm`, `leader_comm`, `leader_tid` (tests/runtime/stdlib "pcomm and leader_comm for ..."), `config()` and
 * `__builtin_config` (builtin "config builtin reads ...", macro "builtin wrapper config"), `license` (other
 * "invalid license"), `assert` (stdlib "assert_macro") and `write_user` (call "write_user_unsafe_required").
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot, runTool } from '../helpers/cli.js';
import { ccSkipReason, compileFixture } from '../helpers/compile.js';
import { workloadCommand } from '../helpers/workload.js';

async function run(prog: string, ...extra: string[]) {
  return runTool('bpfscope', ['-e', prog, ...extra]);
}

async function ok(prog: string, ...extra: string[]): Promise<string> {
  const r = await run(prog, ...extra);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout;
}

describe('pcomm, leader_comm, leader_tid (tests/runtime/stdlib "pcomm and leader_comm for process/thread")', () => {
  it(
    'name the parent process and the thread group leader, of the current task or a task given',
    {
      skip: ccSkipReason(),
    },
    async () => {
      // tn-parent forks tn-child, which calls getppid() and then starts tn-thread, which calls getppid()
      const bin = compileFixture(join(repoRoot(), 'test/kernel/fixtures/task-names.c'), 'task_names', [
        '-O1',
        '-pthread',
      ]);
      const out = await ok(
        'tracepoint:syscalls:sys_enter_getppid /ppid == cpid/ { printf("%s %s %s %d %d | %s %s %d\\n", comm, pcomm, leader_comm, leader_tid == pid, leader_tid == tid, pcomm(curtask), leader_comm(), leader_tid() == pid); }',
        '-c',
        bin,
      );
      assert.equal(
        out,
        'tn-child tn-parent tn-child 1 1 | tn-parent tn-child 1\n' +
          'tn-thread tn-parent tn-child 1 0 | tn-parent tn-child 1\n\n\n',
      );
    },
  );
});

describe('config() and __builtin_config (tests/runtime/builtin "config builtin reads ...", macro "builtin wrapper config")', () => {
  it('give the configuration bpfscope runs with, as literals', async () => {
    assert.equal(
      await ok(
        'config = { max_strlen = 32; stack_mode = perf; missing_probes = warn } BEGIN { printf("%d %s %d %s\\n", config().max_strlen, config().stack_mode, config().cpp_demangle, __builtin_config.missing_probes); exit(); }',
      ),
      '32 perf 1 warn\n\n\n',
    );
    assert.equal(
      await ok('BEGIN { if (config().max_strlen == __builtin_config.max_strlen) { printf("match"); } exit(); }'),
      'match\n\n',
    );
    assert.equal(
      await ok(
        'BEGIN { $c = config(); printf("%d %d %s %d\\n", $c.max_map_keys, $c.max_probes, $c.license, $c.print_maps_on_exit); exit(); }',
      ),
      '4096 1024 GPL 1\n\n\n',
    );
  });

  it('a setting bpfscope does not honour is not in the record: an error, not a value', async () => {
    const r = await run('BEGIN { print(config().on_stack_limit); exit(); }');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^stdin:1:15-38: ERROR: Record does not contain a field named 'on_stack_limit'$/m);
  });
});

describe('config license (tests/runtime/other "invalid license")', () => {
  it('accepts the GPL-compatible names without a warning', async () => {
    const r = await run('config = { license = "Dual BSD/GPL" } BEGIN { printf("%s\\n", config().license); exit(); }');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'Dual BSD/GPL\n\n\n');
    assert.doesNotMatch(r.stderr, /WARNING/);
  });

  it("refuses another with bpftrace's message", async () => {
    const r = await run('config={license="Potato"} begin { @p[1] = 1; print(len(@p));  }');
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /^stdin:1:9-25: ERROR: Invalid value for license\. Found: Potato\. Valid values: Dual MIT\/GPL, Dual BSD\/GPL, Dual MPL\/GPL, GPL and additional rights, GPL v2, GPL\. Read more about BPF programs and licensing: https:\/\/docs\.kernel\.org\/bpf\/bpf_licensing\.html#using-bpf-programs-in-the-linux-kernel$/m,
    );
    assert.equal(r.stdout, '');
  });
});

describe('assert (tests/runtime/stdlib "assert_macro")', () => {
  it('a false condition is the error "assert failed: MSG" at the assert, and exit code 1', async () => {
    const r = await run('BEGIN { assert(false, "My error message"); }');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^stdin:1:9-42: ERROR: assert failed: My error message$/m);
  });

  it('a true condition does nothing; assert is only a statement', async () => {
    assert.equal(await ok('BEGIN { $x = 2; assert($x == 2, "never"); printf("ok\\n"); exit(); }'), 'ok\n\n\n');
    const r = await run('BEGIN { $x = assert(1, "a"); }');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /ERROR: assert\(\) is a statement of two arguments: assert\(condition, message\)$/m);
  });
});

describe('write_user (tests/runtime/call "write_user_unsafe_required")', () => {
  it('needs --unsafe', async () => {
    const r = await run('tracepoint:syscalls:sys_enter_openat { write_user(args.filename, "x", 1); }');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^stdin:1:40-73: ERROR: write_user\(\) is unsafe\. To use you need the --unsafe flag$/m);
  });

  it("writes into the traced process's memory: the workload opens / instead of /missing", async () => {
    const r = await run(
      'tracepoint:syscalls:sys_enter_openat /pid == cpid && comm == "bpfs_wl"/ { printf("write %d\\n", write_user(args.filename, "/", 2)); } tracepoint:syscalls:sys_exit_openat /pid == cpid && comm == "bpfs_wl"/ { printf("opened %d\\n", args.ret >= 0); }',
      '--unsafe',
      '-c',
      workloadCommand('comm', 'bpfs_wl', 'openat', '/missing', 1),
    );
    if (r.code === 0) {
      assert.equal(r.stdout, 'write 1\nopened 1\n\n\n');
    } else {
      // a kernel in lockdown (integrity or confidentiality, as this VM's) offers no bpf_probe_write_user: the
      // verifier's refusal, at the write_user call, named as bpftrace names it (bpfbytecode.cpp)
      assert.match(r.stderr, /^stdin:1:96-129: ERROR: helper bpf_probe_write_user not allowed in probe$/m);
      assert.match(r.stderr, /cannot use helper bpf_probe_write_user#36/);
    }
  });
});

describe('container_of (tests/runtime/stdlib "container_of")', () => {
  it('gives the object holding a member: curtask from the address of its pid', async () => {
    assert.equal(
      await ok(
        'BEGIN { $t = container_of((uint64)curtask + offsetof(struct task_struct, pid), typeof(struct task_struct), pid); printf("%d %d\\n", $t == curtask, $t->pid == tid); exit(); }',
      ),
      '1 1\n\n\n',
    );
  });

  it('other forms are a positioned error', async () => {
    const r = await run('BEGIN { $t = container_of(curtask, curtask, pid); exit(); }');
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /^stdin:1:14-49: ERROR: container_of\(\) expects a pointer, typeof\(TYPE\) and a member name/m,
    );
  });
});
