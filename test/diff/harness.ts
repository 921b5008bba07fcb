/**
 * The mechanics of the differential suite, shared by test/diff/oneliners.test.ts (this machine) and
 * test/matrix/diff.test.ts (the same cases inside the Debian 6.1 guest): running one case's tool (with its `-p`
 * target), and the pure checks that bpfscope's run matches the oracle's (or the case's `expect`).
 *
 * The checks are split from the runs so a run made elsewhere (in the guest, results read back as JSON) is judged by
 * exactly the same assertions as a run made here.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import type { TestContext } from 'node:test';
import {
  ATTACHED_PATTERN,
  describe,
  ourAttachCount,
  type RunningTool,
  startTool,
  stripOracleAttach,
  type Tool,
  type ToolResult,
} from '../helpers/cli.js';
import { workloadPath } from '../helpers/workload.js';
import { type DiffCase, TARGET_PID } from './cases.js';

/** A run's timeout when the case sets none, ms. */
export const DEFAULT_TIMEOUT_MS = 15_000;

/**
 * Margin after bpftrace 0.17's attach message before a `-p` target is let go: 0.17 prints it before it attaches.
 * bpfscope prints its `Attached N probes` once every probe is attached (as current bpftrace), so its target goes at once.
 */
export const TARGET_GO_DELAY_MS = 400;

export const isJson = (args: string[]) => args.some((a, i) => a === '-f' && args[i + 1] === 'json');
export const isQuiet = (args: string[]) => args.includes('-q');

/** How to run a case's tool where things are slower (the emulated guest) or the workload lives elsewhere. */
export interface RunTuning {
  /** Multiplies the case's timeout (default 1). */
  timeoutScale?: number;
  /** Overrides {@link TARGET_GO_DELAY_MS} (the oracle's margin), ms. */
  goDelayMs?: number;
  /** The workload binary for `-p` targets (default: {@link workloadPath}). */
  workload?: string;
}

/** The run timeout of a case, ms, scaled by `tuning.timeoutScale`. */
export function caseTimeoutMs(dc: DiffCase, tuning: RunTuning = {}): number {
  return (dc.timeoutMs ?? DEFAULT_TIMEOUT_MS) * (tuning.timeoutScale ?? 1);
}

/** Time a case gets beyond its two runs' timeouts (attach waits, the `-p` go delay, killing), ms. */
export const CASE_SLACK_MS = 30_000;

/**
 * The longest one case (the oracle's run, then bpfscope's) may take before a driver gives it up: both runs'
 * timeouts plus {@link CASE_SLACK_MS}, ms.
 */
export function caseDeadlineMs(dc: DiffCase, tuning: RunTuning = {}): number {
  return 2 * caseTimeoutMs(dc, tuning) + CASE_SLACK_MS;
}

/**
 * What a run started, for a watchdog that must be able to kill it (test/matrix/diff-guest.ts): called with the
 * `-p` target (before the tool starts) and with the tool (in its own process group).
 */
export interface RunHooks {
  onTarget?(target: ChildProcess): void;
  onTool?(run: RunningTool): void;
}

/**
 * Runs one tool for a case. With `target`, first starts the `-p` workload blocked on its stdin, puts its pid in
 * the arguments, and lets it go once the tool says it attached (the tool then ends when the target exits).
 */
export async function runCaseTool(
  tool: Tool,
  dc: DiffCase,
  args: string[],
  tuning: RunTuning = {},
  hooks: RunHooks = {},
): Promise<ToolResult> {
  const timeoutMs = caseTimeoutMs(dc, tuning);
  if (!dc.target) {
    const run = startTool(tool, args, { timeoutMs });
    hooks.onTool?.(run);
    return run.done;
  }
  const target = spawn(tuning.workload ?? workloadPath(), ['wait-stdin', ...dc.target.map(String)], {
    stdio: ['pipe', 'ignore', 'inherit'],
  });
  hooks.onTarget?.(target);
  const targetDone = new Promise<void>((resolve) => target.on('close', () => resolve()));
  // A target that already died (the tool failed early and the harness killed it) makes the write fail: ignore.
  target.stdin!.on('error', () => {});
  try {
    assert.ok(target.pid !== undefined, 'the -p target workload did not start');
    const run = startTool(
      tool,
      args.map((a) => a.split(TARGET_PID).join(String(target.pid))),
      { timeoutMs },
    );
    hooks.onTool?.(run);
    if ((await run.waitFor(ATTACHED_PATTERN, timeoutMs)) && tool === 'bpftrace') {
      await new Promise((r) => setTimeout(r, tuning.goDelayMs ?? TARGET_GO_DELAY_MS));
    }
    target.stdin!.end('g');
    return await run.done;
  } finally {
    target.stdin!.destroy();
    if (target.exitCode === null && target.signalCode === null) target.kill('SIGKILL');
    await targetDone;
  }
}

export interface OracleRun {
  result: ToolResult;
  /** stdout without the `Attaching N probes...` line. */
  stdout: string;
  attached: number | undefined;
}

/** An oracle result with 0.17's attach line taken out of its stdout. */
export function oracleRun(result: ToolResult): OracleRun {
  const { stdout, attached } = stripOracleAttach(result.stdout);
  return { result, stdout, attached };
}

/** Runs the oracle (bpftrace 0.17) for a case, with its `oracleArgs` when it has them. */
export async function runOracle(dc: DiffCase, tuning: RunTuning = {}): Promise<OracleRun> {
  return oracleRun(await runCaseTool('bpftrace', dc, dc.oracleArgs ?? dc.args, tuning));
}

/** Asserts a run neither timed out nor exited non-zero. */
export function assertClean(r: ToolResult, what: string) {
  assert.ok(!r.timedOut, `${what} timed out:\n${describe(r)}`);
  assert.equal(r.code, 0, `${what} failed:\n${describe(r)}`);
}

/** What bpfscope must print: the oracle's stdout, or the case's current-bpftrace expectation. */
export interface Expectation {
  stdout: string;
  /** The oracle's run, when the case has one. */
  oracle?: OracleRun;
}

/**
 * The expectation from an oracle run already made (undefined exactly when the case has `noOracle`). Throws (an
 * assertion) when the oracle failed: the case itself is then broken.
 */
export function expectationFrom(dc: DiffCase, oracle: OracleRun | undefined): Expectation {
  if (!dc.noOracle) {
    assert.ok(oracle, 'the case has an oracle but no oracle run was made');
    assertClean(oracle.result, 'bpftrace (the oracle; the case itself is broken)');
  }
  const stdout = dc.expect ?? (dc.expectFromOracle ? dc.expectFromOracle(oracle!.stdout) : oracle!.stdout);
  return { stdout, oracle };
}

/** Runs the oracle when the case has one and returns what bpfscope must print. */
export async function expectation(dc: DiffCase, tuning: RunTuning = {}): Promise<Expectation> {
  return expectationFrom(dc, dc.noOracle ? undefined : await runOracle(dc, tuning));
}

/**
 * Asserts bpfscope's run `ours` of a case: exit 0, stdout equal to the expectation, and `Attached N probes` on
 * stderr with the oracle's N (or the case's `attached`), none with `-q` or `-f json`.
 */
export function checkOurs(dc: DiffCase, { stdout: expected, oracle }: Expectation, ours: ToolResult) {
  assertClean(ours, 'bpfscope');
  const against = dc.expect !== undefined || dc.expectFromOracle ? 'the case expectation' : 'bpftrace 0.17';
  assert.equal(
    ours.stdout,
    expected,
    `stdout differs from ${against}${dc.reason ? ` (exception: ${dc.reason})` : ''}\n${describe(ours)}`,
  );
  const attached = ourAttachCount(ours.stderr);
  if (isQuiet(dc.args) || isJson(dc.args)) {
    assert.equal(
      attached,
      undefined,
      `-q / -f json: no "Attached N probes" line expected on stderr\n${describe(ours)}`,
    );
  } else {
    const want = dc.attached ?? oracle?.attached;
    assert.ok(want !== undefined, 'case needs `attached`: the oracle gives no probe count');
    assert.equal(attached, want, `stderr must have "Attached ${want} probe(s)" (current bpftrace)\n${describe(ours)}`);
  }
}

/** Runs bpfscope for a case and checks it against the expectation ({@link checkOurs}). */
export async function checkBpfscope(dc: DiffCase, expected: Expectation, tuning: RunTuning = {}) {
  checkOurs(dc, expected, await runCaseTool('bpfscope', dc, dc.args, tuning));
}

/**
 * Runs `check` for a case that may carry a known bug: without `todo` the check must pass; with it a failure is
 * reported as TODO (naming the bug and the first line of the failure), and a pass FAILS, so a fixed bug is noticed
 * and its `todo` removed.
 */
export async function checkWithTodo(t: TestContext, todo: string | undefined, check: () => unknown): Promise<void> {
  if (todo === undefined) {
    await check();
    return;
  }
  try {
    await check();
  } catch (e) {
    const first = String((e as Error).message ?? e).split('\n')[0];
    t.todo(`known bpfscope bug: ${todo} [${first}]`);
    return;
  }
  assert.fail(`bpfscope now passes this case marked todo (${todo}): remove its \`todo\``);
}
