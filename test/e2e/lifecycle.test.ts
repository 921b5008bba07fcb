/**
 * The processes around a run: the `-c` command never outlives bpfscope, whichever way the run ends (the command
 * ending first, a program of only BEGIN, exit(), SIGINT, SIGTERM, SIGKILL of bpfscope, an error while attaching);
 * a `-c` command that does not exist and a `-p` process that does not exist are refused before anything runs, with
 * current bpftrace's messages (src/util/proc.cpp, src/main.cpp).
 *
 * A reader of stdout that stops reading (a full pipe or socket) does not keep SIGINT from ending the run: it ends at
 * once, says how much output was not written, and leaves nothing attached.
 *
 * Each -c case starts `-c 'sleep N'` (N unique to the case), learns the command's pid from BEGIN's `cpid` (or, when
 * BEGIN never prints, finds the process by its unique argument in /proc), ends the run and then waits (bounded poll
 * of /proc) for the command to be gone.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  closeSync,
  constants,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  bpfState,
  bpftoolSkipReason,
  findLeaks,
  formatIds,
  heldBy,
  idCount,
  tracefsProbeEvents,
} from '../helpers/bpf-objects.js';
import { bpfscopeEntry, bpfscopeSkipReason, processTree, runTool } from '../helpers/cli.js';

const skip = bpfscopeSkipReason();
const WAIT_MS = 10_000;

interface Run {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Exit code or signal name, once bpfscope has exited (not waiting for its stdout to close: the command holds it). */
  exited: Promise<number | string>;
}

function start(args: string[]): Run {
  const child = spawn(process.execPath, [bpfscopeEntry(), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, sig) => resolve(code ?? sig!)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Polls (20 ms steps, at most `ms`) until `cond` holds; returns whether it did. */
async function until(cond: () => boolean, ms = WAIT_MS): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if (cond()) return true;
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A process that exists and is not a zombie. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat[stat.lastIndexOf(')') + 2] !== 'Z';
  } catch {
    return false;
  }
}

/** Pids of live processes whose argv contains `word`. */
function processesWithArg(word: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${d}/cmdline`, 'latin1').split('\0').includes(word) && alive(Number(d))) {
        out.push(Number(d));
      }
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

let serial = 0;
/** A `sleep` duration no other process uses: the command's unique argument. */
function uniqueSleep(): string {
  return String(900_000 + ((process.pid * 101 + ++serial * 7919) % 99_000));
}

/** Cleanup for a failed case: kill what it left, so the test run leaves nothing behind. */
function killAll(pids: number[]): void {
  for (const p of pids) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}

/**
 * Start `program` with `-c 'sleep N'`, wait for BEGIN's `cpid=PID` line, run `act`, then check that bpfscope
 * exited as `expectExit` says and that the command is gone.
 */
async function commandDiesWith(program: string, act: (run: Run) => void, expectExit: number | string): Promise<void> {
  const arg = uniqueSleep();
  const run = start(['-e', `BEGIN { printf("cpid=%d\\n", cpid); } ${program}`, '-c', `sleep ${arg}`]);
  try {
    assert.ok(await until(() => /^cpid=\d+$/m.test(run.stdout())), `no cpid line: ${run.stdout()} ${run.stderr()}`);
    const cpid = Number(/^cpid=(\d+)$/m.exec(run.stdout())![1]);
    // (a program of only BEGIN may already have ended and killed it)
    if (program !== '') {
      assert.ok(alive(cpid), 'the command runs');
      assert.ok(readFileSync(`/proc/${cpid}/cmdline`, 'latin1').split('\0').includes(arg), 'cpid is the command');
    }
    act(run);
    const timeout = new Promise<string>((r) => setTimeout(() => r('still running'), WAIT_MS).unref());
    assert.equal(await Promise.race([run.exited, timeout]), expectExit, run.stderr());
    assert.ok(await until(() => !alive(cpid)), `the -c command (pid ${cpid}) outlived bpfscope`);
  } finally {
    run.child.kill('SIGKILL');
    killAll(processesWithArg(arg));
  }
}

describe('-c command lifecycle', { skip }, () => {
  it('the command ending first ends the run, status 0', async () => {
    const run = start(['-e', 'BEGIN { printf("cpid=%d\\n", cpid); } interval:s:1000 { }', '-c', 'sleep 0.2']);
    assert.equal(await run.exited, 0, run.stderr());
    const cpid = Number(/^cpid=(\d+)$/m.exec(run.stdout())?.[1]);
    assert.ok(await until(() => !alive(cpid)));
  });

  it('a program of only BEGIN ends after BEGIN and kills the command', () => commandDiesWith('', () => {}, 0));

  it('exit() in the program kills the command', () => commandDiesWith('interval:ms:100 { exit(); }', () => {}, 0));

  it('SIGINT to bpfscope kills the command', () =>
    commandDiesWith('interval:s:1000 { }', (run) => run.child.kill('SIGINT'), 0));

  it('SIGTERM to bpfscope kills the command', () =>
    commandDiesWith('interval:s:1000 { }', (run) => run.child.kill('SIGTERM'), 0));

  it('SIGKILL of bpfscope kills the command (PR_SET_PDEATHSIG)', () =>
    commandDiesWith('interval:s:1000 { }', (run) => run.child.kill('SIGKILL'), 'SIGKILL'));

  it('an error while attaching kills the command', async (t) => {
    // this kernel refuses perf_event_open on irq_vectors:irq_work_exit even to root (EPERM): the attach fails
    const arg = uniqueSleep();
    const r = await runTool('bpfscope', ['-e', 'tracepoint:irq_vectors:irq_work_exit { }', '-c', `sleep ${arg}`]);
    try {
      if (!/perf_event_open|refused/.test(r.stderr)) return t.skip(`attaching did not fail here: ${r.stderr}`);
      assert.equal(r.code, 1, r.stderr);
      assert.ok(await until(() => processesWithArg(arg).length === 0), 'the -c command outlived bpfscope');
    } finally {
      killAll(processesWithArg(arg));
    }
  });
});

describe('-c / -p targets that do not exist', { skip }, () => {
  it('-c with a path that does not exist fails before BEGIN runs', async () => {
    const r = await runTool('bpfscope', ['-e', 'BEGIN { printf("begin\\n"); }', '-c', '/nonexistent/cmd arg']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(
      r.stderr,
      "ERROR: Failed to fork child: Path '/nonexistent/cmd' does not exist or is not executable (No such file or directory)\n",
    );
  });

  it('-c with a name not found in $PATH fails before BEGIN runs', async () => {
    const r = await runTool('bpfscope', ['-e', 'BEGIN { printf("begin\\n"); }', '-c', 'bpfscope-no-such-command']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(
      r.stderr,
      "ERROR: Failed to fork child: Path 'bpfscope-no-such-command' does not exist or is not executable (No such file or directory)\n",
    );
  });

  it('-p with a process that does not exist fails before BEGIN runs', async () => {
    let pid = 30000;
    while (existsSync(`/proc/${pid}`)) pid++;
    const r = await runTool('bpfscope', ['-e', 'BEGIN { printf("begin\\n"); }', '-p', String(pid)]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, 'ERROR: Failed to attach to pid: Unable to open pidfd (No such process)\n');
  });

  it('a tool given -p of a process that does not exist fails (bcc would trace nothing, silently)', async () => {
    let pid = 30000;
    while (existsSync(`/proc/${pid}`)) pid++;
    const r = await runTool('bpfscope', ['opensnoop', '-p', String(pid)]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, `ERROR: -p ${pid}: No such process\n`);
  });
});

/** A flood of output: 50 lines of 100 bytes every millisecond. */
const FLOOD = `interval:ms:1 { $i = 0; while ($i < 50) { printf("%s\\n", "${'x'.repeat(99)}"); $i++; } }`;
const LOST_OUTPUT = /^Lost \d+ bytes of output: the reader of stdout had stopped reading$/m;

/**
 * Whether the main thread of `pid` is in write(2) or poll(2)/ppoll(2) (/proc/PID/syscall: the number first): where
 * a writer waits for a reader (blocking in write, or polling a non-blocking descriptor).
 */
function waitingToWrite(pid: number): boolean {
  try {
    const nr = Number(readFileSync(`/proc/${pid}/syscall`, 'latin1').split(' ')[0]);
    // x86-64: write 1, poll 7, ppoll 271; aarch64: write 64, ppoll 73
    return process.arch === 'arm64' ? nr === 64 || nr === 73 : nr === 1 || nr === 7 || nr === 271;
  } catch {
    return false;
  }
}

/** Run `FLOOD` with stdout `stdout`, wait until `stalled()`, SIGINT it and check that it ends at once and cleanly. */
async function interruptStalled(stdio: 'pipe' | number, stalled: (pid: number) => boolean): Promise<void> {
  const before = { state: bpfState(), tracefs: tracefsProbeEvents() };
  const child = spawn(process.execPath, [bpfscopeEntry(), '-e', FLOOD], { stdio: ['ignore', stdio, 'pipe'] });
  child.stdout?.pause(); // a reader that never reads
  let err = '';
  child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, sig) => resolve(code ?? sig!)));
  try {
    assert.ok(await until(() => /^Attached \d+ probes?$/m.test(err)), `not attached: ${err}`);
    const ours = heldBy(processTree(child.pid!), bpfState());
    assert.ok(idCount(ours) > 0, 'the run holds BPF objects');
    assert.ok(await until(() => stalled(child.pid!)), 'the output never stalled');
    child.kill('SIGINT');
    const timeout = new Promise<string>((r) => setTimeout(() => r('still running'), WAIT_MS).unref());
    assert.equal(await Promise.race([exited, timeout]), 0, `it must end on SIGINT although nothing reads: ${err}`);
    assert.match(err, LOST_OUTPUT);
    const report = await findLeaks(before, ours, 1000);
    assert.equal(idCount(report.leaked), 0, `BPF objects left: ${formatIds(report.leaked, report.state)}`);
    assert.deepEqual(report.tracefs, []);
  } finally {
    child.kill('SIGKILL');
  }
}

describe('SIGINT while the reader of stdout is stalled', { skip: skip ?? bpftoolSkipReason() ?? false }, () => {
  it('stdout a pipe (`| sleep 100`): ends at once, the unwritten output reported on stderr', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bpfscope-stall-'));
    const fifo = join(dir, 'out');
    spawnSync('mkfifo', [fifo]);
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK); // held open, never read
    const writer = openSync(fifo, constants.O_WRONLY);
    const probe = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
    try {
      // the pipe filled up to its last byte by us (harmless bytes: nobody reads them), so that bpfscope cannot write
      // one more: pages first, then byte by byte (a pipe takes a write of PIPE_BUF bytes or less only whole, so a
      // writer of small chunks can be left waiting while a few bytes are still free; seen: the check "one more byte
      // fits" kept finding room for 10 s while bpfscope waited in poll(2))
      const full = (): boolean => {
        for (const size of [4096, 1]) {
          const chunk = Buffer.alloc(size, 'y');
          try {
            for (;;) writeSync(probe, chunk);
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') throw e;
          }
        }
        return true;
      };
      await interruptStalled(writer, (pid) => full() && waitingToWrite(pid));
    } finally {
      for (const fd of [reader, writer, probe]) closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('stdout a socket (a parent that stops reading): ends at once, the unwritten output reported', () =>
    interruptStalled('pipe', waitingToWrite));
});
