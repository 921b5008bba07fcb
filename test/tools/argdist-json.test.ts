/**
 * argdist's `--json` and `runTool('argdist', ...)` (docs/tools/argdist.md, "JSON AND API") on the live kernel: the
 * workload calls getppid 3 times and its num() with "1".."6" and "3" (seven calls, returning their argument), and
 * the objects hold exactly the counts and log2 buckets that the text test (argdist.test.ts) reads from the output.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { runTool } from '../../src/index.js';
import type { ArgdistInterval } from '../../src/tools/argdist.js';
import { workloadPath } from '../helpers/workload.js';
import { liveSkipReason, startBpfscope } from './helpers.js';
import { jsonLines } from './jsonrun.js';

/** The workload, stopped before its calls until its stdin gets a byte; resolves with its exit status. */
function startWorkload(): { child: ChildProcess; exited: Promise<number | null> } {
  const child = spawn(workloadPath(), ['wait-stdin', 'getppid', 3, 'args6', 1, 2, 3, 4, 5, 6].map(String), {
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  return { child, exited: new Promise((resolve) => child.on('close', (c) => resolve(c))) };
}

/** -C on the getppid tracepoint (labelled), -C on num()'s string argument, -H on num()'s return value. */
function specs(w: string): string[] {
  return [
    '-C',
    't:syscalls:sys_enter_getppid():u64:args->__syscall_nr#getppid calls',
    '-C',
    `p:${w}:num(const char *s):char*:s`,
    '-H',
    `r:${w}:num():long:$retval`,
  ];
}

/** What every interval printed after the workload ended holds (-c: cumulative), as JSON values. */
function expected(w: string): ArgdistInterval['probes'] {
  return [
    {
      kind: 'freq',
      title: 'getppid calls',
      rows: [{ values: [110n], event: 'args->__syscall_nr = 110', count: 3n }],
    },
    {
      kind: 'freq',
      title: `p:${w}:num(const char *s):char*:s`,
      rows: [
        { values: ['1'], event: 's = 1', count: 1n },
        { values: ['2'], event: 's = 2', count: 1n },
        { values: ['4'], event: 's = 4', count: 1n },
        { values: ['5'], event: 's = 5', count: 1n },
        { values: ['6'], event: 's = 6', count: 1n },
        { values: ['3'], event: 's = 3', count: 2n },
      ],
    },
    {
      kind: 'hist',
      title: '$retval',
      // bcc's "0 -> 1" row has low 1 (framework/hist.ts log2Buckets), then 2 -> 3 and 4 -> 7
      buckets: [
        { low: 1n, high: 1n, count: 1n },
        { low: 2n, high: 3n, count: 3n },
        { low: 4n, high: 7n, count: 3n },
      ],
    },
  ];
}

/** The JSON text of `x` with bigints as numbers (all values here are small). */
function asJson(x: unknown): unknown {
  return JSON.parse(JSON.stringify(x, (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v)));
}

/** Whether an interval holds the workload's three getppid calls (its last events arrived). */
const complete = (t: { probes: { kind: string; rows?: { count: unknown }[] }[] }): boolean =>
  t.probes[0]?.rows?.[0] !== undefined && Number(t.probes[0].rows[0].count) === 3;

describe('argdist --json and runTool on the live kernel', () => {
  const skip = liveSkipReason();

  it(
    'runTool -c -p: the interval after the workload holds 3 getppid calls, 7 num() rows, 3 buckets',
    { skip },
    async () => {
      const w = workloadPath();
      const target = startWorkload();
      const run = await runTool('argdist', ['-c', '-p', String(target.child.pid), ...specs(w)]);
      let last: ArgdistInterval | undefined;
      try {
        target.child.stdin!.end('x');
        assert.equal(await target.exited, 0);
        for await (const t of run.intervals()) {
          if (complete(t)) {
            last = t;
            break;
          }
        }
      } finally {
        target.child.kill('SIGKILL');
        assert.equal(await run.close(), 0);
      }
      assert.ok(last, 'no interval with the workload events');
      assert.match(last.time, /^\d\d:\d\d:\d\d$/);
      assert.deepEqual(last.probes, expected(w));
    },
  );

  it('--json -c -p: one JSON object a line, the same values', { skip }, async () => {
    const w = workloadPath();
    const target = startWorkload();
    const run = startBpfscope(['argdist', '--json', '-c', '-p', String(target.child.pid), ...specs(w)]);
    try {
      // the first interval's object comes a second after every probe is attached
      assert.ok(await run.waitFor(/^\{"time"/m, 30_000), run.stderr());
      target.child.stdin!.end('x');
      assert.equal(await target.exited, 0);
      const seen = await run.waitFor(/"count":3\}\]\},\{"kind":"freq"/, 20_000);
      assert.ok(seen, run.stdout());
    } finally {
      target.child.kill('SIGKILL');
      run.child.kill('SIGINT');
    }
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const ticks = jsonLines<{ time: string; probes: { kind: string; rows?: { count: unknown }[] }[] }>(r.stdout);
    const last = ticks.filter(complete).at(-1);
    assert.ok(last, r.stdout);
    assert.match(last.time, /^\d\d:\d\d:\d\d$/);
    assert.deepEqual(last.probes, asJson(expected(w)));
  });
});
