import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as A from '../../src/lang/ast.js';
import { compile } from '../../src/compiler.js';
import { parse } from '../../src/lang/parser.js';
import { TypeTable } from '../../src/lang/type-table.js';
import { typeName, U64 } from '../../src/lang/types.js';

test('TypeTable: get, find, set and sizeof values; an untyped node is an internal error naming it', () => {
  const p = parse({ name: 'stdin', text: 'BEGIN { $x = 1; $y = sizeof($x); }' });
  const [s0, s1] = p.probes[0]!.body.stmts as [A.AssignStmt, A.AssignStmt];
  const t = new TypeTable();
  assert.equal(t.find(s0.value), undefined);
  assert.throws(() => t.get(s0.value), {
    message: 'no type for the IntLit at 1:14: the semantic pass did not type it for this probe',
  });
  t.set(s0.value, U64);
  assert.equal(t.get(s0.value), U64);
  assert.throws(() => t.size(s1.value), { message: 'no value for the SizeofExpr at 1:22' });
  t.setSize(s1.value, 8);
  assert.equal(t.size(s1.value), 8);
});

test('compile: one type table per expanded probe; a shared node has each attach point its own type', () => {
  const r = compile({
    name: 'stdin',
    text: 'tracepoint:syscalls:sys_enter_read,tracepoint:syscalls:sys_enter_close { $a = args; $s = sizeof(args); }',
  });
  const [s0, s1] = r.ast.probes[0]!.body.stmts as [A.AssignStmt, A.AssignStmt];
  assert.equal(r.units.length, 2);
  const seen = r.units.map((u) => {
    const t = r.types.get(u)!;
    return [
      u.expanded.name,
      typeName(t.get(s0.value)),
      typeName(t.variables.get('a')!),
      t.size(s1.value),
      [...t.addressTaken],
    ];
  });
  // the record layouts of include/trace/events/syscalls.h (syscall nr, then the arguments as 8-byte fields)
  assert.deepEqual(seen, [
    [
      'tracepoint:syscalls:sys_enter_read',
      'struct tracepoint:syscalls:sys_enter_read_args',
      'struct tracepoint:syscalls:sys_enter_read_args',
      40,
      [],
    ],
    [
      'tracepoint:syscalls:sys_enter_close',
      'struct tracepoint:syscalls:sys_enter_close_args',
      'struct tracepoint:syscalls:sys_enter_close_args',
      24,
      [],
    ],
  ]);
});

test('compile: nothing writes a type onto the AST', () => {
  const r = compile({
    name: 'stdin',
    text: 'BEGIN { $x = 1; $p = &$x; @m[comm, $x + 1] = sum($x); printf("%d\\n", *$p); }',
  });
  const typedNodes: string[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object' && !(v instanceof Uint8Array)) {
      if (Object.hasOwn(v, 'type')) typedNodes.push((v as { kind?: string }).kind ?? '?');
      Object.values(v).forEach(walk);
    }
  };
  walk(r.ast);
  assert.deepEqual(typedNodes, []);
  const t = r.types.get(r.units[0]!)!;
  assert.deepEqual([...t.addressTaken], ['x']);
  assert.deepEqual(
    [...t.variables].map(([n, ty]) => `${n}: ${typeName(ty)}`),
    ['x: int64', 'p: int64 *'],
  );
});
