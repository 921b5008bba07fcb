import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compile } from '../../src/compiler.js';
import { CompileError, formatDiagnostics } from '../../src/lang/diagnostics.js';
import { FUNCTION_NAMES } from '../../src/lang/passes/semantic.js';
import { closestNames } from '../../src/lang/suggest.js';

/** The formatted diagnostics (as the CLI prints them) of compiling `text`, which must fail. */
function diagnostics(text: string): string {
  const src = { name: 'stdin', text };
  try {
    compile(src, {});
  } catch (e) {
    assert.ok(e instanceof CompileError, `expected CompileError, got ${e}`);
    return formatDiagnostics(e.diagnostics, src);
  }
  assert.fail(`compiled without error: ${text}`);
}

// Issue 19: "a misspelled struct field or function gets no 'Did you mean' (probe names do)". Each expected text
// is written out; the hint line is what was missing before.
describe('Did you mean: misspelled names get the closest known ones', () => {
  it('a function', () => {
    assert.equal(
      diagnostics('BEGIN { printff("x"); }'),
      [
        "stdin:1:9-21: ERROR: Unknown function: 'printff'",
        'BEGIN { printff("x"); }',
        '        ~~~~~~~~~~~~',
        'HINT: Did you mean printf?',
      ].join('\n'),
    );
  });

  it('a builtin', () => {
    assert.equal(
      diagnostics('BEGIN { print(nsec); }'),
      [
        "stdin:1:15-19: ERROR: Unknown identifier: 'nsec'",
        'BEGIN { print(nsec); }',
        '              ~~~~',
        'HINT: Did you mean nsecs?',
      ].join('\n'),
    );
  });

  it("a field of a kernel struct (BTF) and of offsetof's path", () => {
    assert.match(
      diagnostics('BEGIN { print(((struct task_struct *)curtask)->pidd); }'),
      /ERROR: Can't find field 'pidd' in struct task_struct\n.*\n.*\nHINT: Did you mean pid\?$/,
    );
    assert.match(
      diagnostics('BEGIN { print(offsetof(struct task_struct, pidd)); }'),
      /ERROR: 'struct task_struct' has no field named 'pidd'\n.*\n.*\nHINT: Did you mean pid\?$/,
    );
  });

  it('a field of a struct the program declares, and of a record', () => {
    assert.match(
      diagnostics('struct Foo { int alpha; int beta; } BEGIN { $p = (struct Foo *)0; print($p->alph); }'),
      /ERROR: Can't find field 'alph' in struct Foo\n.*\n.*\nHINT: Did you mean alpha\?$/,
    );
    assert.match(
      diagnostics('BEGIN { $r = (a=1, bb=2); print($r.b); }'),
      /ERROR: Record does not contain a field named 'b'\n.*\n.*\nHINT: Did you mean one of: a, bb\?$/,
    );
  });

  it('a map and a variable', () => {
    assert.match(
      diagnostics('BEGIN { @abc = 1; print(@abd); }'),
      /Undefined map: @abd\n.*\n.*\nHINT: Did you mean @abc\?$/,
    );
    assert.match(
      diagnostics('BEGIN { $abc = 1; print($abd); }'),
      /Undefined or undeclared variable: \$abd\n.*\n.*\nHINT: Did you mean \$abc\?$/,
    );
  });

  it('nothing is suggested for a name far from every known one', () => {
    assert.doesNotMatch(diagnostics('BEGIN { qwertyuiop(); }'), /HINT/);
    assert.deepEqual(closestNames('zzzzzzzz', ['printf', 'print']), []);
  });

  it('every name in FUNCTION_NAMES is a function the analyser knows', () => {
    for (const name of FUNCTION_NAMES) {
      let message = '';
      try {
        compile({ name: 'stdin', text: `BEGIN { ${name}(); }` }, {});
      } catch (e) {
        if (e instanceof CompileError) message = e.diagnostics.map((d) => d.message).join('; ');
      }
      assert.doesNotMatch(message, /Unknown function/, name);
    }
  });
});
