/**
 * Differential test cases: each one runs through bpftrace 0.17 (the oracle installed here) and bpfscope with
 * the same arguments, and bpfscope's stdout must equal the oracle's (after removing 0.17's
 * `Attaching N probes...` line, see test/helpers/cli.ts).
 *
 * Our target is current bpftrace (v0.26). Where 0.17 and current bpftrace print different things for the same
 * program, the case holds the current expected stdout in `expect` with the `reason`, and docs/compat.md lists
 * it under "Differential test exceptions". Sources for those expectations are named in each reason
 * (bpftrace v0.26.1 `src/output/text.cpp`, `src/output/json.cpp`, `src/format_string.cpp`,
 * `src/ast/passes/fold_literals.cpp`, `src/types_format.cpp`, `tests/runtime/*`).
 *
 * Determinism: programs filter on the workload with `pid == cpid` (plus a `comm` the workload sets, to skip what
 * the dynamic loader and the pre-exec child do), or on a comm unique to this test process, because another run of
 * this suite may trace the same syscalls at the same time. Counts and read sizes are chosen so that map entries
 * never tie in the value sort, and workloads that print several lines pin themselves to CPU 0 (`cpu 0` step)
 * because bpftrace 0.17 reads one perf buffer per CPU.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { workloadCommand } from '../helpers/workload.js';

export interface DiffCase {
  /** Unique, kebab-case; also the node:test name. */
  name: string;
  /** bpfscope's arguments (bpftrace's flags: -e PROGRAM, -c CMD, -f json, -q, positional params...). */
  args: string[];
  /**
   * The oracle's arguments when bpftrace 0.17 needs another spelling of the same program: 0.17 only accepts
   * `args->field` in tracepoints, current bpftrace prefers `args.field` (and still accepts `->`). Default: `args`.
   */
  oracleArgs?: string[];
  /** bpfscope's expected stdout when current bpftrace differs from 0.17 (requires `reason`). */
  expect?: string;
  /** Why 0.17's output is not the expectation, with the source of the current behaviour. */
  reason?: string;
  /** Set when bpftrace 0.17 cannot run the program at all: says why (requires `expect`). */
  noOracle?: string;
  /** Expected number in our stderr's `Attached N probes` line when it is not the oracle's count. */
  attached?: number;
  /** Run timeout, ms (default 15000). */
  timeoutMs?: number;
}

/** Rewrites `args.field` (current bpftrace) to `args->field` (the only form bpftrace 0.17 accepts). */
function arrowArgs(prog: string): string {
  return prog.replace(/\bargs\./g, 'args->');
}

interface CaseOpts {
  /** -c command (a workload command line from workloadCommand). */
  cmd?: string;
  /** Extra flags placed before -e (e.g. ['-f', 'json', '-q']). */
  flags?: string[];
  /** Positional parameters after the program. */
  params?: string[];
  expect?: string;
  reason?: string;
  noOracle?: string;
  attached?: number;
  timeoutMs?: number;
}

function c(name: string, prog: string, o: CaseOpts = {}): DiffCase {
  const build = (p: string) => [
    ...(o.flags ?? []),
    '-e',
    p,
    ...(o.cmd !== undefined ? ['-c', o.cmd] : []),
    ...(o.params ?? []),
  ];
  const dc: DiffCase = { name, args: build(prog) };
  const oracleProg = arrowArgs(prog);
  if (oracleProg !== prog) dc.oracleArgs = build(oracleProg);
  if (o.expect !== undefined) dc.expect = o.expect;
  if (o.reason !== undefined) dc.reason = o.reason;
  if (o.noOracle !== undefined) dc.noOracle = o.noOracle;
  if (o.attached !== undefined) dc.attached = o.attached;
  if (o.timeoutMs !== undefined) dc.timeoutMs = o.timeoutMs;
  return dc;
}

/** What every text-mode run prints when it ends, before the maps (TextOutput::end in 0.17 and v0.26). */
const END = '\n\n';

/** Writes a script file for the script-file case and returns its path. */
function scriptFile(name: string, text: string): string {
  const dir = join(tmpdir(), 'bpfscope-test-scripts');
  mkdirSync(dir, { recursive: true });
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

/**
 * The cases, built on call (they embed the compiled workload's path, compiling it if needed).
 * W = the workload: see test/fixtures/workload.c for its steps.
 */
export function diffCases(): DiffCase[] {
  const W = workloadCommand;
  const HIST_READS = ['comm', 'bpfs_wl', 'read', 3, 100, 'read', 1, 7, 'read', 2, 4096] as const;
  const histReads = W(...HIST_READS);
  const openats = W('comm', 'bpfs_wl', 'cpu', 0, 'openat', '/etc/hostname', 2, 'openat', '/nonexistent/bpfs', 3);
  // A comm no other run on this machine uses (the diff suite may run twice at once): for cases that filter on
  // comm alone, without pid == cpid.
  const uniq = `bpfs_${(process.pid % 0x10000).toString(16)}`;
  const script = scriptFile(
    'count-comm.bt',
    '// counts getppid calls of the comm given as $1\n' +
      'tracepoint:syscalls:sys_enter_getppid /comm == str($1)/ {\n  @calls = count();\n}\n',
  );

  return [
    // ---------------------------------------------------------------- tracepoints
    c('tp-getppid-count-cpid', 'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @ = count(); }', {
      cmd: W('getppid', 7),
    }),
    c('tp-getppid-comm-filter', `tracepoint:syscalls:sys_enter_getppid /comm == "${uniq}"/ { @calls = count(); }`, {
      cmd: W('getppid', 3, 'comm', uniq, 'getppid', 5),
    }),
    c(
      'tp-openat-str-filename',
      'tracepoint:syscalls:sys_enter_openat /pid == cpid && comm == "bpfs_wl"/ { printf("%s\\n", str(args.filename)); }',
      {
        cmd: openats,
      },
    ),
    c(
      'tp-openat-args-arrow-spelling',
      'tracepoint:syscalls:sys_enter_openat /pid == cpid && comm == "bpfs_wl"/ { @[str(args->filename)] = count(); }',
      {
        cmd: openats,
      },
    ),
    c(
      'tp-exit-openat-ret-negative-keys',
      'tracepoint:syscalls:sys_exit_openat /pid == cpid && comm == "bpfs_wl"/ { @[args.ret] = count(); }',
      {
        cmd: openats,
      },
    ),
    c(
      'tp-exit-read-ret',
      'tracepoint:syscalls:sys_exit_read /pid == cpid && comm == "bpfs_wl"/ { @bytes[args.ret] = count(); }',
      {
        cmd: histReads,
      },
    ),
    c(
      'tp-raw-syscalls-id',
      'tracepoint:raw_syscalls:sys_enter /pid == cpid && comm == "bpfs_wl"/ { @[args.id] = count(); }',
      {
        cmd: W('comm', 'bpfs_wl', 'getppid', 3, 'getuid', 5),
      },
    ),
    c(
      'tp-sched-exec-data-loc',
      'tracepoint:sched:sched_process_exec /pid == cpid/ { printf("%s %s\\n", str(args.filename), comm); }',
      {
        cmd: W('getppid', 1),
      },
    ),
    c('tp-sched-fork-parent', 'tracepoint:sched:sched_process_fork /args.parent_pid == cpid/ { @forks = count(); }', {
      cmd: W('kill-self-child', 3),
    }),
    c(
      'tp-kill-args-sig',
      'tracepoint:syscalls:sys_enter_kill /pid == cpid && comm == "bpfs_wl"/ { @sig[args.sig] = count(); }',
      {
        cmd: W('comm', 'bpfs_wl', 'kill-self', 3, 'kill-self-child', 2),
      },
    ),
    c(
      'tp-wildcard-getp-probe',
      'tracepoint:syscalls:sys_enter_getp* /pid == cpid && comm == "bpfs_wl"/ { @[probe] = count(); }',
      {
        cmd: W('comm', 'bpfs_wl', 'getppid', 2, 'getpid', 4, 'getpgrp', 6),
      },
    ),
    c('tp-wildcard-get-star-ppid', 'tracepoint:syscalls:sys_enter_get*ppid /pid == cpid/ { @[probe] = count(); }', {
      cmd: W('getppid', 4),
    }),
    c(
      'tp-two-attach-points',
      'tracepoint:syscalls:sys_enter_getuid, tracepoint:syscalls:sys_enter_getgid /pid == cpid && comm == "bpfs_wl"/ { @[probe] = count(); }',
      { cmd: W('comm', 'bpfs_wl', 'getuid', 2, 'getgid', 3) },
    ),
    c(
      'tp-two-probes-event-order',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid && comm == "bpfs_wl"/ { printf("ppid\\n"); } tracepoint:syscalls:sys_enter_getuid /pid == cpid && comm == "bpfs_wl"/ { printf("uid\\n"); }',
      { cmd: W('comm', 'bpfs_wl', 'cpu', 0, 'getppid', 1, 'getuid', 2, 'getppid', 1) },
    ),

    // ---------------------------------------------------------------- predicates and builtins
    c(
      'pred-comm-not-equal-and-cpid',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid && comm != "bpfs_wl"/ { @before_rename = count(); }',
      {
        cmd: W('getppid', 2, 'comm', 'bpfs_wl', 'getppid', 3),
      },
    ),
    c(
      'pred-or-of-comms',
      'tracepoint:syscalls:sys_enter_getuid /pid == cpid && (comm == "bpfs_a" || comm == "bpfs_b")/ { @[comm] = count(); }',
      { cmd: W('comm', 'bpfs_a', 'getuid', 2, 'comm', 'bpfs_c', 'getuid', 9, 'comm', 'bpfs_b', 'getuid', 4) },
    ),
    c(
      'builtin-pid-tid-cpid',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @[pid - cpid, tid - cpid] = count(); }',
      {
        cmd: W('getppid', 3),
      },
    ),
    c(
      'builtin-comm-printf-width',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { printf("[%s] [%-16s] [%16s]\\n", comm, comm, comm); }',
      {
        cmd: W('comm', 'bpfs_wl', 'getppid', 1),
      },
    ),

    // ---------------------------------------------------------------- maps
    c('map-scalar-assign', 'BEGIN { @x = 5; @y = -3; @z = 0x10; exit(); }'),
    c('map-tuple-keys', 'BEGIN { @x[1, "a"] = 10; @x[2, "b"] = 20; @x[3, "c"] = 5; exit(); }'),
    c('map-string-keys-comm-count', 'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @[comm] = count(); }', {
      cmd: W('comm', 'bpfs_aaa', 'getppid', 2, 'comm', 'bpfs_bbb', 'getppid', 5),
    }),
    c(
      'map-comm-ret-tuple-key',
      'tracepoint:syscalls:sys_exit_read /pid == cpid && comm == "bpfs_wl"/ { @[comm, args.ret] = count(); }',
      {
        cmd: histReads,
      },
    ),
    c(
      'map-increment-compound',
      'BEGIN { @a++; @a++; ++@b; @c += 5; @c += -2; $v = 1; $v++; $v += 10; printf("%d\\n", $v); exit(); }',
    ),
    c('map-compound-minus-signed', 'BEGIN { @d -= 3; exit(); }', {
      expect: `${END}@d: -3\n`,
      reason:
        'subtraction always yields int64 in v0.26.1 (src/ast/passes/types/type_resolver.cpp get_binop_int: MINUS -> ' +
        'CreateInt64), so the map holds a signed -3; 0.17 types the map unsigned and prints 18446744073709551613',
    }),
    c('map-several-sorted-by-name', 'BEGIN { @zz = 1; @aa = 2; @mm = 3; @ = 4; exit(); }'),
    c('map-delete-key', 'BEGIN { @a[1] = 1; @a[2] = 2; @a[3] = 3; delete(@a[2]); exit(); }'),
    c('map-zero', 'BEGIN { @c = count(); @c = count(); @k[5] = count(); zero(@c); zero(@k); exit(); }'),
    c('map-print-then-exit', 'BEGIN { @x[1] = 2; @x[2] = 3; @y = 4; print(@x); print(@y); exit(); }'),
    c('map-clear', 'BEGIN { @a[1] = 1; @b = 2; clear(@a); exit(); }', {
      expect: `${END}@b: 2\n`,
      reason:
        'a cleared map prints nothing at exit in current bpftrace (v0.26.1 TextOutput::map/emit_map print one line per ' +
        'element); 0.17 prints an empty line for it',
    }),
    c(
      'map-read-in-predicate',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @n++; if (@n == 3) { @third = @n * 10; } }',
      {
        cmd: W('getppid', 5),
      },
    ),

    // ---------------------------------------------------------------- aggregations
    c(
      'agg-count-sum-min-max',
      'tracepoint:syscalls:sys_exit_read /pid == cpid && comm == "bpfs_wl"/ { @n = count(); @s = sum(args.ret); @mi = min(args.ret); @ma = max(args.ret); }',
      {
        cmd: histReads,
      },
    ),
    c('agg-sum-min-negative', 'BEGIN { @s = sum(-5); @s = sum(2); @mi = min(-7); @mi = min(3); exit(); }'),
    c(
      'agg-avg',
      'tracepoint:syscalls:sys_exit_read /pid == cpid && comm == "bpfs_wl"/ { @a = avg(args.ret); @ak[comm] = avg(args.ret); }',
      {
        cmd: histReads,
        expect: `${END}@a: 1416\n@ak[bpfs_wl]: 1416\n`,
        reason:
          'avg maps: 0.17 prints an extra empty line after each avg/stats map (TextOutput::map_stats); v0.26.1 prints ' +
          'them like other values (TextOutput::map, Value::Stats branch). 8499 bytes / 6 reads = 1416 (integer division)',
      },
    ),
    c('agg-stats', 'tracepoint:syscalls:sys_exit_read /pid == cpid && comm == "bpfs_wl"/ { @st = stats(args.ret); }', {
      cmd: histReads,
      expect: `${END}@st: { .count = 6, .average = 1416, .total = 8499 }\n`,
      reason:
        'stats() prints as a record `{ .count = N, .average = N, .total = N }` in v0.26.1 (tests/runtime/call ' +
        '"stats", types_format.cpp); 0.17 prints `count N, average N, total N` followed by an empty line',
    }),
    c('agg-hist', 'tracepoint:syscalls:sys_exit_read /pid == cpid && comm == "bpfs_wl"/ { @h = hist(args.ret); }', {
      cmd: histReads,
      expect:
        END +
        '@h:\n' +
        '[4, 8)                 1 |@@@@@@@@@@@@@@@@@                                   |\n' +
        '[8, 16)                0 |                                                    |\n' +
        '[16, 32)               0 |                                                    |\n' +
        '[32, 64)               0 |                                                    |\n' +
        '[64, 128)              3 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n' +
        '[128, 256)             0 |                                                    |\n' +
        '[256, 512)             0 |                                                    |\n' +
        '[512, 1K)              0 |                                                    |\n' +
        '[1K, 2K)               0 |                                                    |\n' +
        '[2K, 4K)               0 |                                                    |\n' +
        '[4K, 8K)               2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@                  |\n' +
        '\n',
      reason:
        'histogram header line: v0.26.1 prints `@h:` (TextOutput::map: name << ":" << endl; tests/runtime/outputs/' +
        'hist.txt), 0.17 prints `@h: ` with a trailing space. Buckets and bars are the same',
    }),
    c(
      'agg-hist-zero-one-negative',
      'BEGIN { @h = hist(0); @h = hist(1); @h = hist(1); @h = hist(-1); @h = hist(2); exit(); }',
      {
        expect:
          END +
          '@h:\n' +
          '(..., 0)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n' +
          '[0]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n' +
          '[1]                    2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n' +
          '[2, 4)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n' +
          '\n',
        reason: 'histogram header line `@h:` without the trailing space of 0.17 (see agg-hist)',
      },
    ),
    c(
      'agg-hist-keyed',
      'tracepoint:syscalls:sys_exit_read /pid == cpid && (comm == "bpfs_a" || comm == "bpfs_b")/ { @h[comm] = hist(args.ret); }',
      {
        cmd: W('comm', 'bpfs_a', 'read', 2, 16, 'comm', 'bpfs_b', 'read', 1, 2, 'read', 2, 3),
        expect:
          END +
          '@h[bpfs_a]:\n' +
          '[16, 32)               2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n' +
          '\n' +
          '@h[bpfs_b]:\n' +
          '[2, 4)                 3 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n' +
          '\n',
        reason:
          'keyed histogram header `@h[key]:` (v0.26.1 emit_map: "]:" << endl for non-primitive values) vs `@h[key]: ` in ' +
          '0.17; maps are sorted by the sum of their buckets (2 < 3)',
      },
    ),
    c(
      'agg-lhist',
      'tracepoint:syscalls:sys_exit_read /pid == cpid && comm == "bpfs_wl"/ { @l = lhist(args.ret, 0, 200, 50); }',
      {
        cmd: histReads,
        expect:
          END +
          '@l:\n' +
          '[0, 50)                1 |@@@@@@@@@@@@@@@@@                                   |\n' +
          '[50, 100)              0 |                                                    |\n' +
          '[100, 150)             3 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n' +
          '[150, 200)             0 |                                                    |\n' +
          '[200, ...)             2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@                  |\n' +
          '\n',
        reason:
          'linear histogram header `@l:` without the trailing space of 0.17 (v0.26.1 tests/runtime/outputs/lhist.txt)',
      },
    ),
    c(
      'agg-lhist-under-over',
      'BEGIN { @l = lhist(-5, 0, 30, 10); @l = lhist(15, 0, 30, 10); @l = lhist(15, 0, 30, 10); @l = lhist(99, 0, 30, 10); exit(); }',
      {
        expect:
          END +
          '@l:\n' +
          '(..., 0)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n' +
          '[0, 10)                0 |                                                    |\n' +
          '[10, 20)               2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n' +
          '[20, 30)               0 |                                                    |\n' +
          '[30, ...)              1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n' +
          '\n',
        reason: 'linear histogram header `@l:` without the trailing space of 0.17 (see agg-lhist)',
      },
    ),

    // ---------------------------------------------------------------- printf
    c(
      'printf-integer-conversions',
      'BEGIN { printf("%d|%u|%x|%X|%lu|%llu|%ld|%lld\\n", -42, 42, 255, 255, -1, 5000000000, -5000000000, 123); exit(); }',
    ),
    c(
      'printf-32bit-truncation',
      'BEGIN { printf("%d|%u|%x|%d\\n", 5000000000, 5000000000, -1, -2147483649); exit(); }',
    ),
    c(
      'printf-width-flags',
      'BEGIN { printf("[%-8s][%8s][%08x][%5d][%-5d][%c] 100%% [%s]\\n", "ab", "cd", 0xbeef, 42, 42, 65, "x"); exit(); }',
    ),
    c('printf-pointer', 'BEGIN { printf("%p\\n", 0x1234); exit(); }'),
    c('printf-percent-i', 'BEGIN { printf("%i|%i\\n", 7, -7); exit(); }', {
      noOracle: 'bpftrace 0.17 does not know %i ("Too many arguments for format string")',
      expect: '7|-7\n' + END,
      reason: '%i is accepted by v0.26.1 (src/format_string.cpp FormatSpec regex, handled like %d); 0.17 rejects it',
      attached: 1,
    }),
    c('printf-trailing-percent', 'BEGIN { printf("%d 100%%\\n", 5); printf("50%%\\n"); exit(); }', {
      expect: '5 100%\n50%\n' + END,
      reason:
        '0.17 leaves `%%` after the last conversion unconverted (prints `100%%`); v0.26.1 FormatString::parse turns ' +
        'every `%%` into `%`',
    }),
    c(
      'printf-tracepoint-fields',
      'tracepoint:syscalls:sys_exit_read /pid == cpid && comm == "bpfs_wl"/ { printf("%s read %d bytes (0x%x)\\n", comm, args.ret, args.ret); }',
      {
        cmd: W('comm', 'bpfs_wl', 'cpu', 0, 'read', 1, 10, 'read', 1, 4096),
      },
    ),

    // ---------------------------------------------------------------- control flow and expressions
    c(
      'if-else-chain',
      'tracepoint:syscalls:sys_exit_read /pid == cpid && comm == "bpfs_wl"/ { if (args.ret > 1000) { @big++; } else if (args.ret > 50) { @mid++; } else { @small++; } }',
      { cmd: histReads },
    ),
    c(
      'ternary-string-key',
      'tracepoint:syscalls:sys_exit_read /pid == cpid && comm == "bpfs_wl"/ { @[args.ret > 50 ? "big" : "small"] = count(); }',
      {
        cmd: histReads,
      },
    ),
    c('ternary-int', 'BEGIN { $a = 5; printf("%d %d\\n", $a > 3 ? 10 : 20, $a < 3 ? 10 : 20); exit(); }'),
    c(
      'arith-variables-negative',
      'BEGIN { $a = -7; $b = 2; $c = 3; printf("%d %d %d %d %d %d\\n", $a + $b, $a - $b, $a * $b, $a / $b, $a % $c, 7 / $b); printf("%lld %lld\\n", $a / $b, $a % $c); exit(); }',
    ),
    c(
      'bitwise-and-shifts',
      'BEGIN { $a = -7; $e = -8; printf("%d %d %d %d %d %d\\n", $a & 12, $a | 16, $a ^ 5, $a << 2, $e >> 1, $e >> 60); printf("%lld %lld\\n", 1 << 40, 0xff00 >> 4); exit(); }',
    ),
    c('arith-literals-negative', 'BEGIN { printf("%d %d %d\\n", -7 / 2, -7 % 3, -8 >> 60); exit(); }', {
      expect: '-3 -1 -1\n' + END,
      reason:
        'v0.26.1 folds integer literal expressions at compile time with signed 64-bit C++ arithmetic ' +
        '(src/ast/passes/fold_literals.cpp eval_binop; its unit tests tests/fold_literals.cpp: "-10 / 2" = -5, ' +
        '"-10 % 3" = -1, "-8 >> 2" = -2 "Sign extension"), so -7/2 = -3, -7%3 = -1, -8>>60 = -1; 0.17 computes them at ' +
        'run time with unsigned division and logical shift (-4 0 15). Variables still use unsigned BPF division in ' +
        'both (see arith-variables-negative)',
    }),
    c(
      'comparisons-signed',
      'BEGIN { $a = -7; $b = 2; printf("%d %d %d %d %d %d\\n", $a < $b, $a > $b, $a <= -7, $a >= 0, $a == -7, $a != -7); exit(); }',
    ),
    c(
      'logical-and-or-not',
      'BEGIN { $a = 5; $b = 0; printf("%d %d %d %d\\n", !$a, !$b, $a && $b, $a || $b); exit(); }',
    ),
    c(
      'string-compare',
      'tracepoint:syscalls:sys_enter_openat /pid == cpid && comm == "bpfs_wl"/ { if (str(args.filename) == "/etc/hostname") { @match++; } else { @other++; } }',
      { cmd: openats },
    ),
    c(
      'str-with-length',
      'tracepoint:syscalls:sys_enter_openat /pid == cpid && comm == "bpfs_wl"/ { printf("%s|%s\\n", str(args.filename, 5), str(args.filename, 3)); }',
      {
        cmd: openats,
        expect: '/etc|/e\n/etc|/e\n/non|/n\n/non|/n\n/non|/n\n' + END,
        reason:
          'str(s, N) keeps N-1 characters in v0.26.1 ("only length - 1 bytes are copied and a NULL byte is appended", ' +
          'docs/stdlib.md; tests/runtime/call "explicit string truncation": str("zztest", 5) = "zzte"); 0.17 keeps N',
      },
    ),

    // ---------------------------------------------------------------- positional parameters, script files
    c('positional-params', 'BEGIN { printf("%d %s %d\\n", $1, str($2), $#); exit(); }', { params: ['42', 'hello'] }),
    c('positional-in-predicate', 'tracepoint:syscalls:sys_enter_getppid /comm == str($1)/ { @[comm] = count(); }', {
      cmd: W('getppid', 1, 'comm', uniq, 'getppid', 6),
      params: [uniq],
    }),
    { name: 'script-file-with-param', args: ['-c', W('comm', uniq, 'getppid', 4), script, uniq] },

    // ---------------------------------------------------------------- BEGIN / END / interval / profile
    c(
      'begin-end-printf',
      'BEGIN { printf("begin\\n"); } END { printf("end\\n"); } tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @ = count(); }',
      {
        cmd: W('getppid', 3),
      },
    ),
    c('begin-exit-stops-probe', 'BEGIN { printf("a\\n"); exit(); printf("b\\n"); } END { printf("end\\n"); }'),
    c(
      'interval-counter-exit',
      'interval:ms:100 { if (@n < 3) { @n++; printf("tick %d\\n", @n); } if (@n == 3) { exit(); } }',
    ),
    c('profile-fires', 'profile:hz:99 { @p = 1; } interval:ms:300 { exit(); } END { printf("%d\\n", @p); }'),
    c('elapsed-shape', 'interval:ms:100 { printf("%d %d\\n", elapsed > 50000000, elapsed < 5000000000); exit(); }'),
    c('nsecs-shape', 'BEGIN { $t = nsecs; printf("%d\\n", $t > 0); exit(); }'),

    // ---------------------------------------------------------------- -f json (0.17 and v0.26 differ in layout)
    c('json-printf', 'BEGIN { printf("hi %d\\n", 3); printf("q\\"t\\\\b\\n"); exit(); }', {
      flags: ['-f', 'json', '-q'],
      expect: '{"type": "printf", "data": "hi 3\\n"}\n{"type": "printf", "data": "q\\"t\\\\b\\n"}\n',
      reason:
        'JSON: 0.17 prints two empty lines when the run ends (TextOutput-style end()); v0.26.1 JsonOutput::end ' +
        'prints nothing. printf records are the same',
    }),
    c('json-maps', 'BEGIN { @c = count(); @c = count(); @m[1, "a"] = 5; @m[2, "b"] = 7; @s["x"] = sum(4); exit(); }', {
      flags: ['-f', 'json', '-q'],
      expect:
        '{"type": "map", "data": {"@c": 2}}\n' +
        '{"type": "map", "data": {"@m": {"1,a": 5, "2,b": 7}}}\n' +
        '{"type": "map", "data": {"@s": {"x": 4}}}\n',
      reason: 'JSON: no empty lines at the end in v0.26.1 (JsonOutput::end); map records are the same as 0.17',
    }),
    c('json-hist', 'BEGIN { @h = hist(5); @h = hist(100); @l = lhist(15, 0, 100, 10); exit(); }', {
      flags: ['-f', 'json', '-q'],
      expect:
        '{"type": "hist", "data": {"@h": [{"min": 4, "max": 7, "count": 1},{"min": 8, "max": 15, "count": 0},' +
        '{"min": 16, "max": 31, "count": 0},{"min": 32, "max": 63, "count": 0},{"min": 64, "max": 127, "count": 1}]}}\n' +
        '{"type": "hist", "data": {"@l": [{"min": 10, "max": 19, "count": 1}]}}\n',
      reason:
        'JSON histograms: v0.26.1 separates bucket objects with "," (JsonEmitter<Value::Histogram>: "arrays are ' +
        'unspaced"), 0.17 with ", "; and no empty lines at the end',
    }),
    c('json-stats-avg', 'BEGIN { @st = stats(4); @st = stats(6); @a = avg(3); @a = avg(8); exit(); }', {
      flags: ['-f', 'json', '-q'],
      expect:
        '{"type": "stats", "data": {"@a": 5}}\n{"type": "stats", "data": {"@st": {"count": 2, "average": 5, "total": 10}}}\n',
      reason: 'JSON: no empty lines at the end in v0.26.1 (JsonOutput::end); stats records are the same as 0.17',
    }),
    c('json-attached-probes', 'BEGIN { printf("x\\n"); exit(); }', {
      flags: ['-f', 'json'],
      expect: '{"type": "attached_probes", "count": 1, "data": {"probes": 1}}\n{"type": "printf", "data": "x\\n"}\n',
      reason:
        'JSON attach record: v0.26.1 prints {"type": "attached_probes", "count": N, "data": {"probes": N}} ' +
        '(JsonOutput::attached_probes), 0.17 has no "count" field; and no empty lines at the end',
    }),
    c(
      'json-tracepoint-map',
      'tracepoint:syscalls:sys_exit_read /pid == cpid && comm == "bpfs_wl"/ { @[args.ret] = count(); }',
      {
        flags: ['-f', 'json', '-q'],
        cmd: histReads,
        expect: '{"type": "map", "data": {"@": {"7": 1, "4096": 2, "100": 3}}}\n',
        reason: 'JSON: no empty lines at the end in v0.26.1 (JsonOutput::end)',
      },
    ),
  ];
}
