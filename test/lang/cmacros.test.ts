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

  it('evaluates #if/#ifdef/#elif/#else with the definitions so far and the target predefined macros', () => {
    writeFileSync(
      join(dir, 'cond.h'),
      [
        '#define LEVEL 2',
        '#ifdef __i386__',
        '# define NR 162',
        '#elif defined(__ILP32__)',
        '# define NR 1073741859',
        '#else',
        '# define NR 35',
        '#endif',
        '#if LEVEL >= 2 && !defined(NOPE)',
        '#define PICKED 1',
        '#else',
        '#define PICKED 2',
        '#endif',
        '#ifndef LEVEL',
        '#define GONE 1',
        '#endif',
        '#if __NOT_A_MACRO_PREREQ (4, 6)',
        '#define UNKNOWN_IF 3',
        '#else',
        '#define UNKNOWN_ELSE 4',
        '#endif',
        '#if defined __x86_64__ || defined __aarch64__',
        '#define LP64_ARCH 1',
        '#endif',
        '',
      ].join('\n'),
    );
    const m = integerMacros('', { includeFiles: ['cond.h'], includeDirs: [dir] });
    assert.equal(m.get('NR'), 35n);
    assert.equal(m.get('PICKED'), 1n);
    assert.equal(m.has('GONE'), false);
    // a condition that cannot be evaluated: every branch counts, as before conditionals were evaluated
    assert.equal(m.get('UNKNOWN_IF'), 3n);
    assert.equal(m.get('UNKNOWN_ELSE'), 4n);
    assert.equal(m.get('LP64_ARCH'), 1n);
  });

  it(
    "<syscall.h> gives the host's syscall numbers (x86-64: nanosleep 35, not i386's 162)",
    { skip: process.arch !== 'x64' },
    () => {
      const m = integerMacros('#include <syscall.h>\n');
      assert.equal(m.get('__NR_nanosleep'), 35n);
      assert.equal(m.get('__NR_openat'), 257n);
    },
  );

  it('a missing --include file is an error', () => {
    assert.throws(() => integerMacros('', { includeFiles: ['no/such.h'] }), BpfscopeError);
  });
});
