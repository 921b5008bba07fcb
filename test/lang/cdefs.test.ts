/**
 * The program's C definitions (src/lang/cdefs.ts): layouts checked against the C compiler's own (cc prints
 * sizeof/offsetof of the same definitions), enumerators, references between definitions, and positioned errors.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parseCDefinitions } from '../../src/lang/cdefs.js';
import { CompileError } from '../../src/lang/diagnostics.js';
import { parse } from '../../src/lang/parser.js';
import type { SType } from '../../src/lang/types.js';

/** Parse `text` as a program's preamble (followed by an empty BEGIN) and return its C types. */
function ctypes(text: string) {
  const program = `${text} BEGIN { }`;
  const ast = parse({ name: 'stdin', text: program });
  return parseCDefinitions(ast.cDefinitions, program);
}

function record(text: string, name: string): Extract<SType, { kind: 'record' }> {
  const r = ctypes(text).records.get(name);
  assert.ok(r, `${name} not defined`);
  return r;
}

/** Definitions whose layouts must equal the C compiler's (no kernel types: these run without BTF). */
const LAYOUTS: { def: string; name: string; fields: string[] }[] = [
  { def: 'struct A { int x; char c; };', name: 'struct A', fields: ['x', 'c'] },
  { def: 'struct B { char c; long l; short s; char tail[3]; };', name: 'struct B', fields: ['c', 'l', 's', 'tail'] },
  {
    def: 'struct C { char a; struct { int b; short c; }; union { long d; char e[3]; } u; int *p; void (*fn)(int); };',
    name: 'struct C',
    fields: ['a', 'b', 'c', 'u', 'p', 'fn'],
  },
  { def: 'union U { char c[5]; int i; unsigned long long q; };', name: 'union U', fields: ['c', 'i', 'q'] },
  {
    def: 'struct P { char c; int i; long l; } __attribute__((packed));',
    name: 'struct P',
    fields: ['c', 'i', 'l'],
  },
  {
    def: 'struct N { short s; struct A2 { char c; long long x; } inner; unsigned char last; };',
    name: 'struct N',
    fields: ['s', 'inner', 'last'],
  },
  { def: 'struct M { int m[2][3]; char z; };', name: 'struct M', fields: ['m', 'z'] },
  {
    // floating-point members: placed by their size and alignment, typed none (nothing reads them)
    def: 'struct FL { char c; double d; float f[3]; long double ld; int x; union { float g; char h[5]; } u; short s; };',
    name: 'struct FL',
    fields: ['c', 'd', 'f', 'ld', 'x', 'u', 's'],
  },
];

describe('C definitions', () => {
  const cc = spawnSync('cc', ['--version']).status === 0;
  test("layouts equal the C compiler's (sizeof and offsetof)", { skip: cc ? undefined : 'no cc' }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'bpfscope-cdefs-'));
    try {
      const lines = ['#include <stdio.h>', '#include <stddef.h>', ...LAYOUTS.map((l) => l.def), 'int main(void) {'];
      for (const l of LAYOUTS) {
        lines.push(`printf("%zu\\n", sizeof(${l.name}));`);
        for (const f of l.fields) lines.push(`printf("%zu\\n", offsetof(${l.name}, ${f}));`);
      }
      lines.push('return 0; }');
      writeFileSync(join(dir, 'l.c'), lines.join('\n'));
      const build = spawnSync('cc', ['-o', join(dir, 'l'), join(dir, 'l.c')], { encoding: 'utf8' });
      assert.equal(build.status, 0, build.stderr);
      const expected = spawnSync(join(dir, 'l'), { encoding: 'utf8' }).stdout.trim().split('\n').map(Number);
      const ours: number[] = [];
      for (const l of LAYOUTS) {
        const r = record(l.def, l.name);
        ours.push(r.size);
        for (const f of l.fields) ours.push(r.fields.find((x) => x.name === f)!.offset);
      }
      assert.deepEqual(ours, expected);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('bitfields pack into units of their type without straddling one', () => {
    const r = record('struct F { unsigned a:3, b:5; int c:30; char d; unsigned :0; unsigned e:1; };', 'struct F');
    const at = (n: string) => r.fields.find((f) => f.name === n)!;
    assert.deepEqual(
      ['a', 'b', 'c', 'e'].map((n) => [at(n).bitOffset, at(n).bitSize]),
      [
        [0, 3],
        [3, 5],
        [32, 30],
        [96, 1],
      ],
    );
    assert.equal(at('d').offset, 8);
    assert.equal(r.size, 16);
  });

  test('char arrays are strings, other arrays arrays; pointers to earlier and to the same struct', () => {
    const r = record('struct node { char name[16]; int v[4]; struct node *next; };', 'struct node');
    const t = (n: string) => r.fields.find((f) => f.name === n)!.type;
    assert.deepEqual(t('name'), { kind: 'string', size: 16, wellFormed: true }); // printed without the `..` trailer
    assert.deepEqual(t('v'), { kind: 'array', elem: { kind: 'int', size: 4, signed: true }, count: 4 });
    const next = t('next');
    assert.ok(next.kind === 'pointer' && next.to === r, 'next points to struct node itself');
  });

  test('only plain char arrays are strings: unsigned/signed char and int8_t/uint8_t/u8 arrays are integer arrays (bpftrace clang_parser.cpp)', () => {
    const r = record(
      'struct bytes { char c[4]; unsigned char uc[4]; signed char sc[2]; uint8_t u8t[4]; int8_t i8t[3]; u8 k[2]; char m[2][3]; };',
      'struct bytes',
    );
    const t = (n: string) => r.fields.find((f) => f.name === n)!.type;
    const u8 = { kind: 'int', size: 1, signed: false };
    const i8 = { kind: 'int', size: 1, signed: true };
    assert.deepEqual(t('c'), { kind: 'string', size: 4, wellFormed: true });
    assert.deepEqual(t('uc'), { kind: 'array', elem: u8, count: 4 });
    assert.deepEqual(t('sc'), { kind: 'array', elem: i8, count: 2 });
    assert.deepEqual(t('u8t'), { kind: 'array', elem: u8, count: 4 });
    assert.deepEqual(t('i8t'), { kind: 'array', elem: i8, count: 3 });
    assert.deepEqual(t('k'), { kind: 'array', elem: u8, count: 2 });
    assert.deepEqual(t('m'), { kind: 'array', elem: { kind: 'string', size: 3, wellFormed: true }, count: 2 });
  });

  test('enumerators count on from the last value; an enum is a 4-byte integer that knows its names', () => {
    const c = ctypes('enum E { A, B = 5, C, D = -1, F };');
    assert.deepEqual(
      [...c.enumerators].map(([n, v]) => [n, v.value]),
      [
        ['A', 0n],
        ['B', 5n],
        ['C', 6n],
        ['D', -1n],
        ['F', 0n],
      ],
    );
    const e = c.enums.get('enum E');
    assert.ok(e?.kind === 'int' && e.size === 4 && !e.signed && e.enum?.name === 'E');
    // a value prints as the first enumerator that has it
    assert.deepEqual(
      [...e.enum.names],
      [
        [0n, 'A'],
        [5n, 'B'],
        [6n, 'C'],
        [0xffffffffn, 'D'],
      ],
    );
  });

  test('floating-point members are typed none (bpftrace v0.26 prints them as null)', () => {
    const r = record('union N { int i; float f; double d; long double ld; };', 'union N');
    assert.deepEqual(
      r.fields.map((f) => [f.name, f.type.kind, f.offset]),
      [
        ['i', 'int', 0],
        ['f', 'none', 0],
        ['d', 'none', 0],
        ['ld', 'none', 0],
      ],
    );
    assert.equal(r.size, 16);
  });

  test('the last member may lack its semicolon (as GNU C and bpftrace accept)', () => {
    assert.equal(record('struct x {unsigned long x};', 'struct x').size, 8);
  });

  for (const [text, message, col] of [
    ['struct A { int x; undefined_type_zz y; };', "Unknown type: 'undefined_type_zz'", 19],
    ['struct A { int x; int x; };', "duplicate member 'x' in 'struct A'", 23],
    ['struct A { int x; int; };', 'a member needs a name', 19],
  ] as const) {
    test(`error: ${message}`, () => {
      assert.throws(
        () => ctypes(text),
        (e: unknown) =>
          e instanceof CompileError && e.diagnostics[0]!.message === message && e.diagnostics[0]!.pos!.col === col,
      );
    });
  }
});
