/**
 * uprobe wildcards at scale (issue 19): a body that reads `probe` keeps the one uprobe_multi link (`probe` read by
 * attach cookie), a function the kernel refuses is skipped with a warning instead of failing the run (on the multi
 * link, found by bisection, and per function without uprobe_multi), and `max_probes` is honoured.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { hasFeature } from '../../src/kernel/features.js';
import { describe as describeRun, repoRoot, runTool, startTool } from '../helpers/cli.js';
import { ccSkipReason, compileFixture } from '../helpers/compile.js';

const skip = ccSkipReason();

/**
 * Runs `bpfscope args -p PID` against a started refused-uprobe fixture (mapped before attach, so the kernel checks
 * each probed instruction at attach time), lets it call its functions 4 times once the probes are attached, and
 * returns the finished run.
 */
async function traceFixture(args: string[], attaches = true) {
  const bin = compileFixture(join(repoRoot(), 'test/fixtures/refused-uprobe.c'), 'refused-uprobe');
  const target = spawn(bin, ['4'], { stdio: ['pipe', 'pipe', 'inherit'] });
  try {
    await once(target.stdout!, 'data'); // "ready": the binary is mapped
    const run = startTool('bpfscope', [...args.map((a) => a.replaceAll('BIN', bin)), '-p', String(target.pid)], {
      timeoutMs: 60_000,
    });
    // the notice comes once every probe is attached; a run expected to fail ends while the target still waits
    if (attaches) assert.ok(await run.waitFor(/Attached \d+ probe/, 60_000), `not attached\n${run.stderr()}`);
    else await run.done;
    target.stdin!.end('go\n');
    const r = await run.done;
    return { r, bin };
  } finally {
    if (target.exitCode === null) target.kill('SIGKILL');
  }
}

describe('uprobe wildcards', { skip }, () => {
  it(
    '`probe` on a uprobe_multi link: one link, each function under its own probe name, exact counts',
    {
      skip: skip ?? (hasFeature('uprobeMulti') ? undefined : 'no uprobe_multi on this kernel'),
    },
    async () => {
      const { r, bin } = await traceFixture(['-e', 'uprobe:BIN:wl_[po]* { @[probe] = count(); @f[func] = count(); }']);
      assert.equal(r.code, 0, describeRun(r));
      // one link, counted as its functions, as current bpftrace's probe_count()
      assert.match(r.stderr, /^Attached 2 probes$/m);
      assert.equal(
        r.stdout,
        `\n\n@[uprobe:${bin}:wl_other]: 1\n@[uprobe:${bin}:wl_plain]: 4\n@f[wl_other]: 1\n@f[wl_plain]: 4\n`,
      );
    },
  );

  for (const multi of [true, false]) {
    it(
      `a function the kernel refuses is skipped with a warning, the others traced (${multi ? 'uprobe_multi link' : 'one perf event per function'})`,
      {
        skip: skip ?? (!multi || hasFeature('uprobeMulti') ? undefined : 'no uprobe_multi on this kernel'),
      },
      async () => {
        const { r, bin } = await traceFixture([
          ...(multi ? [] : ['--no-feature', 'uprobe_multi']),
          '-e',
          'uprobe:BIN:wl_* { @[probe] = count(); }',
        ]);
        assert.equal(r.code, 0, describeRun(r));
        assert.match(
          r.stderr,
          new RegExp(
            `^WARNING: uprobe:${bin.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:wl_locked: the kernel cannot probe this function \\(Operation not supported \\(ENOTSUPP\\)\\), skipped$`,
            'm',
          ),
        );
        assert.equal(r.stdout, `\n\n@[uprobe:${bin}:wl_other]: 1\n@[uprobe:${bin}:wl_plain]: 4\n`);
      },
    );
  }

  it('a function named without a wildcard still fails the run', async () => {
    const { r } = await traceFixture(['-e', 'uprobe:BIN:wl_locked { @ = count(); }'], false);
    assert.equal(r.code, 1, describeRun(r));
    assert.match(r.stderr, /ERROR: .*Operation not supported \(ENOTSUPP\)/);
  });

  it("max_probes (BPFTRACE_MAX_PROBES, config) limits the probes attached, with bpftrace's message", async () => {
    const r = await runTool('bpfscope', [
      '--dry-run',
      '-e',
      'config = { max_probes = 2 } tracepoint:syscalls:sys_enter_getpid, tracepoint:syscalls:sys_enter_getppid, tracepoint:syscalls:sys_enter_getuid { }',
    ]);
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr,
      "ERROR: Can't attach to 3 probes because it exceeds the current limit of 2 probes.\n" +
        'HINT: You can increase the limit through the BPFTRACE_MAX_PROBES environment variable (or config = ' +
        '{ max_probes = N }), but BE CAREFUL since a high number of probes attached can cause your system to crash.\n',
    );
    const env = await runTool(
      'bpfscope',
      ['--dry-run', '-e', 'tracepoint:syscalls:sys_enter_getpid, tracepoint:syscalls:sys_enter_getppid { }'],
      {
        env: { BPFTRACE_MAX_PROBES: '1' },
      },
    );
    assert.equal(env.code, 1);
    assert.match(env.stderr, /^ERROR: Can't attach to 2 probes because it exceeds the current limit of 1 probes\.$/m);
  });

  it('detaching more than 100 probes announces itself (Detaching N probes...), a small program does not', async () => {
    const big = await runTool('bpfscope', ['-e', 'uprobe:libc.so.6:s* { @ = count(); } interval:ms:200 { exit(); }']);
    assert.equal(big.code, 0, describeRun(big));
    const attached = /^Attached (\d+) probes$/m.exec(big.stderr);
    const detaching = /^Detaching (\d+) probes\.\.\.$/m.exec(big.stderr);
    assert.ok(attached && detaching, describeRun(big));
    assert.ok(Number(attached[1]) > 100, `libc has more than 100 s* functions: ${attached[1]}`);
    assert.equal(detaching[1], attached[1]);
    assert.ok(big.stderr.indexOf('Attached') < big.stderr.indexOf('Detaching'));
    const small = await runTool('bpfscope', [
      '-e',
      'tracepoint:syscalls:sys_enter_getpid { } interval:ms:200 { exit(); }',
    ]);
    assert.equal(small.code, 0, describeRun(small));
    assert.equal(small.stderr, 'Attached 2 probes\n');
  });
});
