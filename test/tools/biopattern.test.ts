/**
 * biopattern (src/tools/biopattern.ts): bcc's help and usage errors, the generated program, the row format
 * (Python's round), and a live run on a loop device the test creates: 4 x 64 KiB reads from sector 0, then
 * 2 x 4 KiB from sector 0 again, so exactly 4 sequential and 1 random request after the first (text, --json and
 * runTool).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import type { MapDump } from '../../src/runtime/output/model.js';
import { runTool } from '../../src/index.js';
import { buildProgram, collectRows, formatRow, HEADER, SPEC } from '../../src/tools/biopattern.js';
import { pyRound } from '../../src/tools/framework/pyformat.js';
import { workloadPath } from '../helpers/workload.js';
import { argparseFixtureTests } from './argparse-fixture.js';
import { liveLoopDevice, runBpfscope, startBpfscope } from './helpers.js';
import { jsonLines, startJson } from './jsonrun.js';

describe('biopattern options (bcc tools/biopattern.py argparse)', () => {
  argparseFixtureTests(SPEC, 'biopattern-argparse');
});

describe('biopattern program and rows', () => {
  it('sequential when a request starts at the end of the previous one; -d filters by dev_t', () => {
    const p = buildProgram({ dev: 7 * 2 ** 20 });
    assert.match(p, /tracepoint:block:block_rq_complete \/args\.dev == 7340032\/ \{\n {2}\$l = @last\[args\.dev\];/);
    assert.match(p, /if \(\$l == args\.sector\) \{\n {6}@seq\[args\.dev\] = count\(\);\n {4}\} else \{\n {6}@rnd/);
    assert.match(
      p,
      /@bytes\[args\.dev\] = sum\(args\.nr_sector \* 512\);\n {2}\}\n {2}@last\[args\.dev\] = args\.sector \+ args\.nr_sector;/,
    );
  });

  it('header and rows as bcc prints them; round half to even; no row without requests', () => {
    assert.equal(HEADER, 'TIME      DISK     %RND  %SEQ    COUNT     KBYTES\n');
    const now = '09:05:07';
    const name = (d: number): string => (d === 7 * 2 ** 20 ? 'loop0' : 'Unknown');
    assert.equal(
      formatRow({ dev: 7 * 2 ** 20, random: 1n, sequential: 7n, bytes: 4607n }, name, now),
      '09:05:07  loop0      12    88        8          4\n',
    );
    assert.equal(
      formatRow({ dev: 1, random: 3n, sequential: 5n, bytes: 0n }, name, now),
      '09:05:07  Unknown    38    62        8          0\n',
    );
    assert.equal(formatRow({ dev: 1, random: 0n, sequential: 0n, bytes: 0n }, name, now), '');
    assert.deepEqual([pyRound(12.5), pyRound(13.5), pyRound(37.5), pyRound(0.49), pyRound(2.51)], [12, 14, 38, 0, 3]);
  });

  it('joins @rnd, @seq and @bytes by disk', () => {
    const dump = (kind: 'count' | 'sum', rows: [number, bigint][]): MapDump => ({
      name: '@m',
      keyTypes: [],
      valueType: { kind: 'int', size: 8, signed: false } as never,
      entries: rows.map(([dev, value]) => ({
        key: [{ kind: 'int', value: BigInt(dev), signed: false, size: 4 }],
        value: { kind, value, signed: false },
      })),
    });
    const maps: Record<string, MapDump> = {
      rnd: dump('count', [[9, 2n]]),
      seq: dump('count', [
        [9, 1n],
        [3, 4n],
      ]),
      bytes: dump('sum', [
        [3, 8192n],
        [9, 100n],
      ]),
    };
    assert.deepEqual(collectRows({ readMap: (n: string) => maps[n]! }), [
      { dev: 3, random: 0n, sequential: 4n, bytes: 8192n },
      { dev: 9, random: 2n, sequential: 1n, bytes: 100n },
    ]);
  });
});

describe('biopattern on the live kernel', () => {
  const { skip, device } = liveLoopDevice();

  it('-d loopN: 20% random, 80% sequential, 5 requests, 200 KB', { skip }, async () => {
    const run = startBpfscope(['biopattern', '-d', device().name]);
    assert.ok(await run.waitFor(/KBYTES\n/, 20_000), run.stderr());
    const w = spawnSync(
      workloadPath(),
      ['comm', 'bpfs_bp', 'odirect-read', device().path, '4', '65536', 'odirect-read', device().path, '2', '4096'],
      { encoding: 'utf8' },
    );
    assert.equal(w.status, 0, w.stderr);
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const name = device().name.padEnd(7);
    assert.match(
      r.stdout,
      new RegExp(
        `^TIME      DISK     %RND  %SEQ    COUNT     KBYTES\\n\\d\\d:\\d\\d:\\d\\d  ${name}    20    80        5        200\\n$`,
      ),
    );
  });

  it('-d with a missing disk: bcc message, exit 1', { skip }, async () => {
    const r = await runBpfscope(['biopattern', '-d', 'no-such-disk-x']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, "no such disk 'no-such-disk-x'\n");
  });
});

describe('biopattern --json and runTool', () => {
  const { skip, device } = liveLoopDevice();
  const workload = () =>
    spawnSync(
      workloadPath(),
      ['comm', 'bpfs_bp', 'odirect-read', device().path, '4', '65536', 'odirect-read', device().path, '2', '4096'],
      { encoding: 'utf8' },
    );

  it('runTool -d loopN: one row, 1 random, 4 sequential, 200 KiB', { skip }, async () => {
    const run = await runTool('biopattern', ['-d', device().name]);
    const w = workload();
    assert.equal(w.status, 0, w.stderr);
    await run.close();
    const ticks = [];
    for await (const t of run.intervals()) ticks.push(t);
    assert.equal(ticks.length, 1);
    assert.deepEqual(
      ticks[0]!.rows.map((r) => [r.disk, r.random, r.sequential, r.bytes]),
      [[device().name, 1n, 4n, 200n * 1024n]],
    );
  });

  it('--json -d loopN: the same row as a JSON object', { skip }, async () => {
    const run = await startJson(['biopattern', '--json', '-d', device().name]);
    const w = workload();
    assert.equal(w.status, 0, w.stderr);
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const ticks = jsonLines<{ rows: { disk: string; random: number; sequential: number; bytes: number }[] }>(r.stdout);
    assert.equal(ticks.length, 1, r.stdout);
    assert.deepEqual(
      ticks[0]!.rows.map((x) => [x.disk, x.random, x.sequential, x.bytes]),
      [[device().name, 1, 4, 204800]],
    );
  });
});
