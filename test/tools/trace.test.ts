/**
 * trace (src/tools/trace.ts): bcc's -h text and usage errors (test/tools/fixtures/trace-argdist-argparse.json),
 * probe parsing, the generated program, message/row/header formatting, and live runs against the workload on a
 * tracepoint, a uprobe and a uretprobe (exact rows), with -M/-t/-C and -U.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { formatHelp, parseArgs } from '../../src/tools/framework/argparse.js';
import { kprobesAvailable } from '../../src/tools/framework/probespec.js';
import {
  buildProgram,
  formatAggregate,
  formatEvent,
  formatMessage,
  header,
  parseTraceProbe,
  SPEC,
  type Symbolizer,
  type TraceEvent,
  type TraceRow,
} from '../../src/tools/trace.js';
import { runTool } from '../../src/index.js';
import { jsonLines, startJson } from './jsonrun.js';
import { repoRoot } from '../helpers/cli.js';
import { ccSkipReason, compileFixture } from '../helpers/compile.js';
import { WORKLOAD_COMM, workloadPath } from '../helpers/workload.js';
import { liveSkipReason, runBpfscope, startBpfscope } from './helpers.js';
import { blockedInRead, runAgainstWorkload } from './pidrun.js';

const fixture = JSON.parse(
  readFileSync(join(repoRoot(), 'test', 'tools', 'fixtures', 'trace-argdist-argparse.json'), 'utf8'),
) as { help: Record<string, string>; errors: { tool: string; argv: string[]; status: number; stderr: string }[] };

const sym: Symbolizer = { kernel: (a) => `k${a}`, user: (pid, a) => `u${pid}:${a}` };

function event(values: (bigint | string)[], more: Partial<TraceEvent> = {}): TraceEvent {
  return { tgid: 10, tid: 11, ts: null, cpu: null, kstack: [], ustack: [], comm: 'bash', values, ...more };
}

describe('trace options', () => {
  it('-h equals argparse on bcc tools/trace.py', () => {
    assert.equal(formatHelp(SPEC, 78), fixture.help.trace);
  });

  it('usage errors as argparse prints them', () => {
    for (const c of fixture.errors.filter((e) => e.tool === 'trace' && !e.argv.includes('-L'))) {
      assert.throws(
        () => parseArgs(SPEC, c.argv),
        (e: Error & { text?: () => string }) => e.text?.() === c.stderr,
        c.argv.join(' '),
      );
    }
    assert.deepEqual(parseArgs(SPEC, ['-M', '3', 'a', 'b']).probes, ['a', 'b']);
  });
});

describe('trace probe syntax (bcc Probe._parse_probe)', () => {
  it('specifier forms', () => {
    const k = parseTraceProbe('do_sys_open');
    assert.deepEqual(
      [k.type, k.library, k.target, k.display, k.format, k.filter],
      ['p', '', 'do_sys_open', 'do_sys_open', [], null],
    );
    const u = parseTraceProbe('c:malloc "size = %d", arg1');
    assert.deepEqual([u.type, u.library, u.target], ['p', 'c', 'malloc']);
    assert.deepEqual(u.format, [{ text: 'size = ' }, { conv: 'd' }]);
    assert.deepEqual(u.values, ['arg1']);
    const r = parseTraceProbe('r::__kmalloc (retval == 0) "kmalloc failed!"');
    assert.deepEqual([r.type, r.filter, r.format], ['r', '(retval == 0)', [{ text: 'kmalloc failed!' }]]);
    const t = parseTraceProbe('t:block:block_rq_complete "sectors=%d", args->nr_sector');
    assert.deepEqual(
      [t.type, t.target, t.display, t.values],
      ['t', 'block:block_rq_complete', 'block_rq_complete', ['args->nr_sector']],
    );
    const o = parseTraceProbe('kfree_skb+0x12');
    assert.deepEqual([o.target, o.offset], ['kfree_skb', 0x12]);
    const s = parseTraceProbe(
      'p::SyS_nanosleep(struct timespec *ts) ((ts->tv_sec + (1)) > 0) "%lld %s%%", ts->tv_nsec, f(a, b)',
    );
    assert.equal(s.signature, 'struct timespec *ts');
    assert.equal(s.filter, '((ts->tv_sec + (1)) > 0)');
    assert.deepEqual(s.values, ['ts->tv_nsec', 'f(a, b)']);
    assert.deepEqual(s.format, [{ conv: 'lld' }, { text: ' ' }, { conv: 's' }, { text: '%' }]);
  });

  it("bcc's errors", () => {
    assert.throws(() => parseTraceProbe('x:c:malloc'), {
      message: "error in probe 'x:c:malloc': probe type must be '', 'p', 't', 'r', or 'u', but got 'x'",
    });
    assert.throws(() => parseTraceProbe('t:a:b(int x)'), /USDT and tracepoint probes can't have a function signature/);
    assert.throws(() => parseTraceProbe('c:malloc (arg1 > (2)'), /unmatched end of predicate/);
    assert.throws(() => parseTraceProbe('c:malloc (arg1) xyz'), /expected format string in "s/);
    assert.throws(() => parseTraceProbe('c:malloc+zz'), /invalid offset format/);
    assert.throws(() => parseTraceProbe('c:malloc "%d %d", arg1'), /2 conversions but 1 arguments/);
    assert.throws(() => parseTraceProbe('c:malloc "%5d", arg1'), /unrecognized format specifier %5/);
  });

  it('generates one probe per specifier: filters, typed values, integers before the comm, strings last', () => {
    const probes = [
      parseTraceProbe('p:/bin/x:f(int fd, char *buf) (fd == 1) "%s %d %llx", buf, fd, arg3'),
      parseTraceProbe('t:syscalls:sys_enter_getppid'),
    ];
    const prog = buildProgram(probes, ['uprobe:/bin/x:f', 'tracepoint:syscalls:sys_enter_getppid'], {
      tgid: 42,
      stringSize: 80,
      timestamp: true,
      cpu: false,
      kernelStack: false,
      userStack: true,
    });
    assert.equal(
      prog,
      'config = { max_map_keys = 10240 }\n' +
        'uprobe:/bin/x:f /(pid == 42) && ((((int32)arg0) == 1))/ {\n' +
        '  printf("0\\x1f%u\\x1f%u\\x1f%lu\\x1f%ld\\x1f%lu\\x1f%s\\x1f%s\\x1f%s\\n", pid, tid, nsecs, ' +
        '(int32)(((int32)arg0)), (uint64)((arg2)), ustack(raw), comm, str((arg1), 80));\n}\n' +
        'tracepoint:syscalls:sys_enter_getppid /pid == 42/ {\n' +
        '  printf("1\\x1f%u\\x1f%u\\x1f%lu\\x1f%s\\x1f%s\\n", pid, tid, nsecs, ustack(raw), comm);\n}\n',
    );
  });
});

describe('trace output (bcc print_event)', () => {
  const rows = {
    timestamp: false,
    time: false,
    unixTimestamp: false,
    cpu: false,
    address: false,
    kernelStack: false,
    userStack: false,
    firstTs: 1_000_000_000n,
    firstTsReal: 1700000000,
  };

  it('header: "%-7s %-7s %-15s %-16s %s" with "-" unless every probe is trivial', () => {
    assert.equal(header(rows, false), 'PID     TID     COMM            FUNC             -\n');
    assert.equal(header(rows, true), 'PID     TID     COMM            FUNC             \n');
    assert.equal(
      header({ ...rows, time: true, cpu: true }, false),
      'TIME     CPU PID     TID     COMM            FUNC             -\n',
    );
    assert.equal(header({ ...rows, timestamp: true, unixTimestamp: true }, true).slice(0, 18), 'TIME              ');
  });

  it('messages: %d/%u decimal, %x hex, %c, %s, %K/%U symbols', () => {
    const p = parseTraceProbe('c:f "a=%d b=%x c=%c s=%s k=%K u=%U 100%%", arg1, arg2, arg3, arg4, arg5, arg6');
    assert.equal(
      formatMessage(p, event([-5n, 255n, 65n, 'str', 7n, 8n]), sym),
      'a=-5 b=ff c=A s=str k=k7 u=u10:8 100%',
    );
  });

  it('rows with -t offset, -C, stacks with -a', () => {
    const p = parseTraceProbe('c:malloc');
    const ev = event([], { ts: 2_234_567_891n, cpu: 3, ustack: [0x401000n, 0x402000n] });
    assert.equal(formatEvent(p, ev, '', rows, sym), '10      11      bash            malloc           \n');
    assert.equal(
      formatEvent(p, ev, 'm', { ...rows, timestamp: true, cpu: true, userStack: true, address: true }, sym),
      '1.234568 3   10      11      bash            malloc           m\n' +
        '                  401000 u10:4198400\n                  402000 u10:4202496\n',
    );
    assert.equal(
      formatEvent(p, ev, 'm', { ...rows, timestamp: true, unixTimestamp: true }, sym),
      '1700000001.234568 10      11      bash            malloc           m\n',
    );
    assert.match(formatEvent(p, ev, 'm', { ...rows, time: true }, sym), /^\d\d:\d\d:\d\d 10 {6}11 /);
  });

  it('-A: each distinct event with its count, most frequent first', () => {
    assert.equal(
      formatAggregate(
        new Map([
          ['a\n', 1],
          ['b\n', 3],
        ]),
      ),
      'b\n-->COUNT 3\n\na\n-->COUNT 1\n\n',
    );
  });
});

describe('trace on the live kernel', () => {
  const skip = liveSkipReason();
  const ready = /FUNC[^\n]*\n/;

  it('a tracepoint, a uprobe with a string, a filtered uretprobe and a signature: exact rows', { skip }, async () => {
    const w = workloadPath();
    const r = await runAgainstWorkload(
      (pid) => [
        'trace',
        '-p',
        String(pid),
        't:syscalls:sys_enter_getppid "nr=%d", args->__syscall_nr',
        `p:${w}:num "%s", arg1`,
        `r:${w}:num (retval > 2) "ret=%ld", retval`,
        `p:${w}:args6(long a, long b, int c, long d, long e, short f) (c == 3) "%d %ld %d %ld %ld %hd", a, b, c, d, e, f`,
      ],
      ['getppid', 3, 'args6', 1, 2, 3, 4, 5, 6],
      ready,
    );
    assert.equal(r.code, 0, r.stderr);
    const row = (fn: string, msg: string): string =>
      `${String(r.pid).padEnd(7)} ${String(r.pid).padEnd(7)} ${WORKLOAD_COMM.padEnd(15)} ${fn.padEnd(16)} ${msg}`;
    const expected = [
      'PID     TID     COMM            FUNC             -',
      row('num', '3'),
      row('num', 'ret=3'),
      row('sys_enter_getppid', 'nr=110'),
      row('sys_enter_getppid', 'nr=110'),
      row('sys_enter_getppid', 'nr=110'),
      row('num', '1'),
      row('num', '2'),
      row('num', '3'),
      row('num', 'ret=3'),
      row('num', '4'),
      row('num', 'ret=4'),
      row('num', '5'),
      row('num', 'ret=5'),
      row('num', '6'),
      row('num', 'ret=6'),
      row('args6', '1 2 3 4 5 6'),
    ];
    assert.deepEqual(r.stdout.trimEnd().split('\n'), expected);
  });

  it('-M stops after N events; -t and -C columns; -U prints the user stack and a blank line', { skip }, async () => {
    const w = workloadPath();
    const r = await runAgainstWorkload(
      (pid) => ['trace', '-M', '2', '-t', '-C', '-U', '-p', String(pid), `p:${w}:num "%s", arg1`],
      ['getppid', 1, 'args6', 1, 2, 3, 4, 5, 6],
      /FUNC[^\n]*\n/,
    );
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split('\n');
    assert.equal(lines[0], 'TIME     CPU PID     TID     COMM            FUNC             -');
    const events = lines.filter((l) => /^\d+\.\d+ /.test(l));
    assert.equal(events.length, 2, r.stdout);
    const p = String(r.pid).padEnd(7);
    assert.match(events[0]!, new RegExp(`^\\d\\.\\d{6} \\d +${p} ${p} ${WORKLOAD_COMM} +num {14}1$`));
    assert.match(events[1]!, new RegExp(`^\\d\\.\\d{6} \\d +${p} ${p} ${WORKLOAD_COMM} +num {14}1$`));
    // The first frame is num itself (the probe is at its first instruction), then its caller in the workload.
    const block = r.stdout.split(events[0]!)[1]!.split('\n');
    assert.equal(block[1], `        num+0x0 [${WORKLOAD_COMM}]`);
    assert.ok(r.stdout.includes('\n\n'), 'a blank line after each event with a stack');
  });

  it('a USDT probe with its arguments (test/fixtures/usdt.c)', { skip: skip ?? ccSkipReason() }, async () => {
    const bin = compileFixture(join(repoRoot(), 'test', 'fixtures', 'usdt.c'), 'bpfs_usdt_tr');
    const run = startBpfscope(['trace', `u:${bin}:tick "i=%d v=%d", arg1, arg2`], { timeoutMs: 60_000 });
    let pid = 0;
    try {
      assert.ok(await run.waitFor(/FUNC[^\n]*\n/, 45_000), run.stderr());
      const w = spawnSync(bin, ['3']);
      assert.equal(w.status, 0);
      pid = w.pid!;
      assert.ok(await run.waitFor(new RegExp(`^${pid} .*i=2 v=20$`, 'm'), 10_000), run.stdout());
    } finally {
      run.child.kill('SIGINT');
    }
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const p = String(pid).padEnd(7);
    assert.deepEqual(
      r.stdout.split('\n').filter((l) => l.startsWith(`${pid} `)),
      ['i=0 v=0', 'i=1 v=10', 'i=2 v=20'].map(
        (m) => `${p} ${p} ${'bpfs_usdt_tr'.padEnd(15)} ${'tick'.padEnd(16)} ${m}`,
      ),
    );
  });

  it(
    'kernel functions without kprobes: one sentence, exit 1',
    { skip: skip ?? (kprobesAvailable() ? 'this kernel has kprobes' : undefined) },
    async () => {
      const r = await runBpfscope(['trace', 'do_sys_open']);
      assert.equal(r.code, 1);
      assert.equal(r.stdout, '');
      assert.match(r.stderr, /kprobes/);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    },
  );

  it('bcc errors go to stdout with exit 1', { skip }, async () => {
    const r = await runBpfscope(['trace', 'x:c:malloc']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, "error in probe 'x:c:malloc': probe type must be '', 'p', 't', 'r', or 'u', but got 'x'\n");
    const l = await runBpfscope(['trace', '-p', '1', '-L', '2', 'f']);
    assert.equal(l.code, 2);
    assert.equal(l.stderr, fixture.errors.find((e) => e.argv.includes('-L'))!.stderr);
  });
});

describe('trace --json and runTool', () => {
  const skip = liveSkipReason();
  const STEPS = ['getppid', '2', 'args6', '1', '2', '3', '4', '5', '6'];
  const probes = (): string[] => {
    const w = workloadPath();
    return ['t:syscalls:sys_enter_getppid "nr=%d", args->__syscall_nr', `r:${w}:num (retval > 4) "ret=%ld", retval`];
  };
  /** The rows the text test's format gives for these probes: (FUNC, message) in order, with the ids. */
  function assertRows(rows: TraceRow[], pid: number): void {
    const mine = rows.filter((r) => r.pid === pid);
    assert.deepEqual(
      mine.map((r) => [r.func, r.message]),
      [
        ['sys_enter_getppid', 'nr=110'],
        ['sys_enter_getppid', 'nr=110'],
        ['num', 'ret=5'],
        ['num', 'ret=6'],
      ],
      JSON.stringify(rows),
    );
    for (const r of mine) {
      assert.deepEqual(
        [r.tid, r.comm, r.time, r.cpu, r.kernelStack, r.userStack],
        [pid, WORKLOAD_COMM, null, null, [], []],
      );
    }
  }

  it('--json -p PID: one object per event', { skip }, async () => {
    const w = spawn(workloadPath(), ['wait-stdin', ...STEPS], { stdio: ['pipe', 'ignore', 'ignore'] });
    const exited = new Promise<number | null>((resolve) => w.on('close', (c) => resolve(c)));
    try {
      await blockedInRead(w.pid!);
      const run = await startJson(['trace', '--json', '-p', String(w.pid), ...probes()], 2, { timeoutMs: 60_000 });
      try {
        w.stdin!.end('x');
        assert.equal(await exited, 0);
      } finally {
        run.child.kill('SIGINT');
      }
      const r = await run.done;
      assert.equal(r.code, 0, r.stderr);
      assertRows(jsonLines<TraceRow>(r.stdout), w.pid!);
    } finally {
      w.kill('SIGKILL');
    }
  });

  it('runTool -p PID: the same events as rows', { skip }, async () => {
    const w = spawn(workloadPath(), ['wait-stdin', ...STEPS], { stdio: ['pipe', 'ignore', 'ignore'] });
    const exited = new Promise<number | null>((resolve) => w.on('close', (c) => resolve(c)));
    try {
      await blockedInRead(w.pid!);
      const run = await runTool('trace', ['-p', String(w.pid), ...probes()]);
      w.stdin!.end('x');
      assert.equal(await exited, 0);
      assert.equal(await run.close(), 0);
      const rows: TraceRow[] = [];
      for await (const r of run.rows()) rows.push(r);
      assertRows(rows, w.pid!);
    } finally {
      w.kill('SIGKILL');
    }
  });
});
