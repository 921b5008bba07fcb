/**
 * Property tests: whatever the input, `parse` returns a Program or throws a CompileError with well-formed
 * diagnostics — never another exception, never a stack overflow. Seeded so that a failure reproduces; fast-check
 * prints the seed and the shrunk counterexample.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type * as A from '../../src/lang/ast.js';
import { CompileError, formatDiagnostics, LineIndex } from '../../src/lang/diagnostics.js';
import { parse } from '../../src/lang/parser.js';
import { printAst } from '../../src/lang/printer.js';

const SEED = 0x62706673; // "bpfs"
const RUNS = 2500;

/** Runs `parse` and checks the outcome; returns the program when parsing succeeded. */
function checkParse(text: string): A.Program | null {
  const source = { name: 'stdin', text };
  let program: A.Program;
  try {
    program = parse(source);
  } catch (e) {
    if (!(e instanceof CompileError)) throw new Error(`parse threw ${(e as Error)?.name}: ${(e as Error)?.message}`);
    assert.ok(e.diagnostics.length > 0, 'CompileError without diagnostics');
    for (const d of e.diagnostics) {
      assert.equal(typeof d.message, 'string');
      assert.ok(!d.message.startsWith('internal parser error'), d.message);
      if (d.pos) {
        assert.ok(0 <= d.pos.offset && d.pos.offset <= d.pos.end && d.pos.end <= text.length, 'span out of range');
      }
    }
    formatDiagnostics(e.diagnostics, source);
    return null;
  }
  checkSpans(program, text);
  printAst(program);
  return program;
}

/** Every span is inside the text, its line/col match its offset, and children lie inside their parents. */
function checkSpans(program: A.Program, text: string): void {
  const idx = new LineIndex(text);
  const visit = (node: { pos: A.Span }, parent: A.Span | null): void => {
    const { pos } = node;
    assert.ok(0 <= pos.offset && pos.offset <= pos.end && pos.end <= text.length, 'span out of range');
    assert.deepEqual({ line: pos.line, col: pos.col }, idx.lineCol(pos.offset));
    if (parent) assert.ok(parent.offset <= pos.offset && pos.end <= parent.end, 'child outside its parent');
    for (const [k, v] of Object.entries(node)) {
      if (k === 'pos' || k === 'type' || v === null || typeof v !== 'object') continue;
      const kids = Array.isArray(v) ? v : [v];
      for (const c of kids) if (c && typeof c === 'object' && 'kind' in c) visit(c, pos);
    }
  };
  for (const probe of program.probes) {
    for (const ap of probe.attachPoints) visit(ap, probe.pos);
    if (probe.predicate) visit(probe.predicate, program.pos);
    visit(probe.body, program.pos);
  }
}

/** Valid programs to mutate. */
const CORPUS = [
  'BEGIN { printf("hello world\\n"); }',
  'tracepoint:syscalls:sys_enter_openat { printf("%s %s\\n", comm, str(args.filename)); }',
  't:raw_syscalls:sys_enter { @[comm] = count(); } interval:s:5 { exit(); }',
  'kprobe:vfs_read { @start[tid] = nsecs; } kretprobe:vfs_read /@start[tid]/ { @ns[comm] = hist(nsecs - @start[tid]); delete(@start, tid); }',
  'profile:hz:99 /pid == 1 && comm != "bash"/ { @[kstack(perf, 10), ustack] = count(); }',
  'uprobe:"/path with space":fn, usdt:/bin/x:prov:probe { $x = (struct task_struct *)curtask; @y = $x->pid; }',
  'BEGIN { $x = $a ? 1 : $b ?: 2; $t = (1, "two", (3,)); print($t.2.0); @m[1, 2] += 0x10 << 2; }',
  'BEGIN { if ($x > 0) { @a++ } else if (!$x) { --@b } else { $c = -$d * 2 % 3; } }',
  'BEGIN { for ($i : 0..10) { if ($i == 5) { break; } continue; } for ($kv : @m) { print($kv.0); } }',
  'BEGIN { while ($i < 10) { $i++; } unroll (4) { @u = sizeof(uint64) + offsetof(struct s, f); } return; }',
  '#include <linux/sched.h>\nconfig = { max_map_keys = 1_024; stack_mode = perf }\nBEGIN { let $a: uint8[4] = (uint8[4])1e3; }',
  '#!/usr/bin/env bpftrace\n// comment\ntracepoint:block:block_rq_issue /args.bytes / 2 > 4096/ { @ = lhist(args.bytes, 0, 1000, 10ms); }',
  'BEGIN { $p = &$x; $q = *$p; @m = &@n; $b = { let $c = 1; $c + 1 }; _ = has_key(@m, 1); printf("\\x41\\101\\t"); }',
  'struct S { int x; }\nBEGIN { $s = (struct S *)arg0; print($s->x); $v = $1 + $#; }',
];

/** Fragments that reach many grammar corners when inserted or generated. */
const FRAGMENTS = [
  'BEGIN',
  'END',
  'kprobe:f',
  'uprobe:/bin/x:f',
  'uprobe:"a b":f',
  'if',
  'else',
  'while',
  'for',
  'unroll',
  'let',
  'return',
  'break',
  'config',
  'sizeof',
  'offsetof',
  'struct',
  'true',
  '$x',
  '$1',
  '$#',
  '$',
  '@',
  '@m',
  '@m[',
  'pid',
  'count()',
  '0x',
  '1e',
  '1_',
  '08',
  '10ms',
  '"',
  '"a\\',
  '\\x',
  '\\777',
  '/*',
  '*/',
  '//',
  '#include <x>',
  '#',
  '#!',
  '..',
  '->',
  '?:',
  '++',
  '--',
  '<<=',
  '(uint8)',
  '(struct s *)',
  '(',
  ')',
  '{',
  '}',
  '[',
  ']',
  '/',
  ';',
  ',',
  ':',
  '=',
  '\n',
  '\t',
  ' ',
  'é',
  '😀',
  '\r\n',
];

const ALPHABET = [...'abcdefgkprstuxBEGIN0123456789_$@#/*\\"\':;,.{}()[]<>=!~?&|^%+- \t\n\r', 'é', '😀'];

const fragment = fc.oneof(fc.constantFrom(...FRAGMENTS), fc.constantFrom(...ALPHABET));

test('random strings over the language alphabet never crash the parser', () => {
  fc.assert(
    fc.property(fc.array(fc.constantFrom(...ALPHABET), { maxLength: 80 }), (chars) => {
      checkParse(chars.join(''));
    }),
    { seed: SEED, numRuns: RUNS },
  );
});

test('random sequences of language fragments never crash the parser', () => {
  fc.assert(
    fc.property(fc.array(fragment, { maxLength: 40 }), (parts) => {
      checkParse(parts.join(' '));
      checkParse(parts.join(''));
    }),
    { seed: SEED + 1, numRuns: RUNS },
  );
});

type Mutation =
  | { op: 'delete'; at: number; len: number }
  | { op: 'insert'; at: number; text: string }
  | { op: 'swap'; a: number; b: number; len: number }
  | { op: 'truncate'; at: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ op: fc.constant('delete' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ op: fc.constant('insert' as const), at: fc.nat(), text: fragment }),
  fc.record({ op: fc.constant('swap' as const), a: fc.nat(), b: fc.nat(), len: fc.integer({ min: 1, max: 6 }) }),
  fc.record({ op: fc.constant('truncate' as const), at: fc.nat() }),
);

/** Applies a mutation at positions taken modulo the text length (so every generated value is meaningful). */
function mutate(text: string, m: Mutation): string {
  const n = text.length;
  if (n === 0) return m.op === 'insert' ? m.text : text;
  switch (m.op) {
    case 'delete': {
      const at = m.at % n;
      return text.slice(0, at) + text.slice(at + m.len);
    }
    case 'insert': {
      const at = m.at % (n + 1);
      return text.slice(0, at) + m.text + text.slice(at);
    }
    case 'swap': {
      let a = m.a % n;
      let b = m.b % n;
      if (a > b) [a, b] = [b, a];
      const len = Math.min(m.len, b - a);
      if (len <= 0) return text;
      return (
        text.slice(0, a) +
        text.slice(b, b + len) +
        text.slice(a + len, b) +
        text.slice(a, a + len) +
        text.slice(b + len)
      );
    }
    case 'truncate':
      return text.slice(0, m.at % (n + 1));
  }
}

/** Token-level mutation: swap, drop or duplicate whole whitespace-separated words. */
function mutateWords(text: string, ops: [number, number, number][]): string {
  const words = text.split(/(\s+)/);
  for (const [kind, i, j] of ops) {
    if (words.length === 0) break;
    const a = i % words.length;
    const b = j % words.length;
    if (kind % 3 === 0) [words[a], words[b]] = [words[b] as string, words[a] as string];
    else if (kind % 3 === 1) words.splice(a, 1);
    else words.splice(a, 0, words[b] as string);
  }
  return words.join('');
}

test('the corpus parses', () => {
  for (const text of CORPUS) assert.ok(checkParse(text), text);
});

test('valid programs with characters deleted, inserted, swapped or cut never crash the parser', () => {
  fc.assert(
    fc.property(fc.constantFrom(...CORPUS), fc.array(mutation, { minLength: 1, maxLength: 4 }), (program, muts) => {
      checkParse(muts.reduce(mutate, program));
    }),
    { seed: SEED + 2, numRuns: RUNS },
  );
});

test('valid programs with tokens swapped, dropped or duplicated never crash the parser', () => {
  fc.assert(
    fc.property(
      fc.constantFrom(...CORPUS),
      fc.array(fc.tuple(fc.nat(), fc.nat(), fc.nat()), { minLength: 1, maxLength: 4 }),
      (program, ops) => {
        checkParse(mutateWords(program, ops));
      },
    ),
    { seed: SEED + 3, numRuns: RUNS },
  );
});

test('100k-deep nesting gives a CompileError, not a crash', () => {
  const N = 100_000;
  for (const text of [
    `BEGIN { $x = ${'('.repeat(N)}1${')'.repeat(N)}; }`,
    `BEGIN /${'('.repeat(N)}/ { }`,
    `BEGIN ${'{'.repeat(N)}`,
    `BEGIN { $x = ${'!'.repeat(N)}$y; }`,
  ]) {
    assert.throws(() => parse({ name: 'stdin', text }), CompileError);
  }
});
