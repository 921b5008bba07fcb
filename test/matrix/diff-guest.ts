/**
 * Guest side of test/matrix/diff.test.ts (not a test itself): runs inside the Debian 6.1 guest, bundled by the host
 * test into one file. Reads the cases the host built (`node diff-guest.mjs SPEC.json RESULTS.jsonl`), runs each
 * through bpftrace 0.17 and then bpfscope exactly as test/diff/oneliners.test.ts does (test/diff/harness.ts), a few
 * cases at a time, and appends one JSON line per case to RESULTS: `{ name, oracle?, ours, error? }` (ToolResults).
 * The host judges them. Lines are appended as cases finish, so a guest that runs out of time still reports the rest.
 *
 * Every case is bounded: each run has its own timeout (the harness kills its process group), and a case still
 * unsettled at its deadline (test/diff/harness.ts caseDeadlineMs: both runs' timeouts plus slack) is given up: the
 * console gets a `ps` of the guest, everything the case started is SIGKILLed, and its line carries `error` with the
 * output read so far (e.g. when a process that left the tool's process group holds its stdout, so the run's
 * `close` never comes). The console shows `start NAME` and `case NAME MS` lines, so a stall names the cases in flight.
 *
 * The bpfscope it runs is `BPFSCOPE_CLI` (see test/helpers/cli.ts).
 */
import { type ChildProcess, spawnSync } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import type { RunningTool, ToolResult } from '../helpers/cli.js';
import type { DiffCase } from '../diff/cases.js';
import { caseDeadlineMs, type RunHooks, runCaseTool, type RunTuning } from '../diff/harness.js';

/** What the host sends: the cases (without functions), how to run them, and how many at once. */
export interface GuestSpec {
  cases: DiffCase[];
  tuning: RunTuning;
  jobs: number;
}

/** One case's runs, as a line of the results file. */
export interface GuestResult {
  name: string;
  /** The oracle's run; absent for `noOracle` cases. */
  oracle?: ToolResult;
  ours?: ToolResult;
  /** The harness itself failed (e.g. the `-p` target did not start, or the case overran its deadline). */
  error?: string;
}

/** How long a given-up case's runs get to report after SIGKILL before the driver moves on without them, ms. */
const KILL_GRACE_MS = 5_000;

/** The processes one case has started so far (the tool runs in its own process group). */
class CaseProcesses implements RunHooks {
  readonly tools: RunningTool[] = [];
  readonly targets: ChildProcess[] = [];
  onTarget(target: ChildProcess) {
    this.targets.push(target);
  }
  onTool(run: RunningTool) {
    this.tools.push(run);
  }
  killAll() {
    const pids = [...this.tools.map((r) => -r.pid), ...this.targets.map((t) => t.pid ?? 0)];
    for (const pid of pids.filter((p) => p !== 0 && p !== -1)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  /** The output of the last run started, for the report of a case given up. */
  partial(): string {
    const r = this.tools.at(-1);
    if (!r) return '(no tool started)';
    return `${r.child.spawnargs.join(' ')}\n--- stdout so far ---\n${r.stdout()}--- stderr so far ---\n${r.stderr()}`;
  }
}

async function runCase(dc: DiffCase, tuning: RunTuning, procs: CaseProcesses): Promise<GuestResult> {
  try {
    const oracle = dc.noOracle ? undefined : await runCaseTool('bpftrace', dc, dc.oracleArgs ?? dc.args, tuning, procs);
    const ours = await runCaseTool('bpfscope', dc, dc.args, tuning, procs);
    return { name: dc.name, ...(oracle ? { oracle } : {}), ours };
  } catch (e) {
    return { name: dc.name, error: String((e as Error).stack ?? e) };
  }
}

/** `p`'s value, or undefined when `ms` pass first. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ms)));
  try {
    return await Promise.race([p, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** {@link runCase} bounded by caseDeadlineMs; past it, a `ps` to the console, SIGKILL, and an error line. */
async function runCaseBounded(dc: DiffCase, tuning: RunTuning): Promise<GuestResult> {
  const procs = new CaseProcesses();
  const run = runCase(dc, tuning, procs);
  const deadline = caseDeadlineMs(dc, tuning);
  const first = await within(run, deadline);
  if (first) return first;
  const ps = spawnSync('ps', ['-eo', 'pid,ppid,pgid,stat,wchan:24,etimes,args', '--forest'], { encoding: 'utf8' });
  process.stdout.write(`=== ps at the deadline of ${dc.name}\n${ps.stdout ?? ps.error}=== done ps\n`);
  const partial = procs.partial();
  procs.killAll();
  const late = await within(run, KILL_GRACE_MS);
  const error =
    `the case overran its ${deadline / 1000} s in the guest and was killed` +
    `${late ? '' : ` (its run did not end within ${KILL_GRACE_MS / 1000} s of SIGKILL)`}; last run:\n${partial}`;
  return { ...(late ?? { name: dc.name }), error };
}

async function main(specPath: string, resultsPath: string) {
  const spec = JSON.parse(readFileSync(specPath, 'utf8')) as GuestSpec;
  const queue = [...spec.cases];
  const worker = async () => {
    for (let dc = queue.shift(); dc; dc = queue.shift()) {
      const t0 = Date.now();
      process.stdout.write(`start ${dc.name}\n`);
      const r = await runCaseBounded(dc, spec.tuning);
      appendFileSync(resultsPath, `${JSON.stringify(r)}\n`);
      process.stdout.write(`case ${dc.name} ${Date.now() - t0} ms${r.error ? ' (error)' : ''}\n`);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, spec.jobs) }, worker));
}

const [specPath, resultsPath] = process.argv.slice(2);
if (!specPath || !resultsPath) {
  process.stderr.write('usage: diff-guest SPEC.json RESULTS.jsonl\n');
  process.exit(2);
}
main(specPath, resultsPath).then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`${(e as Error).stack ?? e}\n`);
    process.exit(1);
  },
);
