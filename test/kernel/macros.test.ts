/**
 * Macros (lang/passes/macros.ts) and block expressions end to end, against the outputs bpftrace's runtime tests
 * (tests/runtime/macro) expect.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runTool } from '../helpers/cli.js';

async function out(prog: string): Promise<string> {
  const r = await runTool('bpfscope', ['-e', prog]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout;
}

describe('macros', () => {
  it('$var parameters are passed by reference; @map parameters name the caller map', async () => {
    assert.equal(
      await out('macro inc($x) { $x += 1; $x } BEGIN { $a = 1; $b = inc($a); print(($a, $b)); exit(); }'),
      '(2, 2)\n\n\n',
    );
    assert.equal(await out('macro set(@x) { @x[1] = 2; } BEGIN { @a[1] = 1; set(@a); exit(); }'), '\n\n@a[1]: 2\n');
  });

  it('name parameters take any expression; macros call macros in any order; locals do not collide', async () => {
    assert.equal(
      await out(
        'macro add2(x) { x + add1(x) } macro add3(x) { x + add2(x) } macro add1(x) { x + 1 } BEGIN { print(add3(1)); exit(); }',
      ),
      '4\n\n\n',
    );
    assert.equal(
      await out('macro inc(x) { $y = x + 1; $y } BEGIN { $y = 2; $z = inc(5); print(($y, $z)); exit(); }'),
      '(2, 6)\n\n\n',
    );
    assert.equal(await out('macro side(x) { x; x; x; } BEGIN { side({ printf("hi") }); exit(); }'), 'hihihi\n\n');
    assert.equal(await out('macro one() { $x = 1; $x } BEGIN { $a = one; print($a); exit(); }'), '1\n\n\n');
  });

  it('recursion and a variable parameter given an expression are errors', async () => {
    const rec = await runTool('bpfscope', ['-e', 'macro a(x) { b(x) } macro b(x) { a(x) } BEGIN { print(a(1)); }']);
    assert.equal(rec.code, 1);
    assert.match(rec.stderr, /Recursive macro call detected: a -> b -> a/);
    const v = await runTool('bpfscope', ['-e', 'macro inc($x) { $x += 1; } BEGIN { inc(1 + 2); }']);
    assert.equal(v.code, 1);
    assert.match(v.stderr, /Macro inc\(\) expects a variable for \$x/);
  });
});

describe('block expressions and let without a value', () => {
  it('a block used as a value runs its statements and yields its last expression', async () => {
    assert.equal(
      await out(
        'BEGIN { let $n; let $b; $a = { $b = 1; $b + 2 }; $n = $a * 2; @m = { $b += 1; $b * 10 }; printf("%d %d\\n", $a, $n); exit(); }',
      ),
      '3 6\n\n\n@m: 20\n',
    );
  });
});

describe('errors in macro code', () => {
  it('point at the code and at each call it was expanded from (tests/runtime/call "errorf_macro_expansion")', async () => {
    const r = await runTool('bpfscope', ['-e', 'macro bad() { errorf("Something bad"); } begin { bad(); }']);
    assert.match(
      r.stderr,
      /^stdin:1:15-38: ERROR: Something bad\n.*\n +~+\nstdin:1:50-55: ERROR: expanded from\nmacro bad\(\).*\n +~{5}$/m,
    );
    const c = await runTool('bpfscope', [
      '-e',
      'macro bad(x) { x + "a" } macro outer() { bad(1) } begin { print(outer()); }',
    ]);
    assert.equal(c.code, 1);
    assert.match(
      c.stderr,
      /stdin:1:16-23: ERROR: Type mismatch[^\n]*\n.*\n.*\nstdin:1:42-48: ERROR: expanded from\n.*\n.*\nstdin:1:65-72: ERROR: expanded from/,
    );
  });
});

describe('types as macro arguments (tests/runtime/macro "it accepts typeof expressions", bpftrace v0.26)', () => {
  it('typeof(TYPE) stands where the parameter names a type, with its stars and array count added', async () => {
    assert.equal(
      await out(
        'struct Foo { char m; } macro sof(a, b) { sizeof(a[2]) + sizeof(b*) + sizeof(b) } BEGIN { print(sof(typeof(uint64*), typeof(struct Foo))); exit(); }',
      ),
      '25\n\n\n',
    );
    assert.equal(
      await out(
        'macro m(t) { sizeof(t) + 2 } macro n(z) { print(m(typeof(z))); } BEGIN { n(typeof(uint64*)); exit(); }',
      ),
      '10\n\n\n',
    );
    assert.equal(await out('macro cst(a) { (a)-1 } BEGIN { print(cst(typeof(uint8))); exit(); }'), '255\n\n\n');
  });

  it("typeof(x) of an expression parameter types the caller's expression; the macro's own let is renamed", async () => {
    assert.equal(
      await out('macro add(x) { let $y: typeof(x); if (true) { $y = 1 } x + $y } BEGIN { print(add(1)); exit(); }'),
      '2\n\n\n',
    );
    assert.equal(
      await out(
        'macro w(x) { let $y: typeof(x) = 7; $y } BEGIN { $y = (uint16)3; $a = "abc"; print((w($y), sizeof(typeof($a)), $y)); exit(); }',
      ),
      '(7, 4, 3)\n\n\n',
    );
  });

  it('typeof() as a value outside a macro stays a positioned error', async () => {
    const r = await runTool('bpfscope', ['-e', 'BEGIN { print(typeof(uint8*)); }']);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /^stdin:1:15-29: ERROR: typeof\(\) can only be used where a type is written: a cast, a let declaration, sizeof, offsetof$/m,
    );
  });
});
