/**
 * gethostlatency (src/tools/gethostlatency.ts): bcc's -h text, header and row format, the generated program, and a
 * live run that sees `getent hosts localhost` resolve its name through libc.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { formatHelp } from '../../src/tools/framework/argparse.js';
import { runTool } from '../../src/index.js';
import { buildProgram, formatRow, header, type LookupRow, SPEC, toRow } from '../../src/tools/gethostlatency.js';
import { liveSkipReason, startBpfscope } from './helpers.js';
import { apiRows, jsonRows } from './jsonrun.js';

describe('gethostlatency interface (bcc tools/gethostlatency.py)', () => {
  it("-h is argparse's help for bcc's parser", () => {
    assert.equal(
      formatHelp(SPEC, 78),
      `usage: gethostlatency [-h] [-p PID]

Show latency for getaddrinfo/gethostbyname[2] calls

options:
  -h, --help         show this help message and exit
  -p PID, --pid PID  trace this PID only

examples:
    ./gethostlatency           # time getaddrinfo/gethostbyname[2] calls
    ./gethostlatency -p 181    # only trace PID 181
`,
    );
  });

  it('header and rows: "%-9s %-7d %-16s %10.2f %s", latency in ms', () => {
    assert.equal(header(), 'TIME      PID     COMM                  LATms HOST\n');
    const row = toRow({ kind: 'lookup', pid: 3340, deltaNs: 3551234, comm: 'getent', host: 'localhost' }, '04:08:43');
    assert.deepEqual(row, { time: '04:08:43', pid: 3340, comm: 'getent', latencyNs: 3551234, host: 'localhost' });
    assert.equal(formatRow(row), '04:08:43  3340    getent                 3.55 localhost\n');
    assert.equal(
      formatRow(
        toRow(
          { kind: 'lookup', pid: 12, deltaNs: 1234567890, comm: 'a-very-long-comm', host: 'x.example' },
          '23:59:59',
        ),
      ),
      '23:59:59  12      a-very-long-comm    1234.57 x.example\n',
    );
  });

  it('probes the three libc functions at entry and return; -p filters at entry', () => {
    const all = buildProgram();
    assert.match(
      all,
      /^uprobe:libc:getaddrinfo, uprobe:libc:gethostbyname, uprobe:libc:gethostbyname2 \/arg0 != 0\/ \{$/m,
    );
    assert.match(all, /^uretprobe:libc:getaddrinfo, uretprobe:libc:gethostbyname, uretprobe:libc:gethostbyname2 /m);
    assert.match(all, /str\(arg0, 80\)/);
    assert.match(buildProgram({ pid: 181 }), /\/\(arg0 != 0\) && \(pid == 181\)\//);
    assert.doesNotMatch(buildProgram({ pid: -1 }), /pid ==/);
  });
});

describe('gethostlatency on the live kernel', () => {
  const skip =
    liveSkipReason() ?? (spawnSync('getent', ['--version']).status !== 0 ? 'getent is not installed' : undefined);

  it('sees getent resolve localhost, with its pid, comm and host name', { skip }, async () => {
    const run = startBpfscope(['gethostlatency']);
    assert.ok(await run.waitFor(/HOST\n/, 20_000), run.stderr());
    const g = spawnSync('getent', ['hosts', 'localhost'], { encoding: 'utf8' });
    assert.equal(g.status, 0, g.stderr);
    assert.ok(await run.waitFor(/ getent +[\d.]+ localhost\n/, 10_000), run.stdout());
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.split('\n')[0], 'TIME      PID     COMM                  LATms HOST');
    const rows = [...r.stdout.matchAll(/^(\d\d:\d\d:\d\d) {2}(\d+) +getent {10} +(\d+\.\d\d) localhost$/gm)];
    assert.ok(rows.length >= 1, r.stdout);
    for (const m of rows) {
      // `getent hosts` runs its lookups in its own process: the spawned child's pid.
      assert.equal(Number(m[2]), g.pid, r.stdout);
      assert.equal(m[0].length, 9 + 1 + 7 + 1 + 16 + 1 + 10 + 1 + 'localhost'.length);
    }
  });
  it('-p shows only the lookups of that process', { skip }, async () => {
    // The shell waits for a line on stdin, then becomes getent (same PID).
    const target = spawn('sh', ['-c', 'read x; exec getent hosts localhost'], { stdio: ['pipe', 'ignore', 'ignore'] });
    const exited = new Promise((res) => target.on('close', res));
    const run = startBpfscope(['gethostlatency', '-p', String(target.pid)]);
    let other: number;
    try {
      assert.ok(await run.waitFor(/HOST\n/, 20_000), run.stderr());
      const g = spawnSync('getent', ['hosts', 'localhost'], { encoding: 'utf8' });
      assert.equal(g.status, 0, g.stderr);
      other = g.pid;
      target.stdin!.end('go\n');
      await exited;
      assert.ok(await run.waitFor(new RegExp(`^\\S+ +${target.pid} +getent `, 'm'), 10_000), run.stdout());
    } finally {
      target.kill();
      run.child.kill('SIGINT');
    }
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const pids = r.stdout
      .split('\n')
      .slice(1)
      .filter((l) => l !== '')
      .map((l) => Number(l.split(/ +/)[1]));
    assert.ok(pids.length >= 1, r.stdout);
    assert.ok(!pids.includes(other), r.stdout);
    assert.deepEqual(new Set(pids), new Set([target.pid]), r.stdout);
  });

  /** The facts the first text test checks: getent's lookup of localhost, in its own process. */
  function assertLookups(rows: LookupRow[], pid: number): void {
    const mine = rows.filter((r) => r.pid === pid);
    assert.ok(mine.length >= 1, JSON.stringify(rows));
    for (const r of mine) {
      assert.deepEqual([r.comm, r.host], ['getent', 'localhost']);
      assert.ok(r.latencyNs > 0, String(r.latencyNs));
    }
  }
  const getent = (): number => {
    const g = spawnSync('getent', ['hosts', 'localhost'], { encoding: 'utf8' });
    assert.equal(g.status, 0, g.stderr);
    return g.pid;
  };

  it('--json: the same lookup as objects', { skip }, async () => {
    let pid = 0;
    const rows = await jsonRows<LookupRow>(
      ['gethostlatency'],
      6, // a uprobe and a uretprobe link for each of the three functions
      () => {
        pid = getent();
      },
      (r) => r.some((x) => x.pid === pid),
    );
    assertLookups(rows, pid);
  });

  it('runTool: the same lookup as rows', { skip }, async () => {
    const run = await runTool('gethostlatency');
    const pid = getent();
    assertLookups(await apiRows(run, (r) => r.some((x) => x.pid === pid)), pid);
  });
});
