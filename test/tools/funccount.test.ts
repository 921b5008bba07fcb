/**
 * funccount (src/tools/funccount.ts): -h equal to CPython's argparse on bcc's parser (fixture
 * test/tools/fixtures/func-tools-argparse.json), the generated program, bcc's FUNC/COUNT table, bcc's error
 * messages, and live runs with -p on the test workload: its noinline `num` function and `args6` (uprobes), libc's
 * `syscall()` (`c:syscall`), and a syscall tracepoint, with exact counts.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { runTool } from '../../src/index.js';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { MapDump } from '../../src/runtime/output/model.js';
import { formatHelp } from '../../src/tools/framework/argparse.js';
import type { Targets } from '../../src/tools/framework/functool.js';
import { kprobesAvailable, parseProbeSpec } from '../../src/tools/framework/probespec.js';
import { buildProgram, formatCounts, SPEC } from '../../src/tools/funccount.js';
import { repoRoot } from '../helpers/cli.js';
import { workloadPath } from '../helpers/workload.js';
import { liveSkipReason, runBpfscope } from './helpers.js';
import { jsonLines, startJson } from './jsonrun.js';
import { blockedInRead, runAgainstWorkload } from './pidrun.js';

const fixture = JSON.parse(
  readFileSync(join(repoRoot(), 'test', 'tools', 'fixtures', 'func-tools-argparse.json'), 'utf8'),
) as { help: Record<string, string> };

const lib = (n: string) => (n === 'c' ? '/lib/libc.so.6' : undefined);

function counts(rows: [string, number][]): MapDump {
  return {
    name: '@counts',
    keyTypes: [],
    valueType: { kind: 'count' } as never,
    entries: rows.map(([k, v]) => ({
      key: [{ kind: 'string', value: k }],
      value: { kind: 'count', value: BigInt(v), signed: false },
    })),
  };
}

describe('funccount options, program and table', () => {
  it('-h equals argparse on bcc parser', () => {
    assert.equal(formatHelp(SPEC, 78), fixture.help.funccount);
  });

  it('one probe over every target, counted by func (functions) or probe (tracepoints)', () => {
    const spec = parseProbeSpec('c:re*', { findLibrary: lib });
    const t: Targets = {
      spec,
      names: ['read', 'recv'],
      attachPoints: ['uprobe:/lib/libc.so.6:read', 'uprobe:/lib/libc.so.6:recv'],
    };
    assert.equal(
      buildProgram(t, { pid: 42, cpu: 0 }),
      'config = { max_map_keys = 10240 }\n' +
        'uprobe:/lib/libc.so.6:read,\nuprobe:/lib/libc.so.6:recv /(pid == 42) && (cpu == 0)/ {\n' +
        '  @counts[func] = count();\n}\n',
    );
    const tp = parseProbeSpec('t:sched:sched_switch');
    assert.match(
      buildProgram({ spec: tp, names: ['sched:sched_switch'], attachPoints: ['tracepoint:sched:sched_switch'] }, {}),
      /^tracepoint:sched:sched_switch \{\n {2}@counts\[probe\] = count\(\);\n\}\n$/m,
    );
  });

  it('"%-36s %8d" rows ascending by count, ties in attach order, tracepoints as cat:event', () => {
    const t: Targets = {
      spec: parseProbeSpec('t:syscalls:sys_enter_get*'),
      names: ['syscalls:sys_enter_getpid', 'syscalls:sys_enter_getppid', 'syscalls:sys_enter_gettid'],
      attachPoints: [],
    };
    const out = formatCounts(
      t,
      counts([
        ['tracepoint:syscalls:sys_enter_gettid', 5],
        ['tracepoint:syscalls:sys_enter_getppid', 12345],
        ['tracepoint:syscalls:sys_enter_getpid', 5],
      ]),
    );
    assert.equal(
      out,
      'FUNC                                    COUNT\n' +
        'syscalls:sys_enter_getpid                   5\n' +
        'syscalls:sys_enter_gettid                   5\n' +
        'syscalls:sys_enter_getppid              12345\n',
    );
  });
});

describe('funccount errors', { skip: liveSkipReason() }, () => {
  it("bcc's messages, exit 1", async () => {
    let r = await runBpfscope(['funccount', 'x:y:z']);
    assert.equal(r.stdout, "Type must be 'p', 't', or 'u', but got x\n");
    assert.equal(r.code, 1);
    r = await runBpfscope(['funccount', `${workloadPath()}:no_such_fn*`]);
    assert.equal(r.stdout, 'No functions matched by pattern ^no_such_fn.*$\n');
    assert.equal(r.code, 1);
    r = await runBpfscope(['funccount', 'bpfscope_nolib:f']);
    assert.equal(r.stdout, 'unable to find library bpfscope_nolib\n');
    r = await runBpfscope(['funccount']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /funccount: error: the following arguments are required: pattern\n$/);
  });

  it('kernel functions without kprobes: one sentence, exit 1', { skip: kprobesAvailable() }, async () => {
    const r = await runBpfscope(['funccount', 'vfs_read']);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /^kernel functions cannot be traced: this kernel was built without kprobes/);
    assert.equal(r.stdout.split('\n').length, 2);
  });
});

describe('funccount on the live kernel', { skip: liveSkipReason() }, () => {
  const table = (out: string) => out.slice(out.indexOf('FUNC')).split('\n').slice(1, -2);

  it('uprobes on the workload: num 7 times, args6 once (-r with two functions)', async () => {
    const r = await runAgainstWorkload(
      (pid) => ['funccount', '-p', String(pid), '-r', `${workloadPath()}:(num|args6)$`],
      ['getppid', 7, 'args6', 1, 2, 3, 4, 5, 6],
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout.split('\n')[0],
      `Tracing 2 functions for "${workloadPath()}:(num|args6)$"... Hit Ctrl-C to end.`,
    );
    assert.deepEqual(table(r.stdout), [
      'args6                                       1',
      'num                                         7',
    ]);
    assert.match(r.stdout, /\n\nFUNC {36}COUNT\n[\s\S]*\nDetaching\.\.\.\n$/);
  });

  it('libc: c:syscall once per workload syscall', async () => {
    const r = await runAgainstWorkload(
      (pid) => ['funccount', '-p', String(pid), 'c:syscall'],
      ['getppid', 9, 'getpid', 3],
    );
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(table(r.stdout), ['syscall                                    12']);
  });

  it('tracepoints by wildcard: syscalls:sys_enter_getp* with -T', async () => {
    const r = await runAgainstWorkload(
      (pid) => ['funccount', '-T', '-p', String(pid), 't:syscalls:sys_enter_getp*'],
      ['getppid', 4, 'getpid', 2, 'getpgrp', 3],
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /\n\n\d\d:\d\d:\d\d\nFUNC/);
    assert.deepEqual(table(r.stdout), [
      'syscalls:sys_enter_getpid                   2',
      'syscalls:sys_enter_getpgrp                  3',
      'syscalls:sys_enter_getppid                  4',
    ]);
  });
});

describe('funccount runTool', { skip: liveSkipReason() }, () => {
  it('-p PID t:syscalls:sys_enter_getp*: getpid 2, getpgrp 3, getppid 4, ascending', async () => {
    const w = spawn(workloadPath(), ['wait-stdin', 'getppid', '4', 'getpid', '2', 'getpgrp', '3'], {
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    const exited = new Promise<number | null>((resolve) => w.on('close', (c) => resolve(c)));
    try {
      const run = await runTool('funccount', ['-p', String(w.pid), 't:syscalls:sys_enter_getp*']);
      w.stdin!.end('x');
      assert.equal(await exited, 0);
      await run.close();
      const ticks = [];
      for await (const t of run.intervals()) ticks.push(t);
      assert.equal(ticks.length, 1);
      assert.deepEqual(
        ticks[0]!.rows.map((r) => [r.name, r.count]),
        [
          ['syscalls:sys_enter_getpid', 2n],
          ['syscalls:sys_enter_getpgrp', 3n],
          ['syscalls:sys_enter_getppid', 4n],
        ],
      );
    } finally {
      w.kill('SIGKILL');
    }
  });
});

describe('funccount --json', { skip: liveSkipReason() }, () => {
  it('-p PID t:syscalls:sys_enter_getp* --json: the final interval as one object with the same counts', async () => {
    const w = spawn(workloadPath(), ['wait-stdin', 'getppid', '4', 'getpid', '2', 'getpgrp', '3'], {
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    const exited = new Promise<number | null>((resolve) => w.on('close', (c) => resolve(c)));
    try {
      await blockedInRead(w.pid!);
      // one link per matching tracepoint: attached once the process holds them all
      const links = readdirSync('/sys/kernel/tracing/events/syscalls').filter((d) =>
        d.startsWith('sys_enter_getp'),
      ).length;
      const run = await startJson(['funccount', '--json', '-p', String(w.pid), 't:syscalls:sys_enter_getp*'], links);
      try {
        w.stdin!.end('x');
        assert.equal(await exited, 0);
      } finally {
        run.child.kill('SIGINT');
      }
      const r = await run.done;
      assert.equal(r.code, 0, r.stderr);
      const ticks = jsonLines<{ rows: { name: string; count: number }[] }>(r.stdout);
      assert.equal(ticks.length, 1, r.stdout);
      assert.deepEqual(
        ticks[0]!.rows.map((x) => [x.name, x.count]),
        [
          ['syscalls:sys_enter_getpid', 2],
          ['syscalls:sys_enter_getpgrp', 3],
          ['syscalls:sys_enter_getppid', 4],
        ],
      );
    } finally {
      w.kill('SIGKILL');
    }
  });
});
