/**
 * Values newer than bpftrace 0.17, checked against the outputs current bpftrace documents (its `tests/runtime`
 * files `record`, `builtin`, `stdlib`, `json-output`, `call` at revision e1b7c393, and `docs/stdlib.md`): records,
 * struct values (`print(*p)`, `args`, `@x = args`), `ctx`, `syscall_name`, `signal_name`, `uaddr`, and the errors
 * for what is not supported.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runTool } from '../helpers/cli.js';
import { workloadCommand } from '../helpers/workload.js';

async function run(prog: string, ...extra: string[]) {
  return runTool('bpfscope', ['-e', prog, ...extra]);
}

describe('records (named tuples)', () => {
  it('fields by name, printing and nesting (tests/runtime/record "basic record", "record printing")', async () => {
    const a = await run(
      'BEGIN { $v = 99; $t = (a=0, b=1, c="str", d=(5, 6), e=$v); printf("%d %d %s %d %d %d\\n", $t.a, $t.b, $t.c, $t.d.0, $t.d.1, $t.e); exit(); }',
    );
    assert.equal(a.code, 0, a.stderr);
    assert.equal(a.stdout, '0 1 str 5 6 99\n\n\n');
    const b = await run('BEGIN { $v = (x=1, y=2); $t = (a=0, b=1, c="str", d=(5, 6), e=$v); print($t); exit(); }');
    assert.equal(b.code, 0, b.stderr);
    assert.equal(b.stdout, '{ .a = 0, .b = 1, .c = str, .d = (5, 6), .e = { .x = 1, .y = 2 } }\n\n\n');
  });

  it('as map values and keys, in text and JSON (tests/runtime/json-output "record")', async () => {
    const t = await run('BEGIN { $v = (x=1, y=2); @a = (a=0, b=1, c="str", d=(5, 6), e=$v); @k[$v] = 3; exit(); }');
    assert.equal(t.code, 0, t.stderr);
    assert.equal(
      t.stdout,
      '\n\n@a: { .a = 0, .b = 1, .c = str, .d = (5, 6), .e = { .x = 1, .y = 2 } }\n@k[{ .x = 1, .y = 2 }]: 3\n',
    );
    const j = await run('BEGIN { $v = (x=1, y=2); @a = (a=0, b=1, c="str", d=(5, 6), e=$v); exit(); }', '-f', 'json');
    assert.equal(j.code, 0, j.stderr);
    assert.match(
      j.stdout,
      /^\{"type": "map", "data": \{"@a": \{"a": 0, "b": 1, "c": "str", "d": \[5,6\], "e": \{"x": 1, "y": 2\}\}\}\}$/m,
    );
  });

  it('unknown and repeated field names are positioned errors', async () => {
    const a = await run('BEGIN { $t = (a=1, b=2); print($t.c); }');
    assert.equal(a.code, 1);
    assert.match(a.stderr, /^stdin:1:32-36: ERROR: Record does not contain a field named 'c'$/m);
    const b = await run('BEGIN { $t = (a=1, a=2); }');
    assert.equal(b.code, 1);
    assert.match(b.stderr, /^stdin:1:14-24: ERROR: Named arguments must be unique$/m);
  });
});

describe('struct values', () => {
  it('print(args), @[args] and @v = args of a tracepoint: every non-common field', async () => {
    const r = await run(
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { print(args); @[args] = count(); @v = args; }',
      '-c',
      workloadCommand('getppid', 2),
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      '{ .__syscall_nr = 110 }\n{ .__syscall_nr = 110 }\n\n\n@[{ .__syscall_nr = 110 }]: 2\n@v: { .__syscall_nr = 110 }\n',
    );
  });

  it('print(args) of a rawtracepoint: its BTF arguments, pointers in hex (tests/runtime/builtin "print args")', async () => {
    const r = await run(
      'rawtracepoint:sched_process_exec /pid == cpid/ { print(args); exit(); }',
      '-c',
      workloadCommand('getppid', 1),
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^\{ \.p = 0x[0-9a-f]+, \.old_pid = \d+, \.bprm = 0x[0-9a-f]+ \}$/m);
  });

  it('print(*p) and a struct map value: members in field order; too large a struct is a positioned error', async () => {
    const s = await run(
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { $t = curtask->thread_node.next; print(*$t); @x = *$t; }',
      '-c',
      workloadCommand('getppid', 1),
    );
    assert.equal(s.code, 0, s.stderr);
    assert.match(
      s.stdout,
      /^\{ \.next = 0x[0-9a-f]+, \.prev = 0x[0-9a-f]+ \}\n\n\n@x: \{ \.next = 0x[0-9a-f]+, \.prev = 0x[0-9a-f]+ \}\n$/,
    );
    const big = await run('tracepoint:syscalls:sys_enter_getppid { print(*curtask); }');
    assert.equal(big.code, 1);
    assert.match(
      big.stderr,
      /^stdin:1:47-55: ERROR: struct task_struct is \d+ bytes: struct values larger than 256 bytes \(the BPF stack is 512\) are not supported yet; read its fields instead$/m,
    );
  });
});

describe('ctx', () => {
  it('is the tracepoint record in tracepoints and struct pt_regs in uprobes; absent in BEGIN', async () => {
    const r = await run(
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @nr = ctx->__syscall_nr; } uprobe:libc:syscall /pid == cpid/ { @same = ((struct pt_regs *)ctx)->di == arg0; @di = ctx->di; }',
      '-c',
      workloadCommand('getppid', 1),
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '\n\n@di: 110\n@nr: 110\n@same: true\n');
    const b = await run('BEGIN { print(ctx); }');
    assert.equal(b.code, 1);
    assert.match(b.stderr, /^stdin:1:15-18: ERROR: The ctx builtin can not be used with 'begin' probes$/m);
  });
});

describe('syscall_name, signal_name', () => {
  it('match tests/runtime/stdlib "signal_name" and docs/stdlib.md syscall_name', async () => {
    const r = await run(
      'BEGIN { print(signal_name(2)); print(signal_name(0)); print(signal_name(1024)); print(syscall_name(0)); print(syscall_name(257)); print(syscall_name(-1)); exit(); }',
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'Interrupt\nUnknown signal 0\nN/A\nread\nopenat\nUnknown syscall\n\n\n');
  });

  it('as map keys: per-syscall counts of a workload', async () => {
    const r = await run(
      'tracepoint:raw_syscalls:sys_enter /pid == cpid && args.id == 110/ { @[syscall_name(args.id)] = count(); }',
      '-c',
      workloadCommand('getppid', 5),
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '\n\n@[getppid]: 5\n');
  });
});

describe('uaddr', () => {
  it("reads libc's globals from a uprobe (a position-independent library: the bias comes from ip)", async () => {
    const r = await run(
      'uprobe:libc:syscall /pid == cpid/ { printf("%s %d %d\\n", str(*uaddr("program_invocation_short_name")), *uaddr("optind"), sizeof(*uaddr("optind"))); exit(); }',
      '-c',
      workloadCommand('comm', 'bpfs_ua', 'getppid', 1),
    );
    assert.equal(r.code, 0, r.stderr);
    // optind is an int (st_size 4: a uint32 *) and 1 before getopt() runs; the short name is argv[0]'s basename
    assert.equal(r.stdout, 'bpfs_workload 1 4\n\n\n');
  });

  it('is a positioned error outside user probes, for unknown symbols and in uretprobes of PIE binaries', async () => {
    const a = await run('BEGIN { print(uaddr("optind")); }');
    assert.equal(a.code, 1);
    assert.match(a.stderr, /^stdin:1:15-30: ERROR: uaddr\(\) can only be used in uprobe, uretprobe and usdt probes/m);
    const b = await run('uprobe:libc:getppid { print(uaddr("no_such_symbol_x")); }');
    assert.equal(b.code, 1);
    assert.match(b.stderr, /^stdin:1:29-54: ERROR: Could not resolve symbol: \S+libc\.so\.6:no_such_symbol_x$/m);
    const c = await run('uretprobe:libc:getppid { print(uaddr("optind")); }');
    assert.equal(c.code, 1);
    assert.match(c.stderr, /ERROR: uaddr\(\) in a uretprobe of a position-independent binary/);
  });
});

describe('path', () => {
  it('is only for fentry/fexit (bpf_d_path); elsewhere a positioned error', async () => {
    const r = await run('tracepoint:syscalls:sys_enter_openat { print(path(args.filename)); }');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^stdin:1:46-65: ERROR: path\(\) can only be used in fentry\/fexit probes/m);
  });
});

describe('kernel enumerators', () => {
  it('are constants from BTF (bpftrace resolves enum values by name)', async () => {
    const r = await run('BEGIN { printf("%d %d %d\\n", TCP_ESTABLISHED, TCP_CLOSE, BPF_MAP_TYPE_RINGBUF); exit(); }');
    assert.equal(r.code, 0, r.stderr);
    // include/net/tcp_states.h and include/uapi/linux/bpf.h
    assert.equal(r.stdout, '1 7 27\n\n\n');
    const bad = await run('BEGIN { print(NO_SUCH_ENUMERATOR_X); }');
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^stdin:1:15-35: ERROR: Unknown identifier: 'NO_SUCH_ENUMERATOR_X'$/m);
  });
});

describe('casts to bool, void * and enums', () => {
  it('(bool)x is true for non-zero x; (void *) prints as a pointer; (enum x) prints its enumerator', async () => {
    const r = await run(
      'BEGIN { print(((bool)5, (bool)0, (void *)0x10, (enum tcp_ca_state)1)); @[(bool)pid] = count(); exit(); }',
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '(true, false, 0x10, TCP_CA_Disorder)\n\n\n@[true]: 1\n');
    const v = await run('BEGIN { $p = (void *)0; print(*$p); }');
    assert.equal(v.code, 1);
    assert.match(v.stderr, /^stdin:1:31-34: ERROR: Can not dereference a value of type 'void \*'$/m);
    const e = await run('BEGIN { $e = (enum no_such_enum_x)1; }');
    assert.equal(e.code, 1);
    assert.match(e.stderr, /^stdin:1:15-34: ERROR: Unknown type: 'enum no_such_enum_x' \(not in the kernel's BTF\)$/m);
  });
});

describe('delete() results and buffers of different sizes', () => {
  it('delete() is true when the key existed (tests/runtime/stdlib "bad delete"); a ternary unifies buffer sizes', async () => {
    const r = await run(
      'BEGIN { @a[1] = 1; $x = delete(@a, 2); $y = delete(@a, 1); if ($x == false && $y == true) { printf("SUCCESS\\n"); } $b = nsecs ? buf("hi", 2) : buf("bye", 3); print($b); exit(); }',
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'SUCCESS\nhi\n\n\n');
  });
});

describe('len(@map)', () => {
  it('counts the elements, also when the result is compared (tests/runtime/call "map lencmp")', async () => {
    const r = await run(
      'BEGIN { @[1] = 1; @[2] = 2; $count = len(@); if ($count > 1) { print("true"); } @c[1, "a"] = count(); printf("%d %d\\n", len(@), len(@c)); clear(@); exit(); }',
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'true\n2 1\n\n\n@c[1, a]: 1\n');
  });
});

describe('getopt', () => {
  it('reads named options after -- (tests/runtime "named command line params", "named and positional params")', async () => {
    const a = await run(
      'BEGIN { print((getopt("aa", 20), getopt("bb", -1), getopt("cc", true), getopt("dd"), getopt("ee", "hello"))); exit(); }',
      '--',
      '--dd',
      '--aa=0xffffffffffffffff',
      '--bb=-10',
      '--cc=False',
    );
    assert.equal(a.code, 0, a.stderr);
    assert.equal(a.stdout, '(18446744073709551615, -10, false, true, hello)\n\n\n');
    const b = await run(
      'BEGIN { print(($1, getopt("aa", 10), getopt("bb", -1), $2, getopt("cc", "hello"), getopt("dd"))); exit(); }',
      'pos1',
      '--',
      '--aa=20',
      '--bb=5',
      '--cc=bye',
      'pos2',
      '--dd',
    );
    assert.equal(b.code, 0, b.stderr);
    assert.equal(b.stdout, '(pos1, 20, 5, pos2, bye, true)\n\n\n');
  });

  it('rejects a value of the wrong type and options the program does not read', async () => {
    const a = await run('BEGIN { print(getopt("aa", 10)); }', '--', '--aa=False');
    assert.equal(a.code, 1);
    assert.match(a.stderr, /^ERROR: program command line option --aa invalid integer \(value: False\)$/m);
    const b = await run('BEGIN { print(getopt("aa", 10)); }', '--', '--bb');
    assert.equal(b.code, 1);
    assert.match(
      b.stderr,
      /^ERROR: unexpected program command line options: --bb\nHINT: expected program options: --aa$/m,
    );
  });
});

describe('exit()', () => {
  it('prints nothing that other events sent after it, but still runs END (as bpftrace)', async () => {
    const r = await run(
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { printf("first\\n"); exit(); } END { printf("end\\n"); }',
      '-c',
      workloadCommand('getppid', 20000),
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'first\nend\n\n\n');
  });
});

describe('array casts and integer arrays', () => {
  it('reinterpret integers and strings as arrays (tests/runtime/array "cast literal to int array", "cast to int array with automatic size", "cast string to int array")', async () => {
    const r = await run(
      'BEGIN { printf("first byte: %x\\n", ((int8[8])12345)[0]); printf("byte: %x\\n", ((int8[])12345)[0]); print((int8[])"hello"); exit(); }',
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'first byte: 39\nbyte: 39\n[104,101,108,108,111,0]\n\n\n');
  });

  it('an integer array cast to an integer of its size (tests/runtime/array "cast int array to int internal")', async () => {
    const r = await run(
      'BEGIN { printf("ip: %x\\n", (uint32)pton("127.0.0.1")); @a = (uint16[4])0x0004000300020001; exit(); }',
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'ip: 100007f\n\n\n@a: [1,2,3,4]\n');
  });

  it('u8 arrays print as numbers: pton(), a tracepoint u8[4] field (tests/runtime/call "pton")', async () => {
    const r = await run('BEGIN { print(pton("127.0.0.1")); exit(); }');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '[127,0,0,1]\n\n\n');
  });

  it('rejects casts whose sizes differ, at the cast', async () => {
    const r = await run('BEGIN { $x = (int8[3])12345; }');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^stdin:1:14-28: ERROR: Cannot cast from 'int64' \(8 bytes\) to 'int8\[3\]' \(3 bytes\)$/m);
  });
});

describe('enum values print as their enumerators (current bpftrace)', () => {
  it('in map keys, values, tuples and variables; not after arithmetic (tests/runtime/other "symbolize enum in ...")', async () => {
    const a = await run('enum { ONE = 1, TWO = 2 }; BEGIN { @[ONE] = 11; @[TWO] = 22; @m[ONE] = 333; exit(); }');
    assert.equal(a.code, 0, a.stderr);
    assert.equal(a.stdout, '\n\n@[ONE]: 11\n@[TWO]: 22\n@m[ONE]: 333\n');
    const b = await run('enum { ONE = 1, TWO = 2 }; BEGIN { @[ONE,TWO,ONE] = -1; @v = ONE; @t = (ONE, TWO); exit(); }');
    assert.equal(b.stdout, '\n\n@[ONE, TWO, ONE]: -1\n@t: (ONE, TWO)\n@v: ONE\n');
    const c = await run('enum { ONE = 1, TWO = 2 }; BEGIN { @[ONE+1] = TWO+1; @[ONE] = ONE; exit(); }');
    assert.equal(c.stdout, '\n\n@[1]: 1\n@[2]: 3\n');
    const d = await run(
      'enum BAZ { FOO = 333, BAR }; BEGIN { $f = FOO; print($f); print((FOO, BAR)); print((enum BAZ)334); exit(); }',
    );
    assert.equal(d.stdout, 'FOO\n(FOO, BAR)\nBAR\n\n\n');
  });

  it('JSON keeps the number; printf %s prints the name, %d the number (tests/runtime/json-output "enum_*")', async () => {
    const j = await run('enum { FOO = 333 }; BEGIN { $f = FOO; print($f); exit(); }', '-q', '-f', 'json');
    assert.equal(j.stdout, '{"type": "value", "data": 333}\n');
    const p = await run(
      'enum Foo { ONE = 1, TWO = 2, OTHER = 99999 }; BEGIN { printf("%d %s %d %s %d %s\\n", ONE, ONE, TWO, TWO, OTHER, OTHER); exit() }',
      '-q',
      '-f',
      'json',
    );
    assert.equal(p.stdout, '{"type": "printf", "data": "1 ONE 2 TWO 99999 OTHER\\n"}\n');
  });

  it('a tracepoint field declared `enum E` takes BTF enum E (tests/runtime/call "printf_enum_symbolize_tracepoint")', async () => {
    // UDP datagrams to a closed port of 127.0.0.1: the kernel drops each with SKB_DROP_REASON_NO_SOCKET (value 3 in
    // this kernel's skb:kfree_skb print fmt) in the sender's context
    const script = join(mkdtempSync(join(tmpdir(), 'bpfs-udp-')), 'send.cjs');
    writeFileSync(
      script,
      "const s = require('dgram').createSocket('udp4'); let n = 0;\n" +
        "const t = setInterval(() => { s.send('x', 9, '127.0.0.1'); if (++n === 40) { clearInterval(t); s.close(); } }, 25);\n",
    );
    const send = `${process.execPath} ${script}`;
    const r = await run(
      'tracepoint:skb:kfree_skb /pid == cpid/ { $r = args.reason; printf("%d %s\\n", args.reason, $r); @m = args.reason; exit() }',
      '-c',
      send,
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '3 SKB_DROP_REASON_NO_SOCKET\n\n\n@m: SKB_DROP_REASON_NO_SOCKET\n');
  });
});

describe('aggregation maps read in expressions', () => {
  it('count/sum/min/max/avg values (tests/runtime basic "print_per_cpu_map_vals", other "per_cpu_map_*", signed_ints "avg cast negative values")', async () => {
    const a = await run(
      'BEGIN { @a = avg(5); @c = count(); @s = sum(5); @mn = min(1); @mx = max(-1); print((@a, @c, @s, @mn, @mx)); clear(@a); clear(@c); clear(@s); clear(@mn); clear(@mx); exit(); }',
    );
    assert.equal(a.code, 0, a.stderr);
    assert.equal(a.stdout, '(5, 1, 5, 1, -1)\n\n\n');
    const b = await run(
      'BEGIN { @ = avg(1); @ = avg(1); @ = avg(10); @n = avg(-1); @n = avg(-1); @n = avg(-10); printf("%d %d\\n", @ == 4, @n == -4); @k[@, @n] = 1; exit(); }',
    );
    assert.equal(b.code, 0, b.stderr);
    assert.equal(b.stdout, '1 1\n\n\n@: 4\n@k[4, -4]: 1\n@n: -4\n');
  });

  it(
    "combines every CPU's slot: events on CPU 0 and CPU 1 both count",
    { skip: cpus().length < 2 ? 'one CPU' : undefined },
    async () => {
      const r = await run(
        'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @c = count(); @s = sum(cpu + 1); @mx = max(cpu); @mn = min(cpu); } END { printf("%d %d %d %d\\n", @c, @s, @mn, @mx); clear(@c); clear(@s); clear(@mx); clear(@mn); }',
        '-c',
        workloadCommand('cpu', 0, 'getppid', 5, 'cpu', 1, 'getppid', 7),
      );
      assert.equal(r.code, 0, r.stderr);
      // 5 calls on CPU 0 (cpu + 1 = 1 each) and 7 on CPU 1 (2 each)
      assert.equal(r.stdout, '12 19 0 1\n\n\n');
    },
  );
});

describe('let $x; declarations', () => {
  it('a variable read before the assignment that types it is zero of that type (tests/runtime/variable "variable declaration not initialized")', async () => {
    const a = await run('BEGIN { let $a; if ($a) { $a = 1; } @b = $a; exit(); }');
    assert.equal(a.code, 0, a.stderr);
    assert.equal(a.stdout, '\n\n@b: 0\n');
    const s = await run('BEGIN { let $s; printf("[%s]\\n", $s); $s = "x"; printf("[%s]\\n", $s); exit(); }');
    assert.equal(s.stdout, '[]\n[x]\n\n\n');
  });
});

describe('division by zero', () => {
  it('gives 1 and a run-time warning at the expression (tests/runtime/regression "zero_divide", "zero_modulo")', async () => {
    const r = await run(
      'BEGIN { @mod0 = 0; print((uint64)10 / (uint64)@mod0); print((uint64)10 % (uint64)@mod0); clear(@mod0); exit(); }',
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '1\n1\n\n\n');
    const warnings = r.stderr.match(
      /^stdin:1:\d+-\d+: WARNING: Divide or modulo by 0 detected\. This can lead to unexpected results\. 1 is being used as the result\.$/gm,
    );
    assert.equal(warnings?.length, 2, r.stderr);
    const quiet = await run(
      'BEGIN { @mod0 = 0; print((uint64)10 / (uint64)@mod0); clear(@mod0); exit(); }',
      '--no-warnings',
    );
    assert.doesNotMatch(quiet.stderr, /WARNING/);
  });
});
