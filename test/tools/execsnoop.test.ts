/**
 * execsnoop (src/tools/execsnoop.ts): the help text and usage errors (CPython's argparse on bcc 0.26's parser,
 * fixture test/tools/fixtures/proc-tools-argparse.json), the generated program, bcc's per-PID argument collection
 * and row format, and live runs: a spawned `/bin/true` with its arguments and this test as its parent, a failed
 * exec shown only with -x, and -q/-U/-P/-l/--max-args together.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import {
  buildProgram,
  collect,
  formatRow,
  header,
  pythonRegex,
  type RowOptions,
  SPEC,
} from '../../src/tools/execsnoop.js';
import { parseArgs } from '../../src/tools/framework/argparse.js';
import { readPpid } from '../../src/tools/framework/system.js';
import { assertBccHelp } from './argparse-fixture.js';
import { liveSkipReason, startBpfscope } from './helpers.js';

const plain: RowOptions = {
  time: false,
  timestamp: false,
  printUid: false,
  fails: false,
  quote: false,
  name: null,
  line: null,
};

/** Feed `args` as argument records of `pid`, then its result record; returns the line (or null). */
function exec(
  o: RowOptions,
  pid: number,
  args: string[],
  ret: number,
  comm: string,
  ppid = 1,
  ctx: Parameters<typeof collect>[3] = {},
): string | null {
  const argv = new Map<number, string[]>();
  for (const a of args) assert.equal(collect({ kind: 'arg', pid, arg: a }, o, argv, ctx), null);
  const row = collect({ kind: 'exit', pid, ppid, uid: 1000, ret, comm }, o, argv, ctx);
  assert.equal(argv.size, 0, 'the arguments are forgotten at the result');
  return row && formatRow(row, o);
}

describe('execsnoop options and format (bcc 0.26 tools/execsnoop.py)', () => {
  it('-h equals argparse on bcc parser; usage errors as bcc', () => {
    assert.ok(assertBccHelp(SPEC, 'execsnoop', 'proc-tools-argparse') > 0);
    // -u takes a number or a user name from the password database.
    assert.equal(parseArgs(SPEC, ['-u', 'root']).uid, 0);
    assert.equal(parseArgs(SPEC, ['-u', '1000']).uid, 1000);
  });

  it('program: file name, argv[1..max-args-1], "..." when cut; -u and -P filter both probes', () => {
    const p = buildProgram({ uid: 1000, ppid: 181, maxArgs: 5 });
    const filter = '/(uid == 1000) && (curtask->real_parent->tgid == 181)/';
    assert.ok(p.includes(`tracepoint:syscalls:sys_enter_execve ${filter} {\n`), p);
    assert.ok(p.includes(`tracepoint:syscalls:sys_exit_execve ${filter} {\n`), p);
    assert.ok(p.includes('str(args.filename, 129)'), p);
    assert.ok(p.includes('  while ($i < 5) {\n'), p);
    assert.ok(p.includes('$p = *uptr((uint64 *)((uint64)args.argv + $i * 8));'), p);
    assert.ok(p.includes('str(uptr((int8 *)$p), 129)'), p);
    assert.ok(p.includes('  if ($more) {\n    printf("0\\x1f%u\\x1f%s\\n", pid, "...");'), p);
    assert.ok(
      p.includes(
        'printf("1\\x1f%u\\x1f%u\\x1f%u\\x1f%d\\x1f%s\\n", pid, curtask->real_parent->tgid, uid, args.ret, comm);',
      ),
      p,
    );
    assert.doesNotMatch(buildProgram({ maxArgs: 20 }), /sys_enter_execve \//);
  });

  it('headers', () => {
    assert.equal(header(plain), 'PCOMM            PID     PPID    RET ARGS\n');
    assert.equal(
      header({ ...plain, time: true, timestamp: true, printUid: true }),
      'TIME     TIME(s) UID   PCOMM            PID     PPID    RET ARGS\n',
    );
  });

  it('rows: "%-16s %-7d %-7s %3d %s"; failed execs only with -x; -T/-t/-U columns', () => {
    assert.equal(
      exec(plain, 181, ['/bin/true', 'a', 'b'], 0, 'true', 42),
      'true             181     42        0 /bin/true a b\n',
    );
    assert.equal(exec(plain, 181, ['/missing'], -2, 'bash'), null);
    assert.equal(
      exec({ ...plain, fails: true }, 181, ['/missing', 'x'], -2, 'bash', 42),
      'bash             181     42       -2 /missing x\n',
    );
    const ctx = { clock: () => '09:41:02', elapsedSec: () => 2.5, ppidOf: () => 0 };
    assert.equal(
      exec({ ...plain, time: true, timestamp: true, printUid: true }, 7, ['/bin/ls'], 0, 'ls', 0, ctx),
      '09:41:02 2.500   1000  ls               7       ?         0 /bin/ls\n',
    );
    // a parent tgid of 0 falls back to /proc/PID/status
    assert.equal(readPpid(process.pid), process.ppid);
    assert.equal(readPpid(2 ** 30), 0);
    assert.equal(
      exec(plain, 7, ['/bin/ls'], 0, 'ls', 0, { ppidOf: () => 99 }),
      'ls               7       99        0 /bin/ls\n',
    );
  });

  it('-q quotes each argument; newlines print as \\n; -n matches the comm and -l the arguments', () => {
    assert.equal(
      exec({ ...plain, quote: true }, 1, ['/bin/echo', 'say "hi"', ''], 0, 'echo'),
      'echo             1       1         0 "/bin/echo" "say \\"hi\\"" ""\n',
    );
    assert.equal(
      exec(plain, 1, ['/bin/echo', 'a\nb'], 0, 'echo'),
      'echo             1       1         0 /bin/echo a\\nb\n',
    );
    assert.notEqual(exec({ ...plain, name: pythonRegex('^ec') }, 1, ['/bin/echo'], 0, 'echo'), null);
    assert.equal(exec({ ...plain, name: pythonRegex('^ho') }, 1, ['/bin/echo'], 0, 'echo'), null);
    assert.notEqual(exec({ ...plain, line: pythonRegex('n/e.*x') }, 1, ['/bin/echo', 'x'], 0, 'echo'), null);
    assert.equal(exec({ ...plain, line: pythonRegex('^x') }, 1, ['/bin/echo', 'x'], 0, 'echo'), null);
    assert.equal(pythonRegex('(?P<a>x)(?P=a)')?.test('xx'), true);
    assert.equal(pythonRegex('('), null);
  });
});

describe('execsnoop on the live kernel', () => {
  const skip = liveSkipReason();
  const tag = `bpfs${process.pid}x${Date.now() % 100000}`;

  it('-x: /bin/true with its arguments and this test as parent; a failed exec with ENOENT', { skip }, async () => {
    const run = startBpfscope(['execsnoop', '-x']);
    assert.ok(await run.waitFor(/ARGS\n/, 20_000), run.stderr());
    const ok = spawnSync('/bin/true', [tag, 'b']);
    const bad = spawnSync(`/nonexistent/${tag}`, ['x']);
    assert.equal(ok.status, 0);
    assert.equal((bad.error as NodeJS.ErrnoException | undefined)?.code, 'ENOENT');
    const seen = await run.waitFor(new RegExp(`-2 /nonexistent/${tag} x\\n`), 10_000);
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.ok(seen, r.stdout);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.split('\n')[0], 'PCOMM            PID     PPID    RET ARGS');
    const rows = r.stdout.split('\n').filter((l) => l.includes(tag));
    assert.equal(rows.length, 2, r.stdout);
    assert.equal(
      rows[0],
      `true             ${String(ok.pid).padEnd(7)} ${String(process.pid).padEnd(7)}   0 /bin/true ${tag} b`,
    );
    // A failed exec keeps the comm of the process that called it (here the forked node child).
    assert.match(rows[1]!, new RegExp(`^\\S+ +\\d+ +${process.pid} +-2 /nonexistent/${tag} x$`));
  });

  it('without -x a failed exec is left out; -q -U -P -l --max-args 3', { skip }, async () => {
    const run = startBpfscope(['execsnoop', '-q', '-U', '-P', String(process.pid), '-l', tag, '--max-args', '3']);
    assert.ok(await run.waitFor(/ARGS\n/, 20_000), run.stderr());
    spawnSync(`/nonexistent/${tag}`, ['x']);
    spawnSync('/bin/true', ['other']);
    const ok = spawnSync('/bin/true', [tag, 'b', 'c', 'd']);
    const seen = await run.waitFor(/"\.\.\."\n/, 10_000);
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.ok(seen, r.stdout);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split('\n');
    assert.equal(lines[0], 'UID   PCOMM            PID     PPID    RET ARGS');
    // -P keeps only this test's children, -l only the lines with the tag: the one successful exec.
    assert.deepEqual(lines.slice(1), [
      `0     true             ${String(ok.pid).padEnd(7)} ${String(process.pid).padEnd(7)}   0 "/bin/true" "${tag}" "b" "..."`,
      '',
    ]);
  });
});
