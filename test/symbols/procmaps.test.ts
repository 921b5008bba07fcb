import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findMapping, mapFilesPath, mappingFileOffset, parseMaps, readMaps } from '../../src/symbols/procmaps.js';

const TEXT = [
  '55d0c3a00000-55d0c3a02000 r--p 00000000 fd:01 1234                       /usr/bin/cat',
  '55d0c3a02000-55d0c3a07000 r-xp 00002000 fd:01 1234                       /usr/bin/cat',
  '55d0c4000000-55d0c4021000 rw-p 00000000 00:00 0                          [heap]',
  '7f0000000000-7f0000100000 rwxp 00000000 00:00 0 ',
  '7f1000000000-7f1000001000 r-xp 00001000 fd:01 99                         /tmp/my lib.so (deleted)',
  '7f2000000000-7f2000001000 r-xp 00000000 00:01 77                         /memfd:jit (deleted)',
  '7f3000000000-7f3000002000 r-xp 00000000 00:00 0                          [vdso]',
  '7f4000000000-7f4000001000 rw-p 00000000 00:00 0                          [anon:v8 code]',
  '7ffe1e646000-7ffe1e667000 rw-p 00000000 00:00 0                          [stack]',
  'ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]',
].join('\n');

describe('parseMaps', () => {
  const maps = parseMaps(TEXT);

  it('parses every field of a file mapping', () => {
    assert.deepEqual(maps[1], {
      start: 0x55d0c3a02000,
      end: 0x55d0c3a07000,
      perms: 'r-xp',
      offset: 0x2000,
      dev: 'fd:01',
      inode: 1234,
      path: '/usr/bin/cat',
      deleted: false,
      kind: 'file',
      exec: true,
    });
  });

  it('classifies anonymous, pseudo, deleted and memfd mappings; keeps spaces in paths', () => {
    assert.deepEqual(
      maps.map((m) => [m.kind, m.path, m.deleted]),
      [
        ['file', '/usr/bin/cat', false],
        ['file', '/usr/bin/cat', false],
        ['heap', '[heap]', false],
        ['anon', '', false],
        ['file', '/tmp/my lib.so', true],
        ['file', '/memfd:jit', true],
        ['vdso', '[vdso]', false],
        ['anon', '[anon:v8 code]', false],
        ['stack', '[stack]', false],
        ['vsyscall', '[vsyscall]', false],
      ],
    );
    assert.equal(maps[9]!.start, 0xffffffffff600000); // page-aligned: exact as a double
  });

  it('keeps only executable mappings when asked', () => {
    assert.deepEqual(
      parseMaps(TEXT, true).map((m) => m.perms),
      ['r-xp', 'rwxp', 'r-xp', 'r-xp', 'r-xp', '--xp'],
    );
  });

  it('finds the mapping of an address (end exclusive) and its file offset', () => {
    const m = findMapping(maps, 0x55d0c3a02010)!;
    assert.equal(m.perms, 'r-xp');
    assert.equal(mappingFileOffset(m, 0x55d0c3a02010), 0x2010);
    assert.equal(findMapping(maps, 0x55d0c3a07000)?.path, undefined);
    assert.equal(findMapping(maps, 0x55d0c3a06fff)?.path, '/usr/bin/cat');
    assert.equal(findMapping(maps, 0x1000), undefined);
    assert.equal(findMapping([], 0x1000), undefined);
    assert.equal(mapFilesPath(42, m), '/proc/42/map_files/55d0c3a02000-55d0c3a07000');
  });

  it('reads this process: node itself is mapped executable, and a missing pid gives undefined', () => {
    const self = readMaps('self', { execOnly: true })!;
    assert.ok(self.some((m) => m.path === process.execPath || m.path.endsWith('/node')));
    assert.ok(self.every((m) => m.exec));
    assert.equal(readMaps(2 ** 22 + 12345), undefined);
  });
});
