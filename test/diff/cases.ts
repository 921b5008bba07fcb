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
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { workloadCommand, workloadPath } from '../helpers/workload.js';

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
  /**
   * Current bpftrace's expected stdout computed from 0.17's (requires `reason`): for exceptions whose output
   * depends on the kernel or the workload build (stack frames), so a fixed `expect` would not fit every machine.
   */
  expectFromOracle?: (oracleStdout: string) => string;
  /**
   * A known bpfscope bug or missing feature that makes this case fail, named precisely. The oracle side is still
   * checked in oracle-only mode; the bpfscope side runs and is reported as TODO when it fails, and the case FAILS
   * once bpfscope passes it (then remove `todo`).
   */
  todo?: string;
  /**
   * Workload steps for a `-p PID` target: each tool run starts its own workload
   * (`bpfs_workload wait-stdin STEPS...`), replaces {@link TARGET_PID} in the arguments with its pid, waits for the
   * tool's attach message (plus a margin: 0.17 prints it before attaching), then lets the workload go by writing to
   * its stdin. Not with `-q` (no attach message to wait for).
   */
  target?: (string | number)[];
}

/** Placeholder for the `-p` target's pid in the arguments of a case with `target`. */
export const TARGET_PID = '%TARGET_PID%';

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
  /** The oracle's program when 0.17 spells it differently (e.g. a tracepoint for a rawtracepoint 0.17 lacks). */
  oracleProg?: string;
  expectFromOracle?: (oracleStdout: string) => string;
  todo?: string;
  target?: (string | number)[];
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
  const oracleProg = arrowArgs(o.oracleProg ?? prog);
  if (oracleProg !== prog) dc.oracleArgs = build(oracleProg);
  if (o.expect !== undefined) dc.expect = o.expect;
  if (o.expectFromOracle !== undefined) dc.expectFromOracle = o.expectFromOracle;
  if (o.todo !== undefined) dc.todo = o.todo;
  if (o.target !== undefined) dc.target = o.target;
  if (o.reason !== undefined) dc.reason = o.reason;
  if (o.noOracle !== undefined) dc.noOracle = o.noOracle;
  if (o.attached !== undefined) dc.attached = o.attached;
  if (o.timeoutMs !== undefined) dc.timeoutMs = o.timeoutMs;
  return dc;
}

/** What every text-mode run prints when it ends, before the maps (TextOutput::end in 0.17 and v0.26). */
const END = '\n\n';

/**
 * The workload's struct bpfs_rec (test/fixtures/workload.c) as a program declares it, and struct bpfs_view: the same
 * first 82 bytes (up to the bitfields) without 1-byte arrays, for printing whole structs (bpftrace 0.17 prints bitfields
 * of a struct value wrongly, current bpftrace prints `unsigned char[N]` as a string and pointers in hex).
 */
/**
 * Run timeout of the uaddr-* cases, ms: in the emulated 6.1 guest on a loaded host (load average 15 on 2 cores,
 * 2026-11-27) four of them overran the default 15 s (times the guest's scale of 4), with either tool.
 */
const UREC_TIMEOUT_MS = 30_000;

const UREC_DEFS =
  'struct bpfs_inner { short x; unsigned char tag[4]; int y; }; ' +
  'struct bpfs_rec { int a; int b; char name[8]; signed char i8; unsigned char u8; short i16; unsigned short u16; ' +
  'int i32; unsigned int u32; long i64; unsigned long u64; int arr[4]; struct bpfs_inner inner; ' +
  'unsigned char mac[6]; unsigned int lo : 3; unsigned int mid : 9; unsigned int hi : 20; struct bpfs_rec *next; }; ' +
  'struct bpfs_iview { short x; short t01; short t23; int y; }; ' +
  'struct bpfs_view { int a; int b; char name[8]; signed char i8; unsigned char u8; short i16; unsigned short u16; ' +
  'int i32; unsigned int u32; long i64; unsigned long u64; int arr[4]; struct bpfs_iview inner; ' +
  'unsigned short mac[3]; };';

/** Writes a script file for the script-file case and returns its path. */
function scriptFile(name: string, text: string): string {
  const dir = join(tmpdir(), 'bpfscope-test-scripts');
  mkdirSync(dir, { recursive: true });
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

/**
 * Offset of a function symbol in an ELF file, in hex without `0x` (for `uprobe:PATH:0xADDR`), read with `nm`
 * (binutils, installed with cc). Throws if the symbol is missing.
 */
function symbolOffset(path: string, symbol: string): string {
  const out = execFileSync('nm', [path], { encoding: 'utf8' });
  const line = out.split('\n').find((l) => l.split(' ')[2] === symbol);
  if (!line) throw new Error(`symbolOffset: ${symbol} not found in ${path}`);
  return BigInt(`0x${line.split(' ')[0]}`).toString(16);
}

/** 0.17's map-key stack frames are indented by 4 spaces, v0.26's (like every printed stack) by 8. */
function stackFramesIndent8(oracleStdout: string): string {
  return oracleStdout.replace(/^ {4}(?=\S)/gm, ' '.repeat(8));
}

const STACK_KEY_REASON =
  'stack map keys: v0.26.1 indents every frame by 8 spaces (src/types_format.cpp format(): ' +
  'get_stack(..., 8) for kstack_t/ustack_t, map keys included), as printf of a stack does in ' +
  'both; 0.17 indents map-key frames by 4. The frames themselves come from the oracle run';

const JSON_END_REASON =
  'JSON: no empty lines when the run ends in v0.26.1 (JsonOutput::end prints nothing); 0.17 prints two';

/**
 * Text rows of a log2 histogram with one value in [2, 4) and one in [4G, 8G), as v0.26 prints them
 * (src/output/text.cpp: header padded to 16, count to 8, 52-column bar; K/M/G labels in powers of 1024).
 */
function hist2to8G(): string {
  const label = (v: bigint): string => {
    const units = ['', 'K', 'M', 'G'];
    let u = 0;
    while (v >= 1024n && v % 1024n === 0n && u < units.length - 1) {
      v /= 1024n;
      u++;
    }
    return `${v}${units[u]}`;
  };
  let rows = '';
  for (let k = 1n; k <= 32n; k++) {
    const count = k === 1n || k === 32n ? 1 : 0;
    const header = `[${label(1n << k)}, ${label(1n << (k + 1n))})`;
    rows += `${header.padEnd(16)}${String(count).padStart(8)} |${'@'.repeat(count * 52).padEnd(52)}|\n`;
  }
  return rows + '\n';
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
  // A comm no other run on this machine uses (the diff suite may run twice at once), one per case (the guest runs two
  // cases at once): for cases that filter on comm alone, without pid == cpid. At most 11 of comm's 15 characters.
  const uniq = (tag: string) => `bpfs_${(process.pid % 0x10000).toString(16)}${tag}`;
  const WP = workloadPath();
  const U = (fn: string) => `uprobe:${WP}:${fn}`;
  const UR = (fn: string) => `uretprobe:${WP}:${fn}`;
  // Keeps the workload alive for a while after its traced calls, so usym()/ustack/func are resolved (from its
  // /proc/PID/maps) while it still exists: both tools resolve user symbols when they print.
  const ALIVE = ['sleep-ms', 400] as const;
  const script2 = scriptFile(
    'two-probes.bt',
    '#!/usr/bin/env bpftrace\n' +
      '/* counts getppid and getuid calls of the comm given as $1 */\n' +
      'tracepoint:syscalls:sys_enter_getppid /comm == str($1)/ { @calls["getppid"] = count(); }\n' +
      '\n' +
      'tracepoint:syscalls:sys_enter_getuid\n/comm == str($1)/\n{\n  @calls["getuid"] = count();\n}\n' +
      'END { printf("done\\n"); }\n',
  );
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
    c(
      'tp-getppid-comm-filter',
      `tracepoint:syscalls:sys_enter_getppid /comm == "${uniq('f')}"/ { @calls = count(); }`,
      {
        cmd: W('getppid', 3, 'comm', uniq('f'), 'getppid', 5),
      },
    ),
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
    // 30 matches: attached as one raw_syscalls program (probes/syscalls.ts), `probe` by syscall number
    c(
      'tp-wildcard-get-raw-syscalls',
      'tracepoint:syscalls:sys_enter_get* /pid == cpid && comm == "bpfs_wl"/ { @[probe] = count(); }',
      {
        cmd: W('comm', 'bpfs_wl', 'getppid', 2, 'getpid', 4, 'getpgrp', 6, 'getuid', 3, 'getgid', 5, 'gettid', 1),
      },
    ),
    c(
      'tp-wildcard-exit-get-raw-syscalls',
      'tracepoint:syscalls:sys_exit_get* /pid == cpid && comm == "bpfs_wl"/ { @[probe] = count(); }',
      {
        cmd: W('comm', 'bpfs_wl', 'getppid', 2, 'getpid', 4, 'getpgrp', 6, 'getuid', 3, 'getgid', 5, 'gettid', 1),
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
      cmd: W('getppid', 1, 'comm', uniq('p'), 'getppid', 6),
      params: [uniq('p')],
    }),
    { name: 'script-file-with-param', args: ['-c', W('comm', uniq('s'), 'getppid', 4), script, uniq('s')] },

    // ---------------------------------------------------------------- BEGIN / END / interval / profile
    c(
      'begin-end-printf',
      'BEGIN { printf("begin\\n"); } END { printf("end\\n"); } tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @ = count(); }',
      {
        cmd: W('getppid', 3),
      },
    ),
    // an address without a symbol prints in hex, the null address as 0 (bpftrace 0.17: a C++ void* printed)
    c(
      'begin-ksym-usym-zero-and-unknown',
      'BEGIN { printf("%s|%s|%s|%s\\n", ksym(0), usym(0), ksym(1), usym(1)); exit(); }',
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
    // ================================================================ issue 6: the whole language
    // ---------------------------------------------------------------- tracepoints (more)
    c(
      'tp-enter-read-fd-count',
      'tracepoint:syscalls:sys_enter_read /pid == cpid && comm == "bpfs_wl"/ { @[args.fd, args.count] = count(); }',
      { cmd: W('comm', 'bpfs_wl', 'read', 2, 10, 'read', 3, 20) },
    ),
    c(
      'tp-exit-write-sum',
      'tracepoint:syscalls:sys_exit_write /pid == cpid && comm == "bpfs_wl"/ { @bytes = sum(args.ret); @calls = count(); }',
      { cmd: W('comm', 'bpfs_wl', 'write', 3, 100, 'write', 2, 7) },
    ),
    c(
      'tp-newfstatat-filename-flag',
      'tracepoint:syscalls:sys_enter_newfstatat /pid == cpid && comm == "bpfs_wl"/ { @[str(args.filename), args.flag] = count(); }',
      { cmd: W('comm', 'bpfs_wl', 'stat', '/etc/passwd', 2, 'stat', '/nonexistent/bpfs', 3) },
    ),
    c(
      'tp-exit-newfstatat-enoent',
      'tracepoint:syscalls:sys_exit_newfstatat /pid == cpid && comm == "bpfs_wl"/ { @[args.ret] = count(); }',
      { cmd: W('comm', 'bpfs_wl', 'stat', '/etc/passwd', 2, 'stat', '/nonexistent/bpfs', 3) },
    ),
    c(
      'tp-openat-flags-dfd',
      'tracepoint:syscalls:sys_enter_openat /pid == cpid && comm == "bpfs_wl"/ { @[args.flags, args.dfd] = count(); }',
      { cmd: openats },
    ),
    c(
      'tp-nanosleep-user-struct',
      'tracepoint:syscalls:sys_enter_nanosleep /pid == cpid/ { printf("%d %d\\n", args.rqtp->tv_sec, args.rqtp->tv_nsec); }',
      {
        cmd: W('cpu', 0, 'nanosleep', 2, 1500, 'nanosleep', 1, 7),
      },
    ),
    c(
      'cdef-struct-cast-user-pointer',
      'struct ts { long sec; long nsec; } tracepoint:syscalls:sys_enter_nanosleep /pid == cpid/ { $t = (struct ts *)args.rqtp; printf("%d %d\\n", $t->sec, $t->nsec); }',
      { cmd: W('cpu', 0, 'nanosleep', 2, 1500, 'nanosleep', 1, 7) },
    ),
    c(
      'cdef-struct-nested-anonymous-union',
      'struct ts { long sec; union { long nsec; struct { unsigned int lo; unsigned int hi; }; }; } tracepoint:syscalls:sys_enter_nanosleep /pid == cpid/ { $t = (struct ts *)args.rqtp; @[$t->lo, $t->hi, $t->nsec] = count(); }',
      { cmd: W('nanosleep', 2, 1500) },
    ),
    c(
      'cdef-sizeof-and-enum',
      'struct Foo { int x; char c; long l; char name[5]; short s; } enum E { A, B = 5, C }; BEGIN { printf("%d %d %d %d\\n", sizeof(struct Foo), A, B, C); exit(); }',
    ),
    c(
      'tp-process-exit-comm-array',
      'tracepoint:sched:sched_process_exit /pid == cpid/ { printf("%s %d\\n", args.comm, args.pid == cpid); }',
      { cmd: W('comm', 'bpfs_exit', 'getppid', 1) },
    ),
    c(
      'tp-process-fork-data-loc-comms',
      'tracepoint:sched:sched_process_fork /args.parent_pid == cpid/ { printf("%s %s\\n", str(args.parent_comm), str(args.child_comm)); }',
      { cmd: W('comm', 'bpfs_fork', 'cpu', 0, 'kill-self-child', 2) },
    ),
    c(
      'tp-signal-generate-sigkill',
      'tracepoint:signal:signal_generate /pid == cpid && args.sig == 9/ { @[args.sig, args.errno, args.result] = count(); }',
      { cmd: W('kill-self-child', 2) },
    ),
    c(
      'tp-raw-sys-exit-id-ret',
      'tracepoint:raw_syscalls:sys_exit /pid == cpid && comm == "bpfs_wl" && (args.id == 102 || args.id == 0)/ { @[args.id, args.ret] = count(); }',
      { cmd: W('comm', 'bpfs_wl', 'getuid', 2, 'read', 3, 5) },
    ),
    c('tp-alias-t', 't:syscalls:sys_enter_getgid /pid == cpid/ { @ = count(); }', { cmd: W('getgid', 4) }),
    c(
      'tp-two-probes-one-map',
      't:syscalls:sys_enter_getuid /pid == cpid/ { @n["uid"] = count(); } t:syscalls:sys_enter_getgid /pid == cpid/ { @n["gid"] = count(); }',
      { cmd: W('getuid', 2, 'getgid', 5) },
    ),
    c(
      'tp-execve-filename',
      'tracepoint:syscalls:sys_enter_execve /pid == cpid/ { printf("%s\\n", str(args.filename)); }',
      {
        cmd: W('getppid', 1),
      },
    ),
    c('tp-execve-join-argv', 'tracepoint:syscalls:sys_enter_execve /pid == cpid/ { join(args.argv); }', {
      cmd: W('getppid', 1, 'read', 2, 3),
    }),
    c('tp-execve-join-delim', 'tracepoint:syscalls:sys_enter_execve /pid == cpid/ { join(args.argv, ","); }', {
      cmd: W('getppid', 1, 'read', 2, 3),
    }),
    c(
      'tp-execve-argv-index-and-pointer-arithmetic',
      'tracepoint:syscalls:sys_enter_execve /pid == cpid/ { printf("%s|%s|%s\\n", str(args.argv[1]), str(args.argv[2]), str(*(args.argv + 3))); }',
      { cmd: W('getppid', 1, 'read', 2, 3) },
    ),
    c(
      'tp-hrtimer-ksym-function',
      'tracepoint:timer:hrtimer_start /pid == cpid && args.mode == 1/ { @[ksym(args.function)] = count(); }',
      { cmd: W('nanosleep', 3, 100) },
    ),

    // ---------------------------------------------------------------- uprobes on the workload and on libc
    c(
      'uprobe-workload-num-str-arg0',
      `${U('num')} /pid == cpid && comm == "bpfs_wl"/ { printf("%s\\n", str(arg0)); }`,
      { cmd: W('cpu', 0, 'comm', 'bpfs_wl', 'getppid', 3, 'read', 2, 17, 'getuid', 5) },
    ),
    c(
      'uretprobe-workload-num-retval-aggs',
      `${UR('num')} /pid == cpid/ { @sum = sum(retval); @max = max(retval); @min = min(retval); @n = count(); }`,
      { cmd: W('getppid', 3, 'read', 2, 17, 'getuid', 300) },
    ),
    c('uprobe-workload-func', `${U('num')} /pid == cpid && comm == "bpfs_wl"/ { printf("%s\\n", func); }`, {
      cmd: W('cpu', 0, 'comm', 'bpfs_wl', 'getppid', 3, ...ALIVE),
    }),
    c('uretprobe-workload-func', `${UR('num')} /pid == cpid && comm == "bpfs_wl"/ { printf("%s\\n", func); }`, {
      cmd: W('cpu', 0, 'comm', 'bpfs_wl', 'getppid', 3, 'getuid', 2, ...ALIVE),
      expect: 'num\nnum\nnum\n' + END,
      reason:
        'func in a uretprobe is the probed function in v0.26.1 (codegen_llvm.cpp __builtin_func: bpf_get_func_ip for ' +
        'kretprobe/uretprobe/fexit, then usym); 0.17 reads the instruction pointer at return, which is in the caller ' +
        '(prints `step`)',
    }),
    c('uprobe-workload-wildcard-probe', `uprobe:${WP}:n* /pid == cpid/ { @[probe] = count(); }`, {
      cmd: W('getppid', 3),
    }),
    c('uprobe-workload-step-argc', `${U('step')} /pid == cpid && comm == "bpfs_wl"/ { printf("%d\\n", arg0); }`, {
      cmd: W('cpu', 0, 'comm', 'bpfs_wl', 'getppid', 3, 'getuid', 5),
    }),
    c('uprobe-workload-open-dev-args', `${U('open_dev')} /pid == cpid/ { printf("%s %d\\n", str(arg0), arg1); }`, {
      cmd: W('cpu', 0, 'read', 1, 5, 'write', 1, 5),
    }),
    c('uretprobe-workload-open-dev-fd', `${UR('open_dev')} /pid == cpid/ { printf("%d\\n", retval); }`, {
      cmd: W('cpu', 0, 'read', 1, 5, 'write', 1, 5),
    }),
    c('uprobe-workload-do-sleep-arg0', `${U('do_sleep')} /pid == cpid/ { printf("%d\\n", arg0); }`, {
      cmd: W('cpu', 0, 'nanosleep', 2, 100, 'sleep-ms', 3),
    }),
    c(
      'uprobe-workload-args6',
      `${U('args6')} /pid == cpid/ { printf("%d %d %d %d %d %d\\n", arg0, arg1, arg2, arg3, arg4, arg5); } ${UR('args6')} /pid == cpid/ { printf("ret %d\\n", retval); }`,
      { cmd: W('cpu', 0, 'args6', 1, 2, 3, 4, 5, 600, 'args6', 10, 20, 30, 40, 50, 60) },
    ),
    c(
      'uprobe-workload-address',
      `uprobe:${WP}:0x${symbolOffset(WP, 'num')} /pid == cpid/ { @[str(arg0)] = count(); }`,
      {
        cmd: W('getppid', 7, 'getuid', 7, 'getgid', 2),
      },
    ),
    c(
      'uprobe-workload-first-hit-exit',
      `${U('num')} /pid == cpid && @done == 0/ { @done = 1; printf("%s\\n", str(arg0)); exit(); }`,
      { cmd: W('getppid', 7, 'getuid', 3, ...ALIVE) },
    ),
    c('uprobe-workload-str-predicate', `${U('num')} /pid == cpid && str(arg0) == "17"/ { @hits = count(); }`, {
      cmd: W('read', 2, 17, 'getppid', 17),
    }),
    c('uprobe-workload-two-attach-points', `${U('num')}, ${U('open_dev')} /pid == cpid/ { @[probe] = count(); }`, {
      cmd: W('read', 1, 5),
    }),
    c(
      'uprobe-workload-usym-reg',
      `${U('num')} /pid == cpid/ { printf("%s|%s\\n", usym(reg("ip")), str(reg("di"))); }`,
      {
        cmd: W('cpu', 0, 'getppid', 3, ...ALIVE),
      },
    ),
    // ------------------------------------------- user memory read through uprobe/uretprobe addresses (issue 12 item 2)
    // urec(&r1, &r2) on two filled struct bpfs_rec (test/fixtures/workload.c has the values and byte offsets).
    // Every read must use bpf_probe_read_user: a kernel read of a user address fails and leaves 0.
    c(
      'uaddr-int-casts',
      `${U('urec')} /pid == cpid/ { printf("%d %d %d %d %d %d %d %d\\n", *(int8*)(arg0 + 16), *(uint8*)(arg0 + 17), ` +
        `*(int16*)(arg0 + 18), *(uint16*)(arg0 + 20), *(int32*)(arg0 + 24), *(uint32*)(arg0 + 28), ` +
        `*(int64*)(arg0 + 32), *(uint64*)(arg0 + 40)); $a = arg1 + 4; ` +
        `printf("%d %d %u %s\\n", *(int32*)arg0, *(int32*)$a, *(uint64*)(arg0 + 40), str(arg0 + 8)); }`,
      { cmd: W('urec'), timeoutMs: UREC_TIMEOUT_MS },
    ),
    c(
      'uaddr-struct-fields',
      `${UREC_DEFS} ${U('urec')} /pid == cpid/ { $r = (struct bpfs_rec *)arg0; ` +
        `printf("%d %d %d %d %d %u %d %u\\n", $r->i8, $r->u8, $r->i16, $r->u16, $r->i32, $r->u32, $r->i64, $r->u64); ` +
        `printf("%s %d %d %d %d %d %d\\n", $r->name, $r->arr[0], $r->arr[1], $r->arr[3], $r->inner.x, $r->inner.y, ` +
        `((struct bpfs_rec *)arg1)->inner.y); printf("%d %d %d\\n", $r->lo, $r->mid, $r->hi); ` +
        `printf("%d %d %s %d %d\\n", $r->next->a, $r->next->arr[2], $r->next->name, $r->next->hi, ` +
        `*(int64*)((uint64)$r->next + 32)); }`,
      { cmd: W('urec'), timeoutMs: UREC_TIMEOUT_MS },
    ),
    c(
      'uaddr-retval',
      `${UREC_DEFS} ${UR('urec')} /pid == cpid/ { $r = (struct bpfs_rec *)retval; ` +
        `printf("%d %d %s %d %d %d\\n", $r->a, $r->b, $r->name, $r->i8, $r->i64, $r->mid); ` +
        `printf("%d %d %s\\n", *(int32*)(retval + 4), ((int32*)retval)[13], str(retval + 8)); }`,
      { cmd: W('urec'), timeoutMs: UREC_TIMEOUT_MS },
    ),
    c(
      'uaddr-buf-macaddr',
      `${UREC_DEFS} ${U('urec')} /pid == cpid/ { $r = (struct bpfs_rec *)arg1; ` +
        `printf("%s %s %r %r %r\\n", macaddr($r->mac), macaddr(arg0 + 76), buf($r->inner.tag, 4), buf(arg0 + 8, 5), ` +
        `buf(arg0 + 66, 4)); }`,
      { cmd: W('urec'), timeoutMs: UREC_TIMEOUT_MS },
    ),
    c(
      'uaddr-struct-copies',
      `${UREC_DEFS} ${U('urec')} /pid == cpid/ { @s[1] = *(struct bpfs_view *)arg0; ` +
        `@inner = ((struct bpfs_view *)arg1)->inner; @t = (7, ((struct bpfs_view *)arg0)->inner, "x"); ` +
        `$v = *(struct bpfs_view *)arg1; @p[1] = ((struct bpfs_rec *)arg0)->next; ` +
        `@k[((struct bpfs_rec *)arg0)->name, ((struct bpfs_rec *)arg1)->i32] = count(); ` +
        `$t = ((struct bpfs_rec *)arg0, 5); ` +
        `printf("%d %d %d %d %s\\n", $v.u16, $v.arr[1], $v.inner.x, $t.0->next->i16, $t.0->name); } ` +
        `${UR('urec')} /pid == cpid/ { printf("%d %d %d %s\\n", @p[1]->b, @s[1].i16, @s[1].arr[3], @s[1].name); delete(@p[1]); }`,
      {
        cmd: W('urec'),
        timeoutMs: UREC_TIMEOUT_MS,
        expect:
          '2 20 8 32767 hello\n44 -1616 -4 hello\n' +
          END +
          '@inner: { .x = 8, .t01 = 513, .t23 = 1027, .y = -88 }\n' +
          '@k[hello, 2147483647]: 1\n' +
          '@s[1]: { .a = 11, .b = 22, .name = hello, .i8 = -8, .u8 = 200, .i16 = -1616, .u16 = 60000, .i32 = -320000, ' +
          '.u32 = 4000000000, .i64 = -6400000000, .u64 = 18000000000000000000, .arr = [1,-2,3,-4], ' +
          '.inner = { .x = -7, .t01 = -21026, .t23 = -4162, .y = 77 }, .mac = [16898,4524,2304] }\n' +
          '@t: (7, { .x = -7, .t01 = -21026, .t23 = -4162, .y = 77 }, x)\n',
        reason:
          'the emptied map @p prints nothing at exit in current bpftrace (as map-clear: v0.26.1 TextOutput::map ' +
          'prints one line per element); 0.17 prints an empty line for it',
      },
    ),
    c('uprobe-libc-syscall-nr', 'uprobe:libc:syscall /pid == cpid/ { @[arg0] = count(); }', {
      cmd: W('getppid', 3, 'getuid', 5),
    }),
    c('uprobe-libc-strtol-args', 'uprobe:libc:strtol /pid == cpid/ { @[str(arg0), arg2] = count(); }', {
      cmd: W('getppid', 3, 'getuid', 5, 'getgid', 5),
    }),
    c('uretprobe-libc-strtol-retval', 'uretprobe:libc:strtol /pid == cpid/ { @[retval] = count(); }', {
      cmd: W('getppid', 3, 'getuid', 5, 'getgid', 5),
    }),
    c(
      'uretprobe-libc-syscall-signed',
      'uretprobe:libc:syscall /pid == cpid && comm == "bpfs_wl"/ { @[(int64)retval] = count(); }',
      { cmd: W('comm', 'bpfs_wl', 'openat', '/nonexistent/bpfs', 3, 'getuid', 2, 'getgid', 4) },
    ),
    c('uprobe-libc-alias-prctl', 'u:libc:prctl /pid == cpid/ { printf("%d %s\\n", arg0, str(arg1)); }', {
      cmd: W('comm', 'bpfs_prctl'),
    }),
    c('uprobe-libc-probe-name', 'uprobe:libc:strtol /pid == cpid/ { printf("%s\\n", probe); }', {
      cmd: W('getppid', 1),
    }),
    c(
      'uprobe-symlinked-path-probe-name',
      'uprobe:/lib/x86_64-linux-gnu/libc.so.6:strtol /pid == cpid/ { printf("%s\\n", probe); }',
      {
        cmd: W('getppid', 1),
      },
    ),

    // ---------------------------------------------------------------- -p PID
    c('pid-flag-tracepoint', 'tracepoint:syscalls:sys_enter_getppid /pid == $1/ { @[comm] = count(); }', {
      flags: ['-p', TARGET_PID],
      params: [TARGET_PID],
      target: ['comm', 'bpfs_p', 'getppid', 3],
    }),
    // bpftrace 0.17 attaches uprobes for every process even with -p (AttachedProbe without a pid), so the cases
    // that 0.17 also runs filter on `pid == $1`; v0.26 applies -p to all probes but BEGIN/END (CHANGELOG 0.24:
    // "-p CLI flag now applies to all probes"), which the noOracle cases below check without a filter.
    c('pid-flag-uprobe-workload', `${U('args6')} /pid == $1/ { printf("%d %d\\n", arg5, arg0); }`, {
      flags: ['-p', TARGET_PID],
      params: [TARGET_PID],
      target: ['args6', 1, 2, 3, 4, 5, 6],
    }),
    c('pid-flag-uretprobe-libc', 'uretprobe:libc:strtol /pid == $1/ { @[retval] = count(); }', {
      flags: ['-p', TARGET_PID],
      params: [TARGET_PID],
      target: ['getppid', 4, 'getuid', 4, 'getgid', 9],
    }),
    c('pid-flag-restricts-uprobes', 'uretprobe:libc:strtol { @[retval] = count(); }', {
      flags: ['-p', TARGET_PID],
      target: ['getppid', 4, 'getuid', 4, 'getgid', 9],
      noOracle: '0.17 attaches uprobes for every process even with -p, so its output depends on what else runs',
      expect: END + '@[9]: 1\n@[4]: 2\n',
      reason:
        'v0.26.1 applies -p to uprobes (the uprobe is attached for that pid only: CHANGELOG 0.24 "-p CLI flag now ' +
        'applies to all probes"); 0.17 attaches it for every process',
      attached: 1,
    }),
    c('pid-flag-restricts-tracepoints', 'tracepoint:sched:sched_process_exit { @exits = count(); }', {
      flags: ['-p', TARGET_PID],
      target: ['kill-self-child', 2],
      noOracle: '0.17 applies -p only to uprobes and usdt: its count includes every process that exits meanwhile',
      expect: END + '@exits: 1\n',
      reason:
        'v0.26.1 applies -p to tracepoints too (CHANGELOG 0.24 "-p CLI flag now applies to all probes (except ' +
        "BEGIN/END)\"), so only the target's own exit counts, not its two children's; 0.17 counts every exit",
      attached: 1,
    }),

    // ---------------------------------------------------------------- stacks
    c(
      'kstack-printf-two-frames',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { printf("%s\\n", kstack(2)); }',
      {
        cmd: W('getppid', 1),
      },
    ),
    c(
      'kstack-perf-printf',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { printf("%s\\n", kstack(perf, 2)); }',
      { cmd: W('getppid', 1) },
    ),
    c(
      'kstack-hrtimer-nanosleep',
      'tracepoint:timer:hrtimer_start /pid == cpid && args.mode == 1/ { printf("%s\\n", kstack(3)); }',
      { cmd: W('cpu', 0, 'nanosleep', 2, 100) },
    ),
    c('kstack-map-key-first-frame', 'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @[kstack(1)] = count(); }', {
      cmd: W('getppid', 3),
      expectFromOracle: stackFramesIndent8,
      reason: STACK_KEY_REASON,
    }),
    c('kstack-map-key-count', 'tracepoint:syscalls:sys_enter_getuid /pid == cpid/ { @[kstack] = count(); }', {
      cmd: W('getuid', 4),
      expectFromOracle: stackFramesIndent8,
      reason: STACK_KEY_REASON,
    }),
    c('ustack-printf-two-frames', `${U('num')} /pid == cpid/ { printf("%s\\n", ustack(2)); }`, {
      cmd: W('cpu', 0, 'getppid', 3, ...ALIVE),
    }),

    // ---------------------------------------------------------------- software, profile, interval
    c(
      'software-page-faults-shape',
      'software:page-faults:1 /pid == cpid && comm == "bpfs_wl"/ { if (@n < 200) { @n++; } }',
      { cmd: W('comm', 'bpfs_wl', 'alloc-mb', 1) },
    ),
    c(
      'software-faults-alias-shape',
      'software:faults:10 /pid == cpid && comm == "bpfs_wl"/ { if (@n < 20) { @n++; } }',
      { cmd: W('comm', 'bpfs_wl', 'alloc-mb', 1) },
    ),
    c('software-cs-alias-shape', 'software:cs:1 /pid == cpid && comm == "bpfs_wl"/ { if (@n < 3) { @n++; } }', {
      cmd: W('comm', 'bpfs_wl', 'nanosleep', 3, 100),
    }),
    c('software-cpu-clock-comm', 'software:cpu-clock:1000000 /pid == cpid && comm == "bpfs_spin"/ { @[comm] = 1; }', {
      cmd: W('comm', 'bpfs_spin', 'spin', 100),
    }),
    c('software-task-clock-comm', 'software:task-clock:1000000 /pid == cpid && comm == "bpfs_spin"/ { @[comm] = 1; }', {
      cmd: W('comm', 'bpfs_spin', 'spin', 100),
    }),
    c('profile-hz-comm-probe', 'profile:hz:997 /pid == cpid && comm == "bpfs_spin"/ { @[comm, probe] = 1; }', {
      cmd: W('comm', 'bpfs_spin', 'spin', 100),
    }),
    c('profile-alias-p-ms', 'p:ms:1 /pid == cpid && comm == "bpfs_spin"/ { @[probe] = 1; }', {
      cmd: W('comm', 'bpfs_spin', 'spin', 100),
    }),
    c('profile-us', 'profile:us:1000 /pid == cpid && comm == "bpfs_spin"/ { @[probe] = 1; }', {
      cmd: W('comm', 'bpfs_spin', 'spin', 100),
    }),
    c('interval-alias-i-hz', 'i:hz:20 { printf("%s\\n", probe); exit(); }'),
    c('interval-us-probe', 'interval:us:20000 { printf("%s\\n", probe); exit(); }'),
    c('interval-s-probe', 'interval:s:1 { printf("%s\\n", probe); exit(); }'),
    // the map is cleared at END: ticks that fire between exit() and the detach (more of them on a loaded machine,
    // in either tool) would otherwise change the printed count
    c(
      'interval-ms-three-ticks',
      'interval:ms:50 { @n++; if (@n == 3) { printf("%s %d\\n", probe, @n); exit(); } } END { clear(@n); }',
      {
        expect: `interval:ms:50 3\n${END}`,
        reason:
          'a cleared map prints nothing at exit in current bpftrace; 0.17 prints an empty line for it (map-clear)',
      },
    ),

    // ---------------------------------------------------------------- kernel structs via BTF
    c(
      'btf-curtask-comm-pid-tgid',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { printf("%s %d %d %d\\n", curtask->comm, curtask->pid == tid, curtask->tgid == cpid, curtask->real_parent->tgid > 0); }',
      { cmd: W('comm', 'bpfs_ct', 'getppid', 1) },
    ),
    c(
      'btf-curtask-mm-flags',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { printf("%d %d\\n", curtask->mm != 0, curtask->flags & 0x200000); }',
      { cmd: W('getppid', 1) },
    ),
    c(
      'btf-curtask-group-leader-cred',
      'tracepoint:syscalls:sys_enter_getppid /curtask->tgid == cpid/ { @[curtask->group_leader->comm, curtask->cred->uid.val] = count(); }',
      { cmd: W('comm', 'bpfs_gl', 'getppid', 3) },
    ),
    c(
      'btf-cast-task-struct-variable',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { $t = (struct task_struct *)curtask; printf("%d %d\\n", $t->pid == tid, $t->nr_cpus_allowed); }',
      { cmd: W('cpu', 0, 'getppid', 1) },
    ),
    c(
      'btf-curtask-parent-chain',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { printf("%d %d\\n", curtask->parent->tgid == curtask->real_parent->tgid, curtask->real_parent->real_parent->pid > 0); }',
      { cmd: W('getppid', 1) },
    ),
    c(
      'btf-integer-array-field',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { printf("%lu %d\\n", curtask->cpus_mask.bits[0], curtask->se.load.weight > 0); }',
      {
        cmd: W('cpu', 0, 'getppid', 1),
      },
    ),
    c(
      'rawtracepoint-sched-switch-prev',
      'rawtracepoint:sched_switch /pid == cpid && comm == "bpfs_rt" && args.prev->tgid == cpid && !args.preempt && (args.prev_state & 1)/ { @[args.prev->comm] = count(); }',
      {
        cmd: W('comm', 'bpfs_rt', 'nanosleep', 3, 100),
        oracleProg:
          'tracepoint:sched:sched_switch /pid == cpid && comm == "bpfs_rt" && args.prev_pid == cpid && args.prev_state == 1/ { @[args.prev_comm] = count(); }',
      },
    ),
    c(
      'rawtracepoint-sched-process-exit',
      'rawtracepoint:sched_process_exit /args.p->tgid == cpid/ { printf("%s %d\\n", args.p->comm, args.p->pid == cpid); }',
      {
        cmd: W('comm', 'bpfs_rtexit', 'getppid', 1),
        oracleProg:
          'tracepoint:sched:sched_process_exit /args.pid == cpid/ { printf("%s %d\\n", args.comm, args.pid == cpid); }',
      },
    ),
    c(
      'rawtracepoint-sys-enter-id',
      'rawtracepoint:sys_enter /pid == cpid && comm == "bpfs_wl"/ { @[args.id] = count(); }',
      {
        cmd: W('comm', 'bpfs_wl', 'getppid', 3, 'getuid', 5),
        oracleProg: 'tracepoint:raw_syscalls:sys_enter /pid == cpid && comm == "bpfs_wl"/ { @[args.id] = count(); }',
      },
    ),
    c(
      'rawtracepoint-alias-argn',
      'rt:sys_enter /pid == cpid && comm == "bpfs_wl" && arg1 == 110/ { @getppid = count(); }',
      {
        cmd: W('comm', 'bpfs_wl', 'getppid', 6, 'getuid', 2),
        oracleProg:
          'tracepoint:raw_syscalls:sys_enter /pid == cpid && comm == "bpfs_wl" && args.id == 110/ { @getppid = count(); }',
      },
    ),
    c(
      'btf-sizeof',
      'BEGIN { printf("%d %d %d\\n", sizeof(struct task_struct) > 1000, sizeof(uint32), sizeof(int8)); exit(); }',
    ),

    // ---------------------------------------------------------------- tuples
    c('tuple-map-values', 'BEGIN { @t = (1, "ab", -3); @u[1] = (2, "x"); exit(); }'),
    c('tuple-nested-access', 'BEGIN { $t = (1, "ab", (3, 4)); printf("%d %s %d\\n", $t.0, $t.1, $t.2.1); exit(); }'),
    c('tuple-print-values', 'BEGIN { print((1, "a")); print(5); print("s"); exit(); }'),
    c(
      'tuple-from-tracepoint',
      'tracepoint:syscalls:sys_exit_read /pid == cpid && comm == "bpfs_wl"/ { @last = (comm, args.ret); }',
      { cmd: W('comm', 'bpfs_wl', 'read', 2, 33) },
    ),
    c(
      'tuple-variable-fields',
      'tracepoint:syscalls:sys_enter_read /pid == cpid && comm == "bpfs_wl"/ { $t = (comm, args.count, "x"); printf("%s %d %s\\n", $t.0, $t.1, $t.2); }',
      { cmd: W('comm', 'bpfs_wl', 'cpu', 0, 'read', 2, 12) },
    ),

    // ---------------------------------------------------------------- loops
    c('while-sum', 'BEGIN { $i = 0; $s = 0; while ($i < 10) { $s += $i; $i++; } printf("%d %d\\n", $i, $s); exit(); }'),
    c(
      'while-break-continue',
      'BEGIN { $i = 0; while ($i < 5) { $i++; if ($i == 2) { continue; } if ($i == 4) { break; } printf("%d\\n", $i); } exit(); }',
    ),
    c('unroll-power', 'BEGIN { $i = 1; unroll(5) { $i = $i * 2; } printf("%d\\n", $i); exit(); }'),
    c('unroll-map-writes', 'BEGIN { $i = 0; unroll(3) { @u[$i] = $i * 10; $i++; } exit(); }'),
    c(
      'while-nested',
      'BEGIN { $i = 0; while ($i < 3) { $j = 0; while ($j < 2) { @n[$i, $j] = $i * 10 + $j; $j++; } $i++; } exit(); }',
    ),
    c(
      'while-in-tracepoint',
      'tracepoint:syscalls:sys_exit_read /pid == cpid && comm == "bpfs_wl"/ { $i = 0; $b = args.ret; while ($b > 1) { $b = $b / 2; $i++; } @log2[$i] = count(); }',
      {
        cmd: W('comm', 'bpfs_wl', 'read', 2, 16, 'read', 3, 1024),
      },
    ),

    // ---------------------------------------------------------------- functions
    c('fn-ntop-ipv4', 'BEGIN { printf("%s %s %s\\n", ntop(0xffffffff), ntop(2, 0x0a00020f), ntop(0)); exit(); }'),
    c('fn-pton-roundtrip', 'BEGIN { printf("%s|%s\\n", ntop(pton("fe80::1")), ntop(pton("10.1.2.3"))); exit(); }', {}),
    c(
      'fn-bswap-widths',
      'BEGIN { printf("%x %x %lx\\n", bswap((uint16)0x1234), bswap((uint32)0x12345678), bswap((uint64)0x0102030405060708)); exit(); }',
    ),
    c(
      'fn-strncmp-literals',
      'BEGIN { printf("%d %d %d\\n", strncmp("hello", "help", 3), strncmp("hello", "help", 4) != 0, strncmp("a", "a", 10)); exit(); }',
    ),
    c(
      'fn-strncmp-comm-predicate',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid && strncmp(comm, "bpfs_w", 6) == 0/ { @[comm] = count(); }',
      { cmd: W('getppid', 2, 'comm', 'bpfs_wl', 'getppid', 3) },
    ),
    c(
      'fn-strftime-year',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { printf("%s\\n", strftime("%Y", nsecs)); }',
      { cmd: W('getppid', 1) },
    ),
    c('fn-time-year', 'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { time("%Y\\n"); }', {
      cmd: W('cpu', 0, 'getppid', 2),
    }),
    c(
      'fn-signal-sigterm',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { signal("SIGTERM"); } tracepoint:signal:signal_deliver /pid == cpid/ { printf("deliver %d\\n", args.sig); }',
      { flags: ['--unsafe'], cmd: W('getppid', 1, 'sleep-ms', 3000) },
    ),
    c(
      'fn-signal-number',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { signal(9); } tracepoint:sched:sched_process_exit /pid == cpid/ { printf("exit %s\\n", comm); }',
      { flags: ['--unsafe'], cmd: W('comm', 'bpfs_sig', 'getppid', 1, 'sleep-ms', 3000) },
    ),
    c(
      'fn-signal-in-uprobe',
      `${U('num')} /pid == cpid/ { signal("SIGUSR1"); } tracepoint:signal:signal_generate /pid == cpid && args.sig == 10/ { printf("gen %d %d\\n", args.sig, args.pid == cpid); }`,
      { flags: ['--unsafe'], cmd: W('getppid', 1, 'sleep-ms', 3000) },
    ),
    c('fn-cat-proc-file', 'BEGIN { cat("/proc/sys/kernel/ostype"); exit(); }'),
    c('fn-system-unsafe', 'BEGIN { system("echo hi %d", 5); exit(); }', { flags: ['--unsafe'] }),
    c('fn-buf-printf-r', 'BEGIN { printf("%r\\n", buf("abc", 3)); exit(); }', {}),
    c('fn-print-top', 'BEGIN { @x[1] = 10; @x[2] = 20; @x[3] = 30; @x[4] = 40; print(@x, 2); exit(); }'),
    c('fn-print-div', 'BEGIN { @x[1] = 1000; @x[2] = 2500; print(@x, 0, 100); exit(); }'),
    c('fn-print-scalar-count-div', 'BEGIN { @c = count(); @c = count(); @c = count(); print(@c, 0, 2); exit(); }'),
    c('fn-comm-in-variable', 'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { $s = comm; @[$s] = count(); }', {
      cmd: W('comm', 'bpfs_var', 'getppid', 2),
    }),

    // ---------------------------------------------------------------- builtins
    c(
      'builtin-username-uid-gid',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @[username, uid, gid] = count(); }',
      { cmd: W('getppid', 2) },
    ),
    c('builtin-cgroup-key', 'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @[cgroup] = count(); }', {
      cmd: W('getppid', 2),
    }),
    c('builtin-cpu-pinned', 'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @[cpu] = count(); }', {
      cmd: W('cpu', 0, 'getppid', 2),
    }),
    c('builtin-numaid', 'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @[numaid] = count(); }', {
      cmd: W('getppid', 2),
    }),
    c('builtin-rand-shape', 'BEGIN { $r = rand; printf("%d\\n", $r <= 0xffffffff); exit(); }'),
    c('builtin-cpid-in-begin', 'BEGIN { printf("%d\\n", cpid > 0); }', { cmd: W('getppid', 1) }),
    c('builtin-probe-begin-end', 'BEGIN { printf("%s\\n", probe); exit(); } END { printf("%s\\n", probe); }', {
      expect: 'begin\nend\n' + END,
      reason:
        'v0.26.1 spells the special probes `begin`/`end` (src/probe_types.cpp expand_probe_name lower-cases the ' +
        'provider; tests/runtime/builtin "begin probe" expects `begin-end`), so `probe` prints `begin`/`end`; 0.17 ' +
        'prints `BEGIN`/`END`',
    }),

    // ---------------------------------------------------------------- maps, aggregations, histograms
    c('map-string-values', 'BEGIN { @s = "hello"; @k[1] = "one"; @k[2] = "two"; exit(); }'),
    c('map-value-expressions', 'BEGIN { @a = 5; @b = @a + 1; @c[@a] = @b * 2; exit(); }'),
    c(
      'map-keyed-min-max',
      'BEGIN { @mi[1] = min(5); @mi[1] = min(3); @ma[1] = max(5); @ma[1] = max(9); @ma[2] = max(11); exit(); }',
    ),
    c('map-uprobe-str-keys', `${U('num')} /pid == cpid/ { @[str(arg0)] = count(); }`, {
      cmd: W('getppid', 5, 'getuid', 5, 'getgid', 5, 'getpid', 6, 'gettid', 6),
    }),
    c(
      'lhist-step-one-single-buckets',
      'BEGIN { @l = lhist(0, 0, 4, 1); @l = lhist(2, 0, 4, 1); @l = lhist(2, 0, 4, 1); exit(); }',
      {
        expect:
          END +
          '@l:\n' +
          '[0]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n' +
          '[1]                    0 |                                                    |\n' +
          '[2]                    2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n' +
          '\n',
        reason:
          'v0.26.1 labels a bucket that holds one value `[N]` (src/output/text.cpp TextEmitter<Value::Histogram>: ' +
          'single_value when the bounds are adjacent), so lhist with step 1 prints `[0]`, `[1]`; 0.17 prints ' +
          '`[0, 1)`; and the `@l:` header has no trailing space',
      },
    ),
    c('hist-above-2g', 'BEGIN { @h = hist(5000000000); @h = hist(3); exit(); }', {
      expect: END + '@h:\n' + hist2to8G(),
      reason:
        'hist() of values >= 2^31: v0.26.1 puts 5000000000 in [4G, 8G) (log2 buckets up to 2^64); 0.17 puts it in ' +
        '[2G, 4G) (v0.26.1 tests/runtime/call "hist_10g": 10G lands in [8G, 16G)); and the `@h:` header has no ' +
        'trailing space',
    }),

    // ---------------------------------------------------------------- integers
    c(
      'cast-integer-widths',
      'BEGIN { $a = 300; $b = 200; $c = -1; $d = 4294967295; printf("%d %d %d %d\\n", (uint8)$a, (int8)$b, (uint16)$c, (int32)$d); exit(); }',
    ),
    c('u64-wraparound', 'BEGIN { $x = 0xffffffffffffffff; printf("%lu %ld %lu\\n", $x, $x, $x + 2); exit(); }'),
    c(
      'printf-seven-args',
      'BEGIN { printf("%d-%d-%d-%d-%d-%d-%s\\n", 1, 22, 333, 4444, 55555, 666666, "seven"); exit(); }',
    ),

    // ---------------------------------------------------------------- -f json (each differs from 0.17 at the end)
    c('json-tuple-value', 'BEGIN { @t = (1, "ab", -3); exit(); }', {
      flags: ['-f', 'json', '-q'],
      expect: '{"type": "map", "data": {"@t": [1,"ab",-3]}}\n',
      reason: JSON_END_REASON + '; tuples are arrays without spaces as in 0.17 (JsonEmitter<Primitive::Tuple>)',
    }),
    c('json-string-key-spaces', 'BEGIN { @s = "hello"; @k["a b"] = "x"; exit(); }', {
      flags: ['-f', 'json', '-q'],
      expect: '{"type": "map", "data": {"@k": {"ab": "x"}}}\n{"type": "map", "data": {"@s": "hello"}}\n',
      reason:
        'v0.26.1 removes the spaces from every JSON map key (src/output/json.cpp JsonEmitter<vector<pair>>: ' +
        'std::erase(s, \' \')), so the key "a b" is "ab" (0.17: "a b"); ' +
        JSON_END_REASON,
    }),
    c('json-print-values', 'BEGIN { print((1, "a")); print(5); print("s"); exit(); }', {
      flags: ['-f', 'json', '-q'],
      expect: '{"type": "value", "data": [1,"a"]}\n{"type": "value", "data": 5}\n{"type": "value", "data": "s"}\n',
      reason: JSON_END_REASON,
    }),
    c('json-print-top-div', 'BEGIN { @x[1] = 10; @x[2] = 20; @x[3] = 30; print(@x, 2); print(@x, 0, 10); exit(); }', {
      flags: ['-f', 'json', '-q'],
      expect:
        '{"type": "map", "data": {"@x": {"2": 20, "3": 30}}}\n' +
        '{"type": "map", "data": {"@x": {"1": 1, "2": 2, "3": 3}}}\n' +
        '{"type": "map", "data": {"@x": {"1": 10, "2": 20, "3": 30}}}\n',
      reason: JSON_END_REASON + ' (0.17 prints them between the print() records and the exit-time map)',
    }),
    c('json-hist-keyed', 'BEGIN { @h[1] = hist(5); @h[2] = hist(100); exit(); }', {
      flags: ['-f', 'json', '-q'],
      expect:
        '{"type": "hist", "data": {"@h": {"1": [{"min": 4, "max": 7, "count": 1}], "2": [{"min": 64, "max": 127, "count": 1}]}}}\n',
      reason: JSON_END_REASON,
    }),
    c('json-lhist-under-over', 'BEGIN { @l = lhist(-1, 0, 30, 10); @l = lhist(500, 0, 30, 10); exit(); }', {
      flags: ['-f', 'json', '-q'],
      expect:
        '{"type": "hist", "data": {"@l": [{"max": -1, "count": 1},{"min": 0, "max": 9, "count": 0},' +
        '{"min": 10, "max": 19, "count": 0},{"min": 20, "max": 29, "count": 0},{"min": 30, "count": 1}]}}\n',
      reason: 'JSON histogram buckets are joined with "," in v0.26.1 (0.17: ", "); ' + JSON_END_REASON,
    }),
    c('json-min-max-count', 'BEGIN { @mi = min(-5); @ma = max(7); @c["a"] = count(); exit(); }', {
      flags: ['-f', 'json', '-q'],
      expect:
        '{"type": "map", "data": {"@c": {"a": 1}}}\n{"type": "map", "data": {"@ma": 7}}\n{"type": "map", "data": {"@mi": -5}}\n',
      reason: JSON_END_REASON,
    }),
    c('json-printf-escapes', 'BEGIN { printf("tab\\there \\"q\\" back\\\\slash\\n"); exit(); }', {
      flags: ['-f', 'json', '-q'],
      expect: '{"type": "printf", "data": "tab\\there \\"q\\" back\\\\slash\\n"}\n',
      reason: JSON_END_REASON,
    }),
    c('json-join', 'tracepoint:syscalls:sys_enter_execve /pid == cpid/ { join(args.argv); }', {
      flags: ['-f', 'json', '-q'],
      cmd: W('getppid', 1),
      expectFromOracle: (o) => o.replace(/\n\n$/, ''),
      reason: JSON_END_REASON + '; join records are the same (JsonOutput::join)',
    }),
    c('json-uprobe-map', `${U('num')} /pid == cpid/ { @[str(arg0)] = count(); }`, {
      flags: ['-f', 'json', '-q'],
      cmd: W('getppid', 5, 'getuid', 5, 'getgid', 4, 'getpid', 4, 'gettid', 4),
      expect: '{"type": "map", "data": {"@": {"5": 2, "4": 3}}}\n',
      reason: JSON_END_REASON,
    }),

    // ---------------------------------------------------------------- command line
    c('quiet-flag-printf', 'BEGIN { printf("quiet\\n"); exit(); }', { flags: ['-q'] }),
    c(
      'comments-in-program',
      '// line comment\nBEGIN /* block */ { printf("%d\\n", 1 /* inline */ + 2); // trailing\n exit(); }',
    ),
    {
      name: 'script-file-two-probes',
      args: ['-c', W('comm', uniq('t'), 'getppid', 3, 'getuid', 6), script2, uniq('t')],
    },
  ];
}
