/**
 * Missing privileges are one sentence naming what is missing, at every entry point that traces (a program, `-l`, a
 * tool), before anything else is said; options and help need none. Runs the built CLI as user 65534 through
 * util-linux's `setpriv`, with no capabilities or with CAP_BPF / CAP_PERFMON as ambient capabilities. When the
 * checkout cannot be read by that user, the bundle and koffi are copied to a temporary directory it can read.
 * Also, as root: a tracepoint the kernel refuses even to root must not be blamed on privileges.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { bpfscopeEntry, bpfscopeSkipReason, repoRoot, runTool } from '../helpers/cli.js';

const NOBODY = ['--reuid=65534', '--regid=65534', '--clear-groups'];

function asNobody(entry: string, caps: string[], args: string[]) {
  const capArgs = caps.length
    ? [`--inh-caps=-all,${caps.map((c) => `+${c}`).join(',')}`, `--ambient-caps=${caps.map((c) => `+${c}`).join(',')}`]
    : ['--inh-caps=-all'];
  return spawnSync('setpriv', [...NOBODY, ...capArgs, process.execPath, entry, ...args], {
    encoding: 'utf8',
    cwd: '/',
    timeout: 30_000,
  });
}

/** A copy of the CLI user 65534 can run (the checkout itself when it can), or why there is none. */
function entryForNobody(): { entry: string } | { skip: string } {
  if (spawnSync('setpriv', ['--version']).status !== 0) return { skip: 'setpriv (util-linux) is not installed' };
  const why = bpfscopeSkipReason();
  if (why) return { skip: why };
  if (asNobody(bpfscopeEntry(), [], ['--version']).status === 0) return { entry: bpfscopeEntry() };
  const dir = mkdtempSync(join(tmpdir(), 'bpfscope-nobody-'));
  chmodSync(dir, 0o755);
  const bundle = join(dir, 'dist', 'bundle');
  mkdirSync(bundle, { recursive: true });
  for (const f of ['bpfscope.cjs', 'cli.cjs', 'flame.cjs', 'heatmap.cjs', 'tools.cjs'])
    cpSync(join(dirname(bpfscopeEntry()), f), join(bundle, f));
  cpSync(join(repoRoot(), 'node_modules', 'koffi'), join(dir, 'node_modules', 'koffi'), { recursive: true });
  spawnSync('chmod', ['-R', 'a+rX', dir]);
  const entry = join(bundle, 'bpfscope.cjs');
  const r = asNobody(entry, [], ['--version']);
  return r.status === 0 ? { entry } : { skip: `user 65534 cannot run a copy of the CLI: ${r.stderr}` };
}

const target = entryForNobody();
const skip = 'skip' in target ? target.skip : false;
const entry = 'entry' in target ? target.entry : '';

const NEITHER = 'ERROR: bpfscope needs root (or CAP_BPF and CAP_PERFMON): this process has neither\n';

describe('without privileges', { skip }, () => {
  for (const [what, args] of [
    ['a program of only BEGIN', ['-e', 'BEGIN { exit(); }']],
    ['a tracepoint program (which reads tracefs)', ['-e', 'tracepoint:syscalls:sys_enter_getpid { }']],
    ['-l', ['-l']],
    ['-l with a pattern', ['-l', 'tracepoint:syscalls:*']],
    ['a -c command that does not exist (privileges come first, as in bpftrace)', ['-e', 'BEGIN {}', '-c', '/nope']],
    ['a tool', ['opensnoop']],
    ['a tool with an interval', ['syscount', '-i', '1']],
  ] as const) {
    it(`${what}: one sentence, status 1`, () => {
      const r = asNobody(entry, [], [...args]);
      assert.equal(r.stderr, NEITHER);
      assert.equal(r.stdout, '');
      assert.equal(r.status, 1);
    });
  }

  it('a tool prints its help and usage errors without privileges, as bcc', () => {
    const help = asNobody(entry, [], ['opensnoop', '-h']);
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /^usage: opensnoop/);
    const bad = asNobody(entry, [], ['opensnoop', '--frob']);
    assert.equal(bad.status, 2, bad.stderr);
  });

  it('names the one capability missing', () => {
    const bpfOnly = asNobody(entry, ['bpf'], ['-e', 'BEGIN { exit(); }']);
    assert.equal(
      bpfOnly.stderr,
      'ERROR: bpfscope needs root (or CAP_BPF and CAP_PERFMON): this process lacks CAP_PERFMON\n',
    );
    assert.equal(bpfOnly.status, 1);
    const perfmonOnly = asNobody(entry, ['perfmon'], ['opensnoop']);
    assert.equal(
      perfmonOnly.stderr,
      'ERROR: bpfscope needs root (or CAP_BPF and CAP_PERFMON): this process lacks CAP_BPF\n',
    );
    assert.equal(perfmonOnly.status, 1);
  });

  it('with CAP_BPF and CAP_PERFMON a program runs; a closed tracefs is said to be closed, not missing', (t) => {
    const ok = asNobody(entry, ['bpf', 'perfmon'], ['-e', 'BEGIN { printf("hello\\n"); exit(); }']);
    assert.equal(ok.status, 0, ok.stderr);
    assert.equal(ok.stdout, 'hello\n\n\n');
    if ((statSync('/sys/kernel/tracing').mode & 0o005) !== 0) return t.skip('tracefs is readable by everyone here');
    const tp = asNobody(entry, ['bpf', 'perfmon'], ['-e', 'tracepoint:syscalls:sys_enter_getpid { }']);
    assert.equal(
      tp.stderr,
      'ERROR: cannot read /sys/kernel/tracing: Permission denied (tracefs is readable by root only, or with ' +
        'CAP_DAC_READ_SEARCH)\n',
    );
    assert.equal(tp.status, 1);
  });
});

describe('as root', { skip: bpfscopeSkipReason() ?? false }, () => {
  it('a tracepoint the kernel refuses even to root is not blamed on privileges', async (t) => {
    const r = await runTool('bpfscope', ['-e', 'tracepoint:irq_vectors:irq_work_exit { }']);
    if (!/perf_event_open|refused/.test(r.stderr)) return t.skip(`this kernel lets root attach it: ${r.stderr}`);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /^ERROR: the kernel refused to open tracepoint irq_vectors:irq_work_exit \(id \d+\): Operation not permitted$/m,
    );
    assert.doesNotMatch(r.stderr, /root|CAP_|sudo/);
  });
});
