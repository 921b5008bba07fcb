/**
 * Language items from bpftrace's runtime suite (revision e1b7c393), checked on the live kernel with literal
 * expectations worked out by hand from bpftrace's rules:
 * - integer literals and variables typed as bpftrace v0.26 types them (src/lang/bt-int-types.ts): `sizeof`, the sign
 *   of arithmetic with a literal (builtin "sizeof", call "tseries_min");
 * - `let` declarations of struct, struct-array and pointer types (complex_types "struct-array with declared
 *   variables");
 * - floating-point members of the program's C definitions, printed `null` in text and JSON (json-output "none type").
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runTool } from '../helpers/cli.js';

async function run(prog: string, json = false): Promise<string> {
  const r = await runTool('bpfscope', [...(json ? ['-q', '-f', 'json'] : []), '-e', prog]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout;
}

describe('integer types as bpftrace gives them', () => {
  it("sizeof of a variable is the size of bpftrace's type: literals smallest signed, assignments promoted", async () => {
    // runtime test builtin "sizeof"
    assert.equal(
      await run(
        'struct Foo { int x; char c; } BEGIN { $x = 1; printf("%d %d %d %d %d\\n", sizeof(struct Foo), ' +
          'sizeof((*(struct Foo*)0).x), sizeof((*(struct Foo*)0).c), sizeof(1 == 1), sizeof($x)); exit(); }',
      ),
      '8 4 1 1 1\n\n\n',
    );
    // $a 1: int8; $b 300: int16; $c -1: int8; $d 1 then 1000: int16; $e uint32 then 1 (takes the sign): uint32;
    // $f 1 then `+= 1` (a 64-bit sum): int64; $g declared int16; $h int8 then uint8: int16 holds both;
    // $i 5000000000: int64; $j 1 + 1 folded to 2: int8; sizeof(1): 1; sizeof(-200): int16
    assert.equal(
      await run(
        'BEGIN { $a = 1; $b = 300; $c = -1; $d = 1; $d = 1000; $e = (uint32)5; $e = 1; $f = 1; $f += 1; ' +
          'let $g: int16 = 3; $h = (int8)1; $h = (uint8)2; $i = 5000000000; $j = 1 + 1; ' +
          'printf("%d %d %d %d %d %d %d %d %d %d %d %d\\n", sizeof($a), sizeof($b), sizeof($c), sizeof($d), ' +
          'sizeof($e), sizeof($f), sizeof($g), sizeof($h), sizeof($i), sizeof($j), sizeof(1), sizeof(-200)); exit(); }',
      ),
      '1 2 1 2 4 8 2 2 8 1 1 2\n\n\n',
    );
  });

  it('the variables still hold 64-bit values: narrow types are not truncations', async () => {
    assert.equal(
      await run('BEGIN { $x = 1; $x = $x + 1000000; $y = 100; $y *= 1000000000; print($x); print($y); exit(); }'),
      '1000001\n100000000000\n\n\n',
    );
  });

  it('a non-negative literal takes an unsigned operand sign; `-` stays signed', async () => {
    assert.equal(
      await run(
        'BEGIN { $u = (uint64)18446744073709551615; $x = 10; print($u / 1); print($u * 1); print($u | 0); ' +
          'print($u / $x); print($u - 0); exit(); }',
      ),
      '18446744073709551615\n18446744073709551615\n18446744073709551615\n1844674407370955161\n-1\n\n\n',
    );
  });

  it('a tseries of `$i % 10` with $i unsigned has an unsigned axis (runtime test call "tseries_min")', async () => {
    const out = await run(
      'BEGIN { $i = (uint64)0; while ($i < 3) { @a = tseries($i % 10, 1s, 5, "min"); $i++; } exit(); }',
    );
    // the value axis starts at 0 for unsigned values (a signed series of 0 would span -1..1)
    assert.match(out, /^@a:\n {19}0 {51}1\n/m);
  });
});

describe('let declarations of C types', () => {
  it('a struct, an array of structs and a pointer, zero until assigned', async () => {
    assert.equal(
      await run(
        'struct Foo { int m; int n; } BEGIN { let $s: struct Foo; print($s); $v = (uint64)0x0000000300000002; ' +
          '$s = *(struct Foo *)(&$v); print($s); let $a: struct Foo[2]; print(sizeof($a)); print($a); ' +
          'let $p: struct Foo *; $p = (struct Foo *)&$v; print($p->n); exit(); }',
      ),
      '{ .m = 0, .n = 0 }\n{ .m = 2, .n = 3 }\n16\n[{ .m = 0, .n = 0 },{ .m = 0, .n = 0 }]\n3\n\n\n',
    );
  });

  it('an array of structs assigned from a struct member (complex_types "struct-array with declared variables")', async () => {
    assert.equal(
      await run(
        'struct P { int a; int b; } struct C { struct P w[2]; } BEGIN { ' +
          '$t = ((int32)1, (int32)2, (int32)3, (int32)4); let $w: struct P[2]; $w = (*(struct C *)&$t).w; ' +
          'printf("%d %d %d %d\\n", $w[0].a, $w[0].b, $w[1].a, $w[1].b); exit(); }',
      ),
      '1 2 3 4\n\n\n',
    );
  });

  it('an unknown type is named', async () => {
    const r = await runTool('bpfscope', ['-e', 'BEGIN { let $s: struct NoSuchThing_zz; exit(); }']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /ERROR: Declaring a variable of type 'struct NoSuchThing_zz' is not supported yet/);
  });
});

describe('floating-point members of C definitions', () => {
  const prog =
    'union N { int i; float f; }; struct Foo { int m; union N n; double d; } BEGIN { ' +
    '$v = ((int64)0x0000000500000002, (int64)0); $f = *(struct Foo *)(&$v); print($f); print(sizeof(struct Foo)); exit(); }';

  it('print as null in text output', async () => {
    assert.equal(await run(prog), '{ .m = 2, .n = { .i = 5, .f = null }, .d = null }\n16\n\n\n');
  });

  it('print as null in JSON output (runtime test json-output "none type")', async () => {
    assert.equal(
      await run(prog, true),
      '{"type": "value", "data": {"m": 2, "n": {"i": 5, "f": null}, "d": null}}\n{"type": "value", "data": 16}\n',
    );
  });

  it('reading one is a positioned error', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      'struct Foo { int m; float f; } BEGIN { $v = (uint64)0; print(((struct Foo *)&$v)->f); exit(); }',
    ]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^stdin:1:\d+-\d+: ERROR: Field 'f' of struct Foo has a type bpfscope cannot read yet/m);
  });
});
