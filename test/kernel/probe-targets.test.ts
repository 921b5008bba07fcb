/**
 * uprobe targets as current bpftrace resolves and prints them (its runtime tests uprobe:"uprobes - list probes by
 * file", "... by pid", "... with only wildcard", "... in separate mount namespace", probe:probe_builtin_string_compare,
 * uprobe_missing_probes, uprobe_warn_missing_probes, uprobe_zero_size): a path is printed as written, `-p PID` makes
 * `uprobe:*:fn` and `-l -p PID` cover the process's mappings and finds a path in the process's mount namespace.
 * The target (test/fixtures/targets.c) waits for a byte on stdin before it calls its function: the handshake.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ATTACHED_PATTERN, bpfscopeEntry, bpfscopeSkipReason, describe as show } from '../helpers/cli.js';
import { repoRoot, startTool } from '../helpers/cli.js';

const skip = bpfscopeSkipReason();
let dir = '';

/** `bpfscope args` run in `cwd`; stdout, stderr and the exit status. */
function bpfscope(args: string[], cwd: string): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [bpfscopeEntry(), ...args], {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The target, started with its stdin a pipe: it runs its calls once a byte is written. */
function startTarget(argv: string[]): ChildProcess {
  return spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'ignore', 'inherit'] });
}

function exited(c: ChildProcess): Promise<void> {
  return new Promise((resolve) => (c.exitCode !== null ? resolve() : c.once('exit', () => resolve())));
}

describe('uprobe targets: paths as written, -p wildcards and mount namespaces', { skip }, () => {
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'bpfscope-targets-'));
    execFileSync('cc', ['-O1', '-o', join(dir, 'targets'), join(repoRoot(), 'test/fixtures/targets.c')]);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('-l prints a relative path as written, also for a wildcard file name and a wildcard provider', () => {
    const a = bpfscope(['-l', 'uprobe:./targets:bpfs_target*'], dir);
    assert.equal(a.stdout, 'uprobe:./targets:bpfs_target_fn\n', a.stderr);
    const b = bpfscope(['-l', 'uprobe:./targ*:bpfs_target_fn'], dir);
    assert.equal(b.stdout, 'uprobe:./targets:bpfs_target_fn\n', b.stderr);
    const c = bpfscope(['-l', '*:./targets:bpfs_target_fn'], dir);
    assert.equal(c.stdout, 'uprobe:./targets:bpfs_target_fn\n', c.stderr);
  });

  it('the probe builtin names the binary as written', () => {
    const r = bpfscope(['-e', 'uprobe:./targets:bpfs_target_fn { @[probe] = count(); }', '-c', './targets 2'], dir);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '\n\n@[uprobe:./targets:bpfs_target_fn]: 2\n');
  });

  it('a missing function: bpftrace’s "No matches" error, or a warning and skipped with missing_probes = "warn"', () => {
    const a = bpfscope(['-e', 'uprobe:./targets:bpfs_nope { }'], dir);
    assert.equal(a.code, 1);
    assert.match(a.stderr, /^stdin:1:1-27: ERROR: No matches for uprobe \.\/targets:bpfs_nope\.$/m);
    const prog =
      'config = { missing_probes = "warn" } uprobe:./targets:bpfs_target_fn,uprobe:./targets:bpfs_nope { @ = count(); }';
    const b = bpfscope(['-e', prog, '-c', './targets 3'], dir);
    assert.equal(b.code, 0, b.stderr);
    assert.match(b.stderr, /WARNING: No matches for uprobe \.\/targets:bpfs_nope\. Skipping\.$/m);
    assert.equal(b.stdout, '\n\n@: 3\n');
  });

  it('a function whose symbol has no size needs --unsafe', () => {
    const a = bpfscope(['-e', 'uprobe:./targets:bpfs_zero_size { }'], dir);
    assert.equal(a.code, 1);
    // bpftrace's attach-time error (attached_probe.cpp): no source position, the hint on its own line
    assert.match(
      a.stderr,
      /^ERROR: Could not determine boundary for bpfs_zero_size \(symbol has size 0\)\.\nUse --unsafe to force attachment\. WARNING: This option could lead to data corruption in the target process\.$/m,
    );
    const b = bpfscope(['--unsafe', '-e', 'uprobe:./targets:bpfs_zero_size { @ = count(); }', '-c', './targets'], dir);
    assert.equal(b.code, 0, b.stderr);
    assert.equal(b.stdout, '\n\n@: 1\n');
  });

  it('-p PID: uprobe:*:FN and -l -p cover the process’s mappings', async () => {
    const target = startTarget([join(dir, 'targets'), '4']);
    try {
      const l = bpfscope(['-l', 'uprobe:*:bpfs_target_*', '-p', String(target.pid)], dir);
      assert.equal(l.stdout, `uprobe:${dir}/targets:bpfs_target_fn\n`, l.stderr);
      const all = bpfscope(['-l', '-p', String(target.pid)], dir);
      assert.match(all.stdout, new RegExp(`^uprobe:${dir}/targets:bpfs_target_fn$`, 'm'));
      assert.match(all.stdout, /^uprobe:\S+\/libc\.so\.6:malloc$/m, 'the libraries it maps are listed too');
      const run = startTool('bpfscope', [
        '-e',
        'uprobe:*:bpfs_target_fn { @[probe] = count(); }',
        '-p',
        String(target.pid),
      ]);
      assert.ok(await run.waitFor(ATTACHED_PATTERN, 20_000), run.stderr());
      target.stdin!.end('x');
      const r = await run.done;
      assert.equal(r.code, 0, show(r));
      assert.equal(r.stdout, `\n\n@[uprobe:${dir}/targets:bpfs_target_fn]: 4\n`);
    } finally {
      target.kill();
      await exited(target);
    }
  });

  it('-p PID: a path only the process’s mount namespace has', async () => {
    // the target runs from a tmpfs mounted over an empty directory in a mount namespace of its own
    const hidden = join(dir, 'hidden');
    mkdirSync(hidden);
    const script = `mount -t tmpfs none ${hidden} && cp ${dir}/targets ${hidden}/ && exec ${hidden}/targets 2`;
    const target = startTarget(['unshare', '-m', '--propagation', 'private', 'sh', '-c', script]);
    try {
      // the handshake: the exec'd target maps the file (its maps name it) before anything is written to it
      let mapped = false;
      for (let i = 0; i < 200 && !mapped; i++) {
        mapped = bpfscope(
          ['-l', `uprobe:${hidden}/targets:bpfs_target_fn`, '-p', String(target.pid)],
          dir,
        ).stdout.includes('bpfs_target_fn');
        if (!mapped) await new Promise((r) => setTimeout(r, 50)); // polling the process's state, not a sync sleep
      }
      assert.ok(mapped, 'the target never mapped its binary');
      const l = bpfscope(['-l', '-p', String(target.pid)], dir);
      assert.match(l.stdout, new RegExp(`^uprobe:${hidden}/targets:bpfs_target_fn$`, 'm'));
      const run = startTool('bpfscope', [
        '-e',
        `uprobe:${hidden}/targets:bpfs_target_fn { @ = count(); }`,
        '-p',
        String(target.pid),
      ]);
      assert.ok(await run.waitFor(ATTACHED_PATTERN, 20_000), run.stderr());
      target.stdin!.end('x');
      const r = await run.done;
      assert.equal(r.code, 0, show(r));
      assert.equal(r.stdout, '\n\n@: 2\n');
    } finally {
      target.kill();
      await exited(target);
    }
  });
});
