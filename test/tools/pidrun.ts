/**
 * Running a tool with `-p PID` against the test workload: the workload starts blocked in its `wait-stdin` step,
 * the tool attaches to that pid, then the workload is released, runs its steps and exits, and the tool is stopped
 * with Ctrl-C. Counts are then exact whatever else runs on the machine.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { workloadPath } from '../helpers/workload.js';
import { startBpfscope } from './helpers.js';

/**
 * `bpfscope TOOL ARGS... -p PID PATTERN` (`pidArgs(pid)` gives the arguments) around one workload run with `steps`
 * after its `wait-stdin`; resolves with the tool's exit code and output. Throws when the tool does not start.
 */
export async function runAgainstWorkload(
  pidArgs: (pid: number) => string[],
  steps: (string | number)[],
  ready: RegExp = /Hit Ctrl-C to end\.\n/,
): Promise<{ code: number | null; stdout: string; stderr: string; pid: number }> {
  const w = spawn(workloadPath(), ['wait-stdin', ...steps.map(String)], { stdio: ['pipe', 'ignore', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => w.on('close', (c) => resolve(c)));
  const pid = w.pid!;
  await blockedInRead(pid);
  const run = startBpfscope(pidArgs(pid), { timeoutMs: 60_000 });
  try {
    if (!(await run.waitFor(ready, 45_000))) throw new Error(`tool did not start: ${run.stderr()}${run.stdout()}`);
    w.stdin!.end('x');
    const status = await exited;
    if (status !== 0) throw new Error(`workload exited with ${status}`);
  } finally {
    w.kill('SIGKILL');
    run.child.kill('SIGINT');
  }
  const r = await run.done;
  return { code: r.code, stdout: r.stdout, stderr: r.stderr, pid };
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
