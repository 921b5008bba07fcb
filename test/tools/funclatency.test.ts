/**
 * funclatency (src/tools/funclatency.ts): -h equal to CPython's argparse on bcc's parser, the generated
 * entry/return program, bcc's sections and average line, bcc's error messages, and live runs with -p on the test
 * workload's noinline `num` function (uprobe + uretprobe) and libc's `syscall()` around nanosleeps of known length.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { MapDump } from '../../src/runtime/output/model.js';
import { formatHelp } from '../../src/tools/framework/argparse.js';
import { parseProbeSpec } from '../../src/tools/framework/probespec.js';
import { averageLine, buildProgram, needKey, sections, SPEC } from '../../src/tools/funclatency.js';
import { repoRoot } from '../helpers/cli.js';
import { workloadPath } from '../helpers/workload.js';
import { liveSkipReason, runBpfscope } from './helpers.js';
import { runAgainstWorkload } from './pidrun.js';

const fixture = JSON.parse(
  readFileSync(join(repoRoot(), 'test', 'tools', 'fixtures', 'func-tools-argparse.json'), 'utf8'),
) as { help: Record<string, string> };

const lib = (n: string) => (n === 'c' ? '/lib/libc.so.6' : undefined);

/** Sum of the counts of a bcc histogram text, and the count of the row whose range starts at `low`. */
function histCounts(text: string): Map<number, number> {
  const m = new Map<number, number>();
  for (const r of text.matchAll(/^\s+(\d+) -> (\d+)\s+: (\d+)\s+\|/gm)) m.set(Number(r[1]), Number(r[3]));
  return m;
}

describe('funclatency options and program', () => {
  it('-h equals argparse on bcc parser', () => {
    assert.equal(formatHelp(SPEC, 78), fixture.help.funclatency);
  });

  it('entry stores nsecs by tid; return records the delta in the unit, keyed as bcc (need_key)', () => {
    const spec = parseProbeSpec('c:read*', { findLibrary: lib });
    const t = {
      spec,
      names: ['read', 'readv'],
      attachPoints: ['uprobe:/lib/libc.so.6:read', 'uprobe:/lib/libc.so.6:readv'],
    };
    assert.equal(needKey(t, { function: false, pid: null }), true);
    assert.equal(needKey(t, { function: false, pid: 5 }), false);
    assert.equal(needKey({ ...t, spec: parseProbeSpec('vfs_read') }, { function: false }), false);
    assert.equal(
      buildProgram(t, { pid: 5, unit: 'usecs', perFunction: true }),
      'config = { max_map_keys = 10240 }\n' +
        'uprobe:/lib/libc.so.6:read,\nuprobe:/lib/libc.so.6:readv /pid == 5/ {\n  @start[tid] = nsecs;\n}\n' +
        'uretprobe:/lib/libc.so.6:read,\nuretprobe:/lib/libc.so.6:readv /@start[tid]/ {\n' +
        '  $delta = nsecs - @start[tid];\n  delete(@start[tid]);\n' +
        '  @total = sum($delta);\n  @count = count();\n' +
        '  @dist[func, pid] = hist($delta / 1000);\n}\n',
    );
    const k = buildProgram(
      { spec: parseProbeSpec('vfs_read'), names: ['vfs_read'], attachPoints: ['kprobe:vfs_read'] },
      { unit: 'nsecs', perFunction: false },
    );
    assert.match(k, /^kretprobe:vfs_read \/@start\[tid\]\/ \{$/m);
    assert.match(k, /^ {2}@dist = hist\(\$delta\);$/m);
  });

  it('sections "NAME [PID]" sorted; the avg line truncates as Python %ld', () => {
    const hist = (b: [number, number][]) => ({
      kind: 'hist' as const,
      bits: 0,
      buckets: new Map(b.map(([i, n]) => [i, BigInt(n)])),
    });
    const dump: MapDump = {
      name: '@dist',
      keyTypes: [],
      valueType: { kind: 'hist' } as never,
      entries: [
        {
          key: [
            { kind: 'string', value: 'b' },
            { kind: 'int', value: 7n, signed: false, size: 4 },
          ],
          value: hist([[1, 2]]),
        },
        {
          key: [
            { kind: 'string', value: 'a' },
            { kind: 'int', value: 9n, signed: false, size: 4 },
          ],
          value: hist([[1, 1]]),
        },
      ],
    };
    assert.deepEqual(
      sections(dump).map((s) => s.label),
      ['a [9]', 'b [7]'],
    );
    assert.equal(averageLine(3999n, 2n, 'usecs'), '\navg = 1 usecs, total: 3 usecs, count: 2\n\n');
    assert.equal(averageLine(0n, 0n, 'nsecs'), '');
  });
});

describe('funclatency errors', { skip: liveSkipReason() }, () => {
  it("bcc's messages", async () => {
    let r = await runBpfscope(['funclatency', 'a:b:c']);
    assert.equal(r.stdout, "Error: unrecognized pattern format 'a:b:c'\n");
    assert.equal(r.code, 1);
    r = await runBpfscope(['funclatency', 'bpfscope_nolib:f']);
    assert.equal(r.stdout, "Error: can't resolve library bpfscope_nolib\n");
    r = await runBpfscope(['funclatency', `${workloadPath()}:nope*`]);
    assert.equal(r.stdout, `0 functions matched by "${workloadPath()}:nope*". Exiting.\n`);
    assert.equal(r.code, 1);
  });
});

describe('funclatency on the live kernel', { skip: liveSkipReason() }, () => {
  it('uprobe pair on the workload num: 7 calls in one nsecs histogram (-p: no per-process key)', async () => {
    const r = await runAgainstWorkload(
      (pid) => ['funclatency', '-p', String(pid), `${workloadPath()}:num`],
      ['getppid', 7, 'args6', 1, 2, 3, 4, 5, 6],
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.split('\n')[0], `Tracing 1 functions for "${workloadPath()}:num"... Hit Ctrl-C to end.`);
    assert.match(r.stdout, /^ {5}nsecs {15}: count {5}distribution$/m);
    const h = histCounts(r.stdout);
    assert.equal(
      [...h.values()].reduce((a, b) => a + b, 0),
      7,
      r.stdout,
    );
    assert.match(r.stdout, /\navg = \d+ nsecs, total: \d+ nsecs, count: 7\n\nDetaching\.\.\.\n$/);
  });

  it('libc syscall() around 20 ms nanosleeps, -m -F: "Function = syscall [PID]", all from 16 ms up', async () => {
    const r = await runAgainstWorkload(
      (pid) => ['funclatency', '-m', '-F', '-p', String(pid), 'c:syscall'],
      ['nanosleep', 3, 20000],
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`\\nFunction = syscall \\[${r.pid}\\]\\n {5}msecs {15}: count`));
    // a nanosleep never returns early: all three are at least 16 ms (normally in 16 -> 31; a loaded VM may be late)
    const h = histCounts(r.stdout);
    assert.equal((h.get(16) ?? 0) + (h.get(32) ?? 0), 3, r.stdout);
    assert.equal(
      [...h.values()].reduce((x, y) => x + y, 0),
      3,
      r.stdout,
    );
    assert.match(r.stdout, /count: 3\n/);
  });
});
