/**
 * stackcount (src/tools/stackcount.ts): -h equal to CPython's argparse on bcc's parser, the generated program and
 * key layout, bcc's multi-line and folded stack formats (with -d, -P, -v), and live runs with -p on the test
 * workload: its noinline `num` function (uprobe, user stacks) and the getppid syscall tracepoint (kernel and user
 * stacks), with exact counts.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { Frame } from '../../src/symbols/resolver.js';
import { formatHelp } from '../../src/tools/framework/argparse.js';
import { parseProbeSpec } from '../../src/tools/framework/probespec.js';
import { buildProgram, formatReport, keyLayout, SPEC, type StackcountFormat } from '../../src/tools/stackcount.js';
import type { StackEntry } from '../../src/tools/stacktool.js';
import { repoRoot } from '../helpers/cli.js';
import { workloadPath } from '../helpers/workload.js';
import { runTool } from '../../src/tools/api.js';
import { liveSkipReason, runBpfscope } from './helpers.js';
import { jsonLines } from './jsonrun.js';
import { runAgainstWorkload, startBlockedWorkload } from './pidrun.js';

const fixture = JSON.parse(
  readFileSync(join(repoRoot(), 'test', 'tools', 'fixtures', 'func-tools-argparse.json'), 'utf8'),
) as { help: Record<string, string> };

const kf = (name: string, addr = 0xffffffff81000000n): Frame => ({
  addr,
  name,
  offset: 4,
  kernel: true,
  source: 'kallsyms' as never,
});
const uf = (name: string | undefined, addr = 0x401000n): Frame => ({
  addr,
  name,
  offset: 16,
  kernel: false,
  source: 'elf' as never,
});

const fmt = (o: Partial<StackcountFormat> = {}): StackcountFormat => ({
  offset: false,
  verbose: false,
  delimiter: false,
  perPid: false,
  pidGiven: false,
  ...o,
});

describe('stackcount options, program and formats', () => {
  it('-h equals argparse on bcc parser, plus --svg, --format and -o (CPython argparse text)', () => {
    const bccOnly = {
      ...SPEC,
      options: SPEC.options.filter((o) => !['--svg', '--format', '-o'].includes(o.flags[0]!)),
    };
    assert.equal(formatHelp(bccOnly, 78), fixture.help.stackcount);
    const help = formatHelp(SPEC, 78);
    assert.ok(
      help.startsWith(
        'usage: stackcount [-h] [-p PID] [-c CPU] [-i INTERVAL] [-D DURATION] [-T] [-r]\n' +
          '                  [-s] [-P] [-K] [-U] [-v] [-d] [-f] [--debug] [--svg FILE]\n' +
          '                  [--format FORMAT] [-o FILE]\n' +
          '                  pattern\n',
      ),
      help,
    );
    assert.ok(
      help.includes(
        '  --svg FILE            write a flame graph (SVG) of the folded stacks of the\n' +
          '                        whole run to FILE instead of printing the stacks (with\n' +
          '                        -f, print them too)\n' +
          '  --format FORMAT       write the stacks as folded, svg (a flame graph), pprof\n' +
          '                        (profile.proto) or speedscope (JSON) to stdout or to\n' +
          '                        the -o file, instead of the report\n' +
          '  -o FILE, --output FILE\n' +
          '                        the file --format writes\n',
      ),
      help,
    );
  });

  it('program: one probe over every target, stacks + comm + pid as the key', () => {
    const spec = parseProbeSpec('t:sched:sched_switch');
    const t = { spec, names: ['sched:sched_switch'], attachPoints: ['tracepoint:sched:sched_switch'] };
    assert.equal(
      buildProgram(t, { pid: 3, cpu: null, kernel: true, user: false }),
      'config = { max_map_keys = 10240 }\ntracepoint:sched:sched_switch /pid == 3/ {\n' +
        '  @counts[kstack(raw), comm, pid] = count();\n}\n',
    );
    assert.match(buildProgram(t, { kernel: true, user: true }), /@counts\[kstack\(raw\), ustack\(raw\), comm, pid\]/);
    assert.match(
      buildProgram(t, { kernel: true, user: true }),
      /@__seen\[pid, comm, curtask->group_leader->start_time\]/,
    );
    assert.deepEqual(keyLayout({ kernel: true, user: true }), { kernel: 0, user: 1, comm: 2, id: 3 });
    assert.deepEqual(keyLayout({ kernel: false, user: true }), { user: 0, comm: 1, id: 2 });
  });

  const a: StackEntry = {
    comm: 'bash',
    id: 10,
    kernel: [kf('vfs_read'), kf('ksys_read')],
    user: [uf('read'), uf(undefined)],
    value: 3n,
  };
  const b: StackEntry = { ...a, id: 11, value: 2n };
  const c: StackEntry = { comm: 'sh', id: 12, kernel: [kf('vfs_write')], user: [], value: 1n };

  it('multi-line: "  frame" lines, "    --" with -d, merged across pids without -P, ascending', () => {
    assert.equal(
      formatReport([a, b, c], fmt({ delimiter: true }), false),
      '  vfs_write\n    --\n    1\n\n' + '  vfs_read\n  ksys_read\n    --\n  read\n  [unknown]\n    5\n\n',
    );
  });

  it('-P: "    comm [pid]" per process (not with -p); -s offsets, -v addresses', () => {
    const out = formatReport([a, b], fmt({ perPid: true, offset: true, verbose: true }), false);
    assert.equal(
      out,
      '  ffffffff81000000 vfs_read+0x4\n  ffffffff81000000 ksys_read+0x4\n' +
        '  401000           read+0x10\n  401000           [unknown]\n    bash [11]\n    2\n\n' +
        '  ffffffff81000000 vfs_read+0x4\n  ffffffff81000000 ksys_read+0x4\n' +
        '  401000           read+0x10\n  401000           [unknown]\n    bash [10]\n    3\n\n',
    );
    assert.doesNotMatch(formatReport([a], fmt({ perPid: true, pidGiven: true }), false), /bash \[10\]/);
  });

  it('folded: "comm;user outermost first;[-;]kernel outermost first N", comm empty without -P', () => {
    assert.equal(formatReport([a, b], fmt(), true), ';[unknown];read;ksys_read;vfs_read 5\n');
    assert.equal(
      formatReport([a], fmt({ perPid: true, delimiter: true }), true),
      'bash;[unknown];read;-;ksys_read;vfs_read 3\n',
    );
    assert.equal(formatReport([c], fmt({ delimiter: true }), true), ';-;vfs_write 1\n');
  });
});

describe('stackcount errors', { skip: liveSkipReason() }, () => {
  it('-K with -U, and an unmatched pattern', async () => {
    let r = await runBpfscope(['stackcount', '-K', '-U', 't:sched:sched_switch']);
    assert.equal(r.stdout, 'ERROR: -K and -U are mutually exclusive. If you want both stacks, that is the default.\n');
    assert.equal(r.code, 1);
    r = await runBpfscope(['stackcount', 't:bpfscope_none:*']);
    assert.equal(r.stdout, 'No functions matched by pattern ^bpfscope_none:.*$\n');
  });
});

describe('stackcount on the live kernel', { skip: liveSkipReason() }, () => {
  // libc's syscall() keeps no frame pointer: frames above it may be missing, as in bcc.
  // The last step keeps the workload alive while its symbols load (it calls num once more: 8 calls in all).
  const steps = ['getppid', 7, 'args6', 1, 2, 3, 4, 5, 6, 'sleep-ms', 1500];

  it('uprobe on the workload num: its 8 calls under one "num, step" stack (-U, -p)', async () => {
    const r = await runAgainstWorkload(
      (pid) => ['stackcount', '-U', '-p', String(pid), `${workloadPath()}:num`],
      steps,
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.split('\n')[0], `Tracing 1 functions for "${workloadPath()}:num"... Hit Ctrl-C to end.`);
    const body = r.stdout.slice(r.stdout.indexOf('\n\n') + 2, r.stdout.lastIndexOf('Detaching...'));
    const stacks = body.split('\n\n').filter((s) => s.trim() !== '');
    assert.equal(stacks.length, 1, r.stdout);
    assert.match(stacks[0]!, /^ {2}num\n {2}step\n/);
    assert.match(stacks[0]!, /\n {4}8$/);
    assert.doesNotMatch(stacks[0]!, /bpfs_workload \[/, 'no comm line with -p');
  });

  it('tracepoint: getppid kernel stacks below the user syscall() frame, -d delimiter, 7 in one stack', async () => {
    const r = await runAgainstWorkload(
      (pid) => ['stackcount', '-d', '-p', String(pid), 't:syscalls:sys_enter_getppid'],
      steps,
    );
    assert.equal(r.code, 0, r.stderr);
    const body = r.stdout.slice(r.stdout.indexOf('\n\n') + 2, r.stdout.lastIndexOf('Detaching...'));
    const stacks = body.split('\n\n').filter((s) => s.trim() !== '');
    assert.equal(stacks.length, 1, r.stdout);
    assert.match(stacks[0]!, /^ {2}\S+\n[\s\S]* {2}do_syscall_64\n[\s\S]*\n {4}--\n {2}syscall\n(?: {2}\S+\n)* {4}7$/);
  });

  it('--json -U -p: the same 8 num calls in one object at the end, every stack num <- step', async () => {
    const r = await runAgainstWorkload(
      (pid) => ['stackcount', '--json', '-U', '-p', String(pid), `${workloadPath()}:num`],
      steps,
      { links: 1 },
    );
    assert.equal(r.code, 0, r.stderr);
    const objs = jsonLines<{
      time: string;
      stacks: { comm: string; id: number; user: { name?: string }[]; value: number; kernel?: unknown }[];
    }>(r.stdout);
    assert.equal(objs.length, 1, r.stdout);
    assert.match(objs[0]!.time, /^\d\d:\d\d:\d\d$/);
    // one object per distinct stack (the text merges those that print alike: num called from several places in step)
    const stacks = objs[0]!.stacks;
    assert.equal(
      stacks.reduce((n, e) => n + e.value, 0),
      8,
      r.stdout,
    );
    for (const e of stacks) {
      assert.deepEqual([e.comm, e.id, e.kernel], ['bpfs_workload', r.pid, undefined]);
      assert.deepEqual(
        e.user.slice(0, 2).map((f) => f.name),
        ['num', 'step'],
      );
    }
  });

  it('runTool -d -p: getppid, 7 events with kernel stacks through do_syscall_64 below syscall()', async () => {
    const w = await startBlockedWorkload(steps);
    try {
      const run = await runTool('stackcount', ['-d', '-p', String(w.pid), 't:syscalls:sys_enter_getppid']);
      await w.release();
      const results = [];
      const closing = run.close();
      for await (const x of run.intervals()) results.push(x);
      assert.equal(await closing, 0);
      assert.equal(results.length, 1);
      const stacks = results[0]!.stacks;
      assert.equal(
        stacks.reduce((n, e) => n + e.value, 0n),
        7n,
      );
      for (const e of stacks) {
        assert.deepEqual([e.comm, e.id], ['bpfs_workload', w.pid]);
        assert.ok(
          e.kernel?.some((f) => f.name === 'do_syscall_64'),
          'kernel frames reach do_syscall_64',
        );
        assert.equal(e.user?.[0]?.name, 'syscall');
      }
    } finally {
      w.kill();
    }
  });
});
