/**
 * execsnoop's per-exec bookkeeping must not allocate in V8's old generation (issue 19, the soak's RSS drift): the
 * argument lists of the execs in flight lived in a long-lived Map, which gets a new hash table, allocated straight
 * in the old generation, at every rehash as PIDs come and go; only a full GC takes those back.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { collect, PendingArgs, type RowOptions } from '../../src/tools/execsnoop.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const oldSpaceUsed = (): number => getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')!.space_used_size;

const O: Pick<RowOptions, 'fails' | 'name' | 'line'> = { fails: false, name: null, line: null };

describe('execsnoop memory', () => {
  it('100,000 execs (two arguments and a result each) add < 1 MB to the old generation', () => {
    const argv = new PendingArgs();
    const ctx = { clock: () => '00:00:00', ppidOf: () => 1 };
    const one = (pid: number): void => {
      collect({ kind: 'arg', pid, arg: '/bin/true' }, O, argv, ctx);
      collect({ kind: 'arg', pid, arg: 'x' }, O, argv, ctx);
      const row = collect({ kind: 'exit', pid, ppid: 1, uid: 0, ret: 0, comm: 'true' }, O, argv, ctx);
      assert.deepEqual(row?.args, ['/bin/true', 'x']);
    };
    for (let pid = 1; pid <= 1000; pid++) one(pid); // warm up
    gc();
    gc(); // the store is old now, as in a run
    // Growth summed over 10 rounds of 10,000, so that a full GC the growth itself starts spoils one round only.
    let grown = 0;
    for (let round = 0; round < 10; round++) {
      const before = oldSpaceUsed();
      for (let pid = 1; pid <= 10_000; pid++) one(round * 10_000 + pid);
      grown += Math.max(0, oldSpaceUsed() - before);
    }
    assert.equal(argv.size, 0);
    // Measured 2026-11-28: a Map<number, string[]> here (the old code) grew it by 15,490,488 bytes (its rehashed
    // tables), PendingArgs by 44,312.
    assert.ok(grown < 1_000_000, `old space grew ${grown} bytes over 100,000 execs`);
  });
});
