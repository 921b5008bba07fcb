/**
 * offwaketime and wakeuptime (src/tools/offwaketime.ts, wakeuptime.ts): the help against bcc's parser, the
 * generated programs, bcc's output formats on hand-made entries (expected text written from bcc's format strings in
 * tools/offwaketime.py and tools/wakeuptime.py), and live runs with test/tools/fixtures/wakeprog.c: a thread
 * (`bpfs_reader`) blocked on a pipe that a named thread (`bpfs_writer`) writes after known sleeps shows
 * `bpfs_reader;...;--;...;bpfs_writer` with its blocked time within 10% of the time the reader measured itself in
 * read(2) (the sleeps plus the writer's scheduling delays on a loaded machine), and `--chain 2` shows A waits on B,
 * B waits on C.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { formatHelp } from '../../src/tools/framework/argparse.js';
import {
  buildProgram,
  header,
  levelLayout,
  type OffwakeEntry,
  offwakeFolded,
  offwakeLines,
  type OffwaketimeOptions,
  SPEC,
} from '../../src/tools/offwaketime.js';
import * as wakeup from '../../src/tools/wakeuptime.js';
import type { Frame } from '../../src/symbols/resolver.js';
import { repoRoot } from '../helpers/cli.js';
import { runTool } from '../../src/tools/api.js';
import { foldedLine } from '../../src/tools/stacktool.js';
import { liveSkipReason, runBpfscope, startBpfscope, waitForLinks } from './helpers.js';
import { jsonLines } from './jsonrun.js';
import { foldedLines, stackprogSkipReason } from './stackprog.js';
import { startWakeprog, within10 } from './wakeprog.js';

const base: OffwaketimeOptions = {
  userThreads: false,
  kernelThreads: false,
  userOnly: false,
  kernelOnly: false,
  minUs: 1,
  maxUs: (1n << 64n) - 1n,
  chain: 1,
};

const k = (name: string): Frame => ({ addr: 0xffffffff81000000n, name, offset: 0, kernel: true, source: 'kallsyms' });
const u = (name: string): Frame => ({
  addr: 0x401000n,
  name,
  offset: 0,
  kernel: false,
  module: '/bin/x',
  source: 'elf',
});

/** An entry as symbolizeOffwake makes it: frames innermost first. */
const entry: OffwakeEntry = {
  comm: 'reader',
  id: 11,
  tgid: 10,
  kernel: [k('__schedule'), k('schedule'), k('pipe_read')],
  user: [u('read_wait'), u('main')],
  wakers: [
    {
      comm: 'writer',
      id: 12,
      tgid: 10,
      kernel: [k('try_to_wake_up'), k('pipe_write')],
      user: [u('write_wake'), u('writer_main')],
    },
  ],
  value: 1234n,
};

describe('offwaketime options, program and formats', () => {
  it("-h: bcc's help (tools/offwaketime.py), then --chain, --svg, --format and -o (text from CPython's argparse)", () => {
    const help = formatHelp(SPEC, 78);
    const bcc = readFileSync(join(repoRoot(), 'test', 'tools', 'fixtures', 'offwaketime-help.txt'), 'utf8');
    // bcc's text after the usage lines, with bpfscope's two options inserted before the examples
    const options = bcc.slice(bcc.indexOf('\nSummarize'));
    const ours = help.slice(help.indexOf('\nSummarize'));
    const extra =
      '  --chain N             follow wakers of wakers up to N levels (default 1, at\n' +
      '                        most 4): a chain graph\n' +
      '  --svg FILE            write an off-wake flame graph (SVG, chain palette) of\n' +
      '                        the folded stacks to FILE instead of printing the\n' +
      '                        stacks (with -f, print them too)\n' +
      '  --format FORMAT       write the stacks as folded, svg (a flame graph), pprof\n' +
      '                        (profile.proto) or speedscope (JSON) to stdout or to\n' +
      '                        the -o file, instead of the report\n' +
      '  -o FILE, --output FILE\n' +
      '                        the file --format writes\n';
    assert.equal(ours, options.replace('\n\nexamples:', `\n${extra}\nexamples:`));
    assert.match(help, /^usage: offwaketime \[-h\] \[-p PIDS \| -t TIDS \| -u \| -k\] \[-U \| -K\]/);
  });

  it('default program: waker record at sched_waking, blocked stacks at sched_switch, merged in the kernel', () => {
    assert.equal(
      buildProgram(base),
      'config = { max_map_keys = 10240 }\n' +
        'rawtracepoint:sched_waking {\n' +
        '  if (@__seen[pid, comm, curtask->group_leader->start_time] == 0) {\n' +
        '    @__seen[pid, comm, curtask->group_leader->start_time] = 1;\n    printf("%d/%llu\\n", pid, curtask->group_leader->start_time);\n  }\n' +
        '  @__wokeby[args.p->pid] = (kstack(raw), ustack(raw), comm, tid, pid);\n' +
        '}\n' +
        'rawtracepoint:sched_switch {\n' +
        '  if (args.prev_state == 128) {\n    delete(@__wokeby[tid]);\n  } else {\n' +
        '    if (@__seen[pid, comm, curtask->group_leader->start_time] == 0) {\n' +
        '      @__seen[pid, comm, curtask->group_leader->start_time] = 1;\n      printf("%d/%llu\\x1f1\\n", pid, curtask->group_leader->start_time);\n    }\n' +
        '    @__off[tid] = (nsecs, kstack(raw), ustack(raw));\n' +
        '  }\n' +
        '  $next = args.next->pid;\n  $w = @__wokeby[$next];\n' +
        '  if ($w.3 != 0) {\n    delete(@__wokeby[$next]);\n  }\n' +
        '  $o = @__off[$next];\n  if ($o.0 != 0) {\n    delete(@__off[$next]);\n' +
        '    $us = (nsecs - $o.0) / 1000;\n' +
        '    if ($us >= 1) {\n' +
        '      @[$o.1, $o.2, args.next->comm, $next, args.next->tgid, $w.0, $w.1, $w.2, $w.3, $w.4] = sum($us);\n' +
        '    }\n  }\n}\n',
    );
  });

  it('filters, -K, --chain 2', () => {
    const p = buildProgram({ ...base, tgids: [5, 6], state: 2, kernelOnly: true, minUs: 10, maxUs: 99n });
    assert.ok(p.includes('  if ((args.p->tgid == 5 || args.p->tgid == 6) && (args.p->__state & 2) != 0) {\n'), p);
    assert.ok(
      p.includes(' else if ((args.prev->tgid == 5 || args.prev->tgid == 6) && (args.prev_state & 2) != 0) {\n'),
      p,
    );
    assert.ok(p.includes('@__wokeby[args.p->pid] = (kstack(raw), comm, tid, pid);'), p);
    assert.ok(p.includes('if ($us >= 10 && $us <= 99) {'), p);
    assert.ok(!p.includes('@__seen'), 'no user symbols needed with -K');
    const c = buildProgram({ ...base, chain: 2 });
    assert.ok(c.includes('BEGIN {\n  @__last[0] = (kstack(raw), ustack(raw), comm, tid, pid);\n'), c);
    assert.ok(c.includes('  $c = @__last[tid];\n'), c);
    assert.ok(
      c.includes('@__wokeby[args.p->pid] = (kstack(raw), ustack(raw), comm, tid, pid, $c.0, $c.1, $c.2, $c.3, $c.4);'),
    );
    assert.ok(c.includes('    @__last[$next] = ($w.0, $w.1, $w.2, $w.3, $w.4);\n'), c);
    assert.deepEqual(levelLayout(base, 2), { kernel: 10, user: 11, comm: 12, tid: 13, tgid: 14 });
    assert.deepEqual(levelLayout({ userOnly: true, kernelOnly: false }, 1), { user: 4, comm: 5, tid: 6, tgid: 7 });
  });

  it("bcc's header", () => {
    assert.equal(
      header(base, 99999999),
      'Tracing blocked time (us) by user + kernel off-CPU and waker stack... Hit Ctrl-C to end.',
    );
    assert.equal(
      header({ userOnly: false, kernelOnly: true }, 5),
      'Tracing blocked time (us) by kernel off-CPU and waker stack for 5 secs.',
    );
  });

  it("bcc's folded line and multi-line block", () => {
    assert.equal(
      offwakeFolded(entry, { delimiter: false }),
      'reader;main;read_wait;pipe_read;schedule;__schedule;--;try_to_wake_up;pipe_write;write_wake;writer_main;writer 1234',
    );
    assert.equal(
      offwakeFolded(entry, { delimiter: true }),
      'reader;main;read_wait;-;pipe_read;schedule;__schedule;--;try_to_wake_up;pipe_write;-;write_wake;writer_main;writer 1234',
    );
    assert.equal(
      offwakeLines(entry, { delimiter: false }),
      '    waker:           writer 12\n' +
        '    writer_main\n    write_wake\n    pipe_write\n    try_to_wake_up\n' +
        '    --               --\n' +
        '    __schedule\n    schedule\n    pipe_read\n    read_wait\n    main\n' +
        '    target:          reader 11\n' +
        '        1234\n\n',
    );
    // no waker seen: bcc's empty waker name and stacks
    assert.equal(
      offwakeFolded({ ...entry, wakers: [{ comm: '', id: 0, tgid: 0, kernel: [], user: [] }] }, { delimiter: false }),
      'reader;main;read_wait;pipe_read;schedule;__schedule;--; 1234',
    );
    // a chain: the waker's waker follows after another --
    const chained = {
      ...entry,
      wakers: [...entry.wakers, { comm: 'c', id: 13, tgid: 10, kernel: [k('try_to_wake_up')], user: [u('cw')] }],
    };
    assert.ok(offwakeFolded(chained, { delimiter: false }).endsWith(';writer_main;writer;--;try_to_wake_up;cw;c 1234'));
    assert.ok(
      offwakeLines(chained, { delimiter: false }).startsWith(
        '    waker:           c 13\n    cw\n    try_to_wake_up\n    --               --\n    waker:           writer 12\n',
      ),
    );
  });
});

describe('wakeuptime options, program and formats', () => {
  it("-h equals bcc's help (tools/wakeuptime.py)", () => {
    const bcc = readFileSync(join(repoRoot(), 'test', 'tools', 'fixtures', 'wakeuptime-help.txt'), 'utf8');
    assert.equal(formatHelp(wakeup.SPEC, 78), bcc);
  });

  it('program: start at switch-out, waker stack and names at sched_waking', () => {
    assert.equal(
      wakeup.buildProgram({ userOnly: false, minUs: 1, maxUs: (1n << 64n) - 1n }),
      'config = { max_map_keys = 10240 }\n' +
        'rawtracepoint:sched_switch {\n' +
        '  if (args.prev_state == 128) {\n    delete(@__start[tid]);\n  } else {\n' +
        '    @__start[tid] = nsecs;\n  }\n}\n' +
        'rawtracepoint:sched_waking {\n  $t = args.p->pid;\n  $s = @__start[$t];\n  if ($s != 0) {\n' +
        '    delete(@__start[$t]);\n    $us = (nsecs - $s) / 1000;\n    if ($us >= 1) {\n' +
        '      @[kstack(raw), comm, args.p->comm] = sum($us);\n    }\n  }\n}\n',
    );
    const p = wakeup.buildProgram({ pid: 7, userOnly: false, minUs: 5, maxUs: 9n });
    assert.ok(p.includes(' else if (args.prev->tgid == 7) {'), p);
    assert.ok(p.includes('    if (args.p->tgid == 7 && $us >= 5 && $us <= 9) {'), p);
  });

  it("bcc's header, folded line and multi-line block", () => {
    assert.equal(wakeup.header(99999999), 'Tracing blocked time (us) by kernel stack... Hit Ctrl-C to end.');
    assert.equal(wakeup.header(3), 'Tracing blocked time (us) by kernel stack for 3 secs.');
    const e = { waker: 'writer', target: 'reader', kernel: [k('try_to_wake_up'), k('pipe_write')], value: 77n };
    assert.equal(wakeup.wakeupFolded(e), 'writer;try_to_wake_up;pipe_write;reader 77');
    assert.equal(
      wakeup.wakeupLines(e),
      '    target:          reader\n' +
        '    ffffffff81000000 pipe_write\n' +
        '    ffffffff81000000 try_to_wake_up\n' +
        '    waker:           writer\n' +
        '        77\n\n',
    );
  });

  it("bcc's refusal of -p with -u", async () => {
    const r = await runBpfscope(['wakeuptime', '-u', '-p', '1']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /\nwakeuptime: error: use either -p or -u\.\n$/);
  });
});

describe('offwaketime and wakeuptime on the live kernel', () => {
  const skip = liveSkipReason() ?? stackprogSkipReason();
  const ROUNDS = 2;
  const USEC = 300_000;

  it(
    'a reader blocked on a pipe its writer fills after known sleeps: stacks of both, time within 10%',
    { skip },
    async () => {
      const w = startWakeprog(['pipe', String(ROUNDS), String(USEC)]);
      try {
        const run = startBpfscope(['offwaketime', '-p', String(w.child.pid)], { timeoutMs: 90_000 });
        assert.ok(
          await run.waitFor(
            /^Tracing blocked time \(us\) by user \+ kernel off-CPU and waker stack\.\.\. Hit Ctrl-C to end\.\n/,
            60_000,
          ),
          run.stderr(),
        );
        w.go();
        const blockedUs = await w.measured;
        run.child.kill('SIGINT');
        const r = await run.done;
        w.finish();
        assert.equal((await w.done).code, 0);
        assert.equal(r.code, 0, r.stderr);
        // bcc's blocks: waker line, waker frames, "--", target frames, target line, value, blank line
        const blocks = r.stdout.split('\n\n').filter((b) => b.includes('    target:'));
        const mine = blocks.filter(
          (b) => /^ {4}target: {10}bpfs_reader \d+\n/m.test(b) && /^ {4}waker: {11}bpfs_writer \d+$/m.test(b),
        );
        assert.ok(mine.length >= 1, r.stdout.slice(0, 3000));
        const lines = mine[0]!.replace(/^\n+/, '').split('\n');
        assert.match(lines[0]!, /^ {4}waker: {11}bpfs_writer \d+$/);
        const sep = lines.indexOf('    --               --');
        const waker = lines.slice(1, sep).map((l) => l.slice(4));
        const target = lines.slice(sep + 1, -2).map((l) => l.slice(4));
        // waker: user frames outermost first, then kernel frames down to the wake-up
        assert.ok(waker.indexOf('writer') < waker.indexOf('bpfs_write_wake'), waker.join('\n'));
        assert.equal(waker.at(-1), 'try_to_wake_up');
        assert.ok(waker.includes('anon_pipe_write') || waker.includes('pipe_write'), waker.join('\n'));
        // target: kernel frames innermost first, then user frames
        assert.equal(target[0], '__schedule');
        assert.ok(target.indexOf('bpfs_read_wait') > target.indexOf('schedule'), target.join('\n'));
        assert.equal(target[target.indexOf('bpfs_read_wait') + 1], 'reader');
        const us = mine.reduce((a, b) => a + Number(/\n {8}(\d+)$/.exec(b)![1]), 0);
        assert.ok(within10(us, blockedUs), `${us} us blocked; the reader measured ${blockedUs} us`);
      } finally {
        w.child.kill('SIGKILL');
      }
    },
  );

  it(
    '-f --chain 2 --svg: A waits on B, B waits on C, as a folded chain and a chain-palette flame graph',
    { skip },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'bpfscope-offwake-'));
      const w = startWakeprog(['chain', String(ROUNDS), String(USEC)]);
      try {
        const svg = join(dir, 'chain.svg');
        const run = startBpfscope(['offwaketime', '-f', '--chain', '2', '--svg', svg, '-p', String(w.child.pid)], {
          timeoutMs: 90_000,
        });
        assert.ok(await waitForLinks(run.pid, 2, 60_000), run.stderr());
        w.go();
        const blockedUs = await w.measured;
        run.child.kill('SIGINT');
        const r = await run.done;
        w.finish();
        assert.equal((await w.done).code, 0);
        assert.equal(r.code, 0, r.stderr);
        const chain =
          /^bpfs_a;(.+;)?reader;bpfs_read_wait;entry_SYSCALL_64\w*;.*;__schedule;--;try_to_wake_up;.*;entry_SYSCALL_64\w*;bpfs_write_wake;relay;(.+;)?bpfs_b;--;try_to_wake_up;.*;bpfs_write_wake;writer;(.+;)?bpfs_c$/;
        const lines = foldedLines(r.stdout).filter(([s]) => chain.test(s));
        assert.ok(lines.length >= 1, r.stdout.slice(0, 4000));
        const us = lines.reduce((a, [, n]) => a + n, 0);
        assert.ok(within10(us, blockedUs), `${us} us blocked; bpfs_a measured ${blockedUs} us`);
        const text = readFileSync(svg, 'utf8');
        assert.match(text, /<text id="title" [^>]*>Off-Wake Time Flame Graph<\/text>/);
        assert.match(text, /<title>bpfs_c \([\d,]+ us, [\d.]+%\)<\/title>/);
        assert.match(text, /<title>-- \([\d,]+ us, [\d.]+%\)<\/title>/);
      } finally {
        w.child.kill('SIGKILL');
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it('wakeuptime -f -p: the writer wakes the reader, by its kernel stack, time within 10%', { skip }, async () => {
    const w = startWakeprog(['pipe', String(ROUNDS), String(USEC)]);
    try {
      const run = startBpfscope(['wakeuptime', '-f', '-p', String(w.child.pid)], { timeoutMs: 90_000 });
      assert.ok(await waitForLinks(run.pid, 2, 60_000), run.stderr());
      w.go();
      const blockedUs = await w.measured;
      run.child.kill('SIGINT');
      const r = await run.done;
      w.finish();
      assert.equal((await w.done).code, 0);
      assert.equal(r.code, 0, r.stderr);
      const mine = foldedLines(r.stdout).filter(([s]) =>
        /^bpfs_writer;try_to_wake_up;.*pipe_write;vfs_write;ksys_write;do_syscall_64;entry_SYSCALL_64\w*;bpfs_reader$/.test(
          s,
        ),
      );
      assert.ok(mine.length >= 1, r.stdout);
      const us = mine.reduce((a, [, n]) => a + n, 0);
      assert.ok(within10(us, blockedUs), `${us} us blocked; the reader measured ${blockedUs} us`);
    } finally {
      w.child.kill('SIGKILL');
    }
  });

  /** JSON frames or API frames: their names, innermost first. */
  const names = (frames: readonly { name?: string }[] | undefined): (string | undefined)[] =>
    (frames ?? []).map((f) => f.name);

  it('offwaketime --json -p: the reader woken by the writer, both stacks, time within 10%', { skip }, async () => {
    const w = startWakeprog(['pipe', String(ROUNDS), String(USEC)]);
    try {
      const run = startBpfscope(['offwaketime', '--json', '-p', String(w.child.pid)], { timeoutMs: 90_000 });
      assert.ok(await waitForLinks(run.pid, 2, 60_000), run.stderr());
      w.go();
      const blockedUs = await w.measured;
      run.child.kill('SIGINT');
      const r = await run.done;
      w.finish();
      assert.equal((await w.done).code, 0);
      assert.equal(r.code, 0, r.stderr);
      type Thread = { comm: string; id: number; tgid: number; kernel: { name?: string }[]; user: { name?: string }[] };
      const objs = jsonLines<{ stacks: (Thread & { value: number; wakers: Thread[] })[] }>(r.stdout);
      assert.equal(objs.length, 1, r.stdout.slice(0, 2000));
      const mine = objs[0]!.stacks.filter((e) => e.comm === 'bpfs_reader' && e.wakers[0]?.comm === 'bpfs_writer');
      assert.ok(mine.length >= 1, r.stdout.slice(0, 3000));
      const e = mine[0]!;
      assert.equal(e.tgid, w.child.pid);
      assert.equal(e.wakers[0]!.tgid, w.child.pid);
      assert.equal(e.wakers.length, 1);
      assert.equal(names(e.kernel)[0], '__schedule');
      assert.ok(names(e.user).includes('bpfs_read_wait'), names(e.user).join(','));
      assert.equal(names(e.wakers[0]!.kernel)[0], 'try_to_wake_up');
      assert.ok(names(e.wakers[0]!.user).includes('bpfs_write_wake'), names(e.wakers[0]!.user).join(','));
      const us = mine.reduce((a, x) => a + x.value, 0);
      assert.ok(within10(us, blockedUs), `${us} us blocked; the reader measured ${blockedUs} us`);
    } finally {
      w.child.kill('SIGKILL');
    }
  });

  it('runTool offwaketime --chain 2: A waits on B, B waits on C, as StackResult entries', { skip }, async () => {
    const w = startWakeprog(['chain', String(ROUNDS), String(USEC)]);
    try {
      const run = await runTool('offwaketime', ['--chain', '2', '-p', String(w.child.pid)]);
      w.go();
      const blockedUs = await w.measured;
      const closing = run.close();
      const results = [];
      for await (const x of run.intervals()) results.push(x);
      assert.equal(await closing, 0);
      w.finish();
      assert.equal((await w.done).code, 0);
      assert.equal(results.length, 1);
      const mine = results[0]!.stacks.filter(
        (e) => e.comm === 'bpfs_a' && e.wakers[0]?.comm === 'bpfs_b' && e.wakers[1]?.comm === 'bpfs_c',
      );
      assert.ok(
        mine.length >= 1,
        results[0]!.stacks.map((e) => foldedLine(e, { delimiter: false, annotate: false })).join('\n'),
      );
      // the folded line of an entry is offwaketime -f's
      assert.match(
        foldedLine(mine[0]!, { delimiter: false, annotate: false }),
        /^bpfs_a;(.+;)?reader;bpfs_read_wait;.*;__schedule;--;try_to_wake_up;.*;bpfs_write_wake;relay;(.+;)?bpfs_b;--;try_to_wake_up;.*;bpfs_write_wake;writer;(.+;)?bpfs_c \d+$/,
      );
      const us = mine.reduce((a, x) => a + Number(x.value), 0);
      assert.ok(within10(us, blockedUs), `${us} us blocked; bpfs_a measured ${blockedUs} us`);
    } finally {
      w.child.kill('SIGKILL');
    }
  });

  it('wakeuptime --json and runTool -p: the writer wakes the reader, time within 10%', { skip }, async () => {
    type Entry = { waker: string; target: string; kernel: { name?: string }[]; value: number | bigint };
    const check = (stacks: Entry[], blockedUs: number, what: string): void => {
      const mine = stacks.filter((e) => e.waker === 'bpfs_writer' && e.target === 'bpfs_reader');
      assert.ok(mine.length >= 1, `${what}: ${JSON.stringify(stacks.map((e) => [e.waker, e.target]))}`);
      assert.equal(names(mine[0]!.kernel)[0], 'try_to_wake_up');
      assert.ok(names(mine[0]!.kernel).includes('ksys_write'), names(mine[0]!.kernel).join(','));
      const us = mine.reduce((a, e) => a + Number(e.value), 0);
      assert.ok(within10(us, blockedUs), `${what}: ${us} us blocked; the reader measured ${blockedUs} us`);
    };
    const w = startWakeprog(['pipe', String(ROUNDS), String(USEC)]);
    try {
      const cli = startBpfscope(['wakeuptime', '--json', '-p', String(w.child.pid)], { timeoutMs: 90_000 });
      assert.ok(await waitForLinks(cli.pid, 2, 60_000), cli.stderr());
      const api = await runTool('wakeuptime', ['-p', String(w.child.pid)]);
      w.go();
      const blockedUs = await w.measured;
      cli.child.kill('SIGINT');
      const closing = api.close();
      const results = [];
      for await (const x of api.intervals()) results.push(x);
      assert.equal(await closing, 0);
      const r = await cli.done;
      w.finish();
      assert.equal((await w.done).code, 0);
      assert.equal(r.code, 0, r.stderr);
      const objs = jsonLines<{ stacks: Entry[] }>(r.stdout);
      assert.equal(objs.length, 1, r.stdout.slice(0, 2000));
      check(objs[0]!.stacks, blockedUs, '--json');
      assert.equal(results.length, 1);
      check(results[0]!.stacks, blockedUs, 'runTool');
    } finally {
      w.child.kill('SIGKILL');
    }
  });
});
