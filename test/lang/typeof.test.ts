/**
 * `typeof` (bpftrace v0.26 docs/stdlib.md), declared in one registry file (src/lang/builtins/typeof.ts): the type
 * of an expression or a type, where a type is written. bpftrace 0.17 (the differential oracle) has no typeof, so
 * the printed output is written out here.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compile } from '../../src/compiler.js';
import type { Target } from '../../src/lang/target.js';
import { compileErrors, ONE_CPU_TARGET } from '../helpers/compile.js';
import { typeName } from '../../src/lang/types.js';
import { bpfscopeSkipReason, runTool } from '../helpers/cli.js';

const target: Target = ONE_CPU_TARGET;

function mapTypes(text: string): Record<string, string> {
  const r = compile({ name: 'stdin', text }, { target });
  return Object.fromEntries(r.compiled.maps.map((m) => [m.name, typeName(m.valueType)]));
}

function errors(text: string): string[] {
  return compileErrors(text, target);
}

describe('typeof', () => {
  it('gives the static type of an expression or a type in casts, sizeof and let', () => {
    assert.deepEqual(
      mapTypes(
        'BEGIN { @a = (typeof(pid))-1; @b = sizeof(typeof(comm)); @c = sizeof(typeof(uint16)); ' +
          '@d = (typeof((int8)0))300; let $s: typeof(comm); $s = comm; @e = $s; @f = sizeof(typeof(typeof(int32))); }',
      ),
      { a: 'uint64', b: 'uint64', c: 'uint64', d: 'int64', e: 'string[16]', f: 'uint64' },
    );
  });

  it('is an error anywhere a value is expected, and for types that cannot be written', () => {
    assert.deepEqual(errors('BEGIN { @ = typeof(pid); }'), [
      '1:13: typeof() can only be used where a type is written: a cast, a let declaration, sizeof, offsetof',
    ]);
    assert.deepEqual(errors('BEGIN { @ = (typeof(kstack))1; }'), [
      '1:21: typeof(): values of type kstack cannot be written as a type',
    ]);
  });

  it('prints what bpftrace v0.26 prints for casts and sizes through typeof', async (t) => {
    const skip = bpfscopeSkipReason();
    if (skip) return t.skip(skip);
    const r = await runTool('bpfscope', [
      '-e',
      'BEGIN { print((typeof(pid))-1); print(sizeof(typeof(comm))); print(sizeof(typeof(uint16))); ' +
        '$x = (typeof((int8)0))300; print($x); print(sizeof(typeof(curtask))); ' +
        'print((typeof(typeof(uint8)))257); exit(); }',
    ]);
    assert.equal(r.code, 0, r.stderr);
    // the two empty lines end every run that prints no maps at exit, as bpftrace's
    assert.equal(r.stdout, '4294967295\n16\n2\n44\n8\n1\n\n\n');
  });
});
