/**
 * The pure AST passes added for current bpftrace semantics: block scoping of variables (renaming and errors),
 * unreachable statements, positional parameter substitution, and if expressions in the parser.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { VarExpr } from '../../src/lang/ast.js';
import { nodesOfKind } from '../../src/lang/astwalk.js';
import { CompileError } from '../../src/lang/diagnostics.js';
import { parse } from '../../src/lang/parser.js';
import { substitutePositionals } from '../../src/lang/passes/positional.js';
import { unreachableWarnings } from '../../src/lang/passes/reachability.js';
import { scopeVariables, userVarName } from '../../src/lang/passes/varscope.js';

const src = (text: string) => parse({ name: 'stdin', text });

function scoped(text: string): string[] {
  const ast = src(text);
  scopeVariables(ast);
  return nodesOfKind<VarExpr>(ast, 'VarExpr').map((v) => v.name);
}

function scopeErrors(text: string): string[] {
  try {
    scopeVariables(src(text));
    return [];
  } catch (e) {
    if (!(e instanceof CompileError)) throw e;
    return e.diagnostics.map((d) => d.message);
  }
}

describe('scopeVariables', () => {
  it('gives each declaration of a name its own name, and every use the innermost declaration', () => {
    assert.deepEqual(scoped('BEGIN { if (1) { $x = 1; print($x); } let $x; print($x); }'), ['x', 'x', 'x#1', 'x#1']);
    assert.deepEqual(scoped('BEGIN { $x = 1; if (1) { $x = 2; } print($x); }'), ['x', 'x', 'x']);
    assert.deepEqual(scoped('BEGIN { @m[1] = 1; for ($k : @m) { } for ($k : @m) { } }'), ['k', 'k#1']);
    assert.deepEqual(scoped('BEGIN { $a = { $b = 1; $b }; $b = 2; }'), ['a', 'b', 'b', 'b#1']);
    assert.equal(userVarName('x#2'), 'x');
    assert.equal(userVarName('y#macro_3'), 'y');
  });

  it('reports reads outside the declaring block, shadowing lets and loop variables', () => {
    assert.deepEqual(scopeErrors('BEGIN { if (1) { $x = 1; } print($x); }'), ['Undefined or undeclared variable: $x']);
    assert.deepEqual(scopeErrors('BEGIN { $x += 1; }'), ['Undefined or undeclared variable: $x']);
    assert.deepEqual(scopeErrors('BEGIN { $x = 1; if (1) { let $x; } }'), [
      'Variable $x was already declared. Variable shadowing is not allowed.',
    ]);
    assert.deepEqual(scopeErrors('BEGIN { $i = 0; for ($i : 0..3) { } }'), [
      'Loop declaration shadows existing variable: $i',
    ]);
    assert.deepEqual(scopeErrors('BEGIN { let $x = $x; }'), ['Undefined or undeclared variable: $x']);
  });
});

describe('unreachableWarnings', () => {
  const warn = (text: string) => unreachableWarnings(src(text)).map((d) => `${d.pos?.offset}`);
  it('marks the first statement after exit(), return, break, continue or an if/else that always leaves', () => {
    const t = 'BEGIN { exit(); @a = 1; @b = 2; }';
    assert.deepEqual(warn(t), [`${t.indexOf('@a')}`]);
    const u = 'BEGIN { if (1) { return; } else { exit(); } @a = 1; }';
    assert.deepEqual(warn(u), [`${u.indexOf('@a')}`]);
    const w = 'BEGIN { while (1) { break; @a = 1; } @b = 1; }';
    assert.deepEqual(warn(w), [`${w.indexOf('@a')}`]);
    assert.deepEqual(warn('BEGIN { if (1) { exit(); } @a = 1; }'), []);
  });
});

describe('substitutePositionals', () => {
  it('replaces $N in attach points and str($N) by the parameter text', () => {
    const ast = src('i:ms:$1 { printf("%s %s %s\\n", str($1), str($2 + 2), str($3)); }');
    substitutePositionals(ast, ['5', 'hello']);
    const ap = ast.probes[0]!.attachPoints[0]!;
    assert.equal(ap.raw, 'i:ms:5');
    assert.deepEqual([ap.provider, ...ap.parts], ['i', 'ms', '5']);
    const lits = nodesOfKind<{ kind: 'StrLit'; value: string }>(ast, 'StrLit').map((s) => s.value);
    assert.deepEqual(lits, ['%s %s %s\n', '5', 'llo', '']);
  });

  it('leaves str($N + k) of a numeric parameter to run time', () => {
    const ast = src('BEGIN { printf("%s", str($1 + 1)); }');
    substitutePositionals(ast, ['4096']);
    assert.equal(nodesOfKind(ast, 'StrLit').length, 1);
  });
});

describe('if expressions (parser)', () => {
  it('parse as ternaries of block expressions, also as the trailing value of a block', () => {
    const a = src('BEGIN { $a = if ($b) { 1 } else if ($c) { 2 } else { 3 }; }');
    const t = nodesOfKind<{ kind: 'TernaryExpr'; then: { kind: string } }>(a, 'TernaryExpr');
    assert.equal(t.length, 2);
    assert.equal(t[0]!.then.kind, 'BlockExpr');
    const b = src('BEGIN { $a = { if ($b) { 1 } else { 2 } }; }');
    assert.equal(nodesOfKind(b, 'TernaryExpr').length, 1);
  });

  it('require an else branch when used as a value', () => {
    assert.throws(() => src('BEGIN { $a = if ($b) { 1 }; }'), /'if' used as a value needs an 'else' branch/);
  });
});
