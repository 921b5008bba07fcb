/**
 * The DWARF reader (src/symbols/dwarf/) on binaries the test builds from test/symbols/fixtures/dwarf-fixture.c with
 * gcc (-g -O0, -gdwarf-4/-5 -O2, compressed -gz=zlib, -gsplit-dwarf, stripped + debuglink, build-id directory) and
 * Debian's clang when it is installed. Expected values are literals from the fixture's source (line numbers, member
 * offsets, parameter names and the registers of the x86-64 psABI); `readelf --debug-dump=info/decodedline` and
 * `addr2line -i -f` (binutils) are parsed here only as oracles for everything else.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { appendFileSync, copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type DwarfInfo, openDwarf } from '../../src/symbols/dwarf/dwarf.js';
import { DwarfError } from '../../src/symbols/dwarf/errors.js';
import { typeName, typeSize } from '../../src/symbols/dwarf/types.js';
import { ElfFile } from '../../src/symbols/elf.js';
import { repoRoot } from '../helpers/cli.js';

const FIXTURE = join(repoRoot(), 'test', 'symbols', 'fixtures', 'dwarf-fixture.c');
const SRC = 'dwarf-fixture.c';

function has(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const noGcc = has('gcc') && has('objcopy') && has('readelf') && has('addr2line') ? undefined : 'needs gcc and binutils';
const noClang = has('clang') ? undefined : 'needs clang (Debian package clang)';
const onX86 = process.arch === 'x64' ? undefined : 'the expected registers are x86-64 psABI ones';

let dir = '';
function cc(compiler: string, out: string, flags: string[]): string {
  const p = join(dir, out);
  execFileSync(compiler, [...flags, '-o', p, FIXTURE], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  return p;
}

// ---------------------------------------------------------------- oracles (binutils output, parsed here only)

interface OracleDie {
  depth: number;
  offset: number;
  tag: string;
  attrs: Map<string, string>;
  children: OracleDie[];
}

/** `readelf --debug-dump=info` as a DIE tree (unit DIEs at the top). */
function readelfInfo(path: string): OracleDie[] {
  const out = execFileSync('readelf', ['--debug-dump=info', path], { encoding: 'utf8', maxBuffer: 1 << 28 });
  const roots: OracleDie[] = [];
  const stack: OracleDie[] = [];
  let cur: OracleDie | undefined;
  for (const line of out.split('\n')) {
    const d = /^\s*<(\d+)><([0-9a-f]+)>: Abbrev Number: \d+ \((\w+)\)/.exec(line);
    if (d) {
      const depth = Number(d[1]);
      cur = { depth, offset: Number.parseInt(d[2]!, 16), tag: d[3]!, attrs: new Map(), children: [] };
      stack.length = depth;
      if (depth === 0) roots.push(cur);
      else stack[depth - 1]?.children.push(cur);
      stack[depth] = cur;
      continue;
    }
    if (/Abbrev Number: 0/.test(line)) {
      cur = undefined;
      continue;
    }
    const a = /^\s*<[0-9a-f]+>\s+(DW_AT_\w+)\s*:\s?(.*)$/.exec(line);
    if (a && cur) {
      // String forms print as `(strp) (offset: 0xb): name`, `(indirect string, offset: 0xea): name`, ...
      const v = a[2]!.replace(/^(?:\([^)]*\)\s*)+:\s*/, '').trim();
      cur.attrs.set(a[1]!, v);
    }
  }
  return roots;
}

/** `readelf --debug-dump=decodedline` rows as `address line stmt` strings (end-of-sequence rows left out). */
function readelfLines(path: string): string[] {
  const out = execFileSync('readelf', ['--debug-dump=decodedline', '-W', path], { encoding: 'utf8' });
  const rows: string[] = [];
  for (const line of out.split('\n')) {
    const m = /^(\S+)\s+(\d+)\s+0x([0-9a-f]+)(?:\s+\d+)?\s*(x?)\s*$/.exec(line);
    if (m) rows.push(`${Number.parseInt(m[3]!, 16)} ${m[2]} ${m[4] === 'x'}`);
  }
  return rows.sort();
}

/** `addr2line -i -f` at each address: the inline chain as `function file:line` strings, innermost first. */
function addr2line(path: string, addrs: number[]): string[][] {
  const out = execFileSync('addr2line', ['-i', '-f', '-a', '-e', path, ...addrs.map((a) => `0x${a.toString(16)}`)], {
    encoding: 'utf8',
  });
  const res: string[][] = [];
  const lines = out.trimEnd().split('\n');
  for (let i = 0; i < lines.length;) {
    if (/^0x[0-9a-f]+$/.test(lines[i]!)) {
      res.push([]);
      i++;
      continue;
    }
    const fn = lines[i]!;
    const loc = lines[i + 1]!.replace(/ \(discriminator \d+\)$/, '');
    const [file, line] = loc.split(':');
    res[res.length - 1]!.push(`${fn} ${basename(file!)}:${line}`);
    i += 2;
  }
  return res;
}

// ---------------------------------------------------------------- expectations from the fixture's source

/** struct rec: [name, byte offset, byte size, bit offset, bit size] (x86-64 LP64 layout). */
const REC_MEMBERS: [string | undefined, number, number, number?, number?][] = [
  ['tag', 0, 1],
  ['count', 8, 8],
  ['pos', 16, 8],
  ['label', 24, 8],
  ['flags', 32, 4, 256, 3],
  ['mode', 32, 4, 259, 5],
  ['values', 36, 16],
  ['next', 56, 8],
  ['u', 64, 8],
];

interface Variant {
  name: string;
  compiler: 'gcc' | 'clang';
  flags: string[];
  optimized: boolean;
  version: number;
  skip?: string | undefined;
}

const VARIANTS: Variant[] = [
  { name: 'gcc -g -O0', compiler: 'gcc', flags: ['-g', '-O0'], optimized: false, version: 5 },
  { name: 'gcc -gdwarf-4 -O0', compiler: 'gcc', flags: ['-gdwarf-4', '-O0'], optimized: false, version: 4 },
  { name: 'gcc -gdwarf-4 -O2', compiler: 'gcc', flags: ['-gdwarf-4', '-O2'], optimized: true, version: 4 },
  { name: 'gcc -gdwarf-5 -O2', compiler: 'gcc', flags: ['-gdwarf-5', '-O2'], optimized: true, version: 5 },
  { name: 'gcc -g -O2 -gz=zlib', compiler: 'gcc', flags: ['-g', '-O2', '-gz=zlib'], optimized: true, version: 5 },
  { name: 'clang -g -O2', compiler: 'clang', flags: ['-g', '-O2'], optimized: true, version: 5, skip: noClang },
  {
    name: 'clang -gdwarf-4 -O0',
    compiler: 'clang',
    flags: ['-gdwarf-4', '-O0'],
    optimized: false,
    version: 4,
    skip: noClang,
  },
];

before(() => {
  if (!noGcc) dir = mkdtempSync(join(tmpdir(), 'bpfscope-dwarf-'));
});
after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

for (const v of VARIANTS) {
  describe(`DWARF of ${v.name}`, { skip: noGcc ?? v.skip ?? onX86 }, () => {
    let bin = '';
    let dw: DwarfInfo;
    before(() => {
      bin = cc(v.compiler, v.name.replace(/[^a-z0-9]+/gi, '_'), [...v.flags, '-Wl,--build-id']);
      dw = openDwarf(bin);
    });
    after(() => dw?.close());

    it('reads the units of the version asked for', () => {
      assert.equal(dw.source.via, 'self');
      const mine = dw.units.find((u) => u.name.endsWith(SRC));
      assert.ok(mine, 'the fixture unit');
      assert.equal(mine.version, v.version);
      if (v.flags.includes('-gz=zlib')) {
        const out = execFileSync('readelf', ['-SW', bin], { encoding: 'utf8' });
        assert.match(
          out,
          /\.debug_info\s+PROGBITS\s+\S+\s+\S+\s+\S+\s+\S+\s+C\s/,
          'readelf shows .debug_info compressed',
        );
      }
    });

    it('gives struct layouts with member offsets and bit fields', () => {
      const rec = dw.type('struct rec');
      assert.equal(rec.kind, 'struct');
      if (rec.kind !== 'struct') return;
      assert.equal(rec.size, 72);
      assert.deepEqual(
        rec.members.map((m) =>
          [m.name, m.offset, typeSize(m.type), m.bitOffset, m.bitSize].filter((x) => x !== undefined),
        ),
        REC_MEMBERS.map((m) => m.filter((x) => x !== undefined)),
      );
      assert.equal(typeName(rec.members[2]!.type), 'struct point');
      assert.equal(typeName(rec.members[3]!.type), 'const char *');
      assert.equal(typeName(rec.members[6]!.type), 'int [4]');
      assert.equal(typeName(rec.members[7]!.type), 'struct rec *');
      const next = rec.members[7]!.type;
      assert.ok(next.kind === 'pointer' && next.target === rec, 'a self-referencing struct is one object');
      const u = rec.members[8]!.type;
      assert.ok(u.kind === 'union' && u.name === undefined);
      assert.deepEqual(u.kind === 'union' ? u.members.map((m) => [m.name, m.offset, typeName(m.type)]) : [], [
        ['i', 0, 'int'],
        ['d', 0, 'double'],
      ]);
      const point = dw.type('struct point');
      assert.ok(point.kind === 'struct' && point.size === 8);
    });

    it('gives typedefs, enums and base types', () => {
      const t = dw.type('rec_t');
      assert.ok(t.kind === 'typedef' && t.target === dw.type('struct rec'));
      const e = dw.type('enum color');
      assert.ok(e.kind === 'enum');
      assert.equal(e.size, 4);
      assert.deepEqual(e.enumerators, [
        { name: 'RED', value: 1 },
        { name: 'GREEN', value: 2 },
        { name: 'BLUE', value: -4 },
      ]);
      const i = dw.type('int');
      assert.ok(i.kind === 'base' && i.size === 4);
      assert.equal(dw.findType('struct nosuch'), undefined);
      assert.throws(() => dw.type('struct nosuch'), DwarfError);
    });

    it('gives functions with parameter names, types and x86-64 argument registers', () => {
      const f = dw.function('add_rec');
      assert.equal(f.declLine, 32);
      assert.equal(basename(f.declFile ?? ''), SRC);
      assert.equal(f.external, true);
      assert.deepEqual(
        f.params.map((p) => [p.name, typeName(p.type), p.abiRegister]),
        [
          ['r', 'rec_t *', 'rdi'],
          ['delta', 'int', 'rsi'],
          ['name', 'const char *', 'rdx'],
          ['small', 'unsigned char', 'rcx'],
          ['c', 'enum color', 'r8'],
        ],
      );
      assert.equal(
        f.entry,
        Number.parseInt(execFileSync('nm', [bin], { encoding: 'utf8' }).match(/^([0-9a-f]+) T add_rec$/m)![1]!, 16),
        'entry = the symbol table address',
      );
      for (const p of f.params) {
        if (v.optimized) {
          assert.deepEqual(
            p.entryLocation && 'name' in p.entryLocation ? p.entryLocation.name : p.entryLocation,
            p.abiRegister,
          );
        } else {
          assert.equal(p.entryLocation?.kind, 'fbreg', `${p.name} lives in the frame at -O0`);
        }
      }
      const mix = dw.function('mix');
      assert.deepEqual(
        mix.params.map((p) => [p.name, typeName(p.type), p.abiRegister]),
        [
          ['a', 'double', undefined],
          ['b', 'int', 'rdi'],
          ['c', 'float', undefined],
          ['p', 'void *', 'rsi'],
        ],
      );
      assert.equal(dw.function('sum').variadic, true);
      assert.equal(dw.function('add_rec').variadic, false);
      const big = dw.function('make_big');
      assert.equal(typeName(big.returnType), 'struct big');
      assert.deepEqual(
        big.params.map((p) => [p.name, typeName(p.type), p.abiRegister]),
        [
          ['seed', 'long' + (v.compiler === 'gcc' ? ' int' : ''), 'rsi'],
          ['fn', 'int (*)(int, ...)', 'rdx'],
        ],
        'a returned struct of 32 bytes takes %rdi for its hidden pointer',
      );
      assert.deepEqual(
        dw.function('main').params.map((p) => [p.name, typeName(p.type)]),
        [
          ['argc', 'int'],
          ['argv', 'char **'],
        ],
      );
      assert.throws(() => dw.function('no_such_fn'), /no debug information for function no_such_fn/);
    });

    it('caches lookups: the same objects come back', () => {
      assert.equal(dw.function('add_rec'), dw.function('add_rec'));
      assert.equal(dw.type('struct rec'), dw.type('struct rec'));
    });

    it('maps addresses to lines and lines to addresses', () => {
      const f = dw.function('add_rec');
      if (!v.optimized) {
        assert.deepEqual(
          { ...dw.lineAt(f.entry!), column: 0, file: basename(dw.lineAt(f.entry!)!.file) },
          {
            file: SRC,
            line: 32,
            column: 0,
          },
        );
        assert.ok(dw.addressesOfLine(SRC, 32).includes(f.entry!), 'line 32 starts at add_rec');
      }
      assert.ok(dw.addressesOfLine(SRC, 35).length >= 1, 'line 35 has code');
      assert.deepEqual(dw.addressesOfLine(SRC, 3), [], 'line 3 is blank');
      // The whole line table against readelf's decoded one.
      const mine: string[] = [];
      for (const u of dw.units) {
        const t = dw.lineTable(u);
        for (const r of t?.rows ?? []) if (!r.endSequence) mine.push(`${r.address} ${r.line} ${r.isStmt}`);
      }
      assert.deepEqual(mine.sort(), readelfLines(bin));
    });

    it('gives inline chains as addr2line -i does', () => {
      const f = dw.function('add_rec');
      const addrs: number[] = [];
      for (const [s, e] of f.ranges) for (let a = s; a < e; a++) addrs.push(a);
      const oracle = addr2line(bin, addrs);
      let inlinedSeen = 0;
      addrs.forEach((a, i) => {
        const mine = dw.inlineFrames(a).map((fr) => `${fr.function} ${basename(fr.file)}:${fr.line}`);
        assert.deepEqual(mine, oracle[i], `inline chain at 0x${a.toString(16)}`);
        if (mine.length > 1) inlinedSeen++;
      });
      assert.ok(inlinedSeen > 0, 'twice() is inlined into add_rec somewhere');
      const chain = dw.inlineFrames(addrs.find((a) => dw.inlineFrames(a).length > 1)!);
      assert.deepEqual(
        chain.map((fr) => [fr.function, fr.inlined]),
        [
          ['twice', true],
          ['add_rec', false],
        ],
      );
      assert.equal(chain[1]!.line, 33, 'twice() is called on line 33');
      assert.equal(dw.functionAt(f.entry!), 'add_rec');
      assert.deepEqual(dw.inlineFrames(1), []);
    });

    it('agrees with readelf on every named function and struct', () => {
      let fns = 0;
      let structs = 0;
      for (const cu of readelfInfo(bin)) {
        for (const d of cu.children) {
          const name = d.attrs.get('DW_AT_name');
          if (!name) continue;
          if (d.tag === 'DW_TAG_subprogram' && d.attrs.has('DW_AT_decl_line')) {
            const f = dw.functions(name).find((x) => x.dieOffset === d.offset) ?? dw.function(name);
            assert.equal(f.declLine, Number(d.attrs.get('DW_AT_decl_line')), `${name} decl_line`);
            const params = d.children.filter((c) => c.tag === 'DW_TAG_formal_parameter');
            assert.deepEqual(
              f.params.map((p) => p.name),
              params.map((p) => p.attrs.get('DW_AT_name')),
              `${name} parameters`,
            );
            fns++;
          } else if (d.tag === 'DW_TAG_structure_type' && d.attrs.has('DW_AT_byte_size')) {
            const t = dw.type(`struct ${name}`);
            assert.ok(t.kind === 'struct');
            assert.equal(t.size, Number(d.attrs.get('DW_AT_byte_size')));
            const members = d.children.filter((c) => c.tag === 'DW_TAG_member');
            assert.deepEqual(
              t.members.map((m) => [m.name, m.bitSize === undefined ? m.offset : m.bitOffset]),
              members.map((m) => [
                m.attrs.get('DW_AT_name'),
                m.attrs.has('DW_AT_bit_size')
                  ? oracleBitOffset(m)
                  : Number(m.attrs.get('DW_AT_data_member_location') ?? 0),
              ]),
              `struct ${name} members`,
            );
            structs++;
          }
        }
      }
      assert.ok(fns >= 6 && structs >= 3, `compared ${fns} functions and ${structs} structs`);
    });
  });
}

/** A member's bit offset from readelf's attributes: DWARF 5 data_bit_offset, or DWARF 4 bit_offset (from the MSB). */
function oracleBitOffset(m: OracleDie): number {
  const dbo = m.attrs.get('DW_AT_data_bit_offset');
  if (dbo !== undefined) return Number(dbo);
  const loc = Number(m.attrs.get('DW_AT_data_member_location') ?? 0);
  const bo = m.attrs.get('DW_AT_bit_offset');
  if (bo === undefined) return loc;
  const storage = 8 * Number(m.attrs.get('DW_AT_byte_size') ?? 4);
  return loc * 8 + storage - Number(bo) - Number(m.attrs.get('DW_AT_bit_size'));
}

describe('separate debug files', { skip: noGcc ?? onX86 }, () => {
  let bin = '';
  before(() => {
    bin = cc('gcc', 'sep', ['-g', '-O2', '-Wl,--build-id']);
  });

  it('follows .gnu_debuglink to a debug file with the right CRC', () => {
    execFileSync('objcopy', ['--only-keep-debug', bin, join(dir, 'sep.debug')]);
    execFileSync('objcopy', ['--strip-debug', '--add-gnu-debuglink=sep.debug', bin, join(dir, 'sep-linked')], {
      cwd: dir,
    });
    const e = ElfFile.open(join(dir, 'sep-linked'));
    assert.equal(e.section('.debug_info'), undefined, 'the stripped file has no DWARF');
    e.close();
    const dw = openDwarf(join(dir, 'sep-linked'), { debugDirs: [join(dir, 'nowhere')] });
    try {
      assert.deepEqual(dw.source, { path: join(dir, 'sep.debug'), via: 'debuglink' });
      assert.equal(dw.function('add_rec').declLine, 32);
      assert.equal(dw.type('struct rec').kind, 'struct');
    } finally {
      dw.close();
    }
  });

  it('refuses a debuglink target whose CRC does not match, saying where it looked', () => {
    mkdirSync(join(dir, 'stale'));
    execFileSync('objcopy', ['--only-keep-debug', bin, join(dir, 'stale', 'sep.debug')]);
    execFileSync('objcopy', ['--strip-debug', '--add-gnu-debuglink=sep.debug', bin, join(dir, 'stale', 'sep')], {
      cwd: join(dir, 'stale'),
    });
    appendFileSync(join(dir, 'stale', 'sep.debug'), 'x');
    assert.throws(
      () => openDwarf(join(dir, 'stale', 'sep'), { debugDirs: [join(dir, 'nowhere')] }),
      (e: unknown) =>
        e instanceof DwarfError &&
        /stale\/sep has no debug information \(build-id [0-9a-f]{40}, debuglink sep\.debug; searched .*nowhere, \/usr\/lib\/debug\)/.test(
          e.message,
        ),
    );
  });

  it('finds a debug file by build-id in a debug directory', () => {
    const id = ElfFile.open(bin);
    const buildId = id.buildId()!;
    id.close();
    const dbgDir = join(dir, 'debugroot');
    mkdirSync(join(dbgDir, '.build-id', buildId.slice(0, 2)), { recursive: true });
    const target = join(dbgDir, '.build-id', buildId.slice(0, 2), `${buildId.slice(2)}.debug`);
    execFileSync('objcopy', ['--only-keep-debug', bin, target]);
    const stripped = join(dir, 'sep-byid');
    execFileSync('objcopy', ['--strip-debug', '--remove-section=.gnu_debuglink', bin, stripped]);
    const dw = openDwarf(stripped, { debugDirs: [dbgDir] });
    try {
      assert.deepEqual(dw.source, { path: target, via: 'build-id' });
      assert.deepEqual(
        dw.function('mix').params.map((p) => p.name),
        ['a', 'b', 'c', 'p'],
      );
    } finally {
      dw.close();
    }
  });

  it('says a binary without -g has no debug information', () => {
    const plain = cc('gcc', 'plain', ['-O2', '-Wl,--build-id']);
    assert.throws(() => openDwarf(plain), /plain has no debug information \(build-id [0-9a-f]+, no \.gnu_debuglink;/);
  });

  for (const flags of [['-gsplit-dwarf'], ['-gdwarf-4', '-gsplit-dwarf']]) {
    it(`detects split DWARF (${flags.join(' ')}) and says it is not read`, () => {
      const name = `split${flags.length}`;
      const split = cc('gcc', name, ['-g', '-O2', ...flags]);
      const dw = openDwarf(split);
      try {
        assert.equal(dw.splitUnits.length, 1);
        assert.match(dw.splitUnits[0]!.dwoName, /\.dwo$/);
        assert.equal(dw.splitUnits[0]!.compDir, dir);
        assert.throws(
          () => dw.function('add_rec'),
          (e: unknown) =>
            e instanceof DwarfError &&
            e.message ===
              `${split}: function add_rec not found: 1 compilation unit(s) keep their debug information in split ` +
                `DWARF files (${dw.splitUnits[0]!.dwoName}), which bpfscope does not read yet` &&
            e.hint === 'rebuild without -gsplit-dwarf',
        );
        // The skeleton still has the line table.
        assert.ok(dw.addressesOfLine(SRC, 35).length >= 1);
      } finally {
        dw.close();
      }
    });
  }

  it('copes with a copy of the debug file next to the binary (objcopy --only-keep-debug keeps NOBITS code)', () => {
    copyFileSync(join(dir, 'sep.debug'), join(dir, 'copy.debug'));
    const e = ElfFile.open(join(dir, 'copy.debug'));
    e.close();
    const dw = openDwarf(join(dir, 'copy.debug'));
    try {
      assert.equal(dw.function('add_rec').declLine, 32);
    } finally {
      dw.close();
    }
  });
});
