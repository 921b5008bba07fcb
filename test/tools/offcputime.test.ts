/**
 * offcputime (src/tools/offcputime.ts): the help text (CPython's argparse on bcc's parser, fixture
 * test/tools/fixtures/stack-tools-argparse.json), the generated program and header, and live runs on the kernel
 * with a C program that sleeps in nanosleep(2) inside a known function (test/tools/fixtures/stackprog.c): its
 * off-CPU time equals the sleep time within 10%, with its kernel and user stacks, in both output formats, with -m,
 * and as an off-CPU flame graph (--svg).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { formatHelp } from '../../src/tools/framework/argparse.js';
import { buildProgram, header, keyLayout, type OffcputimeOptions, SPEC } from '../../src/tools/offcputime.js';
import { repoRoot } from '../helpers/cli.js';
import { liveSkipReason, runBpfscope, startBpfscope } from './helpers.js';
import { foldedLines, STACKPROG_COMM, stackBlocks, stackprogPath, stackprogSkipReason } from './stackprog.js';

const fixture = JSON.parse(
  readFileSync(join(repoRoot(), 'test', 'tools', 'fixtures', 'stack-tools-argparse.json'), 'utf8'),
) as { help: Record<string, string> };

const base: OffcputimeOptions = {
  userThreads: false,
  kernelThreads: false,
  userOnly: false,
  kernelOnly: false,
  minUs: 1,
  maxUs: (1n << 64n) - 1n,
};

describe('offcputime options and program', () => {
  it('-h equals argparse on bcc parser (plus --svg)', () => {
    assert.equal(formatHelp(SPEC, 78), fixture.help.offcputime);
  });

  it('default: stacks kept at switch-out by thread, summed in us at switch-in', () => {
    assert.equal(
      buildProgram(base),
      'config = { max_map_keys = 10240 }\n' +
        'rawtracepoint:sched_switch {\n' +
        '  if (args.prev_state != 128) {\n' +
        '    if (@__seen[pid, comm, curtask->group_leader->start_time] == 0) {\n      @__seen[pid, comm, curtask->group_leader->start_time] = 1;\n      printf("%d/%llu\\n", pid, curtask->group_leader->start_time);\n    }\n' +
        '    @__off[tid] = (nsecs, kstack(raw), ustack(raw));\n' +
        '  }\n' +
        '  $next = args.next->pid;\n' +
        '  $o = @__off[$next];\n' +
        '  if ($o.0 != 0) {\n' +
        '    delete(@__off[$next]);\n' +
        '    $us = (nsecs - $o.0) / 1000;\n' +
        '    if ($us >= 1) {\n' +
        '      @[$o.1, $o.2, args.next->comm, $next, args.next->tgid] = sum($us);\n' +
        '    }\n' +
        '  }\n' +
        '}\n',
    );
    assert.deepEqual(keyLayout(base), { kernel: 0, user: 1, comm: 2, id: 3, tgid: 4 });
  });

  it('thread filters (-p, -t, -u, -k), --state, -m/-M, -U/-K', () => {
    const line = (o: Partial<OffcputimeOptions>): string => buildProgram({ ...base, ...o }).split('\n')[2]!;
    assert.equal(line({ tgids: [185, 175] }), '  if (args.prev_state != 128 && (pid == 185 || pid == 175)) {');
    assert.equal(line({ tids: [188] }), '  if (args.prev_state != 128 && (tid == 188)) {');
    assert.equal(line({ userThreads: true }), '  if (args.prev_state != 128 && ((args.prev->flags & 2097152) == 0)) {');
    assert.equal(
      line({ kernelThreads: true }),
      '  if (args.prev_state != 128 && ((args.prev->flags & 2097152) != 0)) {',
    );
    assert.equal(line({ state: 0 }), '  if (args.prev_state != 128 && args.prev_state == 0) {');
    assert.equal(line({ state: 2 }), '  if (args.prev_state != 128 && (args.prev_state & 2) != 0) {');
    const mm = buildProgram({ ...base, minUs: 1000, maxUs: 10000n });
    assert.ok(mm.includes('    if ($us >= 1000 && $us <= 10000) {\n'), mm);
    const u = buildProgram({ ...base, userOnly: true });
    assert.ok(u.includes('@__off[tid] = (nsecs, ustack(raw));'));
    assert.ok(u.includes('@[$o.1, args.next->comm, $next, args.next->tgid] = sum($us);'));
    const k = buildProgram({ ...base, kernelOnly: true });
    assert.ok(k.includes('@__off[tid] = (nsecs, kstack(raw));'));
    assert.ok(!k.includes('@__seen'), 'no user symbols needed');
    assert.deepEqual(keyLayout({ userOnly: false, kernelOnly: true }), { kernel: 0, comm: 1, id: 2, tgid: 3 });
  });

  it("bcc's header lines", () => {
    assert.equal(
      header(base, 99999999),
      'Tracing off-CPU time (us) of all threads by user + kernel stack... Hit Ctrl-C to end.',
    );
    assert.equal(
      header({ ...base, tgids: [185, 175], kernelOnly: true }, 5),
      'Tracing off-CPU time (us) of PIDs 185,175 by kernel stack for 5 secs.',
    );
    assert.equal(
      header({ ...base, tids: [1] }, 1),
      'Tracing off-CPU time (us) of TIDs 1 by user + kernel stack for 1 secs.',
    );
    assert.equal(
      header({ ...base, userThreads: true, userOnly: true }, 2),
      'Tracing off-CPU time (us) of user threads by user stack for 2 secs.',
    );
    assert.equal(
      header({ ...base, kernelThreads: true }, 2),
      'Tracing off-CPU time (us) of kernel threads by user + kernel stack for 2 secs.',
    );
  });

  it("bcc's refusals: -f with -s, user stacks of kernel threads, exclusive groups", async () => {
    const fs = await runBpfscope(['offcputime', '-f', '-s']);
    assert.equal(fs.code, 1);
    assert.equal(fs.stdout, 'ERROR: can only use -f or -s. Exiting.\n');
    const kU = await runBpfscope(['offcputime', '-k', '-U']);
    assert.equal(kU.code, 2);
    assert.equal(kU.stderr, "ERROR: Displaying user stacks for kernel threads doesn't make sense.\n");
    const g = await runBpfscope(['offcputime', '-u', '-t', '5']);
    assert.equal(g.code, 2);
    assert.match(
      g.stderr,
      /\noffcputime: error: argument -t\/--tid: not allowed with argument -u\/--user-threads-only\n$/,
    );
  });
});

describe('offcputime on the live kernel', () => {
  const skip = liveSkipReason() ?? stackprogSkipReason();

  it(
    'a thread blocked in nanosleep: off-CPU time within 10% of the sleep time, kernel and user stack',
    { skip },
    async () => {
      const run = startBpfscope(['offcputime'], { timeoutMs: 60_000 });
      assert.ok(
        await run.waitFor(
          /^Tracing off-CPU time \(us\) of all threads by user \+ kernel stack\.\.\. Hit Ctrl-C to end\.\n/,
          30_000,
        ),
        run.stderr(),
      );
      // Two sleeps of 500 ms: few wake-ups, so run queue delays under load stay a small part of the total.
      const w = spawnSync(stackprogPath(), ['sleep', '2', '500000'], { encoding: 'utf8' });
      assert.equal(w.status, 0, w.stderr);
      run.child.kill('SIGINT');
      const r = await run.done;
      assert.equal(r.code, 0, r.stderr);
      const mine = stackBlocks(r.stdout).filter((b) => b.id === w.pid && b.frames.includes('bpfs_sleeper'));
      // One stack, or a few when the same frames were recorded at different addresses (separate lines, as in bcc).
      assert.ok(mine.length >= 1, r.stdout.slice(0, 2000));
      const b = mine[0]!;
      assert.equal(b.comm, STACKPROG_COMM);
      const expected = 2 * 500_000;
      const us = mine.reduce((a, x) => a + x.value, 0);
      assert.ok(Math.abs(us - expected) <= expected * 0.1, `${us} us off-CPU for ${expected} us of sleep`);
      // Kernel frames from __schedule down to the system call entry, then the user frames.
      assert.equal(b.frames[0], '__schedule');
      const sleeper = b.frames.indexOf('bpfs_sleeper');
      assert.ok(b.frames.slice(0, sleeper).includes('do_nanosleep'), b.frames.join('\n'));
      assert.match(b.frames[sleeper - 1]!, /^entry_SYSCALL_64/);
      assert.equal(b.frames[sleeper + 1], 'main');
    },
  );

  it('-d -f -p PID: folded lines of that process, "-" between user and kernel frames', { skip }, async () => {
    const child = spawn(stackprogPath(), ['sleep', '200', '50000'], { stdio: 'ignore' });
    try {
      const r = await runBpfscope(['offcputime', '-df', '-p', String(child.pid), '2'], { timeoutMs: 40_000 });
      assert.equal(r.code, 0, r.stderr);
      const lines = foldedLines(r.stdout);
      assert.ok(lines.length > 0, r.stderr);
      for (const [s] of lines) assert.ok(s.startsWith(`${STACKPROG_COMM};`), s);
      const sleeps = lines.filter(([s]) =>
        /^bpfs_stackprog;(.+;)?main;bpfs_sleeper;-;entry_SYSCALL_64\w*;do_syscall_64;(.+;)?do_nanosleep;(.+;)?__schedule$/.test(
          s,
        ),
      );
      // Stacks with the same frames at different addresses are separate lines, as in bcc.
      assert.ok(sleeps.length >= 1, r.stdout);
      // Sleeps of 50 ms for 2 s: the off-CPU total lies between one sleep and the traced time.
      const us = sleeps.reduce((a, [, n]) => a + n, 0);
      assert.ok(us >= 50_000 && us <= 2_300_000, String(us));
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('-m: shorter blocks are left out', { skip }, async () => {
    const child = spawn(stackprogPath(), ['sleep', '200', '50000'], { stdio: 'ignore' });
    try {
      const r = await runBpfscope(['offcputime', '-f', '-m', '200000', '-p', String(child.pid), '2'], {
        timeoutMs: 40_000,
      });
      assert.equal(r.code, 0, r.stderr);
      assert.ok(!r.stdout.includes('bpfs_sleeper'), r.stdout);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('--svg -K -f: kernel stacks only, and an off-CPU flame graph (io palette, us)', { skip }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bpfscope-offcpu-svg-'));
    const child = spawn(stackprogPath(), ['sleep', '200', '50000'], { stdio: 'ignore' });
    try {
      const svg = join(dir, 'off.svg');
      const r = await runBpfscope(['offcputime', '-K', '-f', '--svg', svg, '-p', String(child.pid), '2'], {
        timeoutMs: 40_000,
      });
      assert.equal(r.code, 0, r.stderr);
      const lines = foldedLines(r.stdout);
      const sleeps = lines.filter(([s]) => /^bpfs_stackprog;entry_SYSCALL_64\w*;.*;do_nanosleep;.*__schedule$/.test(s));
      assert.ok(sleeps.length >= 1, r.stdout);
      assert.ok(!r.stdout.includes('bpfs_sleeper'), 'no user frames with -K');
      const text = readFileSync(svg, 'utf8');
      assert.match(text, /<\/svg>\n$/);
      assert.match(text, /<text id="title" [^>]*>Off-CPU Time Flame Graph<\/text>/);
      assert.match(text, /<title>do_nanosleep \([\d,]+ us, [\d.]+%\)<\/title>/);
      // flamegraph.pl's io palette: r = g, blue in 190..245.
      const fills = [...text.matchAll(/<rect [^>]*fill="rgb\((\d+),(\d+),(\d+)\)"/g)].map((m) =>
        m.slice(1).map(Number),
      );
      assert.ok(fills.length > 0);
      for (const [red, green, blue] of fills) {
        assert.equal(red, green);
        assert.ok(blue! >= 190 && blue! <= 245, `${red},${green},${blue}`);
      }
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
