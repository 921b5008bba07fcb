/** syncsnoop (src/tools/syncsnoop.ts): bcc's header and row format, and a live run that sees sync and fsync. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { formatRow, header } from '../../src/tools/syncsnoop.js';
import { workloadPath } from '../helpers/workload.js';
import { liveSkipReason, removeScratch, startBpfscope, tempDir } from './helpers.js';

describe('syncsnoop output format (bcc tools/syncsnoop.py)', () => {
  it('header "%-18s %-16s %-16s" and rows "%-18.9f %-16s" + " %-16s"', () => {
    assert.equal(header(), 'TIME(s)            COMM             CALL            \n');
    assert.equal(formatRow(['16458043098', '2', 'sync']), '16458.043098000    sync             fsync           \n');
    assert.equal(formatRow(['5', '6', 'a']), '0.000005000        a                syncfs          \n');
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

  it('sees 2 sync() and 1 fsync() calls of the workload', { skip }, async () => {
    const run = startBpfscope(['syncsnoop']);
    assert.ok(await run.waitFor(/CALL +\n/, 20_000), run.stderr());
    const w = spawnSync(workloadPath(), ['comm', 'bpfs_sync', 'sync', '2', 'fsync', join(dir, 'f'), '1'], {
      encoding: 'utf8',
    });
    assert.equal(w.status, 0, w.stderr);
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
});
