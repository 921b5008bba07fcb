/**
 * `npm run diff:regen [NAME...]`: runs bpftrace 0.17 (the oracle; BPFSCOPE_ORACLE overrides the path) on the
 * differential cases (test/diff/cases/NAME.bt; all of them without names, `noOracle` cases never) and writes each
 * one's stdout, without 0.17's `Attaching N probes...` line and with this run's workload path and unique comms
 * put back as placeholders, to test/diff/cases/NAME.out. Review the change with `git diff test/diff/cases`.
 *
 * A case whose oracle run fails (timeout, non-zero exit) or prints something else on a second run is reported and
 * its file left as it was; the command then exits 1.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bpftraceSkipReason, describe } from '../helpers/cli.js';
import { caseFiles, caseFromFile, casesDir, placeholdersBack } from './cases.js';
import { runOracle } from './harness.js';

async function main(names: string[]): Promise<number> {
  const why = bpftraceSkipReason();
  if (why) {
    console.error(`diff:regen: ${why}`);
    return 1;
  }
  const files = caseFiles();
  const known = new Set(files.map((f) => f.name));
  const unknown = names.filter((n) => !known.has(n));
  if (unknown.length) {
    console.error(`diff:regen: no such case: ${unknown.join(', ')} (test/diff/cases/NAME.bt)`);
    return 1;
  }
  let failed = 0;
  for (const file of files) {
    if (names.length && !names.includes(file.name)) continue;
    const dc = caseFromFile(file);
    if (dc.noOracle) continue;
    if (dc.guestOnly) {
      console.log(`${file.name}: guest only, NAME.out unchanged (record it from the guest oracle's output)`);
      continue;
    }
    const a = await runOracle(dc);
    const b = await runOracle(dc);
    const bad = [a, b].find((r) => r.result.timedOut || r.result.code !== 0);
    if (bad) {
      console.error(`${file.name}: bpftrace failed, NAME.out unchanged\n${describe(bad.result)}`);
      failed++;
    } else if (a.stdout !== b.stdout) {
      console.error(`${file.name}: bpftrace printed different outputs in two runs, NAME.out unchanged`);
      failed++;
    } else {
      writeFileSync(join(casesDir(), `${file.name}.out`), placeholdersBack(file, a.stdout));
      console.log(`${file.name}: ok`);
    }
  }
  return failed ? 1 : 0;
}

process.exitCode = await main(process.argv.slice(2));
