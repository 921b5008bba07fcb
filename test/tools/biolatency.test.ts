/**
 * biolatency (src/tools/biolatency.ts): the interval output in bcc's formats from map dumps, and live runs on a
 * loop device the test creates, reading it with O_DIRECT a known number of times.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import type { MapDump } from '../../src/runtime/output/model.js';
import { formatInterval } from '../../src/tools/biolatency.js';
import { bpfState, fdHeldIds, findLeaks, tracefsProbeEvents, withReferences } from '../helpers/bpf-objects.js';
import { workloadPath } from '../helpers/workload.js';
import { liveLoopDevice, startBpfscope, waitForLinks } from './helpers.js';
import { histDump, scalarDump } from './maps.js';

describe('biolatency output (bcc tools/biolatency.py)', () => {
  const opts = { queued: false, milliseconds: false, disks: false, extension: false, timestamp: false, json: false };
  const now = new Date(2024, 0, 2, 3, 4, 5);

  it('one histogram, -e summary line', () => {
    const maps: Record<string, MapDump> = {
      dist: histDump('dist', new Map([[null, [0, 1, 5, 6, 100]]])),
      ext_total: scalarDump('ext_total', 112n, 'sum'),
      ext_count: scalarDump('ext_count', 5n, 'count'),
    };
    const t = { readMap: (n: string) => maps[n]! };
    assert.equal(
      formatInterval(t, { ...opts, extension: true }, () => '?', now),
      '\n' +
        '     usecs               : count     distribution\n' +
        '         0 -> 1          : 2        |****************************************|\n' +
        '         2 -> 3          : 0        |                                        |\n' +
        '         4 -> 7          : 2        |****************************************|\n' +
        '         8 -> 15         : 0        |                                        |\n' +
        '        16 -> 31         : 0        |                                        |\n' +
        '        32 -> 63         : 0        |                                        |\n' +
        '        64 -> 127        : 1        |********************                    |\n' +
        '\navg = 22 usecs, total: 112 usecs, count: 5\n\n',
    );
  });

  it('-D sections "disk = <name>", -T time line, -m label', () => {
    const maps: Record<string, MapDump> = {
      dist: histDump(
        'dist',
        new Map([
          [7n * 2n ** 20n, [3]],
          [254n * 2n ** 20n, [1]],
        ]),
      ),
    };
    const names = (d: number): string => (d === 7 * 2 ** 20 ? 'loop0' : 'vda');
    assert.equal(
      formatInterval(
        { readMap: (n) => maps[n]! },
        { ...opts, disks: true, milliseconds: true, timestamp: true },
        names,
        now,
      ),
      '\n03:04:05\n' +
        '\ndisk = loop0\n' +
        '     msecs               : count     distribution\n' +
        '         0 -> 1          : 0        |                                        |\n' +
        '         2 -> 3          : 1        |****************************************|\n' +
        '\ndisk = vda\n' +
        '     msecs               : count     distribution\n' +
        '         0 -> 1          : 1        |****************************************|\n',
    );
  });

  it('-j: one JSON record per histogram, bcc keys', () => {
    const maps: Record<string, MapDump> = { dist: histDump('dist', new Map([[7n * 2n ** 20n, [2, 3, 9]]])) };
    assert.equal(
      formatInterval({ readMap: (n) => maps[n]! }, { ...opts, disks: true, json: true }, () => 'loop0', now),
      '\n{"ts": "2024-01-02 03:04:05", "val_type": "usecs", "data": [{"interval-start": 0, "interval-end": 1, "count": 0}, ' +
        '{"interval-start": 2, "interval-end": 3, "count": 2}, {"interval-start": 4, "interval-end": 7, "count": 0}, ' +
        '{"interval-start": 8, "interval-end": 15, "count": 1}], "disk": "loop0"}\n',
    );
  });
});

/** Sum of the counts of a bcc histogram text. */
export function histCount(text: string): number {
  let n = 0;
  for (const m of text.matchAll(/^ +\d+ -> \d+ +: (\d+) +\|/gm)) n += Number(m[1]);
  return n;
}

describe('biolatency on the live kernel', () => {
  const { skip, device } = liveLoopDevice();

  it('-d loopN -e 5 1: counts the 10 O_DIRECT reads in one 5 s interval, then exits by itself', { skip }, async () => {
    const before = { state: bpfState(), tracefs: tracefsProbeEvents() };
    const run = startBpfscope(['biolatency', '-d', device().name, '-e', '5', '1']);
    assert.ok(await run.waitFor(/Hit Ctrl-C to end\.\n/, 20_000), run.stderr());
    const ours = withReferences(fdHeldIds(run.pid), bpfState());
    const w = spawnSync(workloadPath(), ['comm', 'bpfs_bio', 'odirect-read', device().path, '10', '65536'], {
      encoding: 'utf8',
    });
    assert.equal(w.status, 0, w.stderr);
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.signal, null);
    assert.match(
      r.stdout,
      /^Tracing block device I\/O\.\.\. Hit Ctrl-C to end\.\n\n {5}usecs {15}: count {5}distribution\n/,
    );
    assert.equal(histCount(r.stdout), 10, r.stdout);
    assert.match(r.stdout, /\navg = \d+ usecs, total: \d+ usecs, count: 10\n\n$/);
    const leaks = await findLeaks(before, ours);
    assert.equal(
      leaks.leaked.progs.size + leaks.leaked.maps.size + leaks.leaked.links.size,
      0,
      'BPF objects left behind',
    );
  });

  it('-D -j: a JSON record for the loop device, ended by SIGTERM', { skip }, async () => {
    const run = startBpfscope(['biolatency', '-D', '-j', '-d', device().name]);
    // JSON mode prints no "Tracing..." line: wait until the run holds its two probes' links.
    assert.ok(await waitForLinks(run.pid, 2, 20_000), run.stderr());
    const w = spawnSync(workloadPath(), ['odirect-read', device().path, '6', '4096'], { encoding: 'utf8' });
    assert.equal(w.status, 0, w.stderr);
    run.child.kill('SIGTERM');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split('\n').filter((l) => l.startsWith('{'));
    assert.equal(lines.length, 1, r.stdout);
    const rec = JSON.parse(lines[0]!) as { val_type: string; disk: string; data: { count: number }[] };
    assert.equal(rec.val_type, 'usecs');
    assert.equal(rec.disk, device().name);
    assert.equal(
      rec.data.reduce((a, d) => a + d.count, 0),
      6,
    );
  });

  it('-F is refused as bcc refuses it on block tracepoints', { skip }, async () => {
    const r = await startBpfscope(['biolatency', '-F']).done;
    assert.equal(r.code, 1);
    assert.equal(r.stdout, "ERROR: blk_account_io_start/done probes not available. Can't use -F.\n");
  });
});
