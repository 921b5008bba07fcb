/** Map declarations: parsing (`let @m = TYPE(N);` in the preamble) and the checks of lang/passes/mapdecl.ts. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CompileError } from '../../src/lang/diagnostics.js';
import { parse } from '../../src/lang/parser.js';
import { checkMapDecls } from '../../src/lang/passes/mapdecl.js';
import { type SType, U64 } from '../../src/lang/types.js';

const src = (text: string) => ({ name: 'stdin', text });

describe('map declarations', () => {
  it('parse after the config block, before probes, with positions', () => {
    const p = parse(src('config = { max_map_keys = 9 }\nlet @a = lruhash(100);\nlet @ = percpuarray(1);\nBEGIN { }'));
    assert.deepEqual(
      p.mapDecls.map((d) => [
        d.name,
        d.mapType,
        d.maxEntries,
        `${d.pos.line}:${d.pos.col}`,
        d.typePos.col,
        d.maxEntriesPos.col,
      ]),
      [
        ['a', 'lruhash', 100n, '2:1', 10, 18],
        ['', 'percpuarray', 1n, '3:1', 9, 21],
      ],
    );
    assert.equal(p.probes.length, 1);
  });

  it('reject a declaration after a probe, and malformed ones', () => {
    const msg = (text: string) => {
      try {
        parse(src(text));
      } catch (e) {
        if (e instanceof CompileError) return e.diagnostics.map((d) => d.message);
        throw e;
      }
      return [];
    };
    assert.deepEqual(msg('BEGIN { } let @a = hash(1);'), ['syntax: map declarations must appear before probes']);
    assert.match(msg('let @a = hash(x); BEGIN { }')[0]!, /expected the maximum number of entries/);
    assert.match(msg('let @a = hash(1) BEGIN { }')[0]!, /expected ';'/);
  });

  it('give each used declared map its kernel type and size; check types against the values', () => {
    const maps = new Map<string, { keyTypes: SType[]; valueType: SType }>([
      ['n', { keyTypes: [U64], valueType: U64 }],
      ['c', { keyTypes: [], valueType: { kind: 'count' } }],
      ['h', { keyTypes: [], valueType: { kind: 'hist', bits: 0 } }],
      ['k', { keyTypes: [U64], valueType: { kind: 'sum', signed: false } }],
    ]);
    const decl = (name: string, mapType: string, maxEntries: bigint) => {
      const pos = { line: 1, col: 1, offset: 0, end: 1 };
      return { kind: 'MapDecl' as const, pos, name, mapType, typePos: pos, maxEntries, maxEntriesPos: pos };
    };
    const ok = checkMapDecls(
      [decl('n', 'lruhash', 5n), decl('c', 'percpuarray', 1n), decl('k', 'percpulruhash', 7n), decl('u', 'hash', 3n)],
      maps,
    );
    // @u is declared and never used: a warning (bpftrace tests/runtime/map "map declaration unused"), no map
    assert.deepEqual(
      ok.diagnostics.map((d) => `${d.severity}: ${d.message}`),
      ['warning: Unused map: @u'],
    );
    assert.deepEqual(Object.fromEntries(ok.declared), {
      n: { mapType: 9, maxEntries: 5 },
      c: { mapType: 6, maxEntries: 1 },
      k: { mapType: 10, maxEntries: 7 },
    });
    const bad = checkMapDecls(
      [
        decl('n', 'percpuhash', 5n),
        decl('c', 'hash', 2n),
        decl('h', 'percpuarray', 1n),
        decl('k', 'array', 1n),
        decl('k', 'hash', 1n),
        decl('x', 'hash', 0n),
      ],
      maps,
    );
    assert.deepEqual(
      bad.diagnostics.map((d) => d.message),
      [
        'Incompatible map types. Type from declaration: percpuhash. Type from value/key type: hash',
        'Incompatible map types. Type from declaration: hash. Type from value/key type: percpuarray',
        'Incompatible map types. Type from declaration: percpuarray. Type from value/key type: percpuhash',
        'Invalid bpf map type: array',
        'Map @k is already declared',
        'Max entries must be between 1 and 2^32-1',
      ],
    );
    assert.equal(bad.declared.size, 0);
  });
});
