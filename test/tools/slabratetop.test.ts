/**
 * slabratetop (src/tools/slabratetop.ts): bcc's help and usage errors, the generated program, the screen format
 * and sort order, and a live run: 20000 failing openat() calls each take a `names_cache` object (getname()), so
 * that row counts at least 20000 allocations of the cache's object size.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { lstatSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { MapDump } from '../../src/runtime/output/model.js';
import { buildProgram, collectRows, formatScreen, SPEC, TABLE_HEADER } from '../../src/tools/slabratetop.js';
import { runTool } from '../../src/index.js';
import { workloadPath } from '../helpers/workload.js';
import { jsonLines, startJson } from './jsonrun.js';
import { argparseFixtureTests } from './argparse-fixture.js';
import { liveSkipReason, startBpfscope } from './helpers.js';

describe('slabratetop options (bcc tools/slabratetop.py argparse)', () => {
  argparseFixtureTests(SPEC, 'slabratetop-argparse');
});

describe('slabratetop program and screen', () => {
  it('counts kmem_cache_alloc by cache name (31 characters, as bcc) and keeps its object size', () => {
    assert.equal(
      buildProgram(),
      'config = { max_map_keys = 10240 }\ntracepoint:kmem:kmem_cache_alloc {\n  $name = str(args.name, 32);\n' +
        '  @size[$name] = args.bytes_alloc;\n  @allocs[$name] = count();\n}\n',
    );
  });

  it('rows by bytes, largest first (ties by name, descending); -r; %-32s %6d %10d', () => {
    const dump = (kind: 'count' | 'int', rows: [string, bigint][]): MapDump => ({
      name: '@m',
      keyTypes: [],
      valueType: { kind: 'int', size: 8, signed: false } as never,
      entries: rows.map(([k, value]) => ({
        key: [{ kind: 'string', value: k }],
        value: kind === 'int' ? { kind, value, signed: false, size: 8 } : { kind, value, signed: false },
      })),
    });
    const maps: Record<string, MapDump> = {
      allocs: dump('count', [
        ['filp', 3550n],
        ['names_cache', 9443n],
        ['a', 1n],
        ['b', 2n],
      ]),
      size: dump('int', [
        ['names_cache', 4096n],
        ['filp', 192n],
        ['a', 64n],
        ['b', 32n],
      ]),
    };
    const rows = collectRows({ readMap: (n: string) => maps[n]! });
    assert.deepEqual(
      rows.map((r) => r.name),
      ['names_cache', 'filp', 'b', 'a'],
    );
    const now = new Date(2024, 0, 1, 4, 27, 21);
    assert.equal(TABLE_HEADER, 'CACHE                            ALLOCS      BYTES\n');
    assert.equal(
      formatScreen(rows, { noclear: true, maxrows: 2 }, now, '5.01 7.13 6.49 7/332 10893'),
      '\n04:27:21 loadavg: 5.01 7.13 6.49 7/332 10893\n\n' +
        'CACHE                            ALLOCS      BYTES\n' +
        'names_cache                        9443   38678528\n' +
        'filp                               3550     681600\n',
    );
    assert.deepEqual(
      rows.find((r) => r.name === 'b'),
      { name: 'b', allocs: 2n, bytes: 64n },
    );
  });
});

describe('slabratetop on the live kernel', () => {
  const slab = '/sys/kernel/slab/names_cache';
  // A cache merged into another (SLUB merging) is a symlink to it, and allocations carry the other's name.
  let unmerged: boolean;
  try {
    unmerged = lstatSync(slab).isDirectory();
  } catch {
    unmerged = false;
  }
  const skip = liveSkipReason() ?? (unmerged ? undefined : 'names_cache is not a separate SLUB cache here');

  it('-C: a names_cache row with >= 20000 allocations of its object size', { skip }, async () => {
    const size = BigInt(readFileSync(`${slab}/slab_size`, 'utf8').trim());
    const run = startBpfscope(['slabratetop', '-C', '-r', '1000', '99']);
    assert.ok(await run.waitFor(/Hit Ctrl-C to end\n/, 20_000), run.stderr());
    const w = spawnSync(workloadPath(), ['comm', 'bpfs_slab', 'openat', '/bpfs-missing', '20000'], {
      encoding: 'utf8',
    });
    assert.equal(w.status, 0, w.stderr);
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^Tracing\.\.\. Output every 99 secs\. Hit Ctrl-C to end\n\n\d\d:\d\d:\d\d loadavg: .*\n\nCACHE {28}ALLOCS {6}BYTES\n/,
    );
    assert.ok(r.stdout.endsWith('Detaching...\n'), r.stdout);
    const m = /^names_cache {21}( *\d+) ( *\d+)$/m.exec(r.stdout);
    assert.ok(m, r.stdout);
    const allocs = BigInt(m[1]!.trim());
    assert.ok(allocs >= 20000n, r.stdout);
    assert.equal(BigInt(m[2]!.trim()), allocs * size);
  });

  /** The text test's facts on an interval object: a names_cache row with >= 20000 allocations of its size. */
  function assertNames(ticks: { rows: { name: string; allocs: number | bigint; bytes: number | bigint }[] }[]): void {
    const size = BigInt(readFileSync(`${slab}/slab_size`, 'utf8').trim());
    const rows = ticks.flatMap((t) => t.rows).filter((r) => r.name === 'names_cache');
    assert.equal(
      rows.length,
      1,
      JSON.stringify(ticks, (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v)),
    );
    const allocs = BigInt(rows[0]!.allocs);
    assert.ok(allocs >= 20000n, String(allocs));
    assert.equal(BigInt(rows[0]!.bytes), allocs * size);
  }

  it('-C --json: the same names_cache row in the final interval object', { skip }, async () => {
    const run = await startJson(['slabratetop', '--json', '-C', '-r', '1000', '99'], 1);
    try {
      const w = spawnSync(workloadPath(), ['comm', 'bpfs_slab', 'openat', '/bpfs-missing', '20000'], {
        encoding: 'utf8',
      });
      assert.equal(w.status, 0, w.stderr);
    } finally {
      run.child.kill('SIGINT');
    }
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const ticks = jsonLines<{ time: string; rows: { name: string; allocs: number; bytes: number }[] }>(r.stdout);
    assert.equal(ticks.length, 1, r.stdout);
    assert.match(ticks[0]!.time, /^\d\d:\d\d:\d\d$/);
    assertNames(ticks);
  });

  it('runTool -C: the same names_cache row', { skip }, async () => {
    const run = await runTool('slabratetop', ['-C', '-r', '1000', '99']);
    const w = spawnSync(workloadPath(), ['comm', 'bpfs_slab', 'openat', '/bpfs-missing', '20000'], {
      encoding: 'utf8',
    });
    assert.equal(w.status, 0, w.stderr);
    assert.equal(await run.close(), 0);
    const ticks = [];
    for await (const t of run.intervals()) ticks.push(t);
    assert.equal(ticks.length, 1);
    assertNames(ticks);
  });
});
