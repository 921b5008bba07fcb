/**
 * pidpersec (src/tools/pidpersec.ts): the program, bcc's line format, and a live run in which the workload forks
 * 300 children: the per-second counts add up to at least 300 (text, --json and runTool).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { runTool } from '../../src/index.js';
import { buildProgram, formatLine } from '../../src/tools/pidpersec.js';
import { workloadPath } from '../helpers/workload.js';
import { liveSkipReason, startBpfscope } from './helpers.js';
import { jsonLines, startJson } from './jsonrun.js';

describe('pidpersec program and line', () => {
  it('counts sched_process_fork; prints "HH:MM:SS: PIDs/sec: N"', () => {
    assert.equal(
      buildProgram(),
      'config = { max_map_keys = 10240 }\ntracepoint:sched:sched_process_fork {\n  @count = count();\n}\n',
    );
    assert.equal(formatLine(21n, new Date(2024, 0, 1, 18, 33, 10)), '18:33:10: PIDs/sec: 21\n');
  });
});

describe('pidpersec on the live kernel', () => {
  const skip = liveSkipReason();

  it('300 forks are counted in the per-second lines; Ctrl-C exits 0', { skip }, async () => {
    const run = startBpfscope(['pidpersec']);
    assert.ok(await run.waitFor(/^Tracing\.\.\. Ctrl-C to end\.\n/, 20_000), run.stderr());
    const w = spawnSync(workloadPath(), ['comm', 'bpfs_pps', 'kill-self-child', '300'], { encoding: 'utf8' });
    assert.equal(w.status, 0, w.stderr);
    // The second in progress when the workload ended is printed at its end: wait for two more lines.
    const lines = (): number => run.stdout().split('\n').length;
    const before = lines();
    const twoMore = new RegExp(`^(?:[^\\n]*\\n){${before + 1}}`);
    assert.ok(await run.waitFor(twoMore, 10_000), run.stdout());
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const counts = r.stdout
      .split('\n')
      .slice(1, -1)
      .map((l) => {
        const m = /^\d\d:\d\d:\d\d: PIDs\/sec: (\d+)$/.exec(l);
        assert.ok(m, l);
        return Number(m[1]);
      });
    assert.ok(counts.reduce((a, b) => a + b, 0) >= 300, r.stdout);
  });
});

describe('pidpersec --json and runTool', () => {
  const skip = liveSkipReason();

  it('runTool: the per-second counts add up to at least the 300 forks', { skip }, async () => {
    const run = await runTool('pidpersec');
    const w = spawnSync(workloadPath(), ['comm', 'bpfs_pps', 'kill-self-child', '300'], { encoding: 'utf8' });
    assert.equal(w.status, 0, w.stderr);
    let sum = 0n;
    let ticks = 0;
    for await (const t of run.intervals()) {
      assert.match(t.time, /^\d\d:\d\d:\d\d$/);
      sum += t.count;
      // until the forks are all counted (30 s at most)
      if (sum >= 300n || ++ticks >= 30) break;
    }
    assert.equal(await run.close(), 0);
    assert.ok(sum >= 300n, String(sum));
  });

  it('--json: one {time, count} object a second, no header', { skip }, async () => {
    const run = await startJson(['pidpersec', '--json']);
    const w = spawnSync(workloadPath(), ['comm', 'bpfs_pps', 'kill-self-child', '300'], { encoding: 'utf8' });
    assert.equal(w.status, 0, w.stderr);
    const lines = run.stdout().split('\n').length;
    assert.ok(await run.waitFor(new RegExp(`^(?:[^\\n]*\\n){${lines + 1}}`), 10_000), run.stdout());
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const ticks = jsonLines<{ time: string; count: number }>(r.stdout);
    for (const t of ticks) assert.deepEqual(Object.keys(t), ['time', 'count']);
    assert.ok(ticks.reduce((a, t) => a + t.count, 0) >= 300, r.stdout);
  });
});
