/**
 * Guest side of test/matrix/diff.test.ts (not a test itself): runs inside the Debian 6.1 guest, bundled by the host
 * test into one file. Reads the cases the host built (`node diff-guest.mjs SPEC.json RESULTS.jsonl`), runs each
 * through bpftrace 0.17 and then bpfscope exactly as test/diff/oneliners.test.ts does (test/diff/harness.ts), a few
 * cases at a time, and appends one JSON line per case to RESULTS: `{ name, oracle?, ours, error? }` (ToolResults).
 * The host judges them. Lines are appended as cases finish, so a guest that runs out of time still reports the rest.
 *
 * The bpfscope it runs is `BPFSCOPE_CLI` (see test/helpers/cli.ts).
 */
import { appendFileSync, readFileSync } from 'node:fs';
import type { ToolResult } from '../helpers/cli.js';
import type { DiffCase } from '../diff/cases.js';
import { runCaseTool, type RunTuning } from '../diff/harness.js';

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
  /** The harness itself failed (e.g. the `-p` target did not start). */
  error?: string;
}

async function runCase(dc: DiffCase, tuning: RunTuning): Promise<GuestResult> {
  try {
    const oracle = dc.noOracle ? undefined : await runCaseTool('bpftrace', dc, dc.oracleArgs ?? dc.args, tuning);
    const ours = await runCaseTool('bpfscope', dc, dc.args, tuning);
    return { name: dc.name, ...(oracle ? { oracle } : {}), ours };
  } catch (e) {
    return { name: dc.name, error: String((e as Error).stack ?? e) };
  }
}

async function main(specPath: string, resultsPath: string) {
  const spec = JSON.parse(readFileSync(specPath, 'utf8')) as GuestSpec;
  const queue = [...spec.cases];
  const worker = async () => {
    for (let dc = queue.shift(); dc; dc = queue.shift()) {
      const t0 = Date.now();
      const r = await runCase(dc, spec.tuning);
      appendFileSync(resultsPath, `${JSON.stringify(r)}\n`);
      process.stdout.write(`case ${dc.name} ${Date.now() - t0} ms\n`);
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
