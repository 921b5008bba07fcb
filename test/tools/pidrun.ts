/**
 * Running a tool with `-p PID` against the test workload: the workload starts blocked in its `wait-stdin` step,
 * the tool attaches to that pid, then the workload is released, runs its steps and exits, and the tool is stopped
 * with Ctrl-C. Counts are then exact whatever else runs on the machine.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { workloadPath } from '../helpers/workload.js';
import { startBpfscope, waitForLinks } from './helpers.js';

/**
 * `bpfscope TOOL ARGS... -p PID PATTERN` (`pidArgs(pid)` gives the arguments) around one workload run with `steps`
 * after its `wait-stdin`; resolves with the tool's exit code and output. Throws when the tool does not start.
 */
export async function runAgainstWorkload(
  pidArgs: (pid: number) => string[],
  steps: (string | number)[],
  ready: RegExp | { links: number } = /Hit Ctrl-C to end\.\n/,
): Promise<{ code: number | null; stdout: string; stderr: string; pid: number }> {
  const w = await startBlockedWorkload(steps);
  const run = startBpfscope(pidArgs(w.pid), { timeoutMs: 60_000 });
  try {
    const started =
      ready instanceof RegExp ? await run.waitFor(ready, 45_000) : await waitForLinks(run.pid, ready.links, 45_000);
    if (!started) throw new Error(`tool did not start: ${run.stderr()}${run.stdout()}`);
    await w.release();
  } finally {
    w.kill();
    run.child.kill('SIGINT');
  }
  const r = await run.done;
  return { code: r.code, stdout: r.stdout, stderr: r.stderr, pid: w.pid };
}

/**
 * The test workload started with `wait-stdin` and `steps`, resolved once blocked in that read (nothing of the steps
 * has run): `release()` lets it run its steps and resolves when it exited 0 (throws otherwise); `kill()` ends it.
 */
export async function startBlockedWorkload(
  steps: (string | number)[],
): Promise<{ pid: number; release(): Promise<void>; kill(): void }> {
  const w = spawn(workloadPath(), ['wait-stdin', ...steps.map(String)], { stdio: ['pipe', 'ignore', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => w.on('close', (c) => resolve(c)));
  const pid = w.pid!;
  await blockedInRead(pid);
  return {
    pid,
    release: async () => {
      w.stdin!.end('x');
      const status = await exited;
      if (status !== 0) throw new Error(`workload exited with ${status}`);
    },
    kill: () => w.kill('SIGKILL'),
  };
}

/**
 * Resolves once `pid` sleeps (state S) as bpfs_workload: blocked in its wait-stdin read, so that no call of the
 * steps (nor that read's entry) can happen before the tool attaches. Throws after 10 s.
 */
export async function blockedInRead(pid: number): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (/^\d+ \(bpfs_workload\) S /.test(stat)) return;
    } catch {
      /* not there yet */
    }
    await sleep(10);
  }
  throw new Error(`workload ${pid} never blocked in its wait-stdin read`);
}
