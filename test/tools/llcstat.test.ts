/**
 * llcstat (src/tools/llcstat.ts): bcc's -h text (test/tools/fixtures/bcc-help-fs-cap-llc.json), the program, the
 * table built from the two maps, and on a machine without a PMU (the development VM; the Debian guest of
 * test/matrix/ has none either, so only this failure path can run anywhere we test) the one-sentence failure.
 */
import assert from 'node:assert/strict';
import { runTool } from '../../src/index.js';
import { describe, it } from 'node:test';
import type { MapDump, Value } from '../../src/runtime/output/model.js';
import { hardwareEventsWork } from '../../src/tools/framework/kfunc.js';
import { buildProgram, formatTable, rowsFromMaps, SPEC } from '../../src/tools/llcstat.js';
import { assertBccHelp } from './argparse-fixture.js';
import { liveSkipReason, runBpfscope } from './helpers.js';

const int = (n: number): Value => ({ kind: 'int', value: BigInt(n), signed: false, size: 4 });
const str = (s: string): Value => ({ kind: 'string', value: s }) as Value;
function dump(name: string, rows: [number, number, number, string, number][]): MapDump {
  return {
    name,
    keyTypes: [],
    valueType: { kind: 'int' } as unknown as MapDump['valueType'],
    entries: rows.map(([p, t, c, comm, v]) => ({
      key: [int(p), int(t), int(c), str(comm)],
      value: { kind: 'sum', value: BigInt(v), signed: false },
    })),
  };
}

describe('llcstat options and output (bcc tools/llcstat.py)', () => {
  it('-h and usage errors equal argparse', () => {
    assertBccHelp(SPEC, 'llcstat', 'bcc-help-fs-cap-llc');
  });

  it('program: both hardware events at the sample period, keyed by pid, tid (or pid), cpu, comm', () => {
    assert.equal(
      buildProgram({ samplePeriod: 100, tid: false }),
      'config = { max_map_keys = 10240 }\n' +
        'hardware:cache-misses:100 { @miss[pid, pid, cpu, comm] = sum(100); }\n' +
        'hardware:cache-references:100 { @ref[pid, pid, cpu, comm] = sum(100); }\n',
    );
    assert.match(buildProgram({ samplePeriod: 7, tid: true }), /@ref\[pid, tid, cpu, comm\] = sum\(7\)/);
  });

  it('table: references joined with misses, HIT% of references, totals', () => {
    const rows = rowsFromMaps(
      dump('@ref', [
        [4000, 4001, 1, 'b', 200],
        [1234, 1234, 0, 'a', 1000],
      ]),
      dump('@miss', [
        [1234, 1234, 0, 'a', 250],
        [4000, 4001, 1, 'b', 300],
      ]),
    );
    assert.equal(
      formatTable(rows, false),
      'PID      NAME             CPU     REFERENCE         MISS    HIT%\n' +
        '1234     a                0            1000          250  75.00%\n' +
        '4000     b                1             200          300   0.00%\n' +
        'Total References: 1200 Total Misses: 550 Hit Rate: 54.17%\n',
    );
    assert.match(formatTable(rows, true), /^PID {6}TID {6}NAME {13}CPU/);
    assert.match(formatTable(rows, true), /^4000 {5}4001 {5}b {16}1 /m);
    assert.equal(formatTable([], false).split('\n')[1], 'Total References: 0 Total Misses: 0 Hit Rate: 0.00%');
  });
});

describe('llcstat on the live kernel', () => {
  const skip = liveSkipReason() ?? (hardwareEventsWork() ? 'this machine has a PMU' : undefined);

  it('without hardware counters: one sentence, exit status 1', { skip }, async () => {
    const r = await runBpfscope(['llcstat', '1']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(
      r.stderr,
      'ERROR: llcstat: the cache-references and cache-misses hardware events cannot be opened: this machine has no hardware performance counters (PMU) the kernel exposes\n',
    );
  });

  it('runTool and --json refuse with the same sentence', { skip }, async () => {
    const r = await runBpfscope(['llcstat', '1']);
    const sentence = r.stderr.replace(/^ERROR: /, '').trimEnd();
    await assert.rejects(runTool('llcstat', ['1']), (e: unknown) => (e as Error).message === sentence);
    const j = await runBpfscope(['llcstat', '--json', '1']);
    assert.equal(j.code, 1);
    assert.equal(j.stdout, '');
    assert.equal(j.stderr, r.stderr);
  });
});
