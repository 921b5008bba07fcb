/**
 * profile (src/tools/profile.ts): the help text (CPython's argparse on bcc's parser, fixture
 * test/tools/fixtures/stack-tools-argparse.json), the generated program and header, and live runs on the kernel:
 * a C program burning CPU in known functions in user space and under read(2) (test/tools/fixtures/stackprog.c),
 * a Node.js process run with --perf-basic-prof, a process that exits before the report, and --svg.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { formatHelp } from '../../src/tools/framework/argparse.js';
import { buildProgram, header, keyLayout, type ProfileOptions, probeOf, SPEC } from '../../src/tools/profile.js';
import { repoRoot } from '../helpers/cli.js';
import { liveSkipReason, runBpfscope, startBpfscope } from './helpers.js';
import { foldedLines, STACKPROG_COMM, stackBlocks, stackprogPath, stackprogSkipReason } from './stackprog.js';

const fixture = JSON.parse(
  readFileSync(join(repoRoot(), 'test', 'tools', 'fixtures', 'stack-tools-argparse.json'), 'utf8'),
) as { help: Record<string, string> };

const base: ProfileOptions = {
  userOnly: false,
  kernelOnly: false,
  includeIdle: false,
  cpu: -1,
  hashStorage: 40960,
};

describe('profile options and program', () => {
  it('-h equals argparse on bcc parser (plus --svg)', () => {
    assert.equal(formatHelp(SPEC, 78), fixture.help.profile);
  });

  it('default: 49 Hz, idle excluded, both stacks, comm and pid; each new process reported once', () => {
    assert.equal(
      buildProgram(base),
      'config = { max_map_keys = 40960 }\n' +
        'profile:hz:49 /tid != 0/ {\n' +
        '  if (@__seen[pid, comm, curtask->group_leader->start_time] == 0) {\n    @__seen[pid, comm, curtask->group_leader->start_time] = 1;\n    printf("%d/%llu\\n", pid, curtask->group_leader->start_time);\n  }\n' +
        '  @[kstack(raw), ustack(raw), comm, pid] = count();\n}\n',
    );
    assert.deepEqual(keyLayout(base), { kernel: 0, user: 1, comm: 2, id: 3 });
  });

  it('filters: -p list, -L list, -C, -I; -U and -K keep one stack; -K needs no process symbols', () => {
    const p = buildProgram({ ...base, pids: [185, 186], cpu: 1, frequency: 99, userOnly: true });
    assert.match(p, /^profile:hz:99 \/\(tid != 0\) && \(pid == 185 \|\| pid == 186\) && \(cpu == 1\)\/ \{$/m);
    assert.match(p, /@\[ustack\(raw\), comm, pid\] = count\(\);/);
    const k = buildProgram({ ...base, tids: [7], includeIdle: true, kernelOnly: true, hashStorage: 100 });
    assert.match(
      k,
      /^config = \{ max_map_keys = 100 \}\nprofile:hz:49 \/tid == 7\/ \{\n {2}@\[kstack\(raw\), comm, pid\]/,
    );
    assert.ok(!k.includes('@__seen'));
    assert.deepEqual(keyLayout({ userOnly: false, kernelOnly: true }), { kernel: 0, comm: 1, id: 2 });
    assert.equal(buildProgram({ ...base, includeIdle: true }).split('\n')[1], 'profile:hz:49 {');
  });

  it('-c: the cpu-clock period in whole microseconds', () => {
    assert.equal(probeOf({ period: 1000000 }), 'profile:us:1000');
    assert.equal(probeOf({ period: 10999 }), 'profile:us:10');
    assert.equal(probeOf({ period: 10 }), 'profile:us:1');
    assert.equal(probeOf({ frequency: 999 }), 'profile:hz:999');
  });

  it("bcc's header lines", () => {
    assert.equal(
      header(base, 99999999),
      'Sampling at 49 Hertz of all threads by user + kernel stack... Hit Ctrl-C to end.',
    );
    assert.equal(
      header({ ...base, pids: [185, 186], frequency: 99, userOnly: true, cpu: 0 }, 5),
      'Sampling at 99 Hertz of PID [185, 186] by user stack on CPU#0 for 5 secs.',
    );
    assert.equal(
      header({ ...base, tids: [7], period: 1000000, kernelOnly: true }, 1),
      'Sampling at every 1000000 events of TID [7] by kernel stack for 1 secs.',
    );
  });

  it('usage errors and refusals go through the command line', async () => {
    const r = await runBpfscope(['profile', '-U', '-K']);
    assert.equal(r.code, 2);
    assert.equal(r.stdout, '');
    assert.match(
      r.stderr,
      /^usage: profile \[-h\].*\nprofile: error: argument -K\/--kernel-stacks-only: not allowed with argument -U\/--user-stacks-only\n$/s,
    );
    const c = await runBpfscope(['profile', '--cgroupmap', '/sys/fs/bpf/x']);
    assert.equal(c.code, 1);
    assert.equal(
      c.stderr,
      'ERROR: profile: --cgroupmap/--mntnsmap read pinned BPF maps, which bpfscope tools do not support yet\n',
    );
    const w = await runBpfscope(['profile', '--svg', '/nonexistent-dir/cpu.svg', '1']);
    assert.equal(w.code, 1);
    assert.equal(w.stdout, '', 'fails before tracing starts');
    assert.match(w.stderr, /^ERROR: profile: cannot write the flame graph to \/nonexistent-dir\/cpu\.svg: ENOENT/);
    const e = await runBpfscope(['profile', '--ebpf', '-K', '-F', '99']);
    assert.equal(e.code, 0);
    assert.equal(e.stdout, buildProgram({ ...base, kernelOnly: true, frequency: 99 }));
  });
});

/** Start the test program; killed by the returned function. */
function burn(ms: number): { child: ChildProcess; pid: number; stop: () => void } {
  const child = spawn(stackprogPath(), ['cpu', String(ms)], { stdio: 'ignore' });
  return { child, pid: child.pid!, stop: () => child.kill('SIGKILL') };
}

describe('profile on the live kernel', () => {
  const skip = liveSkipReason() ?? stackprogSkipReason();
  const FRAMES = /;main;bpfs_user_outer;bpfs_user_burn$/;

  it('-F 99 -f 2: folded stacks with the burning functions, user and kernel frames', { skip }, async () => {
    const w = burn(30_000);
    try {
      const r = await runBpfscope(['profile', '-F', '99', '-f', '-p', String(w.pid), '2'], { timeoutMs: 40_000 });
      assert.equal(r.code, 0, r.stderr);
      const lines = foldedLines(r.stdout);
      assert.ok(lines.length > 0, `no stacks\n${r.stderr}`);
      for (const [stack, n] of lines) {
        assert.ok(stack.startsWith(`${STACKPROG_COMM};`), stack);
        assert.ok(Number.isInteger(n) && n > 0, String(n));
      }
      // User-mode samples: the user frames only (the kernel stack of a user-mode sample is empty).
      const user = lines.filter(([s]) => FRAMES.test(s));
      assert.ok(user.length > 0, `no user-only stack ending in bpfs_user_burn\n${r.stdout}`);
      // Kernel-mode samples under read(2) from /dev/zero: user frames, then the system call path.
      const kern = lines.filter(([s]) => /;main;bpfs_kernel_burn;entry_SYSCALL_64\w*;do_syscall_64;/.test(s));
      assert.ok(kern.length > 0, `no kernel frames under bpfs_kernel_burn\n${r.stdout}`);
      assert.ok(
        kern.some(([s]) => /;(ksys_read|vfs_read|read_zero);|;(ksys_read|vfs_read|read_zero)$/.test(s)),
        r.stdout,
      );
      // One thread is sampled at most 99 times a second.
      const total = lines.reduce((a, [, n]) => a + n, 0);
      assert.ok(total <= 2 * 99 * 1.1 + 5, `${total} samples in 2 s at 99 Hz`);
    } finally {
      w.stop();
    }
  });

  it('-a -d: kernel frames annotated _[k], "-" between user and kernel frames', { skip }, async () => {
    const w = burn(30_000);
    try {
      const r = await runBpfscope(['profile', '-adf', '-F', '99', '-p', String(w.pid), '2'], { timeoutMs: 40_000 });
      assert.equal(r.code, 0, r.stderr);
      const lines = foldedLines(r.stdout);
      // Samples taken in the kernel: user frames, "-", then only annotated kernel frames.
      const kern = lines.filter(([s]) => s.includes('_[k]'));
      assert.ok(
        kern.some(([s]) => s.includes(';main;bpfs_kernel_burn;-;')),
        r.stdout,
      );
      for (const [s] of kern) assert.match(s, /;-;[^;]+_\[k\](;[^;]+_\[k\])*$/, s);
      // Samples taken in user space have no kernel frames and no delimiter.
      for (const [s] of lines.filter(([x]) => !x.includes('_[k]'))) assert.ok(!s.includes(';-'), s);
    } finally {
      w.stop();
    }
  });

  it(
    'default output: bcc frames "name+0xOFF [module]", "-  comm (pid)", counts; -U has no kernel frames',
    { skip },
    async () => {
      const w = burn(30_000);
      try {
        const r = await runBpfscope(['profile', '-U', '-F', '99', '-p', String(w.pid), '2'], { timeoutMs: 40_000 });
        assert.equal(r.code, 0, r.stderr);
        assert.ok(
          r.stdout.startsWith(`Sampling at 99 Hertz of PID [${w.pid}] by user stack for 2 secs.\n\n`),
          r.stdout,
        );
        const blocks = stackBlocks(r.stdout);
        assert.ok(blocks.length > 0, r.stdout);
        for (const b of blocks) {
          assert.equal(b.comm, STACKPROG_COMM);
          assert.equal(b.id, w.pid);
          for (const f of b.frames) assert.ok(!f.endsWith('[kernel]'), f);
        }
        const hot = blocks.find((b) => b.frames[0]?.startsWith('bpfs_user_burn+0x'));
        assert.ok(hot, r.stdout);
        assert.match(hot.frames[0]!, /^bpfs_user_burn\+0x[0-9a-f]+ \[bpfs_stackprog\]$/);
        assert.match(hot.frames[1]!, /^bpfs_user_outer\+0x[0-9a-f]+ \[bpfs_stackprog\]$/);
        assert.match(hot.frames[2]!, /^main\+0x[0-9a-f]+ \[bpfs_stackprog\]$/);
        const values = blocks.map((b) => b.value);
        assert.deepEqual(
          values,
          [...values].sort((a, b) => a - b),
          'sorted by count, ascending',
        );
      } finally {
        w.stop();
      }
    },
  );

  it('a process that exits before the report keeps its function names', { skip }, async () => {
    const run = startBpfscope(['profile', '-U', '-F', '99', '4'], { timeoutMs: 40_000 });
    assert.ok(await run.waitFor(/for 4 secs\.\n/, 30_000), run.stderr());
    const w = burn(1500);
    const exited = await new Promise<number | null>((res) => w.child.on('exit', res));
    assert.equal(exited, 0);
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const mine = stackBlocks(r.stdout).filter((b) => b.id === w.pid);
    assert.ok(mine.length > 0, r.stdout);
    assert.ok(
      mine.some((b) => b.frames.some((f) => f.startsWith('bpfs_user_burn+0x'))),
      mine.map((b) => b.frames.join(' | ')).join('\n'),
    );
  });

  it('a Node.js process run with --perf-basic-prof shows its JavaScript function names', { skip }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bpfscope-profile-js-'));
    const script = join(dir, 'hot.js');
    writeFileSync(
      script,
      'function bpfsJsHotLoop(ms) {\n  const end = Date.now() + ms;\n  let x = 0;\n' +
        '  while (Date.now() < end) {\n    for (let i = 0; i < 10000; i++) x = (x + i * i) % 1000003;\n  }\n' +
        '  return x;\n}\nbpfsJsHotLoop(Number(process.argv[2]));\n',
    );
    const child = spawn(process.execPath, ['--perf-basic-prof', script, '30000'], { stdio: 'ignore' });
    try {
      const r = await runBpfscope(['profile', '-f', '-U', '-F', '99', '-p', String(child.pid), '2'], {
        timeoutMs: 40_000,
      });
      assert.equal(r.code, 0, r.stderr);
      const js = foldedLines(r.stdout).filter(([s]) => /;JS:\*?bpfsJsHotLoop [^;]*hot\.js:\d+:\d+$/.test(s));
      assert.ok(js.length > 0, r.stdout.slice(0, 4000));
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      rmSync(`/tmp/perf-${child.pid}.map`, { force: true });
    }
  });

  it('--svg FILE writes a flame graph with the hot function', { skip }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bpfscope-profile-svg-'));
    const w = burn(30_000);
    try {
      const svg = join(dir, 'cpu.svg');
      const r = await runBpfscope(['profile', '-F', '99', '--svg', svg, '-p', String(w.pid), '2'], {
        timeoutMs: 40_000,
      });
      assert.equal(r.code, 0, r.stderr);
      assert.match(
        r.stdout,
        new RegExp(
          `^Sampling at 99 Hertz of PID \\[${w.pid}\\] by user \\+ kernel stack for 2 secs\\.\\n\\nWrote a flame graph of \\d+ stacks to ${svg.replace(/[.]/g, '\\.')} \\(\\d+ bytes\\)\\.\\n$`,
        ),
      );
      const text = readFileSync(svg, 'utf8');
      assert.match(text, /^<\?xml version="1\.0" standalone="no"\?>\n<!DOCTYPE svg /);
      assert.match(text, /<\/svg>\n$/);
      assert.match(text, /<text id="title" [^>]*>Flame Graph<\/text>/);
      assert.match(text, /<title>bpfs_user_burn \(\d+ samples?, [\d.]+%\)<\/title>/);
      assert.equal((text.match(/<svg /g) ?? []).length, 1);
      assert.equal((text.match(/<g[ >]/g) ?? []).length, (text.match(/<\/g>/g) ?? []).length, 'balanced <g>');
    } finally {
      w.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
