/**
 * Every construct of the language subset compiles to programs the live kernel's verifier accepts (loaded for real,
 * then closed). Behaviour (what the programs print) is covered by the differential and e2e suites.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compile } from '../../src/compiler.js';
import { createOutput } from '../../src/runtime/output/index.js';
import { OutputSink } from '../../src/runtime/output/sink.js';
import { Session } from '../../src/runtime/session.js';

const PROGRAMS: [string, string][] = [
  ['printf of builtins', 'BEGIN { printf("%d %d %d %d %s %d %u\\n", pid, tid, uid, gid, comm, nsecs, cpu); }'],
  ['elapsed and probe', 'BEGIN { printf("%d %s\\n", elapsed, probe); }'],
  [
    'tracepoint args',
    'tracepoint:syscalls:sys_enter_openat { printf("%d %s %d\\n", args.dfd, str(args.filename), args->flags); }',
  ],
  [
    '__data_loc string',
    'tracepoint:sched:sched_process_exec { printf("%s\\n", str(args.filename)); @[args.filename] = count(); }',
  ],
  ['array field index', 'tracepoint:raw_syscalls:sys_enter { @[args.id, args.args[0]] = count(); }'],
  ['char array field', 'tracepoint:sched:sched_switch { @[args.prev_comm, args.next_comm] = count(); }'],
  ['signed field', 'tracepoint:syscalls:sys_exit_read /args.ret < 0/ { @neg = count(); }'],
  [
    'all aggregations',
    'tracepoint:syscalls:sys_exit_read { @c = count(); @s = sum(args.ret); @a = avg(args.ret); @mi = min(args.ret); @ma = max(args.ret); @st = stats(args.ret); @h = hist(args.ret); @h2 = hist(args.ret, 3); @l = lhist(args.ret, 0, 1000, 100); }',
  ],
  ['keyed aggregations', 'tracepoint:syscalls:sys_exit_read { @[comm, pid] = count(); @h[comm] = hist(args.ret); }'],
  [
    'latency with a tid map',
    'tracepoint:syscalls:sys_enter_read { @start[tid] = nsecs; } tracepoint:syscalls:sys_exit_read /@start[tid]/ { @us = hist((nsecs - @start[tid]) / 1000); delete(@start[tid]); }',
  ],
  ['map ++ and +=', 'BEGIN { @x++; @x += 5; @y[1]--; @y[1] -= 2; ++@z; @w = @x * 2; }'],
  ['variables', 'BEGIN { $a = 1; $b = $a + 2; $s = comm; $a += $b; $a++; printf("%d %s\\n", $a, $s); }'],
  [
    'if/else and ternary',
    'BEGIN { if (pid > 1) { printf("a\\n"); } else if (pid == 0) { printf("b\\n"); } else { printf("c\\n"); } @t = pid > 1 ? "big" : "small"; @u = pid ? 1 : 2; }',
  ],
  [
    'logical operators',
    'BEGIN { if (pid > 1 && (tid > 1 || !uid)) { @ = count(); } @v = pid > 1 || tid > 1; @w = !pid; }',
  ],
  [
    'arithmetic',
    'BEGIN { $x = -7; @a = $x / 2; @b = $x % 3; @c = $x >> 1; @d = 1 << 10; @e = 0xff & ~0x0f | 3 ^ 1; @f = 10 / 3 * 3 - 1; @g = (uint8)300; @h = (int16)-1; }',
  ],
  ['string comparison', 'BEGIN { if (comm == "node") { @ = 1; } @ne = comm != "bash"; @lit = "abc" == "abd"; }'],
  ['tuples', 'BEGIN { @t = (1, "two", comm); $t = (pid, "x"); printf("%d %s\\n", $t.0, $t.1); @k[(1, 2)] = 3; }'],
  [
    'str with length',
    'tracepoint:syscalls:sys_enter_openat { printf("%s\\n", str(args.filename, 8)); @[str(args.filename, 4)] = count(); }',
  ],
  [
    'delete clear zero print',
    'BEGIN { @a[1] = 1; @b = count(); delete(@a[1]); delete(@a, 1); clear(@a); zero(@b); print(@b); print(@a, 10); print(@a, 10, 2); print(123); print("x"); print((1, "y")); }',
  ],
  ['time and exit', 'BEGIN { time(); time("%Y-%m-%d\\n"); exit(); }'],
  ['interval and profile', 'interval:ms:100 { @i = count(); } profile:hz:99 { @p[cpu] = count(); }'],
  ['wildcard tracepoints', 'tracepoint:syscalls:sys_enter_get*pid { @[probe] = count(); }'],
  [
    'many probes',
    'tracepoint:sched:sched_switch, tracepoint:sched:sched_wakeup { @[probe] = count(); } END { printf("end\\n"); }',
  ],
  ['positional params', 'BEGIN { printf("%d %s %d\\n", $1, str($2), $#); }'],
  [
    'comm keyed hist with nested ifs',
    'tracepoint:raw_syscalls:sys_exit { if (args.ret < 0) { if (args.ret == -2) { @enoent[comm] = count(); } else { @err[comm, args.ret] = count(); } } }',
  ],
  [
    'register pressure (spilling)',
    'BEGIN { $a = pid; $b = tid; $c = uid; $d = gid; $e = cpu; $f = nsecs; $g = $a + $b; $h = $c + $d; printf("%d %d %d %d %d %d %d %d\\n", $a, $b, $c, $d, $e, $f, $g, $h); @[$a, $b, $c, $d] = sum($e + $f + $g + $h); }',
  ],
];

function load(text: string, positional: string[] = []): number {
  const r = compile({ name: 'stdin', text }, { positional });
  const session = new Session(r.compiled, { output: createOutput('text', new OutputSink(1)) });
  try {
    session.load();
    return r.compiled.programs.length;
  } finally {
    session.close();
  }
}

describe('compile and load on the live kernel', () => {
  for (const [name, text] of PROGRAMS) {
    it(name, () => {
      const n = load(text, ['5', 'hello']);
      assert.ok(n >= 1);
    });
  }
});

describe('loops run with the right semantics', () => {
  it('while with break/continue, unroll, for over a range', async () => {
    const { runTool } = await import('../helpers/cli.js');
    const r = await runTool('bpfscope', [
      '-e',
      'BEGIN { $i = 0; $s = 0; while ($i < 10) { $i++; if ($i == 3) { continue; } if ($i == 8) { break; } $s += $i; } unroll(3) { @u++; } for ($j : 0..5) { @f += $j; } printf("%d %d\\n", $s, $i); exit(); }',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '25 8\n\n\n@f: 10\n@u: 3\n');
  });

  it('break outside a loop is an error', async () => {
    const { runTool } = await import('../helpers/cli.js');
    const r = await runTool('bpfscope', ['-e', 'BEGIN { break; }']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /'break' is only valid inside a loop/);
  });
});
