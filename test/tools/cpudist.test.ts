/**
 * cpudist (src/tools/cpudist.ts): the generated program and live runs: a workload that spins (long on-CPU time)
 * and sleeps 10 ms at a time (off-CPU time in the 8192 -> 16383 usecs bucket).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import type { MapDump } from '../../src/runtime/output/model.js';
import { buildProgram, formatInterval } from '../../src/tools/cpudist.js';
import { workloadPath } from '../helpers/workload.js';
import { liveSkipReason, startBpfscope } from './helpers.js';
import { histDump } from './maps.js';
import { parseSections, total } from './sched.js';

describe('cpudist program and output', () => {
  it('on-CPU: the previous task ends its interval, the next one starts; idle (pid 0) keyed per CPU', () => {
    const p = buildProgram({
      offcpu: false,
      milliseconds: false,
      pids: false,
      tids: false,
      includeIdle: false,
      extension: false,
    });
    assert.match(
      p,
      /if \(args\.prev_pid != 0\) \{\n {4}\$s = @start\[args\.prev_pid, \(uint32\)\(args\.prev_pid == 0 \? cpu : 0xffffffff\)\];/,
    );
    assert.match(
      p,
      /if \(args\.next_pid != 0\) \{\n {4}@start\[args\.next_pid, \(uint32\)\(args\.next_pid == 0 \? cpu : 0xffffffff\)\] = \$ts;/,
    );
  });

  it('-O -I: no idle filter, off-CPU order', () => {
    const p = buildProgram({
      offcpu: true,
      milliseconds: true,
      pids: false,
      tids: false,
      includeIdle: true,
      extension: false,
    });
    assert.ok(p.indexOf('@start[args.prev_pid') < p.indexOf('$s = @start[args.next_pid'));
    assert.ok(!p.includes('!= 0) {\n    @start'));
  });

  it('-P sections are labelled "pid = <pid> <comm with its newline>" as bcc prints them', () => {
    const maps: Record<string, MapDump> = { dist: histDump('dist', new Map([[42n, [3]]])) };
    const text = formatInterval(
      { readMap: (n) => maps[n]! },
      {
        offcpu: false,
        milliseconds: false,
        pids: true,
        tids: false,
        includeIdle: false,
        extension: false,
        timestamp: false,
      },
      () => 'bash',
    );
    assert.equal(
      text,
      '\n\npid = 42 bash\n\n' +
        '     usecs               : count     distribution\n' +
        '         0 -> 1          : 0        |                                        |\n' +
        '         2 -> 3          : 1        |****************************************|\n',
    );
  });
});

describe('cpudist on the live kernel', () => {
  const skip = liveSkipReason();

  it('-O -L: twenty 10 ms sleeps land in 8192 -> 16383 usecs', { skip }, async () => {
    const run = startBpfscope(['cpudist', '-O', '-L']);
    assert.ok(await run.waitFor(/Tracing off-CPU time\.\.\. Hit Ctrl-C to end\.\n/, 20_000), run.stderr());
    const w = spawnSync(workloadPath(), ['comm', 'bpfs_cd', 'nanosleep', '20', '10000'], { encoding: 'utf8' });
    assert.equal(w.status, 0, w.stderr);
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const mine = parseSections(r.stdout, 'tid').find((s) => s.label === String(w.pid));
    assert.ok(mine, r.stdout);
    const bucket = mine.rows.find(([lo]) => lo === 8192);
    assert.ok(bucket && bucket[2] >= 15, `8192 -> 16383 has ${bucket?.[2]} of 20\n${r.stdout}`);
  });

  it('-P -e: the spinning workload has long on-CPU intervals; the summary line follows', { skip }, async () => {
    const run = startBpfscope(['cpudist', '-P', '-e']);
    assert.ok(await run.waitFor(/Tracing on-CPU time\.\.\. Hit Ctrl-C to end\.\n/, 20_000), run.stderr());
    const w = spawnSync(workloadPath(), ['comm', 'bpfs_cd', 'spin', '300', 'nanosleep', '10', '1000'], {
      encoding: 'utf8',
    });
    assert.equal(w.status, 0, w.stderr);
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    // The workload has exited, so bcc's pid_to_comm() finds no /proc entry and prints the bare pid.
    const mine = parseSections(r.stdout, 'pid').find((s) => s.label === String(w.pid));
    assert.ok(mine, r.stdout);
    assert.ok(total(mine) >= 10, r.stdout);
    assert.ok(
      mine.rows.some(([lo, , n]) => lo >= 512 && n > 0),
      `no on-CPU interval >= 512 us while spinning 300 ms\n${r.stdout}`,
    );
    assert.match(r.stdout, /\navg = \d+ usecs, total: \d+ usecs, count: \d+\n\n$/);
  });
});
