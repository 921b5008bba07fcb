import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  CompileError,
  type Diagnostic,
  formatDiagnostic,
  formatDiagnostics,
  LineIndex,
} from '../../src/lang/diagnostics.js';
import { parse } from '../../src/lang/parser.js';

const src = (text: string, name = 'stdin') => ({ name, text });

/** The formatted diagnostics `parse` throws for `text`, one '\n' after every line (as bpftrace prints them). */
function errorsOf(text: string): string {
  try {
    parse(src(text));
  } catch (e) {
    assert.ok(e instanceof CompileError, `not a CompileError: ${e}`);
    return `${formatDiagnostics(e.diagnostics, src(text))}\n`;
  }
  assert.fail(`parsed without error: ${text}`);
}

describe('formatDiagnostic', () => {
  const s = src('BEGIN { @x = ; }\n\tEND { @y = 1 }\nlast');
  const idx = new LineIndex(s.text);

  test('single-line span: FILE:LINE:COL-ENDCOL, source line, marker', () => {
    const d: Diagnostic = { severity: 'error', message: 'syntax: expected expression', pos: idx.span(13, 14) };
    assert.equal(
      formatDiagnostic(d, s),
      'stdin:1:14-15: ERROR: syntax: expected expression\nBEGIN { @x = ; }\n             ~',
    );
  });

  test('a line over 1,000 characters is shown 80 characters either side of the span, cut with ...', () => {
    const text = `BEGIN { ${'$a = 1; '.repeat(200)}@x = ; ${'$b = 2; '.repeat(200)}}`;
    const at = text.indexOf('@x = ;') + 5;
    const d: Diagnostic = {
      severity: 'error',
      message: 'syntax: expected expression',
      pos: { line: 1, col: at + 1, offset: at, end: at + 1 },
    };
    const shown = text.slice(at - 80, at + 1 + 80);
    assert.equal(shown.length, 161);
    assert.equal(
      formatDiagnostic(d, src(text)),
      `stdin:1:${at + 1}-${at + 2}: ERROR: syntax: expected expression\n...${shown}...\n${' '.repeat(83)}~`,
    );
  });

  test('tabs expand to 4 spaces in the line and the marker', () => {
    const at = s.text.indexOf('@y');
    const d: Diagnostic = { severity: 'error', message: 'm', pos: idx.span(at - 7, at + 2) };
    assert.equal(formatDiagnostic(d, s), 'stdin:2:1-10: ERROR: m\n    END { @y = 1 }\n~~~~~~~~~~~~');
  });

  test('multi-line span: FILE:LINE-ENDLINE and every line, no marker', () => {
    const d: Diagnostic = { severity: 'error', message: 'm', pos: idx.span(8, s.text.indexOf('END') + 3) };
    assert.equal(formatDiagnostic(d, s), 'stdin:1-2: ERROR: m\nBEGIN { @x = ; }\n\tEND { @y = 1 }');
  });

  test('empty span at the end of the input', () => {
    const t = src('BEGIN { printf("x") ');
    const d: Diagnostic = {
      severity: 'error',
      message: "syntax: expected '}'",
      pos: new LineIndex(t.text).span(20, 20),
    };
    assert.equal(
      formatDiagnostic(d, t),
      `stdin:1:21-21: ERROR: syntax: expected '}'\nBEGIN { printf("x") \n${' '.repeat(20)}`,
    );
  });

  test('a span running past the end of the input stops there', () => {
    const d: Diagnostic = { severity: 'warning', message: 'w', pos: { line: 3, col: 2, offset: 34, end: 400 } };
    assert.equal(formatDiagnostic(d, s), 'stdin:3:2-5: WARNING: w\nlast\n ~~~');
  });

  test('no position: just the label and message; hints on their own lines', () => {
    assert.equal(
      formatDiagnostic({ severity: 'error', message: 'No probes to attach' }, s),
      'ERROR: No probes to attach',
    );
    assert.equal(
      formatDiagnostic({ severity: 'error', message: 'bad', hint: 'try this\nHINT: or that' }, s),
      'ERROR: bad\nHINT: try this\nHINT: or that',
    );
    assert.equal(formatDiagnostic({ severity: 'warning', message: 'careful\n' }, s), 'WARNING: careful');
  });

  test('file name is the script path when given', () => {
    const t = src('BEGIN { 1 }', '/tmp/x.bt');
    const d: Diagnostic = { severity: 'error', message: 'm', pos: new LineIndex(t.text).span(8, 9) };
    assert.equal(formatDiagnostic(d, t).split('\n')[0], '/tmp/x.bt:1:9-10: ERROR: m');
  });

  test('color: message line red for errors, yellow for warnings (bpftrace LogColor)', () => {
    const d: Diagnostic = { severity: 'error', message: 'm', pos: idx.span(0, 5) };
    assert.equal(
      formatDiagnostic(d, s, { color: true }),
      '\x1b[31mstdin:1:1-6: ERROR: m\x1b[0m\nBEGIN { @x = ; }\n~~~~~',
    );
    assert.equal(
      formatDiagnostic({ severity: 'warning', message: 'w' }, s, { color: true }),
      '\x1b[33mWARNING: w\x1b[0m',
    );
  });

  test('formatDiagnostics prints errors first, then warnings', () => {
    const ds: Diagnostic[] = [
      { severity: 'warning', message: 'w1' },
      { severity: 'error', message: 'e1' },
      { severity: 'warning', message: 'w2' },
      { severity: 'error', message: 'e2' },
    ];
    assert.equal(formatDiagnostics(ds, s), 'ERROR: e1\nERROR: e2\nWARNING: w1\nWARNING: w2');
  });

  test('LineIndex maps offsets to 1-based line/col', () => {
    assert.deepEqual(idx.lineCol(0), { line: 1, col: 1 });
    assert.deepEqual(idx.lineCol(16), { line: 1, col: 17 });
    assert.deepEqual(idx.lineCol(17), { line: 2, col: 1 });
    assert.deepEqual(idx.lineCol(s.text.length), { line: 3, col: 5 });
    assert.equal(idx.lineText(2), '\tEND { @y = 1 }');
    assert.equal(new LineIndex('a\n').lineCount, 2);
  });
});

describe('parse errors (exact bpftrace-format text)', () => {
  const cases: [string, string, string][] = [
    [
      'missing expression',
      'BEGIN { @x = ; }',
      `stdin:1:14-15: ERROR: syntax: expected expression
BEGIN { @x = ; }
             ~
`,
    ],
    [
      'tabs before the offending token (bpftrace test string_with_tab)',
      'i:s:1\t\t\t$a',
      `stdin:1:9-11: ERROR: syntax: expected '{'
i:s:1            $a
                 ~~
`,
    ],
    [
      'junk after an attach point, at the end of input (bpftrace test kprobe_offset)',
      'k:asdf+123abc',
      `stdin:1:14-14: ERROR: syntax: expected '{'
k:asdf+123abc
             ${''}
`,
    ],
    [
      'unterminated string',
      'BEGIN { "abc }',
      `stdin:1:9-15: ERROR: syntax: unterminated string
BEGIN { "abc }
        ~~~~~~
`,
    ],
    [
      'unterminated comment',
      'BEGIN { /* abc }',
      `stdin:1:9-11: ERROR: syntax: unterminated comment
BEGIN { /* abc }
        ~~
`,
    ],
    [
      "missing ';'",
      'BEGIN { $x = 1 $y = 2 }',
      `stdin:1:16-18: ERROR: syntax: expected ';'
BEGIN { $x = 1 $y = 2 }
               ~~
`,
    ],
    [
      "missing '}' at the end of a line",
      'BEGIN { printf("x") ',
      `stdin:1:21-21: ERROR: syntax: expected '}'
BEGIN { printf("x") 
${' '.repeat(20)}
`,
    ],
    [
      "missing '}' after a final newline",
      'BEGIN {\n  @x = 1;\n',
      `stdin:3:1-1: ERROR: syntax: expected '}'


`,
    ],
    [
      'unexpected token in a subscript',
      'BEGIN { @x[1 = 2; }',
      `stdin:1:14-15: ERROR: syntax: expected ']'
BEGIN { @x[1 = 2; }
             ~
`,
    ],
    [
      'unexpected token in call arguments',
      'BEGIN { printf("a" "b"); }',
      `stdin:1:20-23: ERROR: syntax: expected ')'
BEGIN { printf("a" "b"); }
                   ~~~
`,
    ],
    [
      'assignment to a non-lvalue',
      'BEGIN { 1 = 2; }',
      `stdin:1:9-14: ERROR: syntax: invalid assignment target
BEGIN { 1 = 2; }
        ~~~~~
HINT: only maps (@m, @m[k]) and scratch variables ($x) can be assigned to
`,
    ],
    [
      'assignment to a tuple field (bpftrace test tuple_assignment_error)',
      'i:s:1 { $a = 1; $a.2 = 3; }',
      `stdin:1:17-25: ERROR: syntax: Tuples and records are immutable once created. Consider creating a new value and assigning it instead.
i:s:1 { $a = 1; $a.2 = 3; }
                ~~~~~~~~
`,
    ],
    [
      'if without parentheses around a comparison',
      'BEGIN { if $x > 0 { } }',
      `stdin:1:15-16: ERROR: syntax: expected '{'
BEGIN { if $x > 0 { } }
              ~
HINT: put the whole condition in parentheses: if (...) { ... }
`,
    ],
    ['empty program', '', 'ERROR: No probes to attach\n'],
    ['only comments', '// nothing here\n/* nor here */\n', 'ERROR: No probes to attach\n'],
    ['only a config block', 'config = { max_map_keys = 8 }', 'ERROR: No probes to attach\n'],
    [
      'several errors are all reported, in source order',
      'BEGIN { $x = ; $y = 1 +; }\nEND { @z = 08; }',
      `stdin:1:14-15: ERROR: syntax: expected expression
BEGIN { $x = ; $y = 1 +; }
             ~
stdin:1:24-25: ERROR: syntax: expected expression
BEGIN { $x = ; $y = 1 +; }
                       ~
stdin:2:12-14: ERROR: syntax: invalid trailing bytes: 08
END { @z = 08; }
           ~~
`,
    ],
    [
      'predicate not closed',
      'BEGIN /pid == 1 { }',
      `stdin:1:17-18: ERROR: syntax: expected '/' to close predicate
BEGIN /pid == 1 { }
                ~
`,
    ],
    [
      'no attach point',
      '{ }',
      `stdin:1:1-2: ERROR: syntax: expected attach point
{ }
~
`,
    ],
    [
      'config after a probe',
      'BEGIN { } config = { a = 1 }',
      `stdin:1:11-17: ERROR: syntax: config must appear before probes and functions
BEGIN { } config = { a = 1 }
          ~~~~~~
`,
    ],
    [
      '#include after a probe',
      'BEGIN { @x = 1; }\n#include <a.h>',
      `stdin:2:1-15: ERROR: syntax: C definitions must appear before probes and functions
#include <a.h>
~~~~~~~~~~~~~~
`,
    ],
    [
      'a C typedef (not supported yet)',
      'typedef struct { int a; } foo_t; BEGIN { }',
      `stdin:1:1-8: ERROR: syntax: C typedefs are not supported yet (struct, union and enum definitions are)
typedef struct { int a; } foo_t; BEGIN { }
~~~~~~~
`,
    ],
    [
      'increment of a non-lvalue',
      'BEGIN { ++1; $x = 2--; }',
      `stdin:1:11-12: ERROR: syntax: increment/decrement requires a variable or map
BEGIN { ++1; $x = 2--; }
          ~
stdin:1:20-22: ERROR: syntax: increment/decrement requires a variable or map
BEGIN { ++1; $x = 2--; }
                   ~~
`,
    ],
    [
      'address-of a non-lvalue',
      'BEGIN { $x = &1; }',
      `stdin:1:15-16: ERROR: syntax: address-of operator (&) can only be used on a map or variable
BEGIN { $x = &1; }
              ~
`,
    ],
    [
      'bad escapes',
      'BEGIN { printf("\\q \\777 \\xg"); }',
      `stdin:1:17-19: ERROR: syntax: invalid escape character '\\q'
BEGIN { printf("\\q \\777 \\xg"); }
                ~~
stdin:1:20-24: ERROR: syntax: octal escape sequence out of range '\\777'
BEGIN { printf("\\q \\777 \\xg"); }
                   ~~~~
stdin:1:25-27: ERROR: syntax: invalid hex escape sequence
BEGIN { printf("\\q \\777 \\xg"); }
                        ~~
`,
    ],
    [
      'for loop errors',
      'BEGIN { for (@x : @m) { } for ($x : @m[1]) { } }',
      `stdin:1:14-16: ERROR: syntax: expected variable in for loop
BEGIN { for (@x : @m) { } for ($x : @m[1]) { } }
             ~~
stdin:1:37-42: ERROR: syntax: expected map or range in for loop
BEGIN { for (@x : @m) { } for ($x : @m[1]) { } }
                                    ~~~~~
`,
    ],
    [
      'bad variables and parameters',
      'BEGIN { $ = 1; $0; }',
      `stdin:1:9-10: ERROR: syntax: expected identifier after '$'
BEGIN { $ = 1; $0; }
        ~
stdin:1:16-18: ERROR: syntax: param $0 is out of integer range [1, 9223372036854775807]
BEGIN { $ = 1; $0; }
               ~~
`,
    ],
    [
      'else without if',
      'BEGIN { else { } }',
      `stdin:1:9-13: ERROR: syntax: 'else' without a matching 'if'
BEGIN { else { } }
        ~~~~
`,
    ],
    [
      'error on a later line of a script file',
      'BEGIN {\n\t@x = count();\n\t@y = @x + / 2;\n}',
      `stdin:3:12-13: ERROR: syntax: expected expression
    @y = @x + / 2;
              ~
`,
    ],
  ];
  for (const [name, text, expected] of cases) {
    test(name, () => {
      assert.equal(errorsOf(text), expected);
    });
  }

  test('the CompileError carries the source and every diagnostic', () => {
    const s = src('BEGIN { $x = ; }\nEND { $y = ; }');
    assert.throws(
      () => parse(s),
      (e: unknown) =>
        e instanceof CompileError &&
        e.source === s &&
        e.diagnostics.length === 2 &&
        e.message === 'syntax: expected expression\nsyntax: expected expression',
    );
  });
});
