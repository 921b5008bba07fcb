import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compile } from '../../src/compiler.js';
import { CompileError } from '../../src/lang/diagnostics.js';
import { typeName } from '../../src/lang/types.js';

/** Compile BEGIN/END-only programs (no kernel access needed) and return the planned maps. */
function maps(text: string, positional: string[] = []) {
  const r = compile({ name: 'stdin', text }, { positional });
  return Object.fromEntries(
    r.compiled.maps.map((m) => [
      m.name === '' ? '@' : `@${m.name}`,
      `[${m.keyTypes.map(typeName).join(',')}] -> ${typeName(m.valueType)} (key ${m.keySize}, value ${m.valueSize})`,
    ]),
  );
}

function errors(text: string, opts: { cpid?: number } = {}): string[] {
  try {
    compile({ name: 'stdin', text }, opts);
  } catch (e) {
    assert.ok(e instanceof CompileError, `expected CompileError, got ${e}`);
    return e.diagnostics.map((d) => `${d.pos ? `${d.pos.line}:${d.pos.col}: ` : ''}${d.message}`);
  }
  assert.fail('expected a compile error');
}

describe('semantic analysis: map typing', () => {
  it('types scalar, keyed and tuple-keyed maps with bpftrace storage types', () => {
    assert.deepEqual(maps('BEGIN { @ = 1; @a[1, "x"] = comm; @b[pid] = nsecs; }'), {
      '@': '[] -> int64 (key 8, value 8)',
      '@a': '[int64,string[2]] -> string[16] (key 16, value 16)',
      '@b': '[uint64] -> uint64 (key 8, value 8)',
    });
  });

  it('infers a map read in an earlier probe from its assignment in a later one (fixed point)', () => {
    assert.deepEqual(maps('END { printf("%d\\n", @late); } BEGIN { @late = 5; }'), {
      '@late': '[] -> int64 (key 8, value 8)',
    });
  });

  it('unifies string sizes to the largest assigned', () => {
    assert.deepEqual(maps('BEGIN { @s = "ab"; @s = "abcdef"; }'), { '@s': '[] -> string[7] (key 8, value 7)' });
  });

  it('gives aggregations per-CPU layouts; hist/lhist keys carry the bucket index', () => {
    assert.deepEqual(
      maps('BEGIN { @c = count(); @m[1] = min(2); @a = avg(3); @h[comm] = hist(4); @l = lhist(5, 0, 10, 1); }'),
      {
        '@a': '[] -> avg_t (key 8, value 16)',
        '@c': '[] -> count_t (key 8, value 8)',
        '@h': '[string[16]] -> hist_t (key 24, value 8)',
        '@l': '[] -> lhist_t (key 8, value 8)',
        '@m': '[int64] -> min_t (key 8, value 16)',
      },
    );
  });

  it('treats numeric positional parameters as integers and others as strings', () => {
    assert.deepEqual(maps('BEGIN { @n = $1; @s = $2; @c = $#; }', ['42', 'hello']), {
      '@c': '[] -> int64 (key 8, value 8)',
      '@n': '[] -> int64 (key 8, value 8)',
      '@s': '[] -> string[6] (key 8, value 6)',
    });
  });
});

describe('semantic analysis: errors (bpftrace wording)', () => {
  it('rejects a value type change', () => {
    assert.deepEqual(errors('BEGIN { @x = 1; @x = "a"; }'), [
      "1:17: Type mismatch for @x: trying to assign value of type 'string[2]' when map already contains a value of type 'int64'",
    ]);
  });
  it('rejects a key type change', () => {
    assert.deepEqual(errors('BEGIN { @x[1] = 1; @x["a"] = 2; }'), [
      "1:20: Argument mismatch for @x: trying to access with arguments: 'string[2]' when map expects arguments: 'int8'",
    ]);
  });
  it('requires aggregations to be assigned to maps', () => {
    assert.deepEqual(errors('BEGIN { count(); }'), ['1:9: count() should be directly assigned to a map']);
    assert.deepEqual(errors('BEGIN { $x = sum(1); }'), ['1:14: sum() should be directly assigned to a map']);
  });
  it('reports undefined variables and maps', () => {
    assert.deepEqual(errors('BEGIN { printf("%d\\n", $y); }'), ['1:24: Undefined or undeclared variable: $y']);
    assert.deepEqual(errors('BEGIN { printf("%d\\n", @nope); }'), ['1:24: Undefined map: @nope']);
  });
  it('checks printf arguments', () => {
    assert.equal(errors('BEGIN { printf("%d %d\\n", 1); }').length, 1);
    assert.match(errors('BEGIN { printf("%d\\n", comm); }')[0]!, /^1:9: /);
  });
  it('rejects cpid without -c and accepts it with one', () => {
    assert.deepEqual(errors('BEGIN { @ = cpid; }'), ['1:13: cpid cannot be used without child command (-c)']);
    compile({ name: 'stdin', text: 'BEGIN { @ = cpid; }' }, { cpid: 1 });
  });
  it('rejects args on probes without arguments', () => {
    assert.deepEqual(errors('BEGIN { @ = args.x; }'), ["1:13: The args builtin can not be used with 'begin' probes"]);
  });
  it('checks hist bits and lhist bounds', () => {
    assert.deepEqual(errors('BEGIN { @ = hist(1, 9); }'), ['1:21: hist: bits must be between 0 and 5 (9 provided)']);
    assert.deepEqual(errors('BEGIN { @ = lhist(1, 0, 10, 0); }'), ['1:29: lhist() step must be >= 1']);
  });
  it('checks the arguments of strcontains, len, macaddr, cgroupid and where usermode is available', () => {
    assert.deepEqual(errors('BEGIN { @ = strcontains(comm, 1); }'), [
      '1:31: strcontains() expects strings (int64 provided)',
    ]);
    assert.deepEqual(errors('BEGIN { @ = len(comm); }'), [
      '1:17: len() expects a map, a kstack or a ustack (string[16] provided)',
    ]);
    assert.deepEqual(errors('BEGIN { @ = macaddr("abc"); }'), [
      '1:21: macaddr() expects a 6-byte array or a pointer (string[4] provided)',
    ]);
    assert.deepEqual(errors('BEGIN { @ = cgroupid(comm); }'), ['1:22: cgroupid() expects a string literal path']);
    // no pt_regs there: bpftrace folds usermode to 0 (fold_literals.cpp), no error
    assert.ok(maps('tracepoint:syscalls:sys_enter_read { @ = usermode; }')['@']);
    assert.ok(maps('BEGIN { @ = usermode; }')['@']);
  });
  it('rejects comparing a string with an integer', () => {
    assert.deepEqual(errors('BEGIN { if (comm == 1) { exit(); } }'), [
      "1:13: Type mismatch for '==': comparing 'string[16]' with 'int64'",
    ]);
  });
  it('compares arrays only by == and != and only of one integer type; checks constant array indexes (bpftrace type_checker.cpp)', () => {
    assert.deepEqual(errors('BEGIN { $a = (int8[8])1; $b = (int8[8])2; @ = $a < $b; }'), [
      '1:47: The < operator cannot be used on arrays.',
    ]);
    assert.deepEqual(errors('BEGIN { @ = (int8[8])1 == (int16[4])1; }'), [
      '1:13: Only arrays of same size support comparison operators.',
    ]);
    assert.deepEqual(errors('BEGIN { @ = (int32[2])1 != (uint32[2])1; }'), [
      '1:13: Only arrays of same sized integer support comparison operators.',
    ]);
    // one error: the variable assigned from the bad access still has the element's type
    assert.deepEqual(errors('BEGIN { $a = (int8[8])1; $x = $a[8]; @ = $x; }'), [
      '1:31: the index 8 is out of bounds for array of size 8',
    ]);
    assert.deepEqual(errors('BEGIN { $a = (int8[8])1; @ = $a[-1]; @b = $a["x"]; }'), [
      '1:33: The array index operator [] only accepts non-negative integer indices. Got: int64',
      '1:46: The array index operator [] only accepts non-negative integer indices. Got: string[2]',
    ]);
    // a run-time index is checked at run time (test/kernel/array-index.test.ts)
    assert.deepEqual(maps('BEGIN { $a = (int8[8])1; $i = (uint64)9; @ = $a[$i]; }'), {
      '@': '[] -> int64 (key 8, value 8)',
    });
  });
  it('reports an unknown function and an unknown identifier', () => {
    assert.deepEqual(errors('BEGIN { frob(); }'), ["1:9: Unknown function: 'frob'"]);
    assert.deepEqual(errors('BEGIN { @ = nosuchthing; }'), ["1:13: Unknown identifier: 'nosuchthing'"]);
  });
  it('names bpftrace functions and builtins that bpfscope does not support yet', () => {
    assert.deepEqual(errors('BEGIN { @ = strstr("a", "b"); }'), [
      '1:13: strstr() is a bpftrace function bpfscope does not support yet (see docs/language.md)',
    ]);
    assert.deepEqual(errors('BEGIN { @ = default_str_length; }'), [
      '1:13: default_str_length is a bpftrace builtin bpfscope does not support yet (see docs/language.md)',
    ]);
  });
});
