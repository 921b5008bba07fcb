/**
 * syscount (src/tools/syscount.ts): bcc's header lines and column formats, the generated program, and live runs
 * that count a known number of rare system calls made by the workload (getpgrp, failed openat).
 */
import assert from 'node:assert/strict';
import { runTool } from '../../src/index.js';
import { describe, it } from 'node:test';
import { buildProgram, formatList, formatStats } from '../../src/tools/syscount.js';
import { workloadPath } from '../helpers/workload.js';
import { liveSkipReason, runBpfscope } from './helpers.js';

describe('syscount output format (bcc tools/syscount.py)', () => {
  const rows = [
    { key: 39n, count: 5n, totalNs: 1_500n },
    { key: 0n, count: 10739n, totalNs: 3_415_860_022n },
    { key: 321n, count: 32n, totalNs: 4_965n },
    { key: 0xffffffffn, count: 1n, totalNs: 1n },
  ];
  const name = (k: bigint): string => (k === 0n ? 'read' : k === 39n ? 'getpid' : `[unknown: ${k}]`);

  it('counts: "%-22s %8s" header, rows sorted by count, top N', () => {
    const text = formatStats(rows, {
      latency: false,
      milliseconds: false,
      process: false,
      top: 10,
      keyName: name,
      time: '09:39:04',
    });
    assert.equal(
      text,
      '[09:39:04]\n' +
        'SYSCALL                   COUNT\n' +
        'read                      10739\n' +
        '[unknown: 321]               32\n' +
        'getpid                        5\n' +
        '\n',
    );
    const top1 = formatStats(rows, {
      latency: false,
      milliseconds: false,
      process: false,
      top: 1,
      keyName: name,
      time: 'T',
    });
    assert.equal(top1, '[T]\nSYSCALL                   COUNT\nread                      10739\n\n');
  });

  it('latency: "%-22s %8s %16s" header, "%16.3f" us (or "%16.6f" ms), sorted by total time', () => {
    const us = formatStats(rows, {
      latency: true,
      milliseconds: false,
      process: false,
      top: 10,
      keyName: name,
      time: 'T',
    });
    assert.equal(
      us,
      '[T]\n' +
        'SYSCALL                   COUNT        TIME (us)\n' +
        'read                      10739      3415860.022\n' +
        '[unknown: 321]               32            4.965\n' +
        'getpid                        5            1.500\n' +
        '\n',
    );
    const ms = formatStats(rows.slice(0, 1), {
      latency: true,
      milliseconds: true,
      process: false,
      top: 10,
      keyName: name,
      time: 'T',
    });
    assert.equal(
      ms,
      '[T]\nSYSCALL                   COUNT        TIME (ms)\ngetpid                        5         0.001500\n\n',
    );
  });

  it('-P: the "PID    COMM" column', () => {
    const text = formatStats([{ key: 1n, count: 8n, totalNs: 0n }], {
      latency: false,
      milliseconds: false,
      process: true,
      top: 10,
      keyName: () => '1      systemd        ',
      time: 'T',
    });
    assert.equal(text, '[T]\nPID    COMM               COUNT\n1      systemd                8\n\n');
  });

  it('-l: four "%-22s" columns joined by three spaces', () => {
    assert.equal(
      formatList(['read', 'write', 'open', 'close', 'stat']),
      'close                    open                     read                     stat                  \nwrite                 \n',
    );
  });

  it('generated programs', () => {
    assert.equal(
      buildProgram({ pid: 42, failures: true, process: true }),
      'config = { max_map_keys = 10240 }\ntracepoint:raw_syscalls:sys_exit /(pid == 42) && (args.ret < 0)/ {\n  @data[pid] = count();\n}\n',
    );
    const lat = buildProgram({ latency: true, errno: 2, syscallNr: 257, exec: true });
    assert.match(
      lat,
      /tracepoint:raw_syscalls:sys_enter \/\(args\.id == 257\) && \(pid == cpid\)\/ \{\n {2}@start\[tid\] = nsecs;/,
    );
    assert.match(
      lat,
      /if \(\$s != 0 && args\.ret == -2\) \{\n {4}@count\[args\.id\] = count\(\);\n {4}@total_ns\[args\.id\] = sum\(nsecs - \$s\);/,
    );
  });
});

describe('syscount on the live kernel', () => {
  const skip = liveSkipReason();

  it('counts exactly the 137 getpgrp calls of an --exec child', { skip }, async () => {
    const r = await runBpfscope(['syscount', '--exec', workloadPath(), 'getpgrp', '137', 'getppid', '3']);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split('\n');
    assert.equal(lines[0], 'Tracing syscalls, printing top 10... Ctrl+C to quit.');
    assert.match(lines[1]!, /^\[\d\d:\d\d:\d\d\]$/);
    assert.equal(lines[2], 'SYSCALL                   COUNT');
    assert.ok(lines.includes('getpgrp                     137'), r.stdout);
    assert.ok(lines.includes('getppid                       3'), r.stdout);
    assert.equal(lines.at(-2), 'Detaching...');
  });

  it('-e ENOENT -L: 9 failed openat calls with their latency', { skip }, async () => {
    const r = await runBpfscope([
      'syscount',
      '-e',
      'ENOENT',
      '-L',
      '--exec',
      workloadPath(),
      'openat',
      '/nonexistent/bpfscope',
      '9',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /\nSYSCALL {19}COUNT {8}TIME \(us\)\n/);
    assert.match(r.stdout, /\nopenat {24}9 +\d+\.\d{3}\n/);
  });

  it('--syscall getpgrp -x: only failed calls of one syscall (none here)', { skip }, async () => {
    const r = await runBpfscope(['syscount', '--syscall', 'getpgrp', '-x', '--exec', workloadPath(), 'getpgrp', '5']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^Tracing failed syscall 'getpgrp'\.\.\. Ctrl\+C to quit\.\n\[[\d:]+\]\nSYSCALL {19}COUNT\n\nDetaching\.\.\.\n$/,
    );
  });

  it('-c PPID fails with one sentence naming the missing feature', { skip }, async () => {
    const r = await runBpfscope(['syscount', '-c', '1']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^ERROR: syscount: -c\/--ppid needs .*dereference kernel structs yet\n$/);
  });

  it('an unknown --syscall is reported as bcc does', async () => {
    const r = await runBpfscope(['syscount', '--syscall', 'nosuchcall']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, "Error: syscall 'nosuchcall' not found. Exiting.\n");
  });

  it('-l lists the syscall table', async () => {
    const r = await runBpfscope(['syscount', '-l']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /(^|\s)getpgrp\s/);
    assert.match(r.stdout, /(^|\s)openat\s/);
  });
});

describe('syscount --json and runTool', () => {
  const skip = liveSkipReason();

  it('runTool --exec: getpgrp 137 and getppid 3 in the rows', { skip }, async () => {
    const run = await runTool('syscount', ['--exec', workloadPath(), 'getpgrp', '137', 'getppid', '3']);
    const ticks = [];
    for await (const t of run.intervals()) ticks.push(t);
    assert.equal(await run.done, 0);
    assert.equal(ticks.length, 1);
    const rows = ticks[0]!.rows;
    assert.deepEqual(
      rows.filter((r) => r.name === 'getpgrp' || r.name === 'getppid').map((r) => [r.name, r.count, r.totalNs]),
      [
        ['getpgrp', 137n, null],
        ['getppid', 3n, null],
      ],
    );
  });

  it('--json -L --exec: 9 failed openat calls with their latency, one object', { skip }, async () => {
    const r = await runBpfscope([
      'syscount',
      '--json',
      '-e',
      'ENOENT',
      '-L',
      '--exec',
      workloadPath(),
      'openat',
      '/nonexistent/bpfscope',
      '9',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split('\n').filter(Boolean);
    assert.equal(lines.length, 1, r.stdout);
    const t = JSON.parse(lines[0]!) as { rows: { name: string; count: number; totalNs: number }[] };
    const openat = t.rows.find((x) => x.name === 'openat');
    assert.equal(openat?.count, 9, r.stdout);
    assert.ok(openat.totalNs > 0, r.stdout);
  });
});
