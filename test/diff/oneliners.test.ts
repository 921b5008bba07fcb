/**
 * Differential tests: every case of test/diff/cases/ (NAME.bt, read by test/diff/cases.ts) runs through bpftrace 0.17
 * (the oracle) and bpfscope; bpfscope's stdout must equal the live oracle's (without 0.17's `Attaching N probes...`
 * line), or the case's NAME.expect where current bpftrace differs from 0.17, and bpfscope must report
 * `Attached N probes` on stderr. The live oracle's stdout must also equal the recorded NAME.out (`npm run diff:regen`
 * writes it), unless the case says `@oracle-varies`: a change there is oracle drift (a new bpftrace, another kernel),
 * to be reviewed and re-recorded.
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
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe as suite, test } from 'node:test';
import { bpfscopeSkipReason, bpftraceSkipReason, bpftraceVersion, describe, repoRoot } from '../helpers/cli.js';
import { caseFiles, caseFromFile, casesDir, type DiffCase, diffCases, parseCaseFile } from './cases.js';
import {
  assertClean,
  type OracleRun,
  checkBpfscope,
  checkWithTodo,
  DEFAULT_TIMEOUT_MS,
  expectation,
  isJson,
  isQuiet,
  runOracle,
} from './harness.js';

const ORACLE_ONLY = process.env.BPFSCOPE_DIFF_ONLY_ORACLE === '1';
const FILTER = process.env.BPFSCOPE_DIFF_FILTER ? new RegExp(process.env.BPFSCOPE_DIFF_FILTER) : undefined;

let cases: DiffCase[] = [];
let buildError: unknown;
try {
  cases = diffCases();
} catch (e) {
  buildError = e;
}

/** The live oracle printed what NAME.out recorded (unless the case's output varies by machine or date). */
function checkRecorded(dc: DiffCase, oracle: OracleRun | undefined) {
  if (!oracle || dc.oracleVaries !== undefined) return;
  assert.equal(
    oracle.stdout,
    dc.recorded,
    `bpftrace 0.17's output differs from test/diff/cases/${dc.name}.out (oracle drift, or a case whose output ` +
      `depends on the machine: re-record with \`npm run diff:regen ${dc.name}\` and review the diff, or mark the ` +
      `case @oracle-varies with why)`,
  );
}

/** Oracle-only mode: the case is valid for 0.17 and its output is deterministic. */
async function checkOracle(dc: DiffCase) {
  const a = await runOracle(dc);
  assertClean(a.result, 'bpftrace');
  const b = await runOracle(dc);
  assertClean(b.result, 'bpftrace (second run)');
  assert.equal(b.stdout, a.stdout, `bpftrace output differs between two runs: the case is not deterministic`);
  assert.notEqual(a.stdout.trim(), '', 'bpftrace printed nothing: the case would prove nothing');
  checkRecorded(dc, a);
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

  test('every case with an oracle has its recorded output (NAME.out), and only those', (t) => {
    if (buildError) return t.skip('the case list did not build');
    for (const c of cases) {
      if (c.noOracle) assert.equal(c.recorded, undefined, `${c.name}: @no-oracle, yet it has ${c.name}.out`);
      else assert.ok(c.recorded !== undefined, `${c.name}: no ${c.name}.out (run \`npm run diff:regen ${c.name}\`)`);
    }
  });

  test('a broken case file is refused with its name', () => {
    assert.ok(caseFiles(casesDir()).length === cases.length);
    assert.throws(() => parseCaseFile('x', '// @bogus 1\n\nBEGIN { exit(); }\n'), /x\.bt: unknown directive @bogus/);
    assert.throws(
      () => parseCaseFile('x', '// @timeout 1\n// @timeout 2\n\nBEGIN {}\n'),
      /x\.bt: @timeout given twice/,
    );
    assert.throws(() => parseCaseFile('x', '// @timeout 1\nBEGIN {}\n'), /x\.bt: an empty line must follow/);
    const f = parseCaseFile('x', '// @reason a\n// @reason b\n\n// comment\nBEGIN {}\n');
    assert.equal(f.directives.get('reason'), 'a b');
    assert.equal(f.program, '// comment\nBEGIN {}');
    const only = caseFromFile(
      parseCaseFile('x', '// @guest-only no fentry\n// @guest-only here\n\nBEGIN { exit(); }\n'),
    );
    assert.equal(only.guestOnly, 'no fentry here');
    assert.equal(only.guest, true, '@guest-only implies @guest');
    assert.throws(
      () => caseFromFile(parseCaseFile('x', '// @guest-only a\n// @guest-skip b\n\nBEGIN {}\n')),
      /x\.bt: @guest-only with @guest-skip/,
    );
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
      if (dc.guestOnly) return t.skip(`guest only (test/matrix/diff.test.ts): ${dc.guestOnly}`);
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
      await checkWithTodo(t, dc.todo, () => checkBpfscope(dc, expected));
      checkRecorded(dc, expected.oracle);
    });
  }
});
