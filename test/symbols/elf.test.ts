import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { crc32, fileCrc32, findDebugFile } from '../../src/symbols/debuglink.js';
import {
  ElfFile,
  ET_DYN,
  ET_EXEC,
  fileOffsetToVaddr,
  PT_LOAD,
  STB_LOCAL,
  STT_FUNC,
  symbolFileOffset,
  vaddrToFileOffset,
} from '../../src/symbols/elf.js';
import { type Built, build, noCompiler } from './helpers.js';

/** `nm` output as name -> {value, type letter} (first occurrence). */
function nm(path: string, dynamic = false): Map<string, { value: number; type: string }> {
  const out = execFileSync('nm', [...(dynamic ? ['-D'] : []), '--defined-only', path], { encoding: 'utf8' });
  const m = new Map<string, { value: number; type: string }>();
  for (const line of out.split('\n')) {
    const f = line.split(' ');
    if (f.length !== 3) continue;
    if (!m.has(f[2]!)) m.set(f[2]!, { value: Number.parseInt(f[0]!, 16), type: f[1]! });
  }
  return m;
}

/** Defined FUNC/OBJECT/IFUNC symbols of `readelf -sW` (both tables) as unique `name value` strings. */
function readelfSyms(path: string): string[] {
  const out = execFileSync('readelf', ['-sW', path], { encoding: 'utf8' });
  const set = new Set<string>();
  for (const line of out.split('\n')) {
    const f = line.trim().split(/\s+/);
    // Num: Value Size Type Bind Vis Ndx Name
    if (f.length < 8 || !/^\d+:$/.test(f[0]!)) continue;
    if (!['FUNC', 'OBJECT', 'IFUNC'].includes(f[3]!) || f[6] === 'UND') continue;
    // readelf appends @VERSION to .dynsym names; .symtab names may hold one (.symver). Both are dropped.
    set.add(`${f[7]!.replace(/@.*$/, '')} ${Number.parseInt(f[1]!, 16)}`);
  }
  return [...set];
}

/** PT_LOAD rows of `readelf -lW` as {offset, vaddr, filesz}. */
function readelfLoads(path: string): { offset: number; vaddr: number; filesz: number }[] {
  const out = execFileSync('readelf', ['-lW', path], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((l) => l.trim().startsWith('LOAD'))
    .map((l) => {
      const f = l.trim().split(/\s+/);
      return {
        offset: Number.parseInt(f[1]!, 16),
        vaddr: Number.parseInt(f[2]!, 16),
        filesz: Number.parseInt(f[4]!, 16),
      };
    });
}

describe('ElfFile', { skip: noCompiler }, () => {
  let b: Built;
  before(() => {
    b = build();
  });
  after(() => b?.cleanup());

  it('reads the ELF header, program headers and section names like readelf', () => {
    const e = ElfFile.open(b.prog);
    try {
      assert.equal(e.type, ET_DYN);
      assert.ok(e.machine === 62 || e.machine === 183, `machine ${e.machine}`);
      assert.deepEqual(
        e.loadSegments().map((p) => ({ offset: p.offset, vaddr: p.vaddr, filesz: p.filesz })),
        readelfLoads(b.prog),
      );
      const names = execFileSync('readelf', ['-SW', b.prog], { encoding: 'utf8' });
      for (const s of ['.text', '.symtab', '.dynsym', '.note.gnu.build-id']) {
        assert.ok(names.includes(` ${s} `) || names.includes(`] ${s}`), s);
        assert.ok(e.section(s), `section ${s}`);
      }
      assert.equal(e.hasSymtab(), true);
    } finally {
      e.close();
    }
    const np = ElfFile.open(b.nopie);
    assert.equal(np.type, ET_EXEC);
    np.close();
  });

  it('lists the .symtab function symbols nm lists, with their values', () => {
    const e = ElfFile.open(b.prog);
    const syms = e.symbols();
    e.close();
    const ref = nm(b.prog);
    for (const name of ['alpha_func', 'beta_static', 'main']) {
      const found = syms.find(name);
      assert.ok(found.length >= 1, name);
      assert.equal(found[0]!.value, ref.get(name)!.value, name);
      assert.equal(found[0]!.type, STT_FUNC);
    }
    assert.equal(syms.find('beta_static')[0]!.bind, STB_LOCAL);
    // Every defined FUNC/OBJECT readelf prints (both tables) is in the list with the same value, and nothing else.
    const listed = syms.list().map((s) => `${s.name} ${s.value}`);
    assert.deepEqual([...new Set(listed)].sort(), readelfSyms(b.prog).sort());
    // Filters: RegExp and predicate.
    assert.deepEqual(
      syms
        .list(/^(alpha|beta)_/)
        .map((s) => s.name)
        .sort(),
      ['alpha_func', 'beta_static'],
    );
    assert.deepEqual(
      syms.list((n) => n === 'main').map((s) => s.name),
      ['main'],
    );
  });

  it('reads .dynsym of a shared library like nm -D', () => {
    const e = ElfFile.open(b.lib);
    const syms = e.symbols();
    e.close();
    const ref = nm(b.lib, true);
    const dyn = syms.list().filter((s) => s.table === '.dynsym');
    assert.ok(dyn.length > 0);
    for (const s of dyn) assert.equal(ref.get(s.name)?.value, s.value, s.name);
    assert.ok(dyn.some((s) => s.name === 'lib_func'));
  });

  it('findFunction/findSymbol: one name from the raw tables, with the values nm prints, without symbols()', () => {
    const e = ElfFile.open(b.prog);
    const l = ElfFile.open(b.lib);
    try {
      const ref = nm(b.prog);
      for (const name of ['alpha_func', 'beta_static', 'main']) {
        const f = e.findFunction(name);
        assert.equal(f?.value, ref.get(name)!.value, name);
        assert.equal(f?.type, STT_FUNC, name);
      }
      assert.equal(e.findFunction('alpha_fun'), undefined); // a prefix is not the name
      assert.equal(e.findFunction('alpha_func_'), undefined);
      assert.equal(e.findFunction('no_such_function'), undefined);
      assert.equal(e.findFunction(''), undefined);
      // printf is an import here (SHN_UNDEF), not a definition
      assert.equal(e.findFunction('printf'), undefined);
      const refDyn = nm(b.lib, true);
      assert.equal(l.findSymbol('lib_func', { table: '.dynsym' })?.value, refDyn.get('lib_func')!.value);
      assert.equal(l.findSymbol('lib_func', { table: '.dynsym' })?.table, '.dynsym');
      assert.equal(e.findSymbol('beta_static', { table: '.dynsym' }), undefined); // a local: .symtab only
      assert.equal(e.findSymbol('beta_static', { table: '.symtab' })?.value, ref.get('beta_static')!.value);
    } finally {
      e.close();
      l.close();
    }
  });

  it('resolves virtual addresses inside functions to name and offset', () => {
    const e = ElfFile.open(b.prog);
    const syms = e.symbols();
    e.close();
    const alpha = syms.find('alpha_func')[0]!;
    assert.ok(alpha.size > 0);
    assert.deepEqual(syms.resolve(alpha.value), {
      name: 'alpha_func',
      offset: 0,
      start: alpha.value,
      size: alpha.size,
    });
    assert.equal(syms.resolve(alpha.value + alpha.size - 1)?.name, 'alpha_func');
    assert.equal(syms.resolve(alpha.value + alpha.size - 1)?.offset, alpha.size - 1);
    assert.equal(syms.resolve(0), undefined);
    assert.equal(syms.resolve(0x7fffffff), undefined);
  });

  it('computes uprobe file offsets (st_value - (p_vaddr - p_offset)) for PIE and non-PIE executables', () => {
    for (const path of [b.prog, b.nopie]) {
      const e = ElfFile.open(path);
      const syms = e.symbols();
      const loads = e.loadSegments();
      e.close();
      const alpha = syms.find('alpha_func')[0]!;
      const seg = readelfLoads(path).find((p) => alpha.value >= p.vaddr && alpha.value < p.vaddr + p.filesz)!;
      const expected = alpha.value - (seg.vaddr - seg.offset);
      assert.equal(symbolFileOffset(loads, alpha), expected, path);
      assert.equal(syms.fileOffset(alpha.value), expected);
      assert.equal(fileOffsetToVaddr(loads, expected), alpha.value);
      // The bytes at that file offset are the function's first bytes (objdump would show the same).
      const file = readFileSync(path);
      const text = e.section('.text')!;
      assert.deepEqual(
        file.subarray(expected, expected + 4),
        file.subarray(text.offset + alpha.value - text.addr, text.offset + alpha.value - text.addr + 4),
      );
    }
    const np = ElfFile.open(b.nopie);
    // Non-PIE x86-64/aarch64 executables link at 0x400000: vaddr and file offset differ.
    const a = np.symbols().find('alpha_func')[0]!;
    assert.notEqual(vaddrToFileOffset(np.loadSegments(), a.value), a.value);
    assert.ok(np.loadSegments().every((p) => p.type === PT_LOAD));
    np.close();
    assert.throws(() => symbolFileOffset([], { name: 'x', value: 16 }), /not in a loadable segment/);
  });

  it('reads the build-id note and the .gnu_debuglink (name + CRC of the debug file)', () => {
    const e = ElfFile.open(b.prog);
    const out = execFileSync('readelf', ['-n', b.prog], { encoding: 'utf8' });
    const id = /Build ID: ([0-9a-f]+)/.exec(out)![1];
    assert.equal(e.buildId(), id);
    assert.equal(e.debugLink(), undefined);
    e.close();
    const s = ElfFile.open(b.stripped);
    assert.equal(s.hasSymtab(), false);
    assert.equal(s.buildId(), id);
    const link = s.debugLink()!;
    assert.equal(link.file, 'prog.debug');
    assert.equal(link.crc, fileCrc32(b.debugFile));
    // Stripped: no alpha_func (it is not exported), but the debug file has it.
    assert.equal(s.symbols().find('alpha_func').length, 0);
    const dbg = ElfFile.open(b.debugFile);
    const both = s.symbolsWithDebugFile(dbg);
    dbg.close();
    s.close();
    assert.equal(both.find('alpha_func')[0]!.value, nm(b.prog).get('alpha_func')!.value);
  });

  it('CRC-32 matches known vectors', () => {
    assert.equal(crc32(Buffer.from('123456789')), 0xcbf43926);
    assert.equal(crc32(Buffer.from('')), 0);
    assert.equal(crc32(Buffer.from('56789'), crc32(Buffer.from('1234'))), 0xcbf43926);
  });

  it('finds the debug file by debuglink (same dir, .debug/, debug dir) and by build-id, checking the CRC', () => {
    const s = ElfFile.open(b.stripped);
    try {
      assert.deepEqual(findDebugFile(s, { debugDir: join(b.dir, 'nodebug') }), { path: b.debugFile, via: 'debuglink' });
      // A file with the right name but the wrong CRC is not accepted.
      const other = join(b.dir, 'other');
      mkdirSync(other);
      const fake = join(other, 'prog-stripped');
      copyFileSync(b.stripped, fake);
      writeFileSync(join(other, 'prog.debug'), 'not the debug file');
      const f = ElfFile.open(fake);
      assert.equal(findDebugFile(f, { debugDir: join(b.dir, 'nodebug') }), undefined);
      // .debug/ subdirectory.
      mkdirSync(join(other, '.debug'));
      copyFileSync(b.debugFile, join(other, '.debug', 'prog.debug'));
      assert.deepEqual(findDebugFile(f, { debugDir: join(b.dir, 'nodebug') }), {
        path: join(other, '.debug', 'prog.debug'),
        via: 'debuglink',
      });
      // <debugdir>/<dir>/name.
      const dd = join(b.dir, 'dd');
      mkdirSync(join(dd, '/bin'), { recursive: true });
      copyFileSync(b.debugFile, join(dd, '/bin', 'prog.debug'));
      const g = ElfFile.open(fake);
      assert.deepEqual(findDebugFile(g, { path: '/bin/prog-stripped', debugDir: dd }), {
        path: join(dd, '/bin/prog.debug'),
        via: 'debuglink',
      });
      g.close();
      f.close();
      // Build-id: <debugdir>/.build-id/NN/REST.debug.
      const id = s.buildId()!;
      const bd = join(b.dir, 'bid');
      mkdirSync(join(bd, '.build-id', id.slice(0, 2)), { recursive: true });
      copyFileSync(b.debugFile, join(bd, '.build-id', id.slice(0, 2), `${id.slice(2)}.debug`));
      assert.deepEqual(findDebugFile(s, { debugDir: bd }), {
        path: join(bd, '.build-id', id.slice(0, 2), `${id.slice(2)}.debug`),
        via: 'build-id',
      });
    } finally {
      s.close();
    }
  });

  it('rejects non-ELF, 32-bit and big-endian input with a clear error', () => {
    assert.throws(
      () => ElfFile.fromBuffer(Buffer.from('hello world, not an ELF file at all'.repeat(3))),
      /not an ELF file/,
    );
    const h = Buffer.alloc(64);
    h.writeUInt32BE(0x7f454c46, 0);
    h[4] = 1;
    h[5] = 1;
    assert.throws(() => ElfFile.fromBuffer(h), /32-bit ELF is not supported/);
    h[4] = 2;
    h[5] = 2;
    assert.throws(() => ElfFile.fromBuffer(h), /big-endian ELF is not supported/);
    assert.throws(() => ElfFile.open('/nonexistent/file'), /cannot open \/nonexistent\/file/);
  });
});
