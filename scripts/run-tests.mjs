#!/usr/bin/env node
// Runs the compiled test files (dist/test/**/*.test.js) with node's built-in test runner.
// Usage: node scripts/run-tests.mjs [--unit] [--no-rerun] [SUBSTRING...]
//   --unit      only tests that need no kernel (everything outside test/kernel, test/e2e, test/diff)
//   --no-rerun  do not run failed files a second time
//   SUBSTRING   only test files whose path contains one of these strings
// At the end it lists every failed test again (the tail of a CI log is all one may get to see). A file with a
// failure is run once more on its own (not the qemu guest files of test/matrix/: too long, and not after
// RERUN_BUDGET_MS): the run passes only if each such file then passes whole, and the output names them as flaky.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const testDir = join(root, 'dist', 'test');
const args = process.argv.slice(2);
const unitOnly = args.includes('--unit');
const rerun = !args.includes('--no-rerun');
const filters = args.filter((a) => !a.startsWith('--'));
const RERUN_BUDGET_MS = 55 * 60_000;
const started = Date.now();
const kernelDirs = ['kernel', 'e2e', 'diff', 'reliability'];

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

let files = walk(testDir);
if (unitOnly) files = files.filter((f) => !kernelDirs.includes(relative(testDir, f).split('/')[0]));
if (filters.length) files = files.filter((f) => filters.some((s) => f.includes(s)));
if (files.length === 0) {
  console.error('run-tests: no test files matched');
  process.exit(1);
}
const work = mkdtempSync(join(tmpdir(), 'bpfscope-run-tests-'));
const reporter = join(root, 'scripts', 'test-failures-reporter.mjs');

/** Runs test files with TAP on stdout; returns the exit status and the failed tests (leaves, not their suites). */
function run(list, tag) {
  const failuresFile = join(work, `${tag}.jsonl`);
  const r = spawnSync(
    process.execPath,
    [
      '--test',
      '--test-concurrency=1',
      '--test-reporter=tap',
      '--test-reporter-destination=stdout',
      `--test-reporter=${reporter}`,
      `--test-reporter-destination=${failuresFile}`,
      ...list,
    ],
    { stdio: 'inherit' },
  );
  let failed = [];
  try {
    failed = readFileSync(failuresFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .filter((f) => f.failureType !== 'subtestsFailed');
  } catch {
    // no failures file: the runner itself died; the status says so
  }
  return { status: r.status ?? 1, failed };
}

function describe(failed) {
  for (const f of failed) {
    const where = f.file ? relative(root, f.file) : '(unknown file)';
    console.log(`#   ${where}: ${f.name}`);
    for (const line of f.message.split('\n')) if (line.trim()) console.log(`#       ${line}`);
  }
}

const first = run(files, 'run');
let status = first.status;
if (status !== 0) {
  console.log(`# run-tests: ${first.failed.length} test(s) failed:`);
  describe(first.failed);
  const failedFiles = [...new Set(first.failed.map((f) => f.file).filter(Boolean))];
  const rerunnable = failedFiles.filter((f) => !relative(testDir, f).startsWith('matrix/'));
  const known = failedFiles.length > 0 && first.failed.every((f) => f.file);
  if (rerun && known && rerunnable.length === failedFiles.length && Date.now() - started < RERUN_BUDGET_MS) {
    console.log(`# run-tests: running ${rerunnable.length} file(s) with failures once more, alone`);
    const second = run(rerunnable, 'rerun');
    if (second.status === 0) {
      console.log('# run-tests: FLAKY: these failed in the whole run and passed on their own:');
      describe(first.failed);
      status = 0;
    } else {
      console.log(`# run-tests: failed again on their own (${second.failed.length}):`);
      describe(second.failed);
    }
  }
}
rmSync(work, { recursive: true, force: true });
process.exit(status);
