/**
 * Running a tool with `-p PID` against the test workload: the workload starts blocked in its `wait-stdin` step,
 * the tool attaches to that pid, then the workload is released, runs its steps and exits, and the tool is stopped
 * with Ctrl-C. Counts are then exact whatever else runs on the machine.
 */
import { spawn } from 'node:child_process';
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
