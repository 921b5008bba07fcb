import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { PerfMap, perfMapPaths } from '../../src/symbols/perfmap.js';

describe('PerfMap', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bpfscope-perfmap-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('parses START SIZE NAME lines (hex, with or without 0x; names with spaces)', () => {
    const p = join(dir, 'a.map');
    writeFileSync(p, '1000 10 JS:*foo file:///x.js:1:2\n0x2000 0x20 Interpreter\n3000 8 LazyCompile:~bar a b\r\n');
    const m = new PerfMap(p);
    assert.deepEqual(m.resolve(0x1000), { name: 'JS:*foo file:///x.js:1:2', offset: 0, start: 0x1000, size: 0x10 });
    assert.deepEqual(m.resolve(0x200f), { name: 'Interpreter', offset: 15, start: 0x2000, size: 0x20 });
    assert.equal(m.resolve(0x3007)?.name, 'LazyCompile:~bar a b');
    assert.equal(m.resolve(0x1010), undefined); // end is exclusive
    assert.equal(m.resolve(0x0fff), undefined);
    assert.equal(m.size, 3);
  });

  it('re-reads only the appended part when the file grows, ignoring a partial last line', () => {
    const p = join(dir, 'b.map');
    writeFileSync(p, '1000 10 first\n');
    const m = new PerfMap(p);
    assert.equal(m.resolve(0x1001)?.name, 'first');
    assert.equal(m.resolve(0x5001), undefined);
    appendFileSync(p, '5000 10 second\n6000 10 thi');
    assert.equal(m.resolve(0x5001)?.name, 'second');
    assert.equal(m.resolve(0x6001), undefined); // line not finished yet
    appendFileSync(p, 'rd\n');
    assert.equal(m.resolve(0x6001)?.name, 'third');
    assert.equal(m.size, 3);
  });

  it('lets a later line win where code memory was reused', () => {
    const p = join(dir, 'c.map');
    writeFileSync(p, '1000 100 old_big\n1040 10 new_small\n1000 8 newest_at_start\n');
    const m = new PerfMap(p);
    assert.equal(m.resolve(0x1044)?.name, 'new_small');
    assert.equal(m.resolve(0x1002)?.name, 'newest_at_start');
    assert.equal(m.resolve(0x1010)?.name, 'old_big');
    assert.equal(m.resolve(0x1010)?.offset, 0x10);
  });

  it('starts over when the file is replaced or truncated', () => {
    const p = join(dir, 'd.map');
    writeFileSync(p, '1000 10 before_a_long_name_that_makes_the_file_longer\n');
    const m = new PerfMap(p);
    assert.equal(m.resolve(0x1000)?.name, 'before_a_long_name_that_makes_the_file_longer');
    rmSync(p);
    writeFileSync(p, '2000 10 after\n');
    assert.equal(m.resolve(0x2000)?.name, 'after');
    assert.equal(m.size, 1);
  });

  it('handles a missing file', () => {
    const m = new PerfMap(join(dir, 'missing.map'));
    assert.equal(m.refresh(), false);
    assert.equal(m.resolve(0x1000), undefined);
  });

  it('looks in /tmp/perf-PID.map for processes in our pid namespace', () => {
    assert.deepEqual(perfMapPaths(process.pid), [`/tmp/perf-${process.pid}.map`]);
  });
});
