/**
 * biosnoop (src/tools/biosnoop.ts): bcc's header and row format, and a live run on a loop device the test
 * creates: four O_DIRECT reads of 64 KiB at known sectors.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { formatRow, header } from '../../src/tools/biosnoop.js';
import { workloadPath } from '../helpers/workload.js';
import { liveLoopDevice, startBpfscope } from './helpers.js';

describe('biosnoop output format (bcc tools/biosnoop.py)', () => {
  it('headers', () => {
    assert.equal(
      header({ queue: false, pattern: false }),
      'TIME(s)     COMM           PID     DISK      T SECTOR     BYTES  LAT(ms)\n',
    );
    assert.equal(
      header({ queue: true, pattern: true }),
      'TIME(s)     COMM           PID     DISK      T SECTOR     BYTES  P QUE(ms) LAT(ms)\n',
    );
  });

  it('rows: time from the first event, %-14.14s comm, R/W from rwbs, %7.2f ms', () => {
    const names = (d: number): string => (d === 7 * 2 ** 20 ? 'loop0' : '<unknown>');
    const state = { startUs: 0n };
    const o = { queue: true, pattern: true };
    // fields: ts_ns issue_ns start_ns pid dev sector bytes pattern rwbs comm
    const dev = String(7 * 2 ** 20);
    assert.equal(
      formatRow(
        ['2000000000', '1999000000', '1998875000', '181', dev, '128', '65536', '1', 'RS', 'a-very-long-name-x'],
        o,
        names,
        state,
      ),
      '0.000000    a-very-long-na 181     loop0     R 128        65536  S    0.12    1.00\n',
    );
    assert.equal(
      formatRow(['2001500000', '2001000000', '0', '0', '0', '0', '4096', '0', 'WS', ''], o, names, state),
      '0.001500    ?              0       <unknown> W 0          4096   ?    0.00    0.50\n',
    );
  });
});

describe('biosnoop on the live kernel', () => {
  const { skip, device } = liveLoopDevice();

  it('-d loopN -Q -P: four 64 KiB reads at sectors 0, 128, 256, 384 by the workload', { skip }, async () => {
    const run = startBpfscope(['biosnoop', '-d', device().name, '-Q', '-P']);
    assert.ok(await run.waitFor(/LAT\(ms\)\n/, 20_000), run.stderr());
    const w = spawnSync(workloadPath(), ['comm', 'bpfs_bio', 'odirect-read', device().path, '4', '65536'], {
      encoding: 'utf8',
    });
    assert.equal(w.status, 0, w.stderr);
    assert.ok(await run.waitFor(/( 384 [^\n]*\n)/, 10_000), run.stdout());
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const rows = r.stdout.split('\n').slice(1, -1);
    assert.equal(rows.length, 4, r.stdout);
    const name = device().name.padEnd(9);
    rows.forEach((row, i) => {
      const sector = String(i * 128).padEnd(10);
      const pattern = i === 0 ? '\\?' : 'S';
      assert.match(
        row,
        new RegExp(
          `^\\d+\\.\\d{6} +bpfs_bio {7}${w.pid ?? '\\d+'} +${name} R ${sector} 65536  ${pattern} +\\d+\\.\\d\\d +\\d+\\.\\d\\d$`,
        ),
      );
    });
  });
});
