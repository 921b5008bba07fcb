/**
 * The bpfscope command as a user meets it: exit codes, error output (file:line:col + marker, never a stack trace),
 * -o/-q/-p/-l/--version, and the sentence for missing privileges.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ATTACHED_PATTERN, bpfscopeEntry, runTool, startTool } from '../helpers/cli.js';
import { runWorkload, workloadCommand, workloadPath } from '../helpers/workload.js';

const tmp = mkdtempSync(join(tmpdir(), 'bpfscope-cli-'));

describe('bpfscope command line', () => {
  it('prints a syntax error with position and marker, exit 1', async () => {
    const r = await runTool('bpfscope', ['-e', 'BEGIN { @x = ; }']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, 'stdin:1:14-15: ERROR: syntax: expected expression\nBEGIN { @x = ; }\n             ~\n');
  });

  it('names the script file in errors', async () => {
    const file = join(tmp, 'bad.bt');
    writeFileSync(file, '// comment\nBEGIN {\n  @x = 1;\n  @x = "a";\n}\n');
    const r = await runTool('bpfscope', [file]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, new RegExp(`^${file.replace(/[.]/g, '\\.')}:4:3-5: ERROR: Type mismatch for @x`));
    assert.match(r.stderr, /\n {2}@x = "a";\n {2}~~\n$/);
  });

  it('suggests the closest tracepoint for a typo', async () => {
    const r = await runTool('bpfscope', ['-e', 'tracepoint:syscalls:sys_enter_opnat { }']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /ERROR: No matches for tracepoint syscalls:sys_enter_opnat\./);
    assert.match(r.stderr, /HINT: Did you mean tracepoint:syscalls:sys_enter_openat\?/);
  });

  it('8,000 maps in one probe: the 64-maps limit before anything is loaded, no internal error (issue 19)', async () => {
    const file = join(tmp, 'maps8000.bt');
    const stmts: string[] = [];
    for (let i = 0; i < 8000; i++) stmts.push(`@m${i} = ${i};`);
    writeFileSync(file, `BEGIN { ${stmts.join(' ')} exit(); }\n`);
    const r = await runTool('bpfscope', ['--dry-run', file], { timeoutMs: 120_000 });
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.doesNotMatch(r.stderr, /internal error|verifier/);
    assert.match(
      r.stderr,
      /^\S+maps8000\.bt:1:660-669: ERROR: The probe begin uses 8004 maps, more than the 64 the kernel allows in one BPF program/,
    );
    assert.equal(r.stderr.split('\n').length, 5, r.stderr.slice(0, 2000));
  });

  it('--help lists the subcommands: flame graph commands, tools, and every tool name (issue 19)', async () => {
    const r = await runTool('bpfscope', ['--help']);
    assert.equal(r.code, 0);
    const sub = r.stdout.slice(r.stdout.indexOf('\nSUBCOMMANDS:\n'));
    for (const name of [
      'stackcollapse-perf',
      'stackcollapse-bpftrace',
      'flamegraph',
      'heatmap',
      'difffolded',
      'ps',
      'exporter',
      'agent',
      'ui',
      'tools',
    ])
      assert.match(sub, new RegExp(`^    ${name} +\\S`, 'm'), name);
    assert.match(sub, / argdist bashreadline biolatency /);
    assert.match(sub, / tcpdrop tcplife tcpretrans threadsnoop trace vfsstat wakeuptime\n$/);
  });

  it('a program starting with - is taken as the program, as getopt does (no "--e" advice)', async () => {
    const r = await runTool('bpfscope', ['-e', '-x']);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, "stdin:1:3-3: ERROR: syntax: expected '{'\n-x\n  \n");
  });

  it('reports a missing script file in one line', async () => {
    const r = await runTool('bpfscope', [join(tmp, 'nope.bt')]);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `ERROR: failed to open file '${join(tmp, 'nope.bt')}': No such file or directory\n`);
  });

  it('rejects an unknown flag with the usage text (tests/runtime/basic "it shows usage with bad flag")', async () => {
    const r = await runTool('bpfscope', ['--frobnicate']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^ERROR: Unknown option '--frobnicate'\n\nUSAGE:\n/);
    const none = await runTool('bpfscope', []);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /^USAGE:\n/);
    const i = await runTool('bpfscope', ['-idonotexist']);
    assert.equal(i.code, 1);
    assert.match(i.stderr, /^ERROR: Unknown option '-i'\n\nUSAGE:\n/);
  });

  it('named program options before `--` are a usage error; after it they reach getopt()', async () => {
    const before = await runTool('bpfscope', ['-e', 'BEGIN { }', '--aa=20']);
    assert.equal(before.code, 1);
    assert.match(before.stderr, /^ERROR: Unknown option '--aa'\n\nUSAGE:/);
    const after = await runTool('bpfscope', ['-e', 'BEGIN { print(getopt("aa", 1)); }', '--', '--aa=20']);
    assert.equal(after.code, 0, after.stderr);
    assert.equal(after.stdout, '20\n\n\n');
  });

  it('`-- --help` lists the program options with their descriptions', async () => {
    const prog = 'BEGIN { print((getopt("aa", 10, "Description of aa"), getopt("bb", 1), getopt("cc"))); }';
    const r = await runTool('bpfscope', ['-e', prog, '--', '--help']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, 'HINT: expected program options:\n--aa: Description of aa\n--bb\n--cc\n');
    const bad = await runTool('bpfscope', ['-e', prog, '--', '--zz']);
    assert.equal(bad.code, 1);
    assert.equal(
      bad.stderr,
      'ERROR: unexpected program command line options: --zz\nHINT: expected program options: --aa, --bb, --cc\n',
    );
  });

  it('-p values are parsed as bpftrace parses them, with its messages', async () => {
    for (const [pid, why] of [
      ['a1111', 'invalid integer: a1111'],
      ['111a1', 'invalid trailing bytes: 111a1'],
      ['not_a_pid', 'invalid integer: not_a_pid'],
    ]) {
      const r = await runTool('bpfscope', ['-p', pid!, '-e', 'BEGIN { print(1); }']);
      assert.equal(r.code, 1);
      assert.equal(r.stderr, `ERROR: Failed to parse pid: ${why}\n`);
    }
  });

  it('--output FILE (long form of -o) gets the program output', async () => {
    const out = join(tmp, 'long-out.txt');
    const r = await runTool('bpfscope', [
      '-e',
      'interval:ms:10 { printf("%s %d\\n", "SUCCESS", 1); exit() }',
      '--output',
      out,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '');
    assert.equal(readFileSync(out, 'utf8'), 'SUCCESS 1\n\n\n');
  });

  it('--dry-run loads and attaches every probe, then ends without running anything', async () => {
    const prog = 'BEGIN { printf("hello\\n"); @ = 0; } tracepoint:sched:sched_switch { printf("switch\\n"); }';
    const r = await runTool('bpfscope', ['--dry-run', '-v', '-e', prog], { timeoutMs: 10_000 });
    assert.equal(r.code, 0, r.stderr);
    // no BEGIN output, no events, no map printing, no attach notice
    assert.equal(r.stdout, '');
    assert.doesNotMatch(r.stderr, /Attached/);
    // -v shows that both programs were loaded
    assert.match(r.stderr, /^begin: \d+ instructions/m);
    assert.match(r.stderr, /^tracepoint:sched:sched_switch: \d+ instructions/m);
    // a probe that cannot be attached fails the dry run (an offset far past the function,
    // tests/runtime/probe uprobe_offset_fail_size: refused before loading, as bpftrace does)
    const bad = await runTool('bpfscope', ['--dry-run', '-e', 'uprobe:/bin/bash:echo_builtin+1000000 { }']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /ERROR: Offset outside the function bounds/);
  });

  it('--probe-filter attaches only the probes whose name matches; BEGIN and END still run', async () => {
    const r = await runTool(
      'bpfscope',
      [
        '--probe-filter',
        'interval:ms:(200|300)',
        '-e',
        'BEGIN { printf("begin\\n"); } interval:ms:100 { printf("bad\\n"); exit(); } interval:ms:200 { printf("a\\n"); } interval:ms:300 { printf("b\\n"); exit(); } END { printf("end\\n"); }',
      ],
      { timeoutMs: 10_000 },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^begin\n(a\n)+b\nend\n/);
    assert.doesNotMatch(r.stdout, /bad/);
    assert.match(r.stderr, /Attached 4 probes/);
    const none = await runTool('bpfscope', ['--probe-filter', 'nothing', '-e', 'interval:ms:100 { exit(); }']);
    assert.equal(none.code, 1);
    assert.equal(none.stdout, 'No probes to attach\n');
    const invalid = await runTool('bpfscope', ['--probe-filter', '[bad', '-e', 'interval:ms:100 { exit(); }']);
    assert.equal(invalid.code, 1);
    assert.match(invalid.stderr, /^ERROR: Invalid --probe-filter regex '\[bad'/);
  });

  it('-l FILE and -l -e PROGRAM list the probes of the program', async () => {
    const file = join(tmp, 'probes.bt');
    writeFileSync(file, 'interval:ms:1000 {}\nBEGIN {}\ninterval:s:1 {}\ntracepoint:sched:sched_switch {}\n');
    const r = await runTool('bpfscope', ['-l', file]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'interval:ms:\ninterval:s:\ntracepoint:sched:sched_switch\n');
    const e = await runTool('bpfscope', ['-l', '-e', 'tracepoint:sched:sched_switch, software:cpu:1000 { }']);
    assert.equal(e.stdout, 'tracepoint:sched:sched_switch\nsoftware:cpu:\n');
    const v = await runTool('bpfscope', ['-lv', '-e', 'tracepoint:sched:sched_switch, interval:s:1 { }']);
    assert.match(v.stdout, /^tracepoint:sched:sched_switch\n {4}char prev_comm\[16\]\n[\s\S]*\ninterval:s:\n$/);
    const rt = await runTool('bpfscope', ['-l', '-e', 'rawtracepoint:sched_switch { }']);
    assert.equal(rt.stdout, 'rawtracepoint:vmlinux:sched_switch\n');
    const w = await runTool('bpfscope', ['-l', 'non_existent_file.bt']);
    assert.equal(w.code, 0);
    assert.match(
      w.stderr,
      /^WARNING: It appears that 'non_existent_file\.bt' is a filename but the file does not exist\./,
    );
  });

  it('-l lists kernel struct definitions from BTF (-lv with the definition)', async () => {
    const names = await runTool('bpfscope', ['-l', 'struct task_struct']);
    assert.equal(names.stdout, 'struct task_struct\n');
    const r = await runTool('bpfscope', ['-lv', 'struct task_struct,struct file,enum pid_type']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^vmlinux: struct task_struct \{\n\t/);
    assert.match(r.stdout, /\n\tpid_t pid;\n/);
    assert.match(r.stdout, /\n\tvoid \*stack;\n/);
    assert.match(r.stdout, /\nvmlinux: struct file \{\n/);
    assert.match(r.stdout, /\nvmlinux: enum pid_type \{\n\tPIDTYPE_PID = 0,\n/);
    assert.match(r.stdout, /\n\};\n$/);
  });

  it('-l with a full listing writes everything, even into a pipe', async () => {
    const r = await runTool('bpfscope', ['-l']);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.ok(lines.some((l) => l.startsWith('software:cpu:')));
    assert.ok(lines.some((l) => l === 'tracepoint:sched:sched_switch'));
    assert.ok(lines.some((l) => l.startsWith('rawtracepoint:')));
  });

  it('-k warns at run time where a map read finds no element (tests/runtime/other runtime_error_check_lookup)', async () => {
    const prog = 'interval:ms:100 { @[1] = 1; printf("%d\\n", @[2]); exit(); }';
    const r = await runTool('bpfscope', ['-k', '-e', prog]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '0\n\n\n@[1]: 1\n');
    assert.match(
      r.stderr,
      new RegExp(
        [
          "stdin:1:44-48: WARNING: Can't lookup map element because it does not exist\\.",
          'Additional Info - helper: map_lookup_elem, retcode: 0',
          'interval:ms:100 \\{ @\\[1\\] = 1; .*',
          ' {43}~~~~',
        ].join('\n'),
      ),
    );
    // without -k: no warning
    const quiet = await runTool('bpfscope', ['-e', prog]);
    assert.doesNotMatch(quiet.stderr, /WARNING/);
    const conflict = await runTool('bpfscope', ['-k', '--no-warnings', '-e', prog]);
    assert.equal(conflict.code, 1);
    assert.match(conflict.stderr, /^ERROR: -k, --warnings conflicts with --no-warnings\n/);
  });

  it('--mode bench times every bench: probe (text table, JSON records); BEGIN and END run, maps are not printed', async () => {
    const prog =
      'BEGIN { printf("begin\\n"); } bench:a { @a = count(); } bench:longer_name { @b++; } END { printf("end %d\\n", @a > 0); }';
    const r = await runTool('bpfscope', ['--mode', 'bench', '-e', prog], { timeoutMs: 20_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      new RegExp(
        [
          '^begin',
          `Benchmark {32}Time\\(ns\\) {7}Iterations`,
          '-{66}',
          'a {40}\\d+ +\\d+',
          'longer_name {30}\\d+ +\\d+',
          'end 1',
          '',
          '',
          '$',
        ].join('\n'),
      ),
    );
    assert.doesNotMatch(r.stderr, /Attached/);
    const json = await runTool('bpfscope', ['-q', '-f', 'json', '--bench', '-e', 'bench:x { @ = count(); }'], {
      timeoutMs: 20_000,
    });
    assert.equal(json.code, 0, json.stderr);
    const m = /^\{"type": "benchmark_result", "data": \{"x": \{"average": (\d+), "iters": (\d+)\}\}\}\n$/.exec(
      json.stdout,
    );
    assert.ok(m, json.stdout);
    // the repeat count grows until the runs take at least 1 ms in all
    assert.ok(Number(m[1]) * Number(m[2]) >= 1_000_000, json.stdout);
    // bench probes alone, outside bench mode
    const plain = await runTool('bpfscope', ['-e', 'bench:x { @ = count(); }']);
    assert.equal(plain.code, 1);
    assert.equal(plain.stderr, 'ERROR: No probes attached; use --bench to run benchmark probes.\n');
    const other = await runTool('bpfscope', ['--mode', 'format', '-e', 'BEGIN { }']);
    assert.equal(other.code, 1);
    assert.equal(other.stderr, 'ERROR: --mode format is not supported by bpfscope yet\n');
  });

  it('--mode codegen compiles to instructions and runs nothing: no BEGIN output, sizes with -v, errors positioned', async () => {
    const ok = await runTool('bpfscope', [
      '--mode',
      'codegen',
      '-v',
      '-e',
      'BEGIN { printf("ran\\n"); } tracepoint:syscalls:sys_enter_openat { @[comm] = count(); }',
    ]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.stdout, '');
    assert.match(ok.stderr, /^begin: \d+ instructions\ntracepoint:syscalls:sys_enter_openat: \d+ instructions\n$/);
    const bad = await runTool('bpfscope', ['--mode', 'codegen', '-e', 'BEGIN { @x = 1 << 64; }']);
    assert.equal(bad.code, 1);
    assert.equal(
      bad.stderr,
      'stdin:1:14-21: ERROR: unable to fold literals due to overflow or underflow\n' +
        'BEGIN { @x = 1 << 64; }\n' +
        '             ~~~~~~~\n',
    );
  });

  it('--no-feature uprobe_multi attaches a uprobe wildcard function by function; bad values are usage errors', async () => {
    const prog = 'uprobe:/bin/bash:*read* { } interval:ms:200 { exit(); }';
    const count = (stderr: string): number => Number(/Attached (\d+) probe/.exec(stderr)?.[1]);
    const multi = await runTool('bpfscope', ['-e', prog], { timeoutMs: 10_000 });
    const single = await runTool('bpfscope', ['--no-feature', 'uprobe_multi,kprobe_session', '-e', prog], {
      timeoutMs: 10_000,
    });
    assert.equal(single.code, 0, single.stderr);
    // one program and perf event per function: more probes than with one uprobe_multi link (when the kernel has it)
    assert.ok(count(single.stderr) > 3, single.stderr);
    assert.ok(count(single.stderr) >= count(multi.stderr), `${single.stderr} vs ${multi.stderr}`);
    const info = await runTool('bpfscope', ['--no-feature', 'uprobe_multi', '--info']);
    assert.match(info.stdout, /uprobe_multi: no/);
    const bad = await runTool('bpfscope', ['--no-feature', 'frob', '-e', 'BEGIN { }']);
    assert.equal(bad.code, 1);
    assert.match(
      bad.stderr,
      /^ERROR: --no-feature can only have values 'kprobe_multi,kprobe_session,uprobe_multi'\.\n/,
    );
  });

  it('-B none|line|full is accepted (output unchanged); other modes are usage errors', async () => {
    for (const mode of ['none', 'line', 'full']) {
      const r = await runTool('bpfscope', ['-B', mode, '-e', 'BEGIN { printf("x %d\\n", 1); }']);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'x 1\n\n\n');
    }
    const bad = await runTool('bpfscope', ['-B', 'sometimes', '-e', 'BEGIN { }']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^ERROR: -B must be either 'line', 'full', or 'none'\.\n/);
  });

  it('--include FILE, -I DIR and #define: integer constants usable in the program (tests/runtime/call strerror)', async () => {
    const r = await runTool('bpfscope', ['--include', 'errno.h', '-e', 'BEGIN { print(strerror(EPERM)); }']);
    if (r.code !== 0 && /errno\.h' file not found/.test(r.stderr)) return; // no libc headers on this machine
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'Operation not permitted\n\n\n');
    const hdir = mkdtempSync(join(tmpdir(), 'bpfscope-inc-'));
    writeFileSync(join(hdir, 'limits_test.h'), '#define MY_LIMIT (1 << 10)\n');
    const file = join(tmp, 'defines.bt');
    writeFileSync(file, '#define _UNDERSCORE 314\nBEGIN { printf("%d %d\\n", _UNDERSCORE, MY_LIMIT); }\n');
    const d = await runTool('bpfscope', ['-I', hdir, '--include', 'limits_test.h', file]);
    assert.equal(d.code, 0, d.stderr);
    assert.equal(d.stdout, '314 1024\n\n\n');
    const missing = await runTool('bpfscope', ['--include', 'no/such/header.h', '-e', 'BEGIN { }']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^ERROR: 'no\/such\/header\.h' file not found/);
  });

  it("-d accepts bpftrace's stage names where bpfscope has the stage", async () => {
    const r = await runTool('bpfscope', ['-d', 'dis', '-e', 'BEGIN { exit(); }']);
    assert.equal(r.code, 0, r.stderr);
    const ours = await runTool('bpfscope', ['-d', 'insns', '-e', 'BEGIN { exit(); }']);
    const fdless = (s: string): string => s.replace(/fd:\d+/g, 'fd');
    assert.match(r.stderr, /Instructions for begin:/);
    assert.equal(fdless(r.stderr), fdless(ours.stderr));
    const bad = await runTool('bpfscope', ['-d', 'libbpf', '-e', 'BEGIN { exit(); }']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^ERROR: -d: unknown stage 'libbpf'/);
  });

  it('--mode test runs each test: probe once; failures show their output; exit status 1 on a failure', async () => {
    const G = '\x1b[32m';
    const R = '\x1b[31m';
    const X = '\x1b[0m';
    const prog =
      'BEGIN { printf("begin\\n"); } test:ok { @a = 1; printf("quiet\\n"); clear(@a); } ' +
      'test:bad { printf("shown\\n"); exit(3); } test:err { errorf("boom"); } END { printf("end %d\\n", @a); }';
    const r = await runTool('bpfscope', ['--test', '-e', prog]);
    assert.equal(r.code, 1, r.stderr);
    const out = r.stdout.replace(/\(\d+ (ns|us|ms|s)\)/g, '(T)');
    assert.equal(
      out,
      [
        'begin',
        `${G}[==========]${X} Running 3 tests.`,
        `${G}[ RUN      ]${X} ok`,
        `${G}[       OK ]${X} ok (T)`,
        `${G}[ RUN      ]${X} bad`,
        'shown',
        `${R}[  FAILED  ]${X} bad (T)`,
        `${G}[ RUN      ]${X} err`,
        `${R}[  FAILED  ]${X} err (T)`,
        `${G}[==========]${X} 3 tests ran.`,
        `${G}[  PASSED  ]${X} 1 test.`,
        `${R}[  FAILED  ]${X} 2 tests, listed below:`,
        `${R}[  FAILED  ]${X} bad`,
        `${R}[  FAILED  ]${X} err`,
        // the passing test's clear(@a) was applied; the end of the run: two newlines, no maps
        'end 0',
        '',
        '',
        '',
      ].join('\n'),
    );
    assert.match(r.stderr, /ERROR: boom\n/);
    const json = await runTool('bpfscope', ['-q', '-f', 'json', '--mode', 'test', '-e', 'test:a { @x = 1; }']);
    assert.equal(json.code, 0, json.stderr);
    assert.match(
      json.stdout,
      /^\{"type": "test_result", "data": \{"a": \{"duration": \d+, "passed": true, "output": ""\}\}\}\n$/,
    );
    const plain = await runTool('bpfscope', ['-e', 'test:a { }']);
    assert.equal(plain.code, 1);
    assert.equal(plain.stderr, 'ERROR: No probes attached; use --test to run test probes.\n');
  });

  it('--info prints the system, build and kernel feature report', async () => {
    const r = await runTool('bpfscope', ['--info']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^System\n {2}OS: Linux \S+ .*\n {2}Arch: \S+\n\nBuild\n {2}version: bpfscope v/);
    for (const section of ['Kernel helpers', 'Kernel features', 'Probe types'])
      assert.match(r.stdout, new RegExp(`\n${section}\n`));
    assert.match(r.stdout, / {2}btf: yes/);
    assert.match(r.stdout, /kprobe_session: (yes|no)/);
    assert.match(r.stdout, /uprobe_multi: (yes|no)/);
  });

  it('--version and -h', async () => {
    assert.match((await runTool('bpfscope', ['--version'])).stdout, /^bpfscope v\d+\.\d+\.\d+\n$/);
    const h = await runTool('bpfscope', ['-h']);
    assert.equal(h.code, 0);
    assert.match(h.stdout, /^USAGE:\n/);
  });

  it('-o writes program output to a file; -q drops the attach notice', async () => {
    const out = join(tmp, 'out.txt');
    const r = await runTool('bpfscope', ['-q', '-o', out, '-e', 'BEGIN { printf("to file %d\\n", 7); exit(); }']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, '');
    assert.equal(readFileSync(out, 'utf8'), 'to file 7\n\n\n');
  });

  it('positional parameters from a script file', async () => {
    const file = join(tmp, 'pos.bt');
    writeFileSync(file, 'BEGIN { printf("%d %s %d\\n", $1 * 2, str($2), $#); exit(); }\n');
    const r = await runTool('bpfscope', [file, '21', 'abc']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '42 abc 2\n\n\n');
  });

  it('-p PID: traces only that process (uprobe and tracepoint) and stops when it exits', async () => {
    // The target blocks on its stdin until bpfscope says it attached; meanwhile a decoy workload makes the same calls
    // under the same comm, which -p must leave out (v0.26 applies -p to every probe but BEGIN/END).
    const target = spawn(workloadPath(), ['wait-stdin', 'comm', 'bpfs_ptgt', 'getppid', 7, 'read', 3, 17].map(String), {
      stdio: ['pipe', 'ignore', 'inherit'],
    });
    const targetDone = new Promise<void>((resolve) => target.on('close', () => resolve()));
    target.stdin!.on('error', () => {});
    try {
      assert.ok(target.pid, 'the target workload did not start');
      const run = startTool(
        'bpfscope',
        [
          '-p',
          String(target.pid),
          '-e',
          'tracepoint:syscalls:sys_enter_getppid /comm == "bpfs_ptgt"/ { @calls[pid] = count(); } ' +
            `uprobe:${workloadPath()}:num /comm == "bpfs_ptgt"/ { @num[pid] = count(); }`,
        ],
        { timeoutMs: 30_000 },
      );
      assert.ok(await run.waitFor(ATTACHED_PATTERN, 30_000), 'no attach notice');
      const decoy = runWorkload('comm', 'bpfs_ptgt', 'getppid', 5, 'read', 2, 9);
      assert.equal(decoy.status, 0, decoy.stderr);
      target.stdin!.end('g');
      const r = await run.done;
      assert.ok(!r.timedOut, `should stop when the traced process exits:\n${r.stderr}`);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stderr, 'Attached 2 probes\n');
      const p = target.pid;
      // getppid 7 and read 3 17 call num() three times: on "7", "3" and "17"
      assert.equal(r.stdout, `\n\n@calls[${p}]: 7\n@num[${p}]: 3\n`);
    } finally {
      target.stdin!.destroy();
      if (target.exitCode === null && target.signalCode === null) target.kill('SIGKILL');
      await targetDone;
    }
  });

  it('-p PID beyond the kernel\'s pid_max is an error (tests/runtime/basic "pid outside of valid pid range")', async () => {
    const r = await runTool('bpfscope', ['-p', '5000000', '-e', 'BEGIN { print(1); }']);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, 'ERROR: Pid out of range: 5000000\n');
  });

  it('-c CMD: cpid is the command, output when it ends', async () => {
    const r = await runTool('bpfscope', [
      '-c',
      workloadCommand('getppid', 25),
      '-e',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @calls = count(); }',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '\n\n@calls: 25\n');
  });

  it('reports ring buffer overflow as "Lost N events" and loses nothing else', async () => {
    const printfs = Array.from({ length: 300 }, (_, i) => `printf("%s %d\\n", comm, ${i});`).join(' ');
    const r = await runTool('bpfscope', ['-e', `config = { perf_rb_pages = 1 } BEGIN { ${printfs} exit(); }`]);
    assert.equal(r.code, 0, r.stderr);
    const m = /^Lost (\d+) events$/m.exec(r.stderr);
    assert.ok(m, r.stderr);
    const printed = r.stdout.split('\n').filter((l) => /^\S+ \d+$/.test(l));
    assert.ok(printed.length > 0);
    // 300 printf records and the exit() record: the ring fills up before exit(), so its record is lost too (and
    // counted) while the exit flag still ends the run.
    assert.equal(printed.length + Number(m[1]), 301);
    // what arrived is the first records, in order
    printed.forEach((l, i) => assert.ok(l.endsWith(` ${i}`), l));
  });

  it('rejects an unknown config variable', async () => {
    const r = await runTool('bpfscope', ['-e', 'config = { frob = 1 } BEGIN { exit(); }']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^stdin:1:12-\d+: ERROR: frob: not a known configuration option\n/);
  });

  it('explains missing privileges in one sentence', async () => {
    const setpriv = spawnSync('setpriv', ['--version']);
    if (setpriv.status !== 0) return;
    const r = spawnSync(
      'setpriv',
      [
        '--reuid=65534',
        '--regid=65534',
        '--clear-groups',
        '--inh-caps=-all',
        process.execPath,
        bpfscopeEntry(),
        '-e',
        'BEGIN { exit(); }',
      ],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 1, r.stderr);
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
    assert.match(r.stderr, /^ERROR: bpfscope needs root \(or CAP_BPF and CAP_PERFMON\)/m);
  });
});
