/**
 * syncsnoop (src/tools/syncsnoop.ts): bcc's header and row format, and live runs that see sync and fsync: the text
 * output, `--json` and runTool's rows.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runTool } from '../../src/index.js';
import { formatRow, header, type SyncRow, toRow } from '../../src/tools/syncsnoop.js';
import { workloadPath } from '../helpers/workload.js';
import { liveSkipReason, removeScratch, startBpfscope, tempDir } from './helpers.js';
import { apiRows, jsonRows } from './jsonrun.js';

describe('syncsnoop output format (bcc tools/syncsnoop.py)', () => {
  it('header "%-18s %-16s %-16s" and rows "%-18.9f %-16s" + " %-16s"', () => {
    assert.equal(header(), 'TIME(s)            COMM             CALL            \n');
    const row = toRow({ kind: 'sync', tsUs: 16458043098, sys: 2, comm: 'sync' });
    assert.deepEqual(row, { tsUs: 16458043098, comm: 'sync', call: 'fsync' });
    assert.equal(formatRow(row), '16458.043098000    sync             fsync           \n');
    assert.equal(
      formatRow(toRow({ kind: 'sync', tsUs: 5, sys: 6, comm: 'a' })),
      '0.000005000        a                syncfs          \n',
    );
  });
});

describe('syncsnoop on the live kernel', () => {
  const skip = liveSkipReason();
  let dir = '';
  before(() => {
    dir = tempDir();
    writeFileSync(join(dir, 'f'), 'x');
  });
  after(() => removeScratch(dir));
  const workload = (comm: string): void => {
    const w = spawnSync(workloadPath(), ['comm', comm, 'sync', '2', 'fsync', join(dir, 'f'), '1'], {
      encoding: 'utf8',
    });
    assert.equal(w.status, 0, w.stderr);
  };

  it('sees 2 sync() and 1 fsync() calls of the workload', { skip }, async () => {
    const run = startBpfscope(['syncsnoop']);
    assert.ok(await run.waitFor(/CALL +\n/, 20_000), run.stderr());
    workload('bpfs_sync');
    assert.ok(await run.waitFor(/bpfs_sync +fsync/, 10_000), run.stdout());
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const ours = r.stdout.split('\n').filter((l) => / bpfs_sync /.test(l));
    assert.equal(ours.length, 3, r.stdout);
    assert.match(ours[0]!, /^\d+\.\d{6}000 +bpfs_sync {8}sync {12}$/);
    assert.match(ours[1]!, /^\d+\.\d{6}000 +bpfs_sync {8}sync {12}$/);
    assert.match(ours[2]!, /^\d+\.\d{6}000 +bpfs_sync {8}fsync {11}$/);
  });

  const calls = (rows: SyncRow[], comm: string): string[] => rows.filter((r) => r.comm === comm).map((r) => r.call);

  it('--json: the same 3 calls as objects, in order, with increasing times', { skip }, async () => {
    // one link per tracepoint attached: those of the six calls this kernel has
    const links = ['sync', 'fsync', 'fdatasync', 'msync', 'sync_file_range', 'syncfs'].filter((c) =>
      existsSync(`/sys/kernel/tracing/events/syscalls/sys_enter_${c}`),
    ).length;
    const rows = await jsonRows<SyncRow>(
      ['syncsnoop'],
      links,
      () => workload('bpfs_syncj'),
      (r) => calls(r, 'bpfs_syncj').length >= 3,
    );
    assert.deepEqual(calls(rows, 'bpfs_syncj'), ['sync', 'sync', 'fsync']);
    const ts = rows.filter((r) => r.comm === 'bpfs_syncj').map((r) => r.tsUs);
    assert.ok(ts[0]! <= ts[1]! && ts[1]! <= ts[2]! && ts[0]! > 0, String(ts));
  });

  it('runTool: the same 3 calls as rows', { skip }, async () => {
    const run = await runTool('syncsnoop');
    workload('bpfs_synca');
    const rows = await apiRows(run, (r) => calls(r, 'bpfs_synca').length >= 3);
    assert.deepEqual(calls(rows, 'bpfs_synca'), ['sync', 'sync', 'fsync']);
  });
});
