/**
 * Tuples laid out as current bpftrace lays them out (`Struct::CreateRecord`, `SizedType::GetInTupleAlignment`):
 * elements keep their sizes (integer literals the smallest signed type), each at its natural alignment, the size
 * rounded to the largest one. The sizes are those of bpftrace's runtime tests `tuples` "tuple struct sizing 2/3",
 * "complex tuple 4", "struct in tuple sizing" and "array in tuple sizing" (revision e1b7c393); the values are read
 * back from the kernel through every consumer of the layout (variables, map values and keys, conversions between
 * two layouts, tuple fields, text and JSON output).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runTool } from '../helpers/cli.js';

async function run(prog: string, json = false): Promise<string> {
  const r = await runTool('bpfscope', [...(json ? ['-q', '-f', 'json'] : []), '-e', prog]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout;
}

describe('tuple layout', () => {
  it('sizes: small members stay small, natural alignment, structs and arrays inside', async () => {
    const out = await run(
      'struct Foo { int m; int n; } struct A { int x[4]; } struct P { char c; long l; } BEGIN { ' +
        'printf("%d %d %d %d %d %d %d %d\\n", sizeof(((int8)1, (int16)1, (int32)1)), sizeof(((int32)1, (int16)1, (int8)1)), ' +
        'sizeof(((int8)-100, (int8)100, "abcdef", 3, (int32)1, (int64)-10, (int8)10, (int16)-555, "abc")), ' +
        'sizeof((1, "a")), sizeof(((int64)1, (int8)2)), sizeof(((int32)1, *(struct Foo *)0)), ' +
        'sizeof(((int32)1, (*(struct A *)0).x)), sizeof(((int8)1, *(struct P *)0))); exit(); }',
    );
    assert.equal(out, '8 8 32 3 16 12 20 24\n\n\n');
  });

  it('values through variables, map values, map keys, fields and a wider layout', async () => {
    const out = await run(
      'BEGIN { $t = (1, (int16)-2, "ab", ((int8)3, (uint32)4000000000)); @a = $t; @b[$t] = 1; @c[2, $t] = $t.3; ' +
        'printf("%d %d %s %d %u\\n", $t.0, $t.1, $t.2, $t.3.0, $t.3.1); ' +
        '$u = (1, 2); print($u); $u = (300, -5); print($u); @d = (1, "x"); @d = (70000, "yyy"); ' +
        '@e[(int8)-1, (int16)2] = ((int8)-3, 1000000); @e[(int8)4, (int16)-5] = ((int8)6, -7); exit(); }',
    );
    assert.equal(
      out,
      '1 -2 ab 3 4000000000\n(1, 2)\n(300, -5)\n\n\n' +
        '@a: (1, -2, ab, (3, 4000000000))\n' +
        '@b[1, -2, ab, (3, 4000000000)]: 1\n' +
        '@c[2, (1, -2, ab, (3, 4000000000))]: (3, 4000000000)\n' +
        '@d: (70000, yyy)\n' +
        '@e[-1, 2]: (-3, 1000000)\n@e[4, -5]: (6, -7)\n',
    );
  });

  it('JSON output of tuples of narrow members', async () => {
    const out = await run(
      'BEGIN { $t = ((int8)-1, (uint16)65535, "s", ((int32)-70000, (int8)1)); print($t); @m[(int8)1, "k"] = $t; exit(); }',
      true,
    );
    assert.equal(
      out,
      '{"type": "value", "data": [-1,65535,"s",[-70000,1]]}\n' +
        '{"type": "map", "data": {"@m": {"1,k": [-1,65535,"s",[-70000,1]]}}}\n',
    );
  });
});
