import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type * as A from '../../src/lang/ast.js';
import { CompileError } from '../../src/lang/diagnostics.js';
import { MAX_AST_DEPTH, parse, splitAttachPoint } from '../../src/lang/parser.js';

const src = (text: string) => ({ name: 'stdin', text });

// ---- a compact rendering of the AST, fully parenthesised, so tests state exact trees ----

function typeText(t: A.TypeSpec): string {
  return `${t.name}${'*'.repeat(t.pointerDepth)}${t.arrayCount === null ? '' : `[${t.arrayCount}]`}`;
}

function sx(e: A.Expr): string {
  switch (e.kind) {
    case 'IntLit':
      return `${e.value}`;
    case 'StrLit':
      return JSON.stringify(e.value);
    case 'BoolLit':
      return `${e.value}`;
    case 'BuiltinExpr':
      return e.name;
    case 'PositionalExpr':
      return e.count ? '$#' : `$${e.index}`;
    case 'VarExpr':
      return `$${e.name}`;
    case 'MapExpr':
      return `@${e.name}${e.keys.length ? `[${e.keys.map(sx).join(', ')}]` : ''}`;
    case 'CallExpr':
      return `${e.name}(${e.args.map(sx).join(', ')})`;
    case 'BinaryExpr':
      return `(${sx(e.left)} ${e.op} ${sx(e.right)})`;
    case 'UnaryExpr':
      return `(${e.op}${sx(e.operand)})`;
    case 'IncDecExpr':
      return e.prefix ? `(${e.op}${sx(e.target)})` : `(${sx(e.target)}${e.op})`;
    case 'TernaryExpr':
      return `(${sx(e.cond)} ? ${sx(e.then)} : ${sx(e.else)})`;
    case 'FieldExpr':
      return `${sx(e.object)}${e.arrow ? '->' : '.'}${e.field}`;
    case 'IndexExpr':
      return `${sx(e.object)}[${sx(e.index)}]`;
    case 'CastExpr':
      return `((${typeText(e.typeSpec)})${sx(e.operand)})`;
    case 'TupleExpr':
      return `tuple(${e.elems.map(sx).join(', ')})`;
    case 'RangeExpr':
      return `${sx(e.start)}..${sx(e.end)}`;
    case 'SizeofExpr':
      return `sizeof(${e.target.kind === 'TypeSpec' ? `type ${typeText(e.target)}` : sx(e.target)})`;
    case 'OffsetofExpr':
      return `offsetof(${typeText(e.typeSpec)}, ${e.field})`;
    case 'BlockExpr':
      return `{${e.stmts.map(sxStmt).join('; ')} => ${sx(e.value)}}`;
  }
}

function sxBlock(b: A.Block): string {
  return b.stmts.length ? `{ ${b.stmts.map(sxStmt).join('; ')} }` : '{ }';
}

function sxStmt(s: A.Stmt): string {
  switch (s.kind) {
    case 'ExprStmt':
      return sx(s.expr);
    case 'AssignStmt':
      return `${sx(s.target)} ${s.op} ${sx(s.value)}`;
    case 'VarDeclStmt':
      return `let ${sx(s.variable)}${s.typeName ? `: ${typeText(s.typeName)}` : ''}${s.value ? ` = ${sx(s.value)}` : ''}`;
    case 'IfStmt':
      return `if ${sx(s.cond)} ${sxBlock(s.then)}${s.else ? ` else ${s.else.kind === 'IfStmt' ? sxStmt(s.else) : sxBlock(s.else)}` : ''}`;
    case 'WhileStmt':
      return `while ${sx(s.cond)} ${sxBlock(s.body)}`;
    case 'UnrollStmt':
      return `unroll ${sx(s.count)} ${sxBlock(s.body)}`;
    case 'ForStmt':
      return `for ${sx(s.variable)} : ${sx(s.iterable)} ${sxBlock(s.body)}`;
    case 'JumpStmt':
      return s.value ? `${s.jump} ${sx(s.value)}` : s.jump;
    case 'Block':
      return sxBlock(s);
  }
}

function sxProgram(p: A.Program): string {
  return p.probes
    .map((pr) => {
      const aps = pr.attachPoints.map((a) => a.raw).join(',');
      return `${aps}${pr.predicate ? ` /${sx(pr.predicate)}/` : ''} ${sxBlock(pr.body)}`;
    })
    .join(' ');
}

/** [program, its expected rendering]. One-liners from bpftrace's docs/tutorial and the BPF Performance Tools book. */
const VALID: [string, string][] = [
  ['BEGIN { printf("hello world\\n"); }', 'BEGIN { printf("hello world\\n") }'],
  [
    'tracepoint:syscalls:sys_enter_openat { printf("%s %s\\n", comm, str(args.filename)); }',
    'tracepoint:syscalls:sys_enter_openat { printf("%s %s\\n", comm, str(args.filename)) }',
  ],
  [
    'tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }',
    'tracepoint:raw_syscalls:sys_enter { @[comm] = count() }',
  ],
  [
    'tracepoint:syscalls:sys_exit_read /pid == 18644/ { @bytes = hist(args.ret); }',
    'tracepoint:syscalls:sys_exit_read /(pid == 18644)/ { @bytes = hist(args.ret) }',
  ],
  [
    'kretprobe:vfs_read { @bytes = lhist(retval, 0, 2000, 200); }',
    'kretprobe:vfs_read { @bytes = lhist(retval, 0, 2000, 200) }',
  ],
  [
    'kprobe:vfs_read { @start[tid] = nsecs; } kretprobe:vfs_read /@start[tid]/ { @ns[comm] = hist(nsecs - @start[tid]); delete(@start, tid); }',
    'kprobe:vfs_read { @start[tid] = nsecs } kretprobe:vfs_read /@start[tid]/ { @ns[comm] = hist((nsecs - @start[tid])); delete(@start, tid) }',
  ],
  [
    'tracepoint:sched:sched* { @[probe] = count(); } interval:s:5 { exit(); }',
    'tracepoint:sched:sched* { @[probe] = count() } interval:s:5 { exit() }',
  ],
  ['profile:hz:99 { @[kstack] = count(); }', 'profile:hz:99 { @[kstack] = count() }'],
  ['tracepoint:sched:sched_switch { @[kstack] = count(); }', 'tracepoint:sched:sched_switch { @[kstack] = count() }'],
  [
    'tracepoint:block:block_rq_issue { @ = hist(args.bytes); }',
    'tracepoint:block:block_rq_issue { @ = hist(args.bytes) }',
  ],
  [
    't:raw_syscalls:sys_enter { @[comm] = count(); } interval:s:5 { exit(); }',
    't:raw_syscalls:sys_enter { @[comm] = count() } interval:s:5 { exit() }',
  ],
  [
    'kprobe:do_nanosleep { printf("PID %d sleeping...\\n", pid); }',
    'kprobe:do_nanosleep { printf("PID %d sleeping...\\n", pid) }',
  ],
  [
    'BEGIN { printf("Tracing... Hit Ctrl-C to end.\\n"); } END { clear(@x); }',
    'BEGIN { printf("Tracing... Hit Ctrl-C to end.\\n") } END { clear(@x) }',
  ],
  [
    'tracepoint:syscalls:sys_enter_execve { printf("%s -> %s\\n", comm, str(args->filename)); }',
    'tracepoint:syscalls:sys_enter_execve { printf("%s -> %s\\n", comm, str(args->filename)) }',
  ],
  [
    'tracepoint:syscalls:sys_enter_execve { join(args->argv); }',
    'tracepoint:syscalls:sys_enter_execve { join(args->argv) }',
  ],
  [
    'tracepoint:raw_syscalls:sys_enter { @[pid, comm] = count(); }',
    'tracepoint:raw_syscalls:sys_enter { @[pid, comm] = count() }',
  ],
  ['profile:hz:49 /pid == 189/ { @[ustack] = count(); }', 'profile:hz:49 /(pid == 189)/ { @[ustack] = count() }'],
  [
    'uprobe:/lib/x86_64-linux-gnu/libc.so.6:fopen { printf("%s\\n", str(arg0)); }',
    'uprobe:/lib/x86_64-linux-gnu/libc.so.6:fopen { printf("%s\\n", str(arg0)) }',
  ],
  [
    'uretprobe:/bin/bash:readline { printf("%-6d %s\\n", pid, str(retval)); }',
    'uretprobe:/bin/bash:readline { printf("%-6d %s\\n", pid, str(retval)) }',
  ],
  [
    'usdt:/usr/sbin/mysqld:mysql:query__start { @[str(arg0)] = count(); }',
    'usdt:/usr/sbin/mysqld:mysql:query__start { @[str(arg0)] = count() }',
  ],
  ['kprobe:vfs_* { @[func] = count(); }', 'kprobe:vfs_* { @[func] = count() }'],
  [
    'tracepoint:block:block_rq_complete { @bytes = lhist(args->nr_sector * 512, 0, 1048576, 4096); }',
    'tracepoint:block:block_rq_complete { @bytes = lhist((args->nr_sector * 512), 0, 1048576, 4096) }',
  ],
  ['software:page-faults:1 { @[comm, ustack] = count(); }', 'software:page-faults:1 { @[comm, ustack] = count() }'],
  [
    'hardware:cache-misses:1000000 { @[comm, pid] = count(); }',
    'hardware:cache-misses:1000000 { @[comm, pid] = count() }',
  ],
  ['rawtracepoint:sched_switch { @ = count(); }', 'rawtracepoint:sched_switch { @ = count() }'],
  [
    'tracepoint:syscalls:sys_exit_openat /args->ret < 0/ { @[comm, - args->ret] = count(); }',
    'tracepoint:syscalls:sys_exit_openat /(args->ret < 0)/ { @[comm, (-args->ret)] = count() }',
  ],
  ['kprobe:tcp_sendmsg { @bytes[comm] = sum(arg2); }', 'kprobe:tcp_sendmsg { @bytes[comm] = sum(arg2) }'],
  [
    'tracepoint:sched:sched_process_exit { printf("%s %d\\n", comm, (curtask->exit_code >> 8) & 0xff); }',
    'tracepoint:sched:sched_process_exit { printf("%s %d\\n", comm, ((curtask->exit_code >> 8) & 255)) }',
  ],
  ['kprobe:fn+0x10 { @ = count(); }', 'kprobe:fn+0x10 { @ = count() }'],
  ['kprobe:mod:fn { @ = count() }', 'kprobe:mod:fn { @ = count() }'],
  ['interval:s:1 { printf("%d\\n", @x); clear(@x); }', 'interval:s:1 { printf("%d\\n", @x); clear(@x) }'],
  ['t:sched:sched_switch { @[args.prev_comm] = count(); }', 't:sched:sched_switch { @[args.prev_comm] = count() }'],
  [
    'tracepoint:syscalls:sys_enter_read { @start[tid] = nsecs; } tracepoint:syscalls:sys_exit_read /@start[tid]/ { @us = hist((nsecs - @start[tid]) / 1000); delete(@start[tid]); }',
    'tracepoint:syscalls:sys_enter_read { @start[tid] = nsecs } tracepoint:syscalls:sys_exit_read /@start[tid]/ { @us = hist(((nsecs - @start[tid]) / 1000)); delete(@start[tid]) }',
  ],
  [
    'tracepoint:syscalls:sys_enter_openat /comm == "bash"/ { @[str(args.filename)] = count(); }',
    'tracepoint:syscalls:sys_enter_openat /(comm == "bash")/ { @[str(args.filename)] = count() }',
  ],
  // precedence and associativity
  ['BEGIN { $x = 1 + 2 * 3; }', 'BEGIN { $x = (1 + (2 * 3)) }'],
  ['BEGIN { $x = (1 + 2) * 3; }', 'BEGIN { $x = ((1 + 2) * 3) }'],
  ['BEGIN { $x = 1 - 2 - 3; }', 'BEGIN { $x = ((1 - 2) - 3) }'],
  ['BEGIN { $x = 5 % 3 / 2 * 1; }', 'BEGIN { $x = (((5 % 3) / 2) * 1) }'],
  ['BEGIN { $x = 1 << 2 + 3; }', 'BEGIN { $x = (1 << (2 + 3)) }'],
  ['BEGIN { $x = 1 | 2 ^ 3 & 4; }', 'BEGIN { $x = (1 | (2 ^ (3 & 4))) }'],
  ['BEGIN { $x = 1 < 2 == 3 > 4; }', 'BEGIN { $x = ((1 < 2) == (3 > 4)) }'],
  ['BEGIN { $x = 1 <= 2 != 3 >= 4; }', 'BEGIN { $x = ((1 <= 2) != (3 >= 4)) }'],
  ['BEGIN { $x = 1 || 2 && 3; }', 'BEGIN { $x = (1 || (2 && 3)) }'],
  ['BEGIN { $x = 1 && 2 | 3; }', 'BEGIN { $x = (1 && (2 | 3)) }'],
  ['BEGIN { $x = !1 && ~2 == -3; }', 'BEGIN { $x = ((!1) && ((~2) == (-3))) }'],
  ['BEGIN { $x = -$y * 2; $z = *$p + 1; }', 'BEGIN { $x = ((-$y) * 2); $z = ((*$p) + 1) }'],
  ['BEGIN { $x = $a ? 1 : $b ? 2 : 3; }', 'BEGIN { $x = ($a ? 1 : ($b ? 2 : 3)) }'],
  ['BEGIN { $x = $a || $b ? $c + 1 : $d; }', 'BEGIN { $x = (($a || $b) ? ($c + 1) : $d) }'],
  ['BEGIN { $x = $a ?: 5; }', 'BEGIN { $x = ($a ? $a : 5) }'],
  // casts, tuples, fields
  [
    'BEGIN { $x = (uint32)$y; $z = (struct task_struct *)curtask; $w = (int8)-1; }',
    'BEGIN { $x = ((uint32)$y); $z = ((struct task_struct*)curtask); $w = ((int8)(-1)) }',
  ],
  ['BEGIN { $x = (uint8[4])12345; $y = (uint8[])$x; }', 'BEGIN { $x = ((uint8[4])12345); $y = ((uint8[0])$x) }'],
  [
    'BEGIN { $x = (uint64)(1 + 2); $y = (x)*$p; $z = (pid)*tid; $w = (myident); }',
    'BEGIN { $x = ((uint64)(1 + 2)); $y = ((x)(*$p)); $z = (pid * tid); $w = myident }',
  ],
  ['BEGIN { $t = (1, "two", (3, 4)); print($t.2.0); }', 'BEGIN { $t = tuple(1, "two", tuple(3, 4)); print($t.2.0) }'],
  [
    'BEGIN { $e = (); $s = (1,); $g = (1); $h = (1, 2,); }',
    'BEGIN { $e = tuple(); $s = tuple(1); $g = 1; $h = tuple(1, 2) }',
  ],
  ['BEGIN { $x = args.a.b[1]->c; }', 'BEGIN { $x = args.a.b[1]->c }'],
  ['BEGIN { printf("%s\\n", $x->name); }', 'BEGIN { printf("%s\\n", $x->name) }'],
  // increments and assignments
  ['BEGIN { @x++; @y--; ++$z; --@w[1]; $a = $b++; }', 'BEGIN { (@x++); (@y--); (++$z); (--@w[1]); $a = ($b++) }'],
  [
    'BEGIN { @x += 1; @x -= 2; @x *= 3; @x /= 4; @x %= 5; @x &= 6; @x |= 7; @x ^= 8; @x <<= 9; @x >>= 10; }',
    'BEGIN { @x += 1; @x -= 2; @x *= 3; @x /= 4; @x %= 5; @x &= 6; @x |= 7; @x ^= 8; @x <<= 9; @x >>= 10 }',
  ],
  [
    'BEGIN { let $a; let $b = 1; let $c: uint32 = 2; let $d: struct task_struct * = curtask; }',
    'BEGIN { let $a; let $b = 1; let $c: uint32 = 2; let $d: struct task_struct* = curtask }',
  ],
  ['BEGIN { $p = &$x; $q = *$p; @m = &@n; }', 'BEGIN { $p = (&$x); $q = (*$p); @m = (&@n) }'],
  // control flow
  [
    'BEGIN { if ($x > 0) { @a = 1; } else if ($x < 0) { @a = 2; } else { @a = 3; } }',
    'BEGIN { if ($x > 0) { @a = 1 } else if ($x < 0) { @a = 2 } else { @a = 3 } }',
  ],
  ['BEGIN { if ($x) { if ($y) { @a = 1 } } }', 'BEGIN { if $x { if $y { @a = 1 } } }'],
  ['BEGIN { if $x { @a = 1 } if !@done { exit() } }', 'BEGIN { if $x { @a = 1 }; if (!@done) { exit() } }'],
  [
    'BEGIN { while ($i < 10) { $i++; if ($i == 5) { break; } continue; } }',
    'BEGIN { while ($i < 10) { ($i++); if ($i == 5) { break }; continue } }',
  ],
  ['BEGIN { unroll (4) { @i++ } unroll(2) { } }', 'BEGIN { unroll 4 { (@i++) }; unroll 2 { } }'],
  [
    'BEGIN { for ($kv : @map) { print($kv.0); } for ($i : 0..10) { @s += $i; } for ($j : $a..$b) { } }',
    'BEGIN { for $kv : @map { print($kv.0) }; for $i : 0..10 { @s += $i }; for $j : $a..$b { } }',
  ],
  ['BEGIN { return; } END { exit() }', 'BEGIN { return } END { exit() }'],
  ['BEGIN { { $x = 1; } { } }', 'BEGIN { { $x = 1 }; { } }'],
  ['BEGIN { @x = count() } END { print(@x) }', 'BEGIN { @x = count() } END { print(@x) }'],
  ['BEGIN { if (1) { printf("a") }; exit() }', 'BEGIN { if 1 { printf("a") }; exit() }'],
  // literals
  ['BEGIN { printf("%d %d %d\\n", 1_000_000, 0x10, 010); }', 'BEGIN { printf("%d %d %d\\n", 1000000, 16, 8) }'],
  [
    'BEGIN { @a = 1e6; @b = 10ms; @c = 5s; @d = 2m; @e = 100u; @f = 3us; @g = 1h; @h = 1d; @i = 7ns; @j = 2ULL; }',
    'BEGIN { @a = 1000000; @b = 10000000; @c = 5000000000; @d = 120000000000; @e = 100; @f = 3000; @g = 3600000000000; @h = 86400000000000; @i = 7; @j = 2 }',
  ],
  ['BEGIN { printf("a\\tb\\\\c\\"d\\x41\\101\\n"); }', 'BEGIN { printf("a\\tb\\\\c\\"dAA\\n") }'],
  ['BEGIN { @x = true; @y = false; }', 'BEGIN { @x = true; @y = false }'],
  ['BEGIN { printf("%d %d\\n", $1, $#); }', 'BEGIN { printf("%d %d\\n", $1, $#) }'],
  [
    'BEGIN { $x = sizeof(struct task_struct); $y = sizeof($x); $z = offsetof(struct task_struct, pid); $w = sizeof(comm); $v = sizeof(uint64); }',
    'BEGIN { $x = sizeof(type struct task_struct); $y = sizeof($x); $z = offsetof(struct task_struct, pid); $w = sizeof(comm); $v = sizeof(type uint64) }',
  ],
  ['BEGIN { @[kstack(perf, 10), ustack(3)] = count(); }', 'BEGIN { @[kstack(perf, 10), ustack(3)] = count() }'],
  ['BEGIN { $a = { let $b = 1; $b + 1 }; }', 'BEGIN { $a = {let $b = 1 => ($b + 1)} }'],
  ['BEGIN { _ = has_key(@a, 1); }', 'BEGIN { has_key(@a, 1) }'],
  // predicates: the closing '/' is not a division
  ['BEGIN /@x / 2 > 0/ { }', 'BEGIN /((@x / 2) > 0)/ { }'],
  ['BEGIN /$1 > 0/ { }', 'BEGIN /($1 > 0)/ { }'],
  ['kprobe:f /arg0/\n{ }', 'kprobe:f /arg0/ { }'],
  ['BEGIN/1/{ exit() }', 'BEGIN /1/ { exit() }'],
  [
    'tracepoint:syscalls:sys_enter_openat /str(args.filename) == "/etc/passwd"/ { }',
    'tracepoint:syscalls:sys_enter_openat /(str(args.filename) == "/etc/passwd")/ { }',
  ],
  ['uprobe:/usr/lib/*.so:f// c\n{ }', 'uprobe:/usr/lib/*.so:f { }'],
  // several attach points, comments, layout
  ['kprobe:a, kprobe:b,\n  kprobe:c { }', 'kprobe:a,kprobe:b,kprobe:c { }'],
  ['kprobe:a,kprobe:b, { }', 'kprobe:a,kprobe:b { }'],
  ['// c1\nBEGIN /* c2 */ { /* c3 */ @x /* c4 */ = 1; // c5\n}', 'BEGIN { @x = 1 }'],
];

describe('parse: valid programs', () => {
  assert.ok(VALID.length >= 60);
  for (const [text, expected] of VALID) {
    test(text, () => {
      assert.equal(sxProgram(parse(src(text))), expected);
    });
  }
});

describe('parse: specific AST facts', () => {
  test('attach point splitting: provider, parts (quotes removed), raw', () => {
    const cases: [string, string, string[]][] = [
      ['BEGIN', 'BEGIN', []],
      ['tracepoint:syscalls:sys_enter_*', 'tracepoint', ['syscalls', 'sys_enter_*']],
      ['t:sched:sched_switch', 't', ['sched', 'sched_switch']],
      ['interval:s:1', 'interval', ['s', '1']],
      ['profile:hz:99', 'profile', ['hz', '99']],
      ['uprobe:/bin/bash:readline', 'uprobe', ['/bin/bash', 'readline']],
      ['uprobe:"/path with space":fn', 'uprobe', ['/path with space', 'fn']],
      ['uprobe:"/a\\"b:c":fn', 'uprobe', ['/a"b:c', 'fn']],
      ['usdt:/bin/x:prov:probe', 'usdt', ['/bin/x', 'prov', 'probe']],
      ['kprobe:vfs_*', 'kprobe', ['vfs_*']],
      ['kprobe:vfs_rea?', 'kprobe', ['vfs_rea?']],
      ['kprobe:mod:fn', 'kprobe', ['mod', 'fn']],
      ['kprobe:fn+0x10', 'kprobe', ['fn+0x10']],
      ['hardware:cache-misses:1000000', 'hardware', ['cache-misses', '1000000']],
      ['rawtracepoint:sched_switch', 'rawtracepoint', ['sched_switch']],
    ];
    for (const [raw, provider, parts] of cases) {
      const p = parse(src(`${raw} { }`));
      const ap = p.probes[0]!.attachPoints[0]!;
      assert.deepEqual({ raw: ap.raw, provider: ap.provider, parts: ap.parts }, { raw, provider, parts }, raw);
      assert.deepEqual(ap.pos, { line: 1, col: 1, offset: 0, end: raw.length });
      assert.deepEqual(splitAttachPoint(raw), { provider, parts });
    }
  });

  test('attach point list across lines', () => {
    const p = parse(src('tracepoint:syscalls:sys_enter_open,\n tracepoint:syscalls:sys_enter_openat\n{ }'));
    const aps = p.probes[0]!.attachPoints;
    assert.deepEqual(
      aps.map((a) => a.parts[1]),
      ['sys_enter_open', 'sys_enter_openat'],
    );
    assert.deepEqual(aps[1]!.pos, { line: 2, col: 2, offset: 37, end: 73 });
    // The probe's span covers its attach points (as bpftrace's).
    assert.deepEqual(p.probes[0]!.pos, { line: 1, col: 1, offset: 0, end: 73 });
  });

  test('spans of chosen nodes', () => {
    const text = 'BEGIN { $x = (1 + 2) * 3; @m[pid, "a"] = count(); }\nEND { printf("%d\\n", $x); }';
    const p = parse(src(text));
    const [s0, s1] = p.probes[0]!.body.stmts as [A.AssignStmt, A.AssignStmt];
    // statement spans exclude the ';'
    assert.deepEqual(s0.pos, { line: 1, col: 9, offset: 8, end: 24 });
    const mul = s0.value as A.BinaryExpr;
    assert.equal(mul.op, '*');
    // a parenthesised operand's span includes its parentheses, so the product starts at '('
    assert.deepEqual(mul.pos, { line: 1, col: 14, offset: 13, end: 24 });
    assert.deepEqual(mul.left.pos, { line: 1, col: 14, offset: 13, end: 20 });
    const map = s1.target as A.MapExpr;
    assert.equal(text.slice(map.pos.offset, map.pos.end), '@m[pid, "a"]');
    assert.equal(text.slice(map.keys[1]!.pos.offset, map.keys[1]!.pos.end), '"a"');
    assert.deepEqual(p.probes[0]!.body.pos, { line: 1, col: 7, offset: 6, end: 51 });
    const call = (p.probes[1]!.body.stmts[0] as A.ExprStmt).expr as A.CallExpr;
    assert.deepEqual(call.pos, { line: 2, col: 7, offset: 58, end: 76 });
    assert.equal(text.slice(call.pos.offset, call.pos.end), 'printf("%d\\n", $x)');
    assert.deepEqual(call.args[1]!.pos, { line: 2, col: 22, offset: 73, end: 75 });
    assert.deepEqual(p.pos, { line: 1, col: 1, offset: 0, end: text.length });
  });

  test('if/else-if chain and for/while spans', () => {
    const text = 'BEGIN {\n  if ($a) { }\n  else if ($b) { } else { @c = 1 }\n  for ($i : 0..3) { }\n}';
    const stmts = parse(src(text)).probes[0]!.body.stmts;
    const ifs = stmts[0] as A.IfStmt;
    assert.equal(text.slice(ifs.pos.offset, ifs.pos.end), 'if ($a) { }\n  else if ($b) { } else { @c = 1 }');
    assert.equal(ifs.else?.kind, 'IfStmt');
    const inner = ifs.else as A.IfStmt;
    assert.deepEqual(inner.pos, { line: 3, col: 8, offset: 29, end: 56 });
    assert.equal(inner.else?.kind, 'Block');
    const f = stmts[1] as A.ForStmt;
    assert.equal(text.slice(f.pos.offset, f.pos.end), 'for ($i : 0..3) { }');
    assert.equal(f.iterable.kind, 'RangeExpr');
    assert.equal(text.slice(f.iterable.pos.offset, f.iterable.pos.end), '0..3');
  });

  test('elvis operator shares the condition node', () => {
    const s = parse(src('BEGIN { $x = $a ?: 1; }')).probes[0]!.body.stmts[0] as A.AssignStmt;
    const t = s.value as A.TernaryExpr;
    assert.equal(t.then, t.cond);
  });

  test('map subscripts: one key, several keys, bare @', () => {
    const stmts = parse(src('BEGIN { @a[1] = 1; @b[1, "x", pid] = 2; @ = 3; @c = 4; }')).probes[0]!.body.stmts;
    const targets = stmts.map((s) => (s as A.AssignStmt).target as A.MapExpr);
    assert.deepEqual(
      targets.map((m) => [m.name, m.keys.map((k) => k.kind)]),
      [
        ['a', ['IntLit']],
        ['b', ['IntLit', 'StrLit', 'BuiltinExpr']],
        ['', []],
        ['c', []],
      ],
    );
  });

  test('string literal values and bytes', () => {
    const call = (parse(src('BEGIN { print("é\\xc3\\xa9\\0\\101\\x7"); }')).probes[0]!.body.stmts[0] as A.ExprStmt)
      .expr as A.CallExpr;
    const lit = call.args[0] as A.StrLit;
    assert.equal(lit.value, 'é\u00c3\u00a9\u0000A\u0007');
    assert.deepEqual(Array.from(lit.bytes!), [0xc3, 0xa9, 0xc3, 0xa9, 0, 0x41, 7]);
  });

  test('integer literal values', () => {
    const s = parse(src('BEGIN { print((0, 0777, 0xdead_BEEF, 18446744073709551615, 9e18, 1_2_3, 4ul)); }'));
    const tuple = ((s.probes[0]!.body.stmts[0] as A.ExprStmt).expr as A.CallExpr).args[0] as A.TupleExpr;
    assert.deepEqual(
      tuple.elems.map((e) => (e as A.IntLit).value),
      [0n, 511n, 0xdeadbeefn, 18446744073709551615n, 9000000000000000000n, 123n, 4n],
    );
  });

  test('positional parameters', () => {
    const s = parse(src('BEGIN { print(($1, $10, $#)); }'));
    const t = ((s.probes[0]!.body.stmts[0] as A.ExprStmt).expr as A.CallExpr).args[0] as A.TupleExpr;
    assert.deepEqual(
      t.elems.map((e) => [(e as A.PositionalExpr).index, (e as A.PositionalExpr).count]),
      [
        [1, false],
        [10, false],
        [0, true],
      ],
    );
  });

  test('type specs in casts and let', () => {
    const stmts = parse(
      src('BEGIN { $a = (struct sock **)arg0; $b = (int32*[4])$c; let $s: string[16] = "x"; $d = (union u)$e; }'),
    ).probes[0]!.body.stmts;
    const a = (stmts[0] as A.AssignStmt).value as A.CastExpr;
    assert.deepEqual(
      { name: a.typeSpec.name, p: a.typeSpec.pointerDepth, n: a.typeSpec.arrayCount },
      { name: 'struct sock', p: 2, n: null },
    );
    const b = (stmts[1] as A.AssignStmt).value as A.CastExpr;
    assert.deepEqual({ p: b.typeSpec.pointerDepth, n: b.typeSpec.arrayCount }, { p: 1, n: 4 });
    const s = stmts[2] as A.VarDeclStmt;
    assert.deepEqual({ name: s.typeName!.name, n: s.typeName!.arrayCount }, { name: 'string', n: 16 });
    assert.equal(((stmts[3] as A.AssignStmt).value as A.CastExpr).typeSpec.name, 'union u');
  });

  test('config block', () => {
    const p = parse(
      src(
        'config = {\n  max_map_keys = 1024;\n  stack_mode = perf;\n  license = "GPL";\n  print_maps_on_exit = false\n}\nBEGIN { }',
      ),
    );
    assert.deepEqual(
      p.config.map((c) => [c.key, c.value]),
      [
        ['max_map_keys', 1024n],
        ['stack_mode', 'perf'],
        ['license', 'GPL'],
        ['print_maps_on_exit', 'false'],
      ],
    );
    assert.deepEqual(p.config[0]!.pos, { line: 2, col: 3, offset: 13, end: 32 });
  });

  test('shebang, #include, #define and struct definitions are accepted and kept out of the AST', () => {
    const text = [
      '#!/usr/bin/env bpftrace',
      '#include <linux/sched.h>',
      '#include "my.h"',
      '#define MAX 10',
      'struct S { int x; /* } */ char c[2]; } __attribute__((packed));',
      'union U { int a; long b; }',
      'config = { max_strlen = 128 }',
      'BEGIN { @ = 1 }',
    ].join('\n');
    const p = parse(src(text));
    assert.equal(p.probes.length, 1);
    assert.equal(p.probes[0]!.attachPoints[0]!.raw, 'BEGIN');
    assert.deepEqual(p.probes[0]!.pos, {
      line: 8,
      col: 1,
      offset: text.indexOf('BEGIN'),
      end: text.indexOf('BEGIN') + 5,
    });
    assert.deepEqual(
      p.config.map((c) => c.key),
      ['max_strlen'],
    );
  });

  test('unknown identifiers are BuiltinExpr (semantic analysis decides)', () => {
    const call = (parse(src('BEGIN { kstack(perf, 10); }')).probes[0]!.body.stmts[0] as A.ExprStmt).expr as A.CallExpr;
    assert.deepEqual(call.args[0], {
      kind: 'BuiltinExpr',
      pos: { line: 1, col: 16, offset: 15, end: 19 },
      name: 'perf',
    });
  });

  test('deep but reasonable nesting parses', () => {
    const p = parse(src(`BEGIN { $x = ${'('.repeat(300)}1${')'.repeat(300)}; }`));
    assert.equal(((p.probes[0]!.body.stmts[0] as A.AssignStmt).value as A.IntLit).value, 1n);
  });
});

describe('parse: nesting limits', () => {
  const N = 100_000;
  const deep: [string, string][] = [
    ['parentheses', `BEGIN { $x = ${'('.repeat(N)}1${')'.repeat(N)}; }`],
    ['unclosed parentheses', `BEGIN { $x = ${'('.repeat(N)}`],
    ['unary operators', `BEGIN { $x = ${'-'.repeat(N)}1; }`],
    ['blocks', `BEGIN ${'{'.repeat(N)}${'}'.repeat(N)}`],
    ['unclosed blocks', `BEGIN ${'{'.repeat(N)}`],
    ['ternaries', `BEGIN { $x = ${'1 ? 2 : '.repeat(N)}3; }`],
    ['else-if chain', `BEGIN { if (1) {} ${'else if (1) {} '.repeat(N)} }`],
    ['map keys', `BEGIN { $x = ${'@a['.repeat(N)}1${']'.repeat(N)}; }`],
    ['predicate', `BEGIN /${'('.repeat(N)}1${')'.repeat(N)}/ { }`],
    ['casts', `BEGIN { $x = ${'(uint8)'.repeat(N)}1; }`],
    ['left-deep sum (no recursion in the parser)', `BEGIN { $x = ${Array(N).fill('1').join('+')}; }`],
    ['field chain', `BEGIN { $x = $y${'.a'.repeat(N)}; }`],
  ];
  for (const [name, text] of deep) {
    test(`${name} 100k deep gives a CompileError`, () => {
      assert.throws(
        () => parse(src(text)),
        (e: unknown) =>
          e instanceof CompileError &&
          e.diagnostics.length === 1 &&
          /^syntax: too deeply nested \(the limit is 1000 levels\)$/.test(e.diagnostics[0]!.message),
      );
    });
  }

  test('a sum just under the tree depth limit parses, one more term does not', () => {
    // Program > Probe > Block > AssignStmt > n-1 BinaryExprs > IntLit: depth n + 4.
    const sum = (n: number) => `BEGIN { $x = ${Array(n).fill('1').join('+')}; }`;
    assert.doesNotThrow(() => parse(src(sum(MAX_AST_DEPTH - 4))));
    assert.throws(() => parse(src(sum(MAX_AST_DEPTH - 3))), CompileError);
  });
});
