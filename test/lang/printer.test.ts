import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as A from '../../src/lang/ast.js';
import { parse } from '../../src/lang/parser.js';
import { escapeString, lastTypeOf, printAst, typeSpecText } from '../../src/lang/printer.js';
import { TypeTable } from '../../src/lang/type-table.js';
import { stringType, U64 } from '../../src/lang/types.js';

const parseText = (text: string) => parse({ name: 'stdin', text });

test('printAst: probes, predicate, statements, expressions', () => {
  const p = parseText(
    `config = { max_map_keys = 8; mode = perf }
tracepoint:syscalls:sys_enter_openat, t:a:b /pid == 1 && comm != "x"/ {
  @[comm, pid] = count();
  $x = (uint32)args->flags;
  printf("%s %d\\n", str(args.filename), $x ? 1 : 2);
  if ($x > 0) { @a++ } else if (!$x) { @b = hist(-$x) } else { $t = (1, "a"); print($t.0) }
  for ($i : 0..10) { @c[$i] += 1; }
  for ($kv : @c) { continue }
  unroll(3) { --@q }
  while ($x) { break; }
  let $y: struct task_struct * = *curtask;
  $z = sizeof(uint64) + offsetof(struct s, a.b) + $y[1] + $1 + $#;
  { $w = { 1; true }; }
  return;
}`,
  );
  assert.equal(
    printAst(p),
    `Program
 config
  =
   config var: max_map_keys
   int: 8
  =
   config var: mode
   string: perf
 tracepoint:syscalls:sys_enter_openat
 t:a:b
  pred
   &&
    ==
     builtin: pid
     int: 1
    !=
     builtin: comm
     string: x
  =
   map: @
    builtin: comm
    builtin: pid
   call: count
  =
   variable: $x
   (uint32)
    ->
     builtin: args
     flags
  call: printf
   string: %s %d\\n
   call: str
    .
     builtin: args
     filename
   ?:
    variable: $x
    int: 1
    int: 2
  if
   >
    variable: $x
    int: 0
   then
    ++ (post)
     map: @a
   else
    if
     !
      variable: $x
     then
      =
       map: @b
       call: hist
        -
         variable: $x
     else
      =
       variable: $t
       tuple:
        int: 1
        string: a
      call: print
       .
        variable: $t
        0
  for
   decl
    variable: $i
    range
     int: 0
     int: 10
   stmts
    +=
     map: @c
      variable: $i
     int: 1
  for
   decl
    variable: $kv
    map: @c
   stmts
    continue
  unroll
   int: 3
   block
    -- (pre)
     map: @q
  while
   variable: $x
   block
    break
  decl :: [struct task_struct *]
   variable: $y
   dereference
    builtin: curtask
  =
   variable: $z
   +
    +
     +
      +
       sizeof:
        uint64
       offsetof:
        struct s
        a.b
      []
       variable: $y
       int: 1
     param: $1
    param: $#
  block
   =
    variable: $w
    block expr
     int: 1
     bool: true
  return`,
  );
});

test('printAst: the types it is given are shown, the last table that has a node wins', () => {
  const p = parseText('BEGIN { @x[1] = "s"; $y = &$z; }');
  const [s0, s1] = p.probes[0]!.body.stmts as [A.AssignStmt, A.AssignStmt];
  const m = s0.target as A.MapExpr;
  const first = new TypeTable();
  const last = new TypeTable();
  first.set(m, U64); // replaced by the last table's
  last.set(m, stringType(2));
  first.set(m.keys[0]!, U64); // only in the first table
  last.set(s0.value, stringType(2));
  last.set(s1.value, { kind: 'pointer', to: U64, space: 'kernel' });
  last.set(s1.target, { kind: 'none' });
  assert.equal(
    printAst(p, lastTypeOf([first, last])),
    `Program
 BEGIN
  =
   map: @x :: [string[2]]
    int: 1 :: [uint64]
   string: s :: [string[2]]
  =
   variable: $y
   & :: [uint64 *]
    variable: $z`,
  );
});

test('escapeString and typeSpecText', () => {
  assert.equal(escapeString({ value: 'a"b\\c\n\t\r\x01é' }), 'a\\"b\\\\c\\n\\t\\r\\x01\\xc3\\xa9');
  assert.equal(escapeString({ value: '\u00ff', bytes: Uint8Array.of(0xff) }), '\\xff');
  const t = (name: string, pointerDepth: number, arrayCount: number | null): A.TypeSpec => ({
    kind: 'TypeSpec',
    pos: { line: 1, col: 1, offset: 0, end: 0 },
    name,
    pointerDepth,
    arrayCount,
  });
  assert.equal(typeSpecText(t('struct task_struct', 2, null)), 'struct task_struct **');
  assert.equal(typeSpecText(t('uint8', 0, 4)), 'uint8[4]');
  assert.equal(typeSpecText(t('uint8', 0, 0)), 'uint8[]');
});
