/**
 * Nothing outlives a run: for every way a run can end (exit(), interval + exit(), Ctrl-C, SIGTERM, an error after
 * attach, the -c command ending, kill -9) the BPF programs, maps and links the run held are gone afterwards, no
 * new tracefs uprobe/kprobe entry remains, no process of the run is left, and the exit status is bpftrace's.
 *
 * Every scenario runs with bpftrace 0.17 too, as a control: the oracle must pass the same checks, which shows the
 * leak check does not report objects it should not (other tests on this machine create objects concurrently).
 * A separate test pins a map and checks that the leak check does report it.
 *
 * Exit statuses (bpftrace 0.17 measured here; v0.26.1 src/run_bpftrace.cpp installs one handler for SIGINT and
 * SIGTERM and returns bpftrace.exit_code, 0 unless exit(N)): exit() 0, -c command ended 0, SIGINT 0, SIGTERM 0,
 * SIGKILL: killed by the signal. Writing into a closed stdout pipe: bpftrace dies of SIGPIPE; Node ignores
 * SIGPIPE, so bpfscope sees EPIPE: it must end (any failure status) rather than keep running.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe as suite, test } from 'node:test';
import {
  type BpfIds,
  bpfState,
  bpftoolSkipReason,
  emptyIds,
  findLeaks,
  formatIds,
  heldBy,
  idCount,
  tracefsProbeEvents,
} from '../helpers/bpf-objects.js';
import {
  ATTACHED_PATTERN,
  bpfscopeSkipReason,
  bpftraceSkipReason,
  describe,
  isAlive,
  processTree,
  type RunningTool,
  startTool,
  type Tool,
  type ToolResult,
} from '../helpers/cli.js';
import { runWorkload, workloadCommand } from '../helpers/workload.js';

/** A comm only this test process uses, so concurrent runs of this suite do not trigger each other's probes. */
const COMM = `bpfs_c${(process.pid % 0x10000).toString(16)}`;
const ATTACH_TIMEOUT_MS = 15_000;

interface Scenario {
  name: string;
  args: () => string[];
  /** What to do once the run is attached and its objects are recorded. */
  act: (run: RunningTool) => void | Promise<void>;
  /** Checks the exit status (and output) of the given tool. */
  check: (r: ToolResult, tool: Tool) => void;
  /** Tools the scenario does not apply to, with why (shown as a skip). */
  skipFor?: Partial<Record<Tool, string>>;
}

function exitedZero(r: ToolResult) {
  assert.ok(!r.timedOut, `timed out (it should have ended by itself):\n${describe(r)}`);
  assert.equal(r.code, 0, `exit status 0 expected:\n${describe(r)}`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const countProgram = `tracepoint:syscalls:sys_enter_getppid /comm == "${COMM}"/ { @calls = count(); }`;

const scenarios: Scenario[] = [
  {
    name: 'exit() from a probe',
    args: () => ['-e', `tracepoint:syscalls:sys_enter_getppid /comm == "${COMM}"/ { printf("got it\\n"); exit(); }`],
    act: () => {
      runWorkload('comm', COMM, 'getppid', 1);
    },
    check: (r) => {
      exitedZero(r);
      assert.match(r.stdout, /^got it$/m, describe(r));
    },
  },
  {
    name: 'interval probe calls exit()',
    args: () => ['-e', `interval:ms:100 { @ticks++; if (@ticks == 8) { exit(); } } ${countProgram}`],
    act: () => {},
    check: (r) => {
      exitedZero(r);
      assert.match(r.stdout, /^@ticks: 8$/m, describe(r));
    },
  },
  {
    name: 'Ctrl-C (SIGINT) while running',
    args: () => ['-e', countProgram],
    act: async (run) => {
      runWorkload('comm', COMM, 'getppid', 3);
      run.signal('SIGINT');
    },
    check: (r) => {
      exitedZero(r);
      assert.match(r.stdout, /^@calls: 3$/m, describe(r));
    },
  },
  {
    name: 'SIGINT with BEGIN, END, tracepoint, interval and profile probes',
    args: () => [
      '-e',
      `BEGIN { @begin = 1; } END { printf("end\\n"); } ${countProgram} interval:s:10 { @i = 1; } ` +
        'profile:hz:49 /@p == 0/ { @p = 1; printf("profile\\n"); }',
    ],
    act: async (run) => {
      // once the profile probe has fired
      assert.ok(await run.waitFor(/^profile$/m, ATTACH_TIMEOUT_MS), `the profile probe never fired:\n${run.stdout()}`);
      run.signal('SIGINT');
    },
    check: (r) => {
      exitedZero(r);
      assert.match(r.stdout, /^end$/m, describe(r));
      assert.match(r.stdout, /^@begin: 1$/m, describe(r));
    },
  },
  {
    name: 'SIGTERM while running',
    args: () => ['-e', countProgram],
    act: (run) => {
      runWorkload('comm', COMM, 'getppid', 2);
      run.signal('SIGTERM');
    },
    check: (r) => {
      exitedZero(r);
      assert.match(r.stdout, /^@calls: 2$/m, describe(r));
    },
  },
  {
    name: 'error after attach: stdout pipe closed by the reader (EPIPE / SIGPIPE)',
    args: () => ['-e', 'interval:ms:20 { printf("tick\\n"); }'],
    act: async (run) => {
      if (!(await run.waitFor(/^tick$/m, 5000))) {
        assert.fail(
          'no printf line on stdout within 5 s while stdout is a pipe: bpftrace (v0.26.1 src/main.cpp, default -B ' +
            'line: setvbuf _IOLBF and a flushing streambuf) writes each line as it is printed',
        );
      }
      run.child.stdout!.destroy();
    },
    check: (r, tool) => {
      assert.ok(!r.timedOut, `kept running after its stdout was closed:\n${describe(r)}`);
      if (tool === 'bpftrace') assert.equal(r.signal, 'SIGPIPE', describe(r));
      else assert.ok(r.code !== 0, `a failed write to stdout must give a failure status:\n${describe(r)}`);
    },
  },
  {
    // a fatal error after attach: the -o file cannot be written (/dev/full: every write fails with ENOSPC)
    name: 'output write fails after attach (-o /dev/full)',
    args: () => [
      '-o',
      '/dev/full',
      '-e',
      `tracepoint:syscalls:sys_enter_getppid /comm == "${COMM}"/ { printf("x\\n"); }`,
    ],
    act: () => {
      runWorkload('comm', COMM, 'getppid', 1);
    },
    check: (r) => {
      assert.ok(!r.timedOut, `kept running after its output failed:\n${describe(r)}`);
      assert.equal(r.code, 1, `exit status 1 expected:\n${describe(r)}`);
      assert.equal(
        r.stderr,
        'Attached 1 probe\nERROR: Failed to write to output file: "/dev/full": No space left on device\n',
      );
    },
    skipFor: {
      bpftrace:
        'bpftrace 0.17 writes its attach line into the -o file and ignores the failed writes (it keeps running)',
    },
  },
  {
    name: '-c command ends',
    args: () => [
      '-e',
      'tracepoint:syscalls:sys_enter_nanosleep /pid == cpid/ { @sleeps = count(); }',
      '-c',
      workloadCommand('sleep-ms', 1500),
    ],
    act: () => {},
    check: (r) => {
      exitedZero(r);
      assert.match(r.stdout, /^@sleeps: 1$/m, describe(r));
    },
  },
  {
    name: 'kill -9',
    args: () => ['-e', countProgram],
    act: (run) => run.signal('SIGKILL'),
    check: (r) => {
      assert.equal(r.signal, 'SIGKILL', describe(r));
    },
  },
];

/** Runs one scenario with one tool and checks exit status, leftover processes and leftover BPF objects. */
async function runScenario(tool: Tool, sc: Scenario) {
  const before = { state: bpfState(), tracefs: tracefsProbeEvents() };
  const run = startTool(tool, sc.args(), { timeoutMs: 20_000 });
  let ours: BpfIds;
  let pids: number[];
  try {
    const attached = await run.waitFor(ATTACHED_PATTERN, ATTACH_TIMEOUT_MS);
    if (!attached) assert.fail(`no attach message within ${ATTACH_TIMEOUT_MS} ms:\n${describe(await stop(run))}`);
    // bpftrace 0.17 prints its message before attaching and nothing after: give it a moment to finish attaching.
    // bpfscope prints it once every probe is attached (as current bpftrace does).
    if (tool === 'bpftrace') await sleep(300);
    pids = processTree(run.pid);
    const live = bpfState();
    ours = heldBy(pids, live);
    if (ours.progs.size === 0) {
      const r = await stop(run);
      assert.fail(
        `the running ${tool} holds no BPF program (pids ${pids.join(',')}): nothing to check\n${describe(r)}`,
      );
    }
    await sc.act(run);
  } catch (e) {
    await stop(run);
    throw e;
  }
  const r = await run.done;
  sc.check(r, tool);
  // the run's processes are reaped once it has ended: wait (at most a second) for the last to go
  for (const end = Date.now() + 1000; pids.some(isAlive) && Date.now() < end;) await sleep(10);
  const leftover = pids.filter(isAlive);
  assert.deepEqual(leftover, [], `processes of the run still alive after it ended: ${leftover.join(', ')}`);
  const report = await findLeaks(before, ours, 1000);
  assert.equal(
    idCount(report.leaked),
    0,
    `BPF objects left after ${report.waitedMs} ms: ${formatIds(report.leaked, report.state)}\n(held during the run: ${formatIds(ours)})`,
  );
  assert.deepEqual(report.tracefs, [], 'tracefs probe entries left behind');
}

/** Ends a run that a failed assertion abandons, so no test leaves a process behind. */
async function stop(run: RunningTool): Promise<ToolResult> {
  run.signal('SIGKILL');
  return run.done;
}

function skipReason(tool: Tool): string | undefined {
  return bpftoolSkipReason() ?? (tool === 'bpfscope' ? bpfscopeSkipReason() : bpftraceSkipReason());
}

for (const tool of ['bpftrace', 'bpfscope'] as const) {
  suite(`${tool === 'bpftrace' ? 'control, bpftrace 0.17' : 'bpfscope'}: nothing outlives a run`, () => {
    for (const sc of scenarios) {
      test(sc.name, { timeout: 60_000 }, async (t) => {
        const notHere = sc.skipFor?.[tool];
        if (notHere) return t.skip(notHere);
        const why = skipReason(tool);
        if (why) return t.skip(why);
        await runScenario(tool, sc);
      });
    }
  });
}

suite('the leak check itself', () => {
  test('reports a map pinned in bpffs during the "run"', async (t) => {
    const why = bpftoolSkipReason();
    if (why) return t.skip(why);
    const before = { state: bpfState(), tracefs: tracefsProbeEvents() };
    const dir = mkdtempSync(join(tmpdir(), 'bpfscope-test-bpffs-'));
    try {
      try {
        execFileSync('mount', ['-t', 'bpf', 'bpf', dir], { stdio: 'pipe' });
      } catch (e) {
        return t.skip(`cannot mount bpffs: ${(e as Error).message}`);
      }
      try {
        execFileSync(
          'bpftool',
          [
            'map',
            'create',
            join(dir, 'leak'),
            'type',
            'array',
            'key',
            '4',
            'value',
            '4',
            'entries',
            '1',
            'name',
            'bpfs_leak',
          ],
          {
            stdio: 'pipe',
          },
        );
        const report = await findLeaks(before, emptyIds(), 200);
        const names = [...report.leaked.maps].map((id) => report.state.maps.get(id)?.name);
        assert.ok(names.includes('bpfs_leak'), `pinned map not reported: ${formatIds(report.leaked, report.state)}`);
      } finally {
        rmSync(join(dir, 'leak'), { force: true });
        execFileSync('umount', [dir]);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('reports objects the run held that are still alive', async (t) => {
    const why = bpftoolSkipReason() ?? bpftraceSkipReason();
    if (why) return t.skip(why);
    const before = { state: bpfState(), tracefs: tracefsProbeEvents() };
    const run = startTool('bpftrace', ['-e', countProgram], { timeoutMs: 20_000 });
    try {
      if (!(await run.waitFor(ATTACHED_PATTERN, ATTACH_TIMEOUT_MS))) assert.fail(describe(await stop(run)));
      await sleep(300); // 0.17 prints its attach message before attaching and nothing after: no event to wait on
      const ours = heldBy(processTree(run.pid), bpfState());
      assert.ok(ours.progs.size > 0, 'bpftrace holds no program');
      const report = await findLeaks(before, ours, 100);
      assert.deepEqual([...report.leaked.progs].sort(), [...ours.progs].sort(), 'a live run must be reported');
    } finally {
      await stop(run);
    }
  });
});
