/**
 * runtime/early-maps.ts: a map created before compiling is the one the next session uses when the specs are equal,
 * is left alone for another spec, and is closed by releaseEarlyMaps when nobody took it; a failed early creation
 * rejects its claimer with the kernel's error.
 */
import assert from 'node:assert/strict';
import { readlinkSync } from 'node:fs';
import { describe, it } from 'node:test';
import { MapType } from '../../src/bpf/map.js';
import { KernelError } from '../../src/errors.js';
import { createMapEarly, releaseEarlyMaps, takeEarlyMap } from '../../src/runtime/early-maps.js';

const SPEC = { type: MapType.HASH, keySize: 8, valueSize: 32, maxEntries: 1000, name: 'early_test' };

/** Whether fd `fd` of this process is open on a BPF map. */
function isBpfMapFd(fd: number): boolean {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`) === 'anon_inode:bpf-map';
  } catch {
    return false;
  }
}

describe('maps created before compiling (runtime/early-maps.ts)', () => {
  it('the same spec takes the early map once; another spec takes nothing', async () => {
    createMapEarly(SPEC);
    assert.equal(takeEarlyMap({ ...SPEC, maxEntries: 1001 }), undefined);
    assert.equal(takeEarlyMap({ ...SPEC, name: 'early_other' }), undefined);
    assert.equal(takeEarlyMap({ ...SPEC, flags: 1 }), undefined);
    const p = takeEarlyMap({ ...SPEC });
    assert.ok(p);
    assert.equal(takeEarlyMap(SPEC), undefined);
    const m = await p;
    assert.equal(m.maxEntries, 1000);
    assert.equal(m.keySize, 8);
    assert.ok(isBpfMapFd(m.fd));
    await releaseEarlyMaps(); // a taken map is the taker's: not closed
    assert.ok(isBpfMapFd(m.fd));
    m.close();
  });

  it('releaseEarlyMaps closes a map nobody took', async () => {
    createMapEarly(SPEC);
    const p = takeEarlyMap(SPEC)!;
    const fd = (await p).fd;
    createMapEarly(SPEC);
    await releaseEarlyMaps();
    assert.equal(takeEarlyMap(SPEC), undefined);
    // the map taken above is still open, the released one is not a map fd any more
    assert.ok(isBpfMapFd(fd));
    (await p).close();
    assert.ok(!isBpfMapFd(fd));
  });

  it('a failed early creation rejects its taker with the KernelError (and nothing unhandled when unclaimed)', async () => {
    const bad = { ...SPEC, keySize: 0 }; // a hash map needs a key: EINVAL
    createMapEarly(bad);
    await assert.rejects(takeEarlyMap(bad)!, KernelError);
    createMapEarly(bad);
    await releaseEarlyMaps();
  });
});
