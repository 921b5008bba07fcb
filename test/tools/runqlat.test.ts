/**
 * runqlat (src/tools/runqlat.ts): the generated program and live runs with a workload that sleeps (every wakeup
 * is a run queue wait) and spins.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { buildProgram, RUNNABLE_PREV_STATE } from '../../src/tools/runqlat.js';
import { workloadPath } from '../helpers/workload.js';
import { liveSkipReason, runBpfscope, startBpfscope } from './helpers.js';
import { parseSections, total } from './sched.js';

describe('runqlat program', () => {
  it('enqueue on wakeup and on preemption; -L keys by thread', () => {
    const p = buildProgram({ milliseconds: true, pids: false, tids: true });
    assert.match(
      p,
      /tracepoint:sched:sched_wakeup,\ntracepoint:sched:sched_wakeup_new \{\n {2}if \(args\.pid != 0\) \{\n {4}@start\[args\.pid\] = nsecs;/,
    );
    assert.ok(p.includes(`if (${RUNNABLE_PREV_STATE} && args.prev_pid != 0) {`));
    assert.match(p, /\$d = \(nsecs - \$s\) \/ 1000000;\n {4}@dist\[\$next\] = hist\(\$d\);/);
    assert.ok(!p.includes('@tgid'), 'no process map without -p/-P');
  });

  it('-p and -P use the thread → process map filled in sched_switch', () => {
    const p = buildProgram({ milliseconds: false, pids: true, tids: false, pid: 77 });
    assert.match(p, /@tgid\[tid\] = pid;/);
    assert.match(p, /if \(args\.pid != 0 && @tgid\[args\.pid\] == 77\)/);
    assert.match(p, /if \(\$g == 77\) \{\n {6}\$d = \(nsecs - \$s\) \/ 1000;\n {6}@dist\[\$g\] = hist\(\$d\);/);
  });
});

describe('runqlat on the live kernel', () => {
  const skip = liveSkipReason();

  it('-L: a section for the workload thread with at least one wait per nanosleep wakeup', { skip }, async () => {
    const run = startBpfscope(['runqlat', '-L']);
    assert.ok(await run.waitFor(/Hit Ctrl-C to end\.\n/, 20_000), run.stderr());
    const w = spawnSync(workloadPath(), ['comm', 'bpfs_rq', 'spin', '50', 'nanosleep', '40', '2000'], {
      encoding: 'utf8',
    });
    assert.equal(w.status, 0, w.stderr);
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^Tracing run queue latency\.\.\. Hit Ctrl-C to end\.\n\n\ntid = \d+\n {5}usecs {15}: count {5}distribution\n/,
    );
    const mine = parseSections(r.stdout, 'tid').find((s) => s.label === String(w.pid));
    assert.ok(mine, `no section tid = ${w.pid}\n${r.stdout}`);
    // Each wakeup is one wait. The kernel skips a tracepoint program that would nest inside another BPF program
    // on the same CPU (bpf_prog_active), so other tracers busy on this machine (syscall tracing in other tests)
    // can hide some wakeups: require most of them, not all.
    assert.ok(total(mine) >= 20, `only ${total(mine)} waits for 40 wakeups`);
  });

  it('-p PID -P: only the target process, one section "pid = PID"', { skip }, async () => {
    const child = spawn(
      workloadPath(),
      ['comm', 'bpfs_rqp', 'sleep-ms', '5000', 'nanosleep', '30', '2000', 'spin', '20'],
      {
        stdio: 'ignore',
      },
    );
    const exited = new Promise((r) => child.on('exit', r));
    const run = startBpfscope(['runqlat', '-P', '-p', String(child.pid)]);
    assert.ok(await run.waitFor(/Hit Ctrl-C to end\.\n/, 20_000), run.stderr());
    await exited;
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const sections = parseSections(r.stdout, 'pid');
    assert.deepEqual(
      sections.map((s) => s.label),
      [String(child.pid)],
      r.stdout,
    );
    assert.ok(total(sections[0]!) >= 15, r.stdout);
  });

  it('interval and count: "1 2" prints two histograms and exits by itself; -T adds the time', { skip }, async () => {
    const r = await runBpfscope(['runqlat', '-mT', '1', '2']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.signal, null);
    const times = r.stdout.match(/^\d\d:\d\d:\d\d {0}$/gm) ?? [];
    assert.equal(times.length, 2, r.stdout);
    assert.equal((r.stdout.match(/^ {5}msecs {15}: count {5}distribution$/gm) ?? []).length, 2, r.stdout);
  });

  it('--pidnss fails with one sentence', { skip }, async () => {
    const r = await runBpfscope(['runqlat', '--pidnss']);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /^ERROR: runqlat: --pidnss needs each task's PID namespace .* cannot dereference kernel structs yet\n$/,
    );
  });
});
