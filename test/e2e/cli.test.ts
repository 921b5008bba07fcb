/**
 * The bpfscope command as a user meets it: exit codes, error output (file:line:col + marker, never a stack trace),
 * -o/-q/-p/-l/--version, and the sentence for missing privileges.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { bpfscopeEntry, runTool } from '../helpers/cli.js';
import { workloadCommand } from '../helpers/workload.js';

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

  it('reports a missing script file in one line', async () => {
    const r = await runTool('bpfscope', [join(tmp, 'nope.bt')]);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `ERROR: failed to open file '${join(tmp, 'nope.bt')}': No such file or directory\n`);
  });

  it('rejects an unknown flag with a usage hint', async () => {
    const r = await runTool('bpfscope', ['--frobnicate']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^ERROR: .*frobnicate.*\nHINT: see bpfscope --help\n$/);
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

  it('-p PID: traces that process and stops when it exits', async () => {
    const sleeper = startSleeper(1.5);
    const r = await runTool(
      'bpfscope',
      [
        '-p',
        String(sleeper.pid),
        '-e',
        `tracepoint:syscalls:sys_enter_clock_nanosleep /pid == ${sleeper.pid}/ { @ = count(); }`,
      ],
      { timeoutMs: 10_000 },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.ok(!r.timedOut, 'should stop when the traced process exits');
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

function startSleeper(seconds: number): { pid: number } {
  const child = spawnSync('sh', ['-c', `sleep ${seconds} >/dev/null 2>&1 & echo $!`], { encoding: 'utf8' });
  return { pid: Number(child.stdout.trim()) };
}
