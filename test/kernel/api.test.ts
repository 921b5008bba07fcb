/**
 * The typed API (src/api/) against the live kernel: exact event counts with typed values, exact map values,
 * histogram buckets equal to the CLI's text output, bounded buffering with counted loss, and cleanup after a throw
 * in the events loop or an abort (nothing left: bpftool's objects, this process's fds, perf events).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { trace, type TraceEvent, TraceMap } from '../../src/api/index.js';
import { PermissionError } from '../../src/errors.js';
import { CompileError } from '../../src/lang/diagnostics.js';
import {
  bpfState,
  bpftoolSkipReason,
  type BpfIds,
  fdHeldIds,
  findLeaks,
  formatIds,
  heldBy,
  idCount,
  tracefsProbeEvents,
} from '../helpers/bpf-objects.js';
import { repoRoot, runTool } from '../helpers/cli.js';
import { workloadCommand, workloadPath } from '../helpers/workload.js';

const MISSING = '/nonexistent-bpfs-api';

/** perf event fds this process holds (anon_inode:[perf_event]). */
function perfFds(): string[] {
  const out: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === 'anon_inode:[perf_event]') out.push(fd);
    } catch {
      /* closed meanwhile */
    }
  }
  return out;
}

async function assertNothingLeft(before: { state: ReturnType<typeof bpfState>; tracefs: string[] }, ours: BpfIds) {
  assert.ok(idCount(ours) > 0, 'the run held BPF objects while it ran');
  assert.equal(idCount(fdHeldIds(process.pid)), 0, `fds left: ${formatIds(fdHeldIds(process.pid))}`);
  assert.deepEqual(perfFds(), [], 'perf event fds left open');
  const report = await findLeaks(before, ours, 2000);
  assert.equal(idCount(report.leaked), 0, `leaked: ${formatIds(report.leaked, report.state)}`);
  assert.deepEqual(report.tracefs, []);
}

describe('trace() on the live kernel', () => {
  it('events(): an exact count of printf events with typed values, then the exit event', async () => {
    await using t = await trace(
      `tracepoint:syscalls:sys_enter_openat /comm == "bpfs_api1"/ {
        @opens[comm] = count();
        printf("%d %s %s %d\\n", 42, comm, str(args.filename), (uint32)7);
      }`,
      { command: workloadCommand('comm', 'bpfs_api1', 'openat', MISSING, 37) },
    );
    const events: TraceEvent[] = [];
    for await (const ev of t.events()) events.push(ev);
    const printfs = events.filter((e) => e.kind === 'printf');
    assert.equal(printfs.length, 37);
    for (const e of printfs) {
      assert.equal(e.id, printfs[0]!.id);
      assert.equal(e.format, '%d %s %s %d\n');
      assert.deepEqual(e.values, [42n, 'bpfs_api1', MISSING, 7n]);
      assert.equal(e.text(), `42 bpfs_api1 ${MISSING} 7\n`);
    }
    assert.deepEqual(events.at(-1), { kind: 'exit', code: 0, reason: 'command' });
    assert.equal(events.length, 38, `unexpected events: ${events.map((e) => e.kind).join(',')}`);
    const opens = await t.map<string, bigint>('@opens');
    assert.ok(opens instanceof TraceMap);
    assert.deepEqual([...opens], [['bpfs_api1', 37n]]);
  });

  it('integer-only printf (the fast path): signed and unsigned 64-bit values as bigint', async () => {
    await using t = await trace(
      `tracepoint:syscalls:sys_enter_getppid /comm == "bpfs_api2"/ { printf("%d %u %d\\n", (int32)-5, (uint32)4000000000, -7); }`,
      { command: workloadCommand('comm', 'bpfs_api2', 'getppid', 25) },
    );
    let n = 0;
    for await (const ev of t.events()) {
      if (ev.kind !== 'printf') continue;
      n++;
      assert.deepEqual(ev.values, [-5n, 4000000000n, -7n]);
      assert.equal(ev.text(), '-5 4000000000 -7\n');
    }
    assert.equal(n, 25);
  });

  it('batches(): the same stream in arrays, every event once and in order', async () => {
    await using t = await trace(
      `tracepoint:syscalls:sys_enter_getppid /comm == "bpfs_api5"/ { @n = count(); printf("%d\\n", @n); }`,
      { command: workloadCommand('comm', 'bpfs_api5', 'getppid', 300) },
    );
    const seen: bigint[] = [];
    let last: TraceEvent | undefined;
    for await (const batch of t.batches()) {
      assert.ok(batch.length > 0);
      for (const ev of batch) {
        if (ev.kind === 'printf') seen.push(ev.values[0] as bigint);
        last = ev;
      }
    }
    assert.deepEqual(
      seen,
      Array.from({ length: 300 }, (_, i) => BigInt(i + 1)),
    );
    assert.deepEqual(last, { kind: 'exit', code: 0, reason: 'command' });
  });

  it('map(): exact counts, tuple keys by value, avg/stats, and hist/lhist buckets equal to the text output', async () => {
    const program = `tracepoint:syscalls:sys_exit_read /comm == "bpfs_api3"/ {
        @reads[comm, (uint32)args.ret] = count();
        @h = hist(args.ret); @l = lhist(args.ret, 0, 5000, 1000); @s = stats(args.ret); @a = avg(args.ret);
      }`;
    const steps = ['comm', 'bpfs_api3', 'read', 10, 4096, 'read', 5, 100, 'read', 3, 1];
    await using t = await trace(program, { command: workloadCommand(...steps) });
    const exit = await t.exited;
    assert.equal(exit.reason, 'command');
    const reads = await t.map<[string, bigint], bigint>('@reads');
    assert.equal(reads.size, 3);
    assert.equal(reads.get(['bpfs_api3', 4096n]), 10n);
    assert.equal(reads.get(['bpfs_api3', 100n]), 5n);
    assert.equal(reads.get(['bpfs_api3', 1n]), 3n);
    assert.equal(reads.has(['bpfs_api3', 2n]), false);
    assert.equal((reads as TraceMap).has(['bpfs_api3', 1]), false, 'number and bigint keys are distinct');
    assert.deepEqual((await t.map('@s')).get(null), { kind: 'stats', count: 18n, total: 41463n, average: 2303n });
    assert.deepEqual((await t.map('@a')).get(null), { kind: 'avg', count: 18n, total: 41463n, average: 2303n });
    const h = (await t.map('@h')).get(null);
    assert.deepEqual(h, {
      kind: 'hist',
      bits: 0,
      buckets: [
        { low: 1n, high: 2n, count: 3n },
        { low: 64n, high: 128n, count: 5n },
        { low: 4096n, high: 8192n, count: 10n },
      ],
    });
    const l = (await t.map('@l')).get(null);
    assert.deepEqual(l, {
      kind: 'lhist',
      min: 0,
      max: 5000,
      step: 1000,
      buckets: [
        { low: 0n, high: 1000n, count: 8n },
        { low: 4000n, high: 5000n, count: 10n },
      ],
    });
    // the CLI's text output of the same program and workload: the same non-empty rows
    const cli = await runTool('bpfscope', ['-e', program, '-c', [workloadPath(), ...steps.map(String)].join(' ')]);
    assert.equal(cli.code, 0, cli.stderr);
    const rows = (name: string) => {
      const lines = cli.stdout.split('\n');
      const start = lines.indexOf(`${name}:`);
      assert.ok(start >= 0, `no ${name} in the CLI's output:\n${cli.stdout}`);
      const end = lines.indexOf('', start);
      const block = lines.slice(start + 1, end < 0 ? undefined : end).join('\n');
      return block
        .split('\n')
        .map((line) => /^([[(][^\])]*[\])])\s+(\d+) \|/.exec(line))
        .filter((m) => m !== null && m[2] !== '0')
        .map((m) => `${m![1]} ${m![2]}`);
    };
    assert.deepEqual(rows('@h'), ['[1] 3', '[64, 128) 5', '[4K, 8K) 10']);
    assert.deepEqual(rows('@l'), ['[0, 1000) 8', '[4000, 5000) 10']);
  });

  it('events() holds at most bufferEvents events; the rest are counted in a lost event', async () => {
    await using t = await trace(
      `tracepoint:syscalls:sys_enter_getppid /comm == "bpfs_api4"/ { printf("%d\\n", 1); }
       END { print(@n); } tracepoint:syscalls:sys_enter_getppid /comm == "bpfs_api4"/ { @n = count(); }`,
      { command: workloadCommand('comm', 'bpfs_api4', 'getppid', 100), bufferEvents: 10 },
    );
    await t.exited; // nobody reads while the run goes on
    const kinds: string[] = [];
    for await (const ev of t.events()) {
      kinds.push(ev.kind === 'lost' ? `lost ${ev.source} ${ev.count}` : ev.kind);
    }
    // END's print() comes after the 100 printfs and is dropped too: 10 kept, 91 lost
    assert.deepEqual(kinds, [...Array(10).fill('printf'), 'lost consumer 91', 'exit']);
  });

  it('events() at full rate: every call is a printf event or counted in a lost event, exactly', async () => {
    const N = 200_000;
    await using t = await trace(
      `tracepoint:syscalls:sys_enter_getppid /comm == "bpfs_api7"/ { printf("%d %d\\n", tid, nsecs); }`,
      { command: workloadCommand('comm', 'bpfs_api7', 'getppid', N) },
    );
    let printfs = 0;
    const lost = { kernel: 0, consumer: 0 };
    let tid: unknown;
    let last: TraceEvent | undefined;
    for await (const ev of t.events()) {
      last = ev;
      if (ev.kind === 'printf') {
        printfs++;
        tid ??= ev.values[0];
        assert.equal(ev.values[0], tid);
        assert.equal(typeof ev.values[1], 'bigint');
      } else if (ev.kind === 'lost') {
        lost[ev.source] += ev.count;
      }
    }
    assert.equal(printfs + lost.kernel + lost.consumer, N, `${printfs} events, lost ${JSON.stringify(lost)}`);
    assert.deepEqual(last, { kind: 'exit', code: 0, reason: 'command' });
  });

  it('a reader slower than the events: what it misses is counted in lost events, exactly', async () => {
    const N = 20_000;
    await using t = await trace(`tracepoint:syscalls:sys_enter_getppid /comm == "bpfs_api8"/ { printf("%d\\n", 1); }`, {
      command: workloadCommand('comm', 'bpfs_api8', 'getppid', N),
      bufferEvents: 50,
    });
    let printfs = 0;
    let lost = 0;
    for await (const ev of t.events()) {
      if (ev.kind === 'printf') printfs++;
      else if (ev.kind === 'lost') lost += ev.count;
      // a macrotask per event: the ring buffer is read in the meantime
      if (printfs % 16 === 0) await new Promise((r) => setImmediate(r));
    }
    assert.equal(printfs + lost, N, `${printfs} events, ${lost} lost`);
  });

  it('a single event of an idle run arrives without waiting for more (each of two, one after the other)', async () => {
    await using t = await trace(`tracepoint:syscalls:sys_enter_getppid /comm == "bpfs_api9"/ { printf("%d\\n", 9); }`);
    const it = t.events();
    for (let i = 0; i < 2; i++) {
      spawnSync(workloadPath(), ['comm', 'bpfs_api9', 'getppid', '1']);
      const r = await it.next();
      assert.equal(r.done, false);
      assert.ok(r.value.kind === 'printf');
      assert.deepEqual(r.value.values, [9n]);
    }
    assert.deepEqual(await t.stop(), { kind: 'exit', code: 0, reason: 'stopped' });
    const rest: string[] = [];
    for await (const ev of it) rest.push(ev.kind);
    assert.deepEqual(rest, ['exit']);
  });

  it('print(), time() and the end of a program that calls exit() reach events() typed', async () => {
    await using t = await trace(`BEGIN { @x[1] = 5; @x[2] = 6; print(@x); print((1, "a")); time("%Y\\n"); exit(3); }`);
    const evs: TraceEvent[] = [];
    for await (const ev of t.events()) evs.push(ev);
    assert.deepEqual(
      evs.map((e) => e.kind),
      ['print', 'value', 'time', 'exit'],
    );
    const p = evs[0]!;
    assert.ok(p.kind === 'print');
    assert.deepEqual([...p.map].sort(), [
      [1n, 5n],
      [2n, 6n],
    ]);
    assert.equal(p.text(), '@x[1]: 5\n@x[2]: 6\n');
    const v = evs[1]!;
    assert.ok(v.kind === 'value');
    // bpftrace types the literal 1 inside a tuple as int8: stored in one byte, it is a number (docs/api.md)
    assert.deepEqual(v.value, [1, 'a']);
    assert.equal(v.text(), '(1, a)\n');
    const time = evs[2]!;
    assert.ok(time.kind === 'time' && /^\d{4}\n$/.test(time.text));
    assert.deepEqual(evs[3], { kind: 'exit', code: 3, reason: 'exit' });
  });

  it('close() after a throw in the events loop leaves no program, map, link or perf event', async (ctx) => {
    const skip = bpftoolSkipReason();
    if (skip) return ctx.skip(skip);
    const before = { state: bpfState(), tracefs: tracefsProbeEvents() };
    let ours: BpfIds | undefined;
    const t = await trace(
      `tracepoint:syscalls:sys_enter_getppid { printf("%d\\n", tid); } software:cpu-clock:1000000 { @c = count(); }`,
    );
    await assert.rejects(async () => {
      try {
        spawnSync(workloadPath(), ['getppid', '5']);
        for await (const ev of t.events()) {
          if (ev.kind === 'printf') {
            ours = heldBy([process.pid], bpfState());
            throw new RangeError('consumer failed');
          }
        }
      } finally {
        await t.close();
      }
    }, RangeError);
    await assertNothingLeft(before, ours!);
    await t.close(); // idempotent
    await assert.rejects(t.map('@c'), /closed/);
  });

  it('an aborted run ends the events loop and leaves nothing behind', async (ctx) => {
    const skip = bpftoolSkipReason();
    if (skip) return ctx.skip(skip);
    const before = { state: bpfState(), tracefs: tracefsProbeEvents() };
    const ac = new AbortController();
    const t = await trace(`tracepoint:syscalls:sys_enter_getppid { printf("%d\\n", tid); }`, { signal: ac.signal });
    const ours = heldBy([process.pid], bpfState());
    spawnSync(workloadPath(), ['getppid', '5']);
    let seen = 0;
    for await (const ev of t.events()) {
      if (ev.kind === 'printf' && ++seen === 1) ac.abort();
    }
    assert.ok(seen >= 1);
    await t.close(); // the close the abort started
    await assertNothingLeft(before, ours);
    await assert.rejects(trace('BEGIN { }', { signal: ac.signal }), { name: 'TraceAbortedError' });
  });

  it('errors are typed: CompileError with spans, PermissionError when not privileged', async () => {
    await assert.rejects(trace('BEGIN { @x = ; }'), (e: unknown) => {
      assert.ok(e instanceof CompileError);
      assert.equal(e.diagnostics[0]!.pos?.line, 1);
      assert.equal(e.diagnostics[0]!.pos?.col, 14);
      return true;
    });
    await assert.rejects(trace('BEGIN { }', { config: { no_such_key: 1 } }), /unknown config key/);
    await assert.rejects(trace('BEGIN { }', { bufferEvents: 0 }), /bufferEvents/);
    // as user nobody (uid 65534): bpf() refuses; the error is a PermissionError whatever the first call is
    const script = `import(${JSON.stringify(join(repoRoot(), 'dist/src/index.js'))}).then(
      (m) => m.trace('BEGIN { @ = count(); }').then(
        (t) => { console.log('started'); return t.close(); },
        (e) => console.log(e instanceof m.PermissionError, e instanceof m.KernelError, e.name, e.errno, e.message)))`;
    const r = spawnSync(process.execPath, ['-e', script], { uid: 65534, gid: 65534, encoding: 'utf8' });
    assert.equal(r.stderr, '');
    assert.match(r.stdout, /^true true PermissionError (1|13) bpfscope needs root/);
    assert.ok(PermissionError);
  });
});
