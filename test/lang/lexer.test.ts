import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Diagnostic, LineIndex } from '../../src/lang/diagnostics.js';
import { Lexer, parseIntLiteral, type Token } from '../../src/lang/lexer.js';

function lex(text: string): { tokens: Token[]; diags: Diagnostic[] } {
  const diags: Diagnostic[] = [];
  const idx = new LineIndex(text);
  const lx = new Lexer(
    text,
    (d) => diags.push(d),
    (s, e) => idx.span(s, e),
  );
  const tokens: Token[] = [];
  for (;;) {
    const t = lx.next();
    tokens.push(t);
    if (t.kind === 'eof') return { tokens, diags };
  }
}

const brief = (t: Token) => `${t.kind}:${t.text}`;

describe('parseIntLiteral (bpftrace util::to_uint)', () => {
  const ok: [string, bigint][] = [
    ['0', 0n],
    ['42', 42n],
    ['1_000_000', 1000000n],
    ['0x10', 16n],
    ['0XfF', 255n],
    ['0x_ff_ff', 65535n],
    ['010', 8n],
    ['0777', 511n],
    ['1e6', 1000000n],
    ['9e18', 9000000000000000000n],
    ['18446744073709551615', 18446744073709551615n],
    ['5u', 5n],
    ['5ul', 5n],
    ['5ULL', 5n],
    ['5l', 5n],
    ['5ll', 5n],
    ['7ns', 7n],
    ['3us', 3000n],
    ['10ms', 10000000n],
    ['5s', 5000000000n],
    ['2m', 120000000000n],
    ['1h', 3600000000000n],
    ['1d', 86400000000000n],
    ['1e3ms', 1000000000n],
  ];
  for (const [text, value] of ok) {
    test(`${text} = ${value}`, () => assert.deepEqual(parseIntLiteral(text), { value }));
  }
  const bad: [string, string][] = [
    ['5e', 'invalid trailing bytes: 5e'],
    ['1e0', 'invalid trailing bytes: 1e0'],
    ['08', 'invalid trailing bytes: 08'],
    ['0x', 'invalid integer: 0x'],
    ['12e4', 'coefficient part of scientific literal must be 1-9: 12e4'],
    ['1_1e100', 'coefficient part of scientific literal must be 1-9: 1_1e100'],
    ['1e21', 'overflow error, maximum value is 18446744073709551615: 1e21'],
    ['18446744073709551616', 'overflow error, maximum value is 18446744073709551615: 18446744073709551616'],
    ['10000000000m', 'overflow error, maximum value is 18446744073709551615: 10000000000m'],
    ['4294967296u', 'overflow error, maximum value is 4294967295: 4294967296u'],
    ['9223372036854775808l', 'overflow error, maximum value is 9223372036854775807: 9223372036854775808l'],
  ];
  for (const [text, error] of bad) {
    test(`${text}: ${error}`, () => assert.deepEqual(parseIntLiteral(text), { error }));
  }
});

describe('Lexer tokens', () => {
  test('operators take the longest match', () => {
    const { tokens } = lex('a<<=b>>=c..d->e++--+=-=*=/=%=&=|=^=<<>><=>===!=&&||?:.,;');
    assert.deepEqual(
      tokens.map((t) => t.text),
      [
        'a',
        '<<=',
        'b',
        '>>=',
        'c',
        '..',
        'd',
        '->',
        'e',
        '++',
        '--',
        '+=',
        '-=',
        '*=',
        '/=',
        '%=',
        '&=',
        '|=',
        '^=',
        '<<',
        '>>',
        '<=',
        '>=',
        '==',
        '!=',
        '&&',
        '||',
        '?',
        ':',
        '.',
        ',',
        ';',
        '',
      ],
    );
  });

  test('sigils, parameters, numbers, identifiers', () => {
    const { tokens, diags } = lex('$x $1 $# @ @name @1 pid arg0 0..10 $t.0.1');
    assert.deepEqual(tokens.map(brief), [
      'var:$x',
      'positional:$1',
      'paramcount:$#',
      'map:@',
      'map:@name',
      'map:@',
      'int:1',
      'ident:pid',
      'ident:arg0',
      'int:0',
      'punct:..',
      'int:10',
      'var:$t',
      'punct:.',
      'int:0',
      'punct:.',
      'int:1',
      'eof:',
    ]);
    assert.deepEqual(diags, []);
    assert.equal(tokens[1]!.index, 1);
    assert.equal(tokens[4]!.name, 'name');
    assert.equal(tokens[3]!.name, '');
  });

  test('comments and whitespace are skipped; offsets are exact', () => {
    const { tokens } = lex(' a /* x\n y */ b // z\n\tc');
    assert.deepEqual(
      tokens.map((t) => [t.text, t.start, t.end]),
      [
        ['a', 1, 2],
        ['b', 14, 15],
        ['c', 22, 23],
        ['', 23, 23],
      ],
    );
  });

  test('string escapes decode to text and bytes', () => {
    const { tokens, diags } = lex('"a\\n\\t\\r\\"\\\\\\101\\0\\x41\\xff\\X7é"');
    const t = tokens[0]!;
    assert.equal(t.kind, 'string');
    assert.equal(t.str, 'a\n\t\r"\\A\0A\u00ff\u0007é');
    assert.deepEqual(Array.from(t.bytes!), [97, 10, 9, 13, 34, 92, 65, 0, 65, 255, 7, 0xc3, 0xa9]);
    assert.deepEqual(diags, []);
  });

  test('unterminated string stops at the end of the line and is fatal', () => {
    const { tokens, diags } = lex('"abc\r\nx');
    assert.equal(tokens[0]!.kind, 'string');
    assert.equal(tokens[0]!.fatal, true);
    assert.equal(tokens[1]!.text, 'x');
    assert.deepEqual(
      diags.map((d) => [d.message, d.pos?.offset, d.pos?.end]),
      [['syntax: unterminated string', 0, 4]],
    );
  });

  test('integer literal errors', () => {
    const { tokens, diags } = lex('1_ 12abc 0x1g 1e21');
    assert.deepEqual(tokens.map(brief), ['int:1_', 'int:12abc', 'int:0x1g', 'int:1e21', 'eof:']);
    assert.deepEqual(
      diags.map((d) => [d.message, d.pos?.offset, d.pos?.end]),
      [
        ['syntax: trailing underscore in integer literal', 1, 2],
        ["syntax: invalid integer suffix 'abc'", 5, 8],
        ["syntax: invalid integer suffix 'g'", 12, 13],
        ['syntax: overflow error, maximum value is 18446744073709551615: 1e21', 14, 18],
      ],
    );
    assert.deepEqual(
      tokens.slice(0, 4).map((t) => t.value),
      [1n, 12n, 1n, 0n],
    );
  });

  test('invalid characters become invalid tokens', () => {
    const { tokens } = lex('` \\ 😀 #');
    assert.deepEqual(tokens.map(brief), ['invalid:`', 'invalid:\\', 'invalid:😀', 'invalid:#', 'eof:']);
  });

  test('readAttachPoint follows bpftrace v0.26 rules (plus: comments end an attach point)', () => {
    const read = (text: string) => {
      const idx = new LineIndex(text);
      const lx = new Lexer(
        text,
        () => {},
        (s, e) => idx.span(s, e),
      );
      return lx.readAttachPoint().raw;
    };
    assert.equal(read('BEGIN{'), 'BEGIN');
    assert.equal(read('BEGIN/pid/{'), 'BEGIN');
    assert.equal(read('uprobe:/bin/bash:readline /pid/'), 'uprobe:/bin/bash:readline');
    assert.equal(read('uprobe:"/a b/c":f,x'), 'uprobe:"/a b/c":f');
    assert.equal(read('kprobe:f\n{'), 'kprobe:f');
    assert.equal(read('  t:a:b;'), 't:a:b');
    assert.equal(read('{'), '');
    assert.equal(read('BEGIN// c\n{'), 'BEGIN');
    assert.equal(read('BEGIN/* c */{'), 'BEGIN');
    assert.equal(read('kprobe:f// c\n{'), 'kprobe:f');
    assert.equal(read('uprobe:/usr/lib/*.so:f{'), 'uprobe:/usr/lib/*.so:f');
  });
});
