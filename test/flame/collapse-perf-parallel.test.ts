import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { collapsePerfParallel, findCuts } from '../../src/flame/collapse/perf-parallel.js';
import type { PerfCollapseOptions } from '../../src/flame/collapse/perf.js';
import { referenceData, repoRoot } from './helpers.js';

const ref = referenceData();
const tmp = mkdtempSync(join(tmpdir(), 'bpfscope-collapse-par-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

/**
 * Collapses `input` (written to a file) on `parts` threads (in parts of about `partBytes`, at least `parts` of them);
 * null when the parallel reader declines.
 */
async function parallel(
  input: string | Buffer,
  parts: number,
  opts: PerfCollapseOptions = {},
  partBytes?: number,
): Promise<{ out: string; warnings: string[] } | null> {
  const f = join(tmp, `in-${parts}.perf`);
  writeFileSync(f, input);
  const warnings: string[] = [];
  const c = await collapsePerfParallel(
    f,
    { ...opts, warn: (m) => warnings.push(m) },
    { parts, minBytes: 1, partBytes },
  );
  if (c === null) return null;
  const out = Buffer.concat(Array.from(c.finish(), (p) => Buffer.from(p))).toString('latin1');
  return { out, warnings };
}

const sample = (comm: string, event: string, period: number, frames: string[]): string =>
  `${comm} 10/11 [000] 1.0: ${period} ${event}:\n${frames.map((f) => `\tffff${f.length} ${f}+0x1 (/lib/x.so)\n`).join('')}\n`;

describe('stackcollapse-perf in parts on worker threads', () => {
  it('cuts a file smaller than one read at blank lines, with the first event as the filter (2-5 parts)', async () => {
    const input =
      '# perf header\n' +
      sample('aa', 'cpu-clock', 3, ['leaf', 'mid', 'root']) +
      sample('bb', 'cycles', 100, ['x']) + // another event: dropped, with one warning
      sample('aa', 'cpu-clock', 4, ['leaf', 'mid', 'root']) +
      sample('cc', 'cpu-clock', 0, ['z', 'y']) + // period 0 counts 1
      sample('bb', 'cycles', 100, ['x']) +
      sample('aa', 'cpu-clock', 5, ['other', 'root']);
    const expected = 'aa;root;mid;leaf 7\naa;root;other 5\ncc;y;z 1\n';
    for (let parts = 2; parts <= 5; parts++) {
      const r = await parallel(input, parts);
      assert.ok(r, `${parts} parts`);
      assert.equal(r.out, expected, `${parts} parts`);
      assert.deepEqual(r.warnings, ['Filtering for events of type: cycles'], `${parts} parts`);
    }
  });

  it('keeps --event-filter and drops a last sample without a blank line (no trailing newline)', async () => {
    const input =
      sample('aa', 'cpu-clock', 3, ['f']) +
      sample('bb', 'cycles', 7, ['g']) +
      sample('bb', 'cycles', 2, ['g']) +
      'bb 10/11 [000] 1.0: 9 cycles:\n\tffff1 h+0x1 (/lib/x.so)';
    for (let parts = 2; parts <= 3; parts++) {
      const r = await parallel(input, parts, { eventFilter: 'cycles' });
      assert.ok(r);
      assert.equal(r.out, 'bb;g 9\n');
      assert.deepEqual(r.warnings, []);
    }
  });

  it('declines CRLF input (no blank line to cut at)', async () => {
    const crlf = sample('aa', 'cpu-clock', 3, ['f']).replaceAll('\n', '\r\n').repeat(8);
    assert.equal(await parallel(crlf, 2), null);
  });

  it('takes the first event of the file as the filter when it is in a later part', async () => {
    // Four segments of 200 bytes, each ending in a blank line; in 3 parts the cuts fall at 400 and 600.
    const L = 200;
    const seg = (text: string): string => `#${'x'.repeat(L - text.length - 2)}\n${text}`;
    const cutsOf = (input: string): number[] | null => {
      const f = join(tmp, 'cuts.perf');
      writeFileSync(f, input);
      return findCuts(f, input.length, 3);
    };
    // No event in the first part: the first event (cycles, in the second part) filters every part, with one warning
    // for the first sample dropped in file order (cpu-clock, in the third part), whichever thread reads it.
    const first =
      seg('\n') +
      seg('\n') +
      seg(sample('bb', 'cycles', 7, ['g'])) +
      seg(sample('bb', 'cpu-clock', 1, ['h']) + sample('bb', 'cycles', 2, ['g']) + sample('bb', 'instr', 1, ['i']));
    assert.deepEqual(cutsOf(first), [0, 400, 600, 800]);
    for (const parts of [2, 3]) {
      assert.deepEqual(await parallel(first, parts, {}, 250), {
        out: 'bb;g 9\n',
        warnings: ['Filtering for events of type: cpu-clock'],
      });
    }
  });

  it('gives the warnings of many parts in file order, the filter warning once (any thread may read any part)', async () => {
    // 40 parts of one sample each: "Unrecognized line" warnings name their part; every part drops a sample.
    let input = '';
    for (let k = 0; k < 40; k++) {
      input += sample('aa', 'cpu-clock', 1, ['f']) + `junk line ${k}\n\n` + sample('bb', `ev${k}`, 1, ['g']);
    }
    // As stackcollapse-perf.pl gives them (its stderr on 3 such parts: junk 0, filtering ev0, junk 1, junk 2).
    const expected: string[] = [];
    for (let k = 0; k < 40; k++) {
      expected.push(`Unrecognized line: junk line ${k}`);
      if (k === 0) expected.push('Filtering for events of type: ev0');
    }
    for (const parts of [2, 3]) {
      const r = await parallel(input, parts, {}, 64);
      assert.ok(r);
      assert.equal(r.out, 'aa;f 40\n');
      assert.deepEqual(r.warnings.slice().sort(), expected.slice().sort(), `${parts} threads: the same set`);
      assert.deepEqual(r.warnings, expected, `${parts} threads: in file order`);
    }
  });

  it('counts samples cut by the 1 MiB reads and by the parts (3 MB, 2 and 3 parts)', async () => {
    // 6,000 rounds of three samples of ~180 bytes: the reads and the cuts fall inside samples and lines.
    const long = Array.from({ length: 8 }, (_, i) => `function_with_a_long_name_${i}`);
    const round =
      sample('java', 'cpu-clock', 2, long) +
      sample('java', 'cpu-clock', 1, long.slice(0, 3)) +
      sample('perl', 'cpu-clock', 5, ['a->b', 'main']);
    const input = round.repeat(6000);
    assert.ok(input.length > 3 << 20);
    const expected =
      'java;function_with_a_long_name_2;function_with_a_long_name_1;function_with_a_long_name_0 6000\n' +
      'java;function_with_a_long_name_7;function_with_a_long_name_6;function_with_a_long_name_5;' +
      'function_with_a_long_name_4;function_with_a_long_name_3;function_with_a_long_name_2;' +
      'function_with_a_long_name_1;function_with_a_long_name_0 12000\n' +
      'perl;main;a;b_[i] 30000\n';
    for (const parts of [2, 3]) {
      const r = await parallel(input, parts);
      assert.ok(r);
      assert.equal(r.out, expected, `${parts} parts`);
    }
  });

  describe('against stackcollapse-perf.pl reference output', { skip: !ref && 'shared/testdata not found' }, () => {
    it('gives the expected bytes for every reference file and option set (2 parts; 3 without options)', async () => {
      const files = readdirSync(join(ref!, 'expected')).filter((f) => f.includes('-collapsed'));
      assert.equal(files.length, 63);
      let cut = 0;
      for (const f of files) {
        const m = /^(.*)-collapsed(?:-(pid|tid|kernel|jit|all|addrs))?\.txt$/.exec(f)!;
        const input = readFileSync(join(ref!, 'perf', `${m[1]}.txt`));
        const opts: PerfCollapseOptions = m[2] ? { [m[2]]: true } : {};
        const expected = readFileSync(join(ref!, 'expected', f), 'latin1');
        for (const parts of m[2] ? [2] : [2, 3]) {
          const r = await parallel(input, parts, opts);
          if (r === null) continue;
          cut++;
          assert.equal(r.out, expected, `${f} in ${parts} parts`);
        }
      }
      assert.ok(cut >= 70, `only ${cut} of 72 runs were cut into parts`);
    });
  });

  it('the CLI bundle collapses a 9 MB file with its worker (perf-worker.cjs)', () => {
    if (!fileURLToPath(import.meta.url).includes('/dist/')) return; // the bundle exists only when built
    const f = join(tmp, 'big.perf');
    // 45,000 rounds of ~210 bytes: above PARALLEL_MIN_BYTES (8 MiB).
    const round =
      sample('dd', 'cpu-clock', 1, ['copy_user', 'vfs_read', 'sys_read']) + sample('dd', 'cpu-clock', 1, ['io']);
    writeFileSync(f, round.repeat(45000));
    const r = spawnSync(process.execPath, [
      join(repoRoot(), 'dist', 'bundle', 'bpfscope.cjs'),
      'stackcollapse-perf',
      f,
    ]);
    assert.equal(r.stderr.toString(), '');
    assert.equal(r.status, 0);
    assert.equal(r.stdout.toString(), 'dd;io 45000\ndd;sys_read;vfs_read;copy_user 45000\n');
  });
});
