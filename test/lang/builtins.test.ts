/**
 * The builtin registry (src/lang/builtins/): the cgroup family is declared once there, and the parser, the
 * analyser and the code generator all take it from there (names, arity, checks, result types, code).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { disassembleIr } from '../../src/bpf/disasm.js';
import { compile } from '../../src/compiler.js';
import { BUILTIN_FUNCTIONS, BUILTIN_VARIABLES } from '../../src/lang/builtins/registry.js';
import { BUILTIN_NAMES } from '../../src/lang/parser.js';
import { FUNCTION_NAMES } from '../../src/lang/passes/semantic.js';
import type { Target } from '../../src/lang/target.js';
import { compileErrors, ONE_CPU_TARGET } from '../helpers/compile.js';
import { typeName } from '../../src/lang/types.js';

/** A host with one cgroup, `/fake/cg` (id 4242); nothing else is asked of it here. */
const target: Target = {
  ...ONE_CPU_TARGET,
  cgroupId: (path) => (path === '/fake/cg' ? 4242n : undefined),
};

function errors(text: string): string[] {
  return compileErrors(text, target);
}

describe('builtin registry: the cgroup family', () => {
  it('registers cgroup, cgroupid and cgroup_path, which the parser and the analyser list', () => {
    assert.ok(BUILTIN_VARIABLES.get('cgroup')?.generate);
    assert.ok(BUILTIN_FUNCTIONS.get('cgroupid')?.check && BUILTIN_FUNCTIONS.get('cgroup_path')?.check);
    assert.ok(BUILTIN_NAMES.has('cgroup'));
    assert.ok(FUNCTION_NAMES.includes('cgroupid') && FUNCTION_NAMES.includes('cgroup_path'));
  });

  it('types the family: u64 ids, cgroup_path with its filter (default *)', () => {
    const r = compile(
      {
        name: 'stdin',
        text: 'BEGIN { @a = cgroup; @b = cgroupid("/fake/cg"); @c = cgroup_path(1); @d = cgroup_path(1, "uni*"); }',
      },
      { target },
    );
    const types = Object.fromEntries(r.compiled.maps.map((m) => [m.name, typeName(m.valueType)]));
    assert.deepEqual(types, { a: 'uint64', b: 'uint64', c: 'cgroup_path', d: 'cgroup_path' });
    const d = r.compiled.maps.find((m) => m.name === 'd')!.valueType;
    assert.deepEqual(d, { kind: 'cgroup_path', filter: 'uni*' });
    const c = r.compiled.maps.find((m) => m.name === 'c')!.valueType;
    assert.deepEqual(c, { kind: 'cgroup_path', filter: '*' });
  });

  it('generates the helper call for cgroup and the constant for cgroupid', () => {
    const r = compile({ name: 'stdin', text: 'BEGIN { @a = cgroup; @b = cgroupid("/fake/cg"); }' }, { target });
    const code = disassembleIr(r.compiled.programs[0]!.fn.items).join('\n');
    assert.match(code, /call bpf_get_current_cgroup_id#80/);
    assert.match(code, /^ {2}v\d+ = 4242$/m);
  });

  it("reports the family's errors in bpftrace's words", () => {
    assert.deepEqual(errors('BEGIN { @ = cgroupid("/no/such/cg"); }'), [
      '1:22: Failed to resolve cgroup ID for path: /no/such/cg',
    ]);
    assert.deepEqual(errors('BEGIN { @ = cgroupid(); }'), ['1:13: cgroupid() requires 1 argument (0 provided)']);
    assert.deepEqual(errors('BEGIN { @ = cgroup_path(1, 2, 3); }'), [
      '1:13: cgroup_path() requires 1 to 2 arguments (3 provided)',
    ]);
    assert.deepEqual(errors('BEGIN { @ = cgroup_path(1, comm); }'), [
      '1:28: cgroup_path() expects a string literal as its filter',
    ]);
    assert.deepEqual(errors('BEGIN { @ = cgroup_path("x"); }'), [
      '1:25: cgroup_path() expects an integer (string[2] provided)',
    ]);
  });
});
