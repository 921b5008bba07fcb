/**
 * Differential tests: every case of test/diff/cases.ts runs through bpftrace 0.17 (the oracle) and bpfscope;
 * bpfscope's stdout must equal the oracle's (without 0.17's `Attaching N probes...` line), or the case's
 * `expect` where current bpftrace differs from 0.17, and bpfscope must report `Attached N probes` on stderr.
 *
 * Environment:
 *   BPFSCOPE_DIFF_ONLY_ORACLE=1  run only bpftrace, twice per case, and check the case is valid and deterministic
 *                                (exit 0, same non-empty stdout both times, an attach line, and an `expect`
 *                                that really differs from 0.17's output).
 *   BPFSCOPE_DIFF_FILTER=REGEX   run only the cases whose name matches REGEX.
 * Until dist/src/cli/main.js exists the bpfscope side is skipped with that reason (never passed).
 * A case with `todo` (a known bpfscope bug) is reported as TODO while bpfscope fails it, and fails once bpfscope
 * passes it, so a fixed bug is noticed and its `todo` removed.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe as suite, test } from 'node:test';
import {
  ATTACHED_PATTERN,
  bpfscopeSkipReason,
  bpftraceSkipReason,
  bpftraceVersion,
  describe,
  ourAttachCount,
  repoRoot,
  runTool,
  startTool,
  stripOracleAttach,
  type Tool,
  type ToolResult,
} from '../helpers/cli.js';
import { workloadPath } from '../helpers/workload.js';
import { type DiffCase, diffCases, TARGET_PID } from './cases.js';

const ORACLE_ONLY = process.env.BPFSCOPE_DIFF_ONLY_ORACLE === '1';
const FILTER = process.env.BPFSCOPE_DIFF_FILTER ? new RegExp(process.env.BPFSCOPE_DIFF_FILTER) : undefined;
const DEFAULT_TIMEOUT_MS = 15_000;

let cases: DiffCase[] = [];
let buildError: unknown;
try {
  cases = diffCases();
} catch (e) {
  buildError = e;
}

const isJson = (args: string[]) => args.some((a, i) => a === '-f' && args[i + 1] === 'json');
const isQuiet = (args: string[]) => args.includes('-q');

interface OracleRun {
  result: ToolResult;
  /** stdout without the `Attaching N probes...` line. */
  stdout: string;
  attached: number | undefined;
}

/** Margin after the attach message before a `-p` target is let go: 0.17 prints it before it attaches. */
const TARGET_GO_DELAY_MS = 400;

/**
 * Runs one tool for a case. With `target`, first starts the `-p` workload blocked on its stdin, puts its pid in
 * the arguments, and lets it go once the tool says it attached (the tool then ends when the target exits).
 */
async function runCaseTool(tool: Tool, dc: DiffCase, args: string[]): Promise<ToolResult> {
  const timeoutMs = dc.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!dc.target) return runTool(tool, args, { timeoutMs });
  const target = spawn(workloadPath(), ['wait-stdin', ...dc.target.map(String)], {
    stdio: ['pipe', 'ignore', 'inherit'],
  });
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
    if (await run.waitFor(ATTACHED_PATTERN, timeoutMs)) {
      await new Promise((r) => setTimeout(r, TARGET_GO_DELAY_MS));
    }
    target.stdin!.end('g');
    return await run.done;
  } finally {
    target.stdin!.destroy();
    if (target.exitCode === null && target.signalCode === null) target.kill('SIGKILL');
    await targetDone;
  }
}

async function runOracle(dc: DiffCase): Promise<OracleRun> {
  const result = await runCaseTool('bpftrace', dc, dc.oracleArgs ?? dc.args);
  const { stdout, attached } = stripOracleAttach(result.stdout);
  return { result, stdout, attached };
}

function assertClean(r: ToolResult, what: string) {
  assert.ok(!r.timedOut, `${what} timed out:\n${describe(r)}`);
  assert.equal(r.code, 0, `${what} failed:\n${describe(r)}`);
}

/** Oracle-only mode: the case is valid for 0.17 and its output is deterministic. */
async function checkOracle(dc: DiffCase) {
  const a = await runOracle(dc);
  assertClean(a.result, 'bpftrace');
  const b = await runOracle(dc);
  assertClean(b.result, 'bpftrace (second run)');
  assert.equal(b.stdout, a.stdout, `bpftrace output differs between two runs: the case is not deterministic`);
  assert.notEqual(a.stdout.trim(), '', 'bpftrace printed nothing: the case would prove nothing');
  if (!isQuiet(dc.args) && !isJson(dc.args)) {
    assert.ok(a.attached !== undefined && a.attached > 0, `no "Attaching N probes..." line:\n${describe(a.result)}`);
  }
  if (dc.expect !== undefined) {
    assert.notEqual(a.stdout, dc.expect, 'bpftrace 0.17 already prints `expect`: drop the exception');
  }
  if (dc.expectFromOracle !== undefined) {
    assert.notEqual(
      dc.expectFromOracle(a.stdout),
      a.stdout,
      'expectFromOracle leaves 0.17 output unchanged: drop the exception',
    );
  }
}

/** Full mode: bpfscope prints what the oracle (or the case's current-bpftrace expectation) prints. */
interface Expectation {
  stdout: string;
  /** The oracle's run, when the case has one. */
  oracle?: OracleRun;
}

/** What bpfscope must print: the oracle's stdout, or the case's current-bpftrace expectation. */
async function expectation(dc: DiffCase): Promise<Expectation> {
  let oracle: OracleRun | undefined;
  if (!dc.noOracle) {
    oracle = await runOracle(dc);
    assertClean(oracle.result, 'bpftrace (the oracle; the case itself is broken)');
  }
  const stdout = dc.expect ?? (dc.expectFromOracle ? dc.expectFromOracle(oracle!.stdout) : oracle!.stdout);
  return { stdout, oracle };
}

async function checkBpfscope(dc: DiffCase, { stdout: expected, oracle }: Expectation) {
  const ours = await runCaseTool('bpfscope', dc, dc.args);
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

suite('differential case list', () => {
  test('builds (compiles the workload)', () => {
    assert.equal(buildError, undefined, `diffCases() threw: ${(buildError as Error)?.stack}`);
  });

  test('the oracle is bpftrace 0.17 (the exceptions are written against it)', (t) => {
    const why = bpftraceSkipReason();
    if (why) return t.skip(why);
    assert.match(bpftraceVersion(), /^bpftrace v0\.17\./);
  });

  test('has at least 150 cases with unique names', () => {
    assert.ok(cases.length >= 150, `only ${cases.length} cases`);
    const names = cases.map((c) => c.name);
    assert.deepEqual([...new Set(names)], names, 'duplicate case names');
  });

  test('every exception has a reason and is listed in docs/compat.md', () => {
    const compat = readFileSync(join(repoRoot(), 'docs', 'compat.md'), 'utf8');
    const section = compat.slice(compat.indexOf('## Differential test exceptions'));
    assert.ok(compat.includes('## Differential test exceptions'), 'docs/compat.md lacks the exceptions section');
    for (const c of cases) {
      const exception = c.expect !== undefined || c.expectFromOracle !== undefined;
      assert.ok(!(c.expect !== undefined && c.expectFromOracle), `${c.name}: both expect and expectFromOracle`);
      if (exception) assert.ok(c.reason, `${c.name}: expect without reason`);
      if (c.reason !== undefined) assert.ok(exception, `${c.name}: reason without expect`);
      if (c.noOracle !== undefined) assert.ok(c.expect !== undefined, `${c.name}: noOracle needs expect`);
      if (exception) assert.ok(section.includes(`\`${c.name}\``), `${c.name} missing from docs/compat.md`);
      if (c.todo !== undefined) assert.ok(c.todo.length > 20, `${c.name}: todo must name the bug`);
      if (c.target !== undefined) assert.ok(!c.args.includes('-q'), `${c.name}: a -p target case cannot use -q`);
    }
  });

  test('every case named in the exceptions table exists and is an exception', (t) => {
    if (buildError) return t.skip('the case list did not build');
    const compat = readFileSync(join(repoRoot(), 'docs', 'compat.md'), 'utf8');
    const start = compat.indexOf('## Differential test exceptions');
    const section = compat.slice(start, compat.indexOf('\n## ', start + 1));
    const rows = section.split('\n').filter((l) => l.startsWith('| `'));
    const exceptions = new Set(
      cases.filter((c) => c.expect !== undefined || c.expectFromOracle !== undefined).map((c) => c.name),
    );
    for (const row of rows) {
      const first = row.split('|')[1]!;
      for (const m of first.matchAll(/`([^`]+)`/g)) {
        assert.ok(exceptions.has(m[1]!), `docs/compat.md lists \`${m[1]}\`, which is not an exception case`);
      }
    }
  });
});

suite(ORACLE_ONLY ? 'bpftrace 0.17 oracle: cases are valid and deterministic' : 'bpfscope vs bpftrace 0.17', () => {
  for (const dc of cases) {
    if (FILTER && !FILTER.test(dc.name)) continue;
    test(dc.name, { timeout: 3 * (dc.timeoutMs ?? DEFAULT_TIMEOUT_MS) + 5000 }, async (t) => {
      if (ORACLE_ONLY) {
        if (dc.noOracle) return t.skip(`bpftrace 0.17 cannot run this case: ${dc.noOracle}`);
        const why = bpftraceSkipReason();
        if (why) return t.skip(why);
        return checkOracle(dc);
      }
      const ourWhy = bpfscopeSkipReason();
      if (ourWhy) return t.skip(ourWhy);
      const oracleWhy = dc.noOracle ? undefined : bpftraceSkipReason();
      if (oracleWhy) return t.skip(oracleWhy);
      const expected = await expectation(dc);
      if (dc.todo === undefined) return checkBpfscope(dc, expected);
      try {
        await checkBpfscope(dc, expected);
      } catch (e) {
        const first = String((e as Error).message ?? e).split('\n')[0];
        return t.todo(`known bpfscope bug: ${dc.todo} [${first}]`);
      }
      assert.fail(`bpfscope now passes this case marked todo (${dc.todo}): remove its \`todo\``);
    });
  }
});
