/**
 * hardirqs (src/tools/hardirqs.ts): bcc's table and section formats from map dumps, and live runs while the test
 * makes disk I/O (O_DIRECT reads of a file written to /var/tmp), which raises the disk's interrupt.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { MapDump } from '../../src/runtime/output/model.js';
import { buildProgram, formatInterval } from '../../src/tools/hardirqs.js';
import { workloadPath } from '../helpers/workload.js';
import { liveSkipReason, removeScratch, runBpfscope, scratchDir, startBpfscope } from './helpers.js';

function byName(values: [string, bigint][], kind: 'sum' | 'count'): MapDump {
  return {
    name: '@dist',
    keyTypes: [],
    valueType: { kind: 'int', size: 8, signed: false } as never,
    entries: values.map(([k, v]) => ({
      key: [{ kind: 'string', value: k }],
      value: { kind, value: v, signed: false },
    })),
  };
}

describe('hardirqs output (bcc tools/hardirqs.py)', () => {
  const base = { count: false, dist: false, nanoseconds: false, timestamp: false };

  it('"%-26s %11s" table sorted by time, usecs truncated', () => {
    const maps = {
      dist: byName(
        [
          ['virtio1-req.0', 158_999n],
          ['virtio3-tx', 6_000n],
          ['ahci[0000:00:1f.2]', 1_000_000n],
        ],
        'sum',
      ),
    };
    assert.equal(
      formatInterval({ readMap: (n) => maps[n as 'dist'] }, base),
      '\nHARDIRQ                    TOTAL_usecs\n' +
        'ahci[0000:00:1f.2]                1000\n' +
        'virtio1-req.0                      158\n' +
        'virtio3-tx                           6\n',
    );
  });

  it('-C counts, -N nanoseconds', () => {
    const maps = { dist: byName([['eth0', 7n]], 'count') };
    assert.equal(
      formatInterval({ readMap: () => maps.dist }, { ...base, count: true }),
      '\nHARDIRQ                    TOTAL_count\neth0                                 7\n',
    );
    assert.equal(
      formatInterval({ readMap: () => maps.dist }, { ...base, nanoseconds: true }),
      '\nHARDIRQ                    TOTAL_nsecs\neth0                                 7\n',
    );
  });

  it('programs: IRQ_NONE not counted; -c CPU', () => {
    const p = buildProgram({ count: false, dist: true, nanoseconds: false, cpu: 1 });
    assert.match(
      p,
      /irq_handler_entry \/cpu == 1\/ \{\n {2}@name\[tid, cpu\] = str\(args\.name, 32\);\n {2}@start\[tid, cpu\] = nsecs;/,
    );
    assert.match(
      p,
      /if \(args\.ret != 0 && \$s != 0\) \{\n {4}\$n = @name\[tid, cpu\];\n {4}@dist\[\$n\] = hist\(\(nsecs - \$s\) \/ 1000\);/,
    );
  });
});

describe('hardirqs on the live kernel', () => {
  const skip = liveSkipReason();
  let dir = '';
  let file = '';
  before(() => {
    dir = scratchDir();
    file = join(dir, 'io.bin');
    writeFileSync(file, Buffer.alloc(4 << 20, 1));
    spawnSync('sync', [file]);
  });
  after(() => removeScratch(dir));

  const io = (): void => {
    // Drop the file's pages so O_DIRECT reads reach the disk; then read it.
    const w = spawnSync(workloadPath(), ['odirect-read', file, '64', '65536'], { encoding: 'utf8' });
    assert.equal(w.status, 0, w.stderr);
  };

  it('time per handler: header and at least one handler row', { skip }, async () => {
    const run = startBpfscope(['hardirqs', '1', '1']);
    assert.ok(await run.waitFor(/Tracing hard irq event time\.\.\. Hit Ctrl-C to end\.\n/, 20_000), run.stderr());
    io();
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split('\n');
    assert.deepEqual(lines.slice(0, 3), [
      'Tracing hard irq event time... Hit Ctrl-C to end.',
      '',
      'HARDIRQ                    TOTAL_usecs',
    ]);
    const rows = lines.slice(3).filter((l) => l !== '');
    assert.ok(rows.length >= 1, r.stdout);
    for (const row of rows) assert.match(row, /^.{26} +\d+$/);
  });

  it('-C -T: counts with the time line; -d sections "hardirq = <name>"', { skip }, async () => {
    const run = startBpfscope(['hardirqs', '-CT', '1', '1']);
    assert.ok(await run.waitFor(/Tracing hard irq events\.\.\. Hit Ctrl-C to end\.\n/, 20_000), run.stderr());
    io();
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^Tracing hard irq events\.\.\. Hit Ctrl-C to end\.\n\n\d\d:\d\d:\d\d\nHARDIRQ {20}TOTAL_count\n(.{26} +[1-9]\d*\n)+$/,
    );

    const d = startBpfscope(['hardirqs', '-d', '1', '1']);
    assert.ok(await d.waitFor(/Hit Ctrl-C to end\.\n/, 20_000), d.stderr());
    io();
    const rd = await d.done;
    assert.equal(rd.code, 0, rd.stderr);
    assert.match(rd.stdout, /\n\nhardirq = \S.*\n {5}usecs {15}: count {5}distribution\n/);
  });

  it('-C with -d is refused as bcc refuses it (exit 0)', async () => {
    const r = await runBpfscope(['hardirqs', '-C', '-d']);
    assert.equal(r.code, 0);
    assert.equal(r.stdout, "The --count option can't be used with time-based options\n");
  });
});
