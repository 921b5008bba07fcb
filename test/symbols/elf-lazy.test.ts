/**
 * ElfSymbols with names read from the file on demand (string tables from 64 KiB; forced here for a small fixture with
 * setLazyStringTableMin(0)): the same results as with the tables in memory, names of any length (one read of 256
 * bytes, then longer reads), and names still readable after the file was deleted (the symbols hold their own
 * descriptor). Expected names and addresses come from binutils' `nm`.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  closeSync,
  futimesSync,
  mkdtempSync,
  openSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ElfFile, type ElfSymbols, setLazyStringTableMin } from '../../src/symbols/elf.js';
import { noCompiler } from './helpers.js';

/** Function names of the fixture: short, at the 256-byte read boundary, and long (5,000 bytes). */
const NAMES = [
  'short_a',
  'short_b',
  `mid_${'m'.repeat(251)}`, // 255 bytes + NUL: exactly the first read
  `edge_${'e'.repeat(251)}`, // 256 bytes: the NUL is past the first read
  `long_${'l'.repeat(4995)}`,
  ...Array.from({ length: 40 }, (_, i) => `fn_${i}_${'x'.repeat(i * 7)}`),
];

/** `nm -S --defined-only` text symbols (t/T): name -> [value, size]. */
function nmFuncs(path: string): Map<string, [number, number]> {
  const out = new Map<string, [number, number]>();
  for (const line of execFileSync('nm', ['-S', '--defined-only', path], { encoding: 'utf8' }).split('\n')) {
    const f = line.split(' ');
    if (f.length === 4 && /^[tT]$/.test(f[2]!)) out.set(f[3]!, [parseInt(f[0]!, 16), parseInt(f[1]!, 16)]);
  }
  return out;
}

function load(path: string, lazyMin: number): ElfSymbols {
  const prev = setLazyStringTableMin(lazyMin);
  try {
    const e = ElfFile.open(path);
    try {
      return e.symbols();
    } finally {
      e.close();
    }
  } finally {
    setLazyStringTableMin(prev);
  }
}

describe('ElfSymbols with names read from the file', { skip: noCompiler }, () => {
  let dir: string;
  let prog: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'bpfscope-elflazy-'));
    const src = NAMES.map((n, i) => `__attribute__((noinline)) int ${n}(int x) { return x * ${i + 3} + 1; }`);
    src.push(`int main(int c, char **v) { return ${NAMES.map((n) => `${n}(c)`).join(' + ')}; }`);
    writeFileSync(join(dir, 'p.c'), src.join('\n') + '\n');
    prog = join(dir, 'p');
    execFileSync('cc', ['-O0', '-o', prog, join(dir, 'p.c')]);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('resolves every function as nm lists it, the same as with the tables in memory', () => {
    const ref = nmFuncs(prog);
    for (const n of NAMES) assert.ok(ref.has(n), `nm lists ${n.slice(0, 20)}`);
    const lazy = load(prog, 0);
    const mem = load(prog, Infinity);
    let checked = 0;
    for (const [name, [value, size]] of ref) {
      if (size === 0) continue;
      for (const a of [value, value + size - 1]) {
        const hit = lazy.resolve(a);
        assert.equal(hit?.name, name, `0x${a.toString(16)}`);
        assert.equal(hit?.offset, a - value);
        assert.deepEqual(hit, mem.resolve(a));
        checked++;
      }
    }
    assert.ok(checked >= 2 * NAMES.length, `${checked} addresses checked`);
    assert.deepEqual(lazy.list(), mem.list());
    assert.deepEqual(lazy.find(NAMES[4]!), mem.find(NAMES[4]!));
    assert.equal(lazy.find(NAMES[4]!)[0]!.value, ref.get(NAMES[4]!)![0]);
    assert.equal(lazy.count, mem.count);
    assert.equal(lazy.codeCount, mem.codeCount);
  });

  it('still reads names after the file was deleted (its own descriptor on the inode)', () => {
    const copy = join(dir, 'gone');
    execFileSync('cp', [prog, copy]);
    const ref = nmFuncs(copy);
    const lazy = load(copy, 0);
    unlinkSync(copy);
    for (const n of NAMES) assert.equal(lazy.resolve(ref.get(n)![0])?.name, n);
  });

  it('resolves nothing, never a wrong name, once the file was rewritten in place (same inode)', () => {
    const copy = join(dir, 'rewritten');
    execFileSync('cp', [prog, copy]);
    const ref = nmFuncs(copy);
    const lazy = load(copy, 0);
    assert.equal(lazy.resolve(ref.get(NAMES[0]!)![0])?.name, NAMES[0]); // read before the change: cached
    // overwrite the first name's first byte in the string table, in place
    const text = execFileSync('cat', [copy]);
    const at = text.indexOf(Buffer.from(`\0${NAMES[1]}\0`)) + 1;
    assert.ok(at > 0);
    const fd = openSync(copy, 'r+');
    writeSync(fd, Buffer.from('X'), 0, 1, at);
    // the kernel's coarse clock may give the write the load's mtime: move it on, as any later rewrite would
    const t = statSync(copy).mtimeMs / 1000 + 1;
    futimesSync(fd, t, t);
    closeSync(fd);
    assert.equal(lazy.resolve(ref.get(NAMES[1]!)![0]), undefined);
    assert.equal(lazy.resolve(ref.get(NAMES[0]!)![0])?.name, NAMES[0]);
  });
});
