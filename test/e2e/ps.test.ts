/**
 * `bpfscope ps` and `listBpfObjects()` on the live kernel: a real bpfscope run (a tracepoint and a uprobe) must be
 * listed with its programs' types, attach points, owner pid and program text, agreeing with the oracle
 * (`bpftool -j prog show` / `map show` / `link show` / `perf show`); with statistics on, a workload making known
 * calls gives the exact run count; without root, one sentence and a non-zero exit.
 *
 * The uprobe is placed on a private copy of the workload binary (its own inode), so only this test's workload
 * triggers it and its run count is exact. The tracepoint program runs for every getppid on the machine (the
 * filter is inside the program), so its count is only bounded below.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe as suite, test } from 'node:test';
import { type BpfObjects, BpfPermissionError, listBpfObjects } from '../../src/inspect/objects.js';
import { readSessionRecords, REGISTRY_DIR } from '../../src/runtime/registry.js';
import { bpftoolSkipReason } from '../helpers/bpf-objects.js';
import { bpfscopeEntry, bpfscopeSkipReason, repoRoot, type RunningTool, startTool } from '../helpers/cli.js';
import { workloadPath } from '../helpers/workload.js';

const skip = bpfscopeSkipReason() ?? bpftoolSkipReason();
const COMM = `bpfs_p${(process.pid % 0x10000).toString(16)}`;
const N_UPROBE = 7;
const N_GETPPID = 40;

let dir = '';
let copy = '';
let program = '';
let run: RunningTool | undefined;

function bpftool(...args: string[]): unknown[] {
  return JSON.parse(execFileSync('bpftool', ['-j', ...args], { encoding: 'utf8' })) as unknown[];
}

/** Runs the private workload copy with `steps` (synchronously). */
function workload(...steps: (string | number)[]): void {
  const r = spawnSync(copy, steps.map(String), { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
}

function ps(args: string[], opts: { uid?: number } = {}) {
  const argv = [bpfscopeEntry(), 'ps', ...args];
  const r =
    opts.uid === undefined
      ? spawnSync(process.execPath, argv, { encoding: 'utf8' })
      : spawnSync(
          'setpriv',
          [`--reuid=${opts.uid}`, `--regid=${opts.uid}`, '--clear-groups', process.execPath, ...argv],
          {
            encoding: 'utf8',
          },
        );
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function ours(r: BpfObjects) {
  const proc = r.processes.find((p) => p.pid === run!.pid);
  assert.ok(proc, `pid ${run!.pid} not among ${r.processes.map((p) => p.pid).join(' ')}`);
  const progs = proc.progIds.map((id) => r.programs.find((p) => p.id === id)!);
  const tp = progs.find((p) => p.type === 'tracepoint');
  const up = progs.find((p) => p.type === 'kprobe');
  assert.ok(tp && up, JSON.stringify(progs.map((p) => [p.id, p.type])));
  return { proc, tp, up };
}

suite('bpfscope ps', { skip, timeout: 120_000 }, () => {
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'bpfscope-ps-'));
    copy = join(dir, 'bpfs_workload');
    copyFileSync(workloadPath(), copy);
    chmodSync(copy, 0o755);
    program =
      `tracepoint:syscalls:sys_enter_getppid /comm == "${COMM}"/ { @t = count(); }\n` +
      `uprobe:${copy}:args6 { @u = count(); }\n`;
    run = startTool('bpfscope', ['-e', program], { timeoutMs: 110_000 });
    assert.ok(await run.waitFor(/^Attached 2 probes$/m, 30_000), `not attached: ${run.stderr()}`);
  });

  after(async () => {
    if (run) {
      run.signal('SIGINT');
      await run.done;
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('lists the run: program types, attach points, owner pid and program text', async () => {
    const r = await listBpfObjects();
    const { proc, tp, up } = ours(r);
    assert.equal(proc.bpfscope?.sessions.length, 1);
    const s = proc.bpfscope!.sessions[0]!;
    assert.equal(s.source, 'stdin');
    assert.equal(s.program, program);
    assert.deepEqual([...s.progIds].sort(), [tp.id, up.id].sort());
    assert.deepEqual(proc.bpfscope!.argv.slice(-2), ['-e', program]);
    for (const p of [tp, up]) {
      assert.deepEqual(p.session, { pid: run!.pid, source: 'stdin' });
      assert.ok(
        p.owners.some((o) => o.pid === run!.pid),
        `owners ${JSON.stringify(p.owners)}`,
      );
      assert.equal(p.attach.length, 1, JSON.stringify(p.attach));
    }
    assert.equal(tp.attach[0]!.kind, 'tracepoint');
    assert.equal(tp.attach[0]!.name, 'sys_enter_getppid');
    assert.equal(tp.attach[0]!.text, 'tracepoint sys_enter_getppid');
    assert.equal(up.attach[0]!.kind, 'uprobe');
    assert.equal(up.attach[0]!.path, copy);
    assert.equal(up.attach[0]!.text, `uprobe ${copy}+0x${up.attach[0]!.offset!.toString(16)}`);
    // the maps the programs use are listed, held by the run
    for (const id of [...tp.mapIds, ...up.mapIds]) {
      const m = r.maps.find((x) => x.id === id);
      assert.ok(m, `map ${id}`);
      assert.ok(m.owners.some((o) => o.pid === run!.pid));
      assert.ok(proc.mapIds.includes(id));
    }
    // a listing for the run's pid has the same programs and nothing held by other processes
    const mine = await listBpfObjects({ pid: run!.pid });
    assert.deepEqual(
      mine.programs.map((p) => p.id),
      [tp.id, up.id].sort((a, b) => a - b),
    );
    assert.deepEqual(
      mine.processes.map((p) => p.pid),
      [run!.pid],
    );
  });

  test('agrees with bpftool prog/map/link/perf show', async () => {
    const r = await listBpfObjects({ pid: run!.pid });
    const { proc, tp, up } = ours(r);
    const progs = bpftool('prog', 'show') as Record<string, unknown>[];
    for (const p of [tp, up]) {
      const b = progs.find((x) => x.id === p.id);
      assert.ok(b, `bpftool has no prog ${p.id}`);
      assert.equal(p.type, b.type);
      assert.equal(p.name, b.name);
      assert.equal(p.tag, b.tag);
      assert.equal(p.gplCompatible, b.gpl_compatible);
      assert.equal(p.uid, b.uid);
      assert.equal(p.xlatedBytes, b.bytes_xlated);
      assert.equal(p.jitedBytes, b.bytes_jited);
      assert.deepEqual(
        [...p.mapIds].sort((a, c) => a - c),
        [...(b.map_ids as number[])].sort((a, c) => a - c),
      );
      // bpftool prints whole seconds since the epoch; ours is ms from the boot time in /proc/uptime (10 ms steps)
      assert.ok(Math.abs(p.loadedAtMs / 1000 - (b.loaded_at as number)) <= 1.5, `${p.loadedAtMs} ${b.loaded_at}`);
    }
    const maps = bpftool('map', 'show') as Record<string, unknown>[];
    for (const m of r.maps) {
      const b = maps.find((x) => x.id === m.id);
      assert.ok(b, `bpftool has no map ${m.id}`);
      assert.equal(m.type, b.type);
      assert.equal(m.name, b.name ?? '');
      assert.equal(m.keySize, b.bytes_key);
      assert.equal(m.valueSize, b.bytes_value);
      assert.equal(m.maxEntries, b.max_entries);
    }
    const links = bpftool('link', 'show') as Record<string, unknown>[];
    assert.equal(proc.linkIds.length, 2);
    for (const id of proc.linkIds) {
      const l = r.links.find((x) => x.id === id)!;
      const b = links.find((x) => x.id === id);
      assert.ok(b, `bpftool has no link ${id}`);
      assert.equal(l.type, b.type);
      assert.equal(l.progId, b.prog_id);
    }
    // the perf events the programs are attached through: bpftool perf uses BPF_TASK_FD_QUERY too
    const perf = (bpftool('perf', 'show') as Record<string, unknown>[]).filter((e) => e.pid === run!.pid);
    assert.equal(perf.length, 2, JSON.stringify(perf));
    const tpPerf = perf.find((e) => e.fd_type === 'tracepoint')!;
    assert.equal(tpPerf.prog_id, tp.id);
    assert.equal(tpPerf.tracepoint, 'sys_enter_getppid');
    assert.deepEqual(tp.attach[0]!.perfEvent, { pid: run!.pid, fd: tpPerf.fd });
    const upPerf = perf.find((e) => e.fd_type === 'uprobe')!;
    assert.equal(upPerf.prog_id, up.id);
    assert.equal(upPerf.filename, copy);
    assert.equal(up.attach[0]!.offset, upPerf.offset);
    assert.deepEqual(up.attach[0]!.perfEvent, { pid: run!.pid, fd: upPerf.fd });
    // each perf event is also held by one of the run's perf_event links
    const linkIds = [tp.attach[0]!.linkId, up.attach[0]!.linkId].sort();
    assert.deepEqual(linkIds, [...proc.linkIds].sort());
  });

  test('stats: the run count over the interval is the workload calls (exact for the private uprobe)', async () => {
    const sysctlOn = execFileSync('cat', ['/proc/sys/kernel/bpf_stats_enabled'], { encoding: 'utf8' }).trim() === '1';
    const steps: (string | number)[] = ['comm', COMM, 'getppid', N_GETPPID];
    for (let i = 0; i < N_UPROBE; i++) steps.push('args6', 1, 2, 3, 4, 5, 6);
    const r = await listBpfObjects({ pid: run!.pid, stats: async () => workload(...steps) });
    const { tp, up } = ours(r);
    assert.equal(r.stats.enabled, true);
    assert.equal(r.stats.how, sysctlOn ? 'sysctl' : 'enable_stats');
    assert.ok(r.stats.intervalNs !== undefined && r.stats.intervalNs > 0n);
    assert.equal(up.delta?.runCnt, BigInt(N_UPROBE));
    assert.ok(up.delta!.runTimeNs > 0n);
    assert.ok(tp.delta!.runCnt >= BigInt(N_GETPPID), `tracepoint runs ${tp.delta!.runCnt}`);
    // a second interval counts only its own runs (the counters are cumulative since load)
    const second = await listBpfObjects({ pid: run!.pid, stats: async () => workload('args6', 1, 2, 3, 4, 5, 6) });
    assert.equal(ours(second).up.delta?.runCnt, 1n);
    if (!sysctlOn) assert.equal(ours(second).up.runCnt, BigInt(N_UPROBE + 1));
    if (!sysctlOn) {
      // the stats fd was closed: the counters no longer move
      const count = ours(second).up.runCnt;
      workload('args6', 1, 2, 3, 4, 5, 6);
      const again = ours(await listBpfObjects({ pid: run!.pid }));
      assert.equal(again.up.runCnt, count);
    }
  });

  test('bpfscope ps --json and the table show the same run', async () => {
    const j = ps(['--json', '-p', String(run!.pid)]);
    assert.equal(j.code, 0, j.stderr);
    const parsed = JSON.parse(j.stdout) as {
      programs: { id: number; type: string; runCnt: unknown; attach: { text: string }[] }[];
      processes: { pid: number; bpfscope: { sessions: { program: string }[] } }[];
      stats: { enabled: boolean };
    };
    assert.deepEqual(
      parsed.processes.map((p) => p.pid),
      [run!.pid],
    );
    assert.equal(parsed.processes[0]!.bpfscope.sessions[0]!.program, program);
    assert.deepEqual(parsed.programs.map((p) => p.type).sort(), ['kprobe', 'tracepoint']);
    for (const p of parsed.programs) assert.equal(typeof p.runCnt, 'number');
    const up = parsed.programs.find((p) => p.type === 'kprobe')!;

    const t = ps(['-p', String(run!.pid)]);
    assert.equal(t.code, 0, t.stderr);
    const lines = t.stdout.split('\n');
    assert.match(lines[0]!, /^PID +COMM +TYPE +ID +NAME +ATTACH +RUN_CNT +RUN_TIME$/);
    const tpLine = lines.find((l) => l.includes('tracepoint sys_enter_getppid'));
    assert.ok(tpLine, t.stdout);
    assert.match(tpLine, new RegExp(`^${run!.pid} +\\S+ +tracepoint +\\d+ +sys_enter_`));
    assert.ok(
      lines.some((l) => l.includes(up.attach[0]!.text)),
      t.stdout,
    );
    assert.ok(
      lines.some((l) => /^ +bpfscope program \(stdin\), prog ids \d+ \d+:$/.test(l)),
      t.stdout,
    );
    for (const src of program.trimEnd().split('\n')) {
      assert.ok(
        lines.some((l) => l.trim() === src),
        `program line '${src}' missing:\n${t.stdout}`,
      );
    }

    const s = ps(['--stats', '0.2', '--json', '-p', String(run!.pid)]);
    assert.equal(s.code, 0, s.stderr);
    const stats = JSON.parse(s.stdout) as { programs: { delta?: { runCnt: number } }[]; stats: { enabled: boolean } };
    assert.equal(stats.stats.enabled, true);
    for (const p of stats.programs) assert.equal(typeof p.delta?.runCnt, 'number');
  });

  test('errors: not root, no such process, bad arguments', () => {
    const r = ps([], { uid: 65534 });
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr,
      'ERROR: listing the BPF objects of the system needs root (CAP_SYS_ADMIN)\nHINT: run it with sudo\n',
    );
    assert.equal(r.stdout, '');
    const gone = ps(['-p', '999999999']);
    assert.equal(gone.code, 1);
    assert.equal(gone.stderr, 'ERROR: no such process: 999999999\n');
    const bad = ps(['--stats', 'x']);
    assert.equal(bad.code, 2);
    assert.equal(
      bad.stderr,
      "ERROR: --stats needs a number of seconds between 0 and 3600, got 'x'\nHINT: see bpfscope ps -h\n",
    );
    // the API throws the typed error
    const mod = join(repoRoot(), 'dist', 'src', 'inspect', 'objects.js');
    const api = spawnSync(
      'setpriv',
      [
        '--reuid=65534',
        '--regid=65534',
        '--clear-groups',
        process.execPath,
        '--input-type=module',
        '-e',
        `const m = await import(${JSON.stringify(mod)});\n` +
          `try { await m.listBpfObjects(); console.log('listed'); }\n` +
          `catch (e) { console.log(e instanceof m.BpfPermissionError, e.message); }`,
      ],
      { encoding: 'utf8' },
    );
    assert.equal(api.stdout, 'true listing the BPF objects of the system needs root (CAP_SYS_ADMIN)\n', api.stderr);
    assert.equal(new BpfPermissionError().name, 'BpfPermissionError');
  });

  test('the session registry ignores records it cannot trust', () => {
    mkdirSync(REGISTRY_DIR, { recursive: true, mode: 0o700 });
    // a record for a live process (this test) that is writable by others, and one with the wrong start time
    const planted = join(REGISTRY_DIR, `${process.pid}.json`);
    const rec = { version: 1, pid: process.pid, startTime: '1', argv: ['x'], sessions: [] };
    try {
      writeFileSync(planted, JSON.stringify(rec), { mode: 0o600 });
      assert.ok(!readSessionRecords().some((x) => x.pid === process.pid), 'wrong start time accepted');
      const stat = execFileSync('cat', [`/proc/${process.pid}/stat`], { encoding: 'utf8' });
      const startTime = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
      writeFileSync(planted, JSON.stringify({ ...rec, startTime }), { mode: 0o600 });
      assert.ok(
        readSessionRecords().some((x) => x.pid === process.pid),
        'a valid record was not read',
      );
      chmodSync(planted, 0o666);
      assert.equal(statSync(planted).mode & 0o777, 0o666);
      assert.ok(!readSessionRecords().some((x) => x.pid === process.pid), 'world-writable record accepted');
    } finally {
      unlinkSync(planted);
    }
  });

  test('the record is removed when the run ends', async () => {
    const pid = run!.pid;
    assert.ok(existsSync(join(REGISTRY_DIR, `${pid}.json`)));
    run!.signal('SIGINT');
    const res = await run!.done;
    run = undefined;
    assert.equal(res.code, 0, res.stderr);
    assert.ok(!existsSync(join(REGISTRY_DIR, `${pid}.json`)));
    assert.ok(!readSessionRecords().some((x) => x.pid === pid));
  });
});
