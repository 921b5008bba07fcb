/**
 * runtime/early-maps.ts: a map created before compiling is the one the next session uses when the specs are equal,
 * is left alone for another spec, and is closed by releaseEarlyMaps when nobody took it; a failed early creation
 * rejects its claimer with the kernel's error.
 */
import assert from 'node:assert/strict';
import {
  chmodSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { MapType } from '../../src/bpf/map.js';
import { KernelError } from '../../src/errors.js';
import {
  createMapEarly,
  endPlannedMaps,
  noteSessionMap,
  releaseEarlyMaps,
  savePlannedMaps,
  startPlannedMaps,
  takeEarlyMap,
} from '../../src/runtime/early-maps.js';

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

describe('planned maps: the big maps of the last run with the same key (runtime/early-maps.ts)', () => {
  const BIG = { type: MapType.HASH, keySize: 8, valueSize: 1016, maxEntries: 1024, name: 'plan_big' }; // 1 MiB
  const SMALL = { type: MapType.HASH, keySize: 8, valueSize: 8, maxEntries: 1024, name: 'plan_small' };

  it('records the big maps, and the next start with the same key creates exactly those early', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bpfscope-plan-'));
    try {
      startPlannedMaps('tool\0-a\x001', dir);
      assert.equal(takeEarlyMap(BIG), undefined); // nothing recorded yet
      noteSessionMap(BIG);
      noteSessionMap(SMALL); // 16 KiB: not worth planning
      savePlannedMaps();
      const files = readdirSync(dir);
      assert.equal(files.length, 1);
      assert.equal(
        readFileSync(join(dir, files[0]!), 'utf8'),
        'tool\0-a\x001\n[{"type":1,"keySize":8,"valueSize":1016,"maxEntries":1024,"name":"plan_big"}]',
      );
      startPlannedMaps('tool\0-a\x001', dir);
      assert.equal(takeEarlyMap(SMALL), undefined);
      const p = takeEarlyMap(BIG);
      assert.ok(p);
      const m = await p;
      assert.equal(m.maxEntries, 1024);
      assert.ok(isBpfMapFd(m.fd));
      m.close();
      await endPlannedMaps();
      // another key plans nothing, and a file that is writable by others is not read
      startPlannedMaps('tool\0-a\x002', dir);
      assert.equal(takeEarlyMap(BIG), undefined);
      await endPlannedMaps();
      chmodSync(join(dir, files[0]!), 0o666);
      startPlannedMaps('tool\0-a\x001', dir);
      assert.equal(takeEarlyMap(BIG), undefined);
      await endPlannedMaps();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('endPlannedMaps closes a planned map nobody took, and writes nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bpfscope-plan-'));
    try {
      writeFileSync(join(dir, 'x'), ''); // a stranger in the directory does not matter
      startPlannedMaps('k', dir);
      noteSessionMap(BIG);
      savePlannedMaps();
      const file = readdirSync(dir).find((f) => f !== 'x')!;
      const mapFds = () => readdirSync('/proc/self/fd').filter((fd) => isBpfMapFd(Number(fd))).length;
      const before = mapFds();
      startPlannedMaps('k', dir);
      await endPlannedMaps(); // waits for the creation, then closes it
      assert.equal(mapFds(), before);
      assert.equal(takeEarlyMap(BIG), undefined);
      assert.equal(statSync(join(dir, file)).size, 'k\n'.length + 77);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
