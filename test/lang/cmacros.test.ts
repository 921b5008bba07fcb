import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BpfscopeError } from '../../src/errors.js';
import { integerMacros } from '../../src/lang/cmacros.js';

const dir = mkdtempSync(join(tmpdir(), 'bpfscope-cmacros-'));
mkdirSync(join(dir, 'sub'));
writeFileSync(
  join(dir, 'top.h'),
  [
    '#ifndef TOP_H',
    '#define TOP_H',
    '#include "sub/inner.h"',
    '#define A 1 /* one */',
    '#define B (A << 4) // sixteen',
    '#define C \\',
    '    (B | 0x3)',
    '#define D -(C)',
    '#define STR "text"',
    '#define F(x) ((x) + 1)',
    '#define CAST ((int)5)',
    '#define A 99',
    '#endif',
    '',
  ].join('\n'),
);
writeFileSync(join(dir, 'sub', 'inner.h'), '#define INNER 7u\n#include "../top.h"\n');

describe('integer macros from #define lines and headers', () => {
  it('evaluates integer constant expressions through includes; skips the rest; first definition wins', () => {
    const m = integerMacros('', { includeFiles: ['top.h'], includeDirs: [dir] });
    assert.equal(m.get('A'), 1n);
    assert.equal(m.get('B'), 16n);
    assert.equal(m.get('C'), 19n);
    assert.equal(m.get('D'), -19n);
    assert.equal(m.get('INNER'), 7n);
    for (const skipped of ['TOP_H', 'STR', 'F', 'CAST']) assert.equal(m.has(skipped), false, skipped);
  });

  it("reads the program's own #define and #include lines; a missing program #include is ignored", () => {
    const m = integerMacros('#define _UNDERSCORE 314\n#include <no/such/header.h>\n#include "top.h"\nBEGIN { }\n', {
      includeDirs: [dir],
    });
    assert.equal(m.get('_UNDERSCORE'), 314n);
    assert.equal(m.get('B'), 16n);
  });

  it('a missing --include file is an error', () => {
    assert.throws(() => integerMacros('', { includeFiles: ['no/such.h'] }), BpfscopeError);
  });
});
