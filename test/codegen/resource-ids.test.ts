/**
 * The resource pass's ids (codegen/resource-ids.ts, compiler.ts `resources`): the calls that send records get
 * their ids before code generation, by node per unit, and the run-time warnings theirs after them
 * (codegen/warning-ids.ts), by the span the generator emits each at; the generator only looks them up. Expected
 * tables are written out here; test/codegen/golden's unroll-printf listing shows the same ids in the instructions.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CallExpr } from '../../src/lang/ast.js';
import { compile, type CompileContext, COMPILE_PASSES } from '../../src/compiler.js';
import { emptyResourceIds, resourceId, type ResourceIds } from '../../src/codegen/resource-ids.js';
import { warningId } from '../../src/codegen/warning-ids.js';
import { TypeTable } from '../../src/lang/type-table.js';

function compileCtx(text: string, helperWarnings = false): CompileContext {
  const ctx: CompileContext = {
    source: { name: 'stdin', text },
    opts: { unsafe: true, ...(helperWarnings ? { helperWarnings } : {}) },
    warnings: [],
  };
  COMPILE_PASSES.run(ctx);
  return ctx;
}

/** The printf table the runtime gets: each entry's format, and `once` for a run-time warning printed once. */
function printfTable(ctx: CompileContext): string[] {
  return ctx.tables!.resources.printfs.map((p, i) => {
    assert.equal(p.id, i, 'an entry is at its id');
    return p.once ? `once:${p.format.slice(0, 9)}` : p.format;
  });
}

const MAP_FULL = 'once:Map full;';
const DIVIDE = 'Divide or modulo by 0 detected. This can lead to unexpected results. 1 is being used as the result.';
const LOOKUP =
  "Can't lookup map element because it does not exist.\nAdditional Info - helper: map_lookup_elem, retcode: 0";
const OOB = 'Array access out of bounds. This can lead to unexpected results.';

/** The printf table as `format@col` (a warning's column is where user space prints it; columns counted by hand). */
function positioned(ctx: CompileContext): string[] {
  return ctx.tables!.resources.printfs.map((p) => `${p.once ? 'once:' : ''}${p.format.slice(0, 9)}@${p.pos!.col}`);
}

describe('resource pass: record ids', () => {
  it('gives an unrolled call one id, emitted once per copy (as bpftrace resets its ids per copy)', () => {
    const ctx = compileCtx('BEGIN { unroll(3) { printf("a %d\\n", 1); time("%H\\n"); } printf("b\\n"); }');
    assert.deepEqual(printfTable(ctx), ['a %d\n', 'b\n']);
    assert.deepEqual(ctx.tables!.resources.timeFormats, ['%H\n']);
  });

  it('assigns the run-time warnings after the calls, in the order code generation emits them', () => {
    const ctx = compileCtx('BEGIN { @x = 1; printf("p %d\\n", @x); @y = 2; $z = 7 / @x; print(1); print(@x); }');
    assert.deepEqual(printfTable(ctx), ['p %d\n', MAP_FULL, MAP_FULL, DIVIDE]);
    // the generator added nothing: the table is the pass's
    assert.equal(ctx.tables!.resources.printfs, ctx.resourceIds!.printfs);
    // print(@x) prints the map (no id); print(1) a value
    assert.deepEqual(
      ctx.tables!.resources.printValues.map((p) => p.type),
      [{ kind: 'int', size: 8, signed: true }],
    );
  });

  it('foresees each run-time warning where the generator emits it, one id per site', () => {
    // `/` by a positive literal is an immediate (no check); `@m[1] /= $b` checks in both branches (one id);
    // `@n++` stores (map full at the expression); an unrolled store is one site; `$a[$i]` checks its index
    const ctx = compileCtx(
      'BEGIN { $a = 10; $b = 0; $c = $a / 2; $d = $a % $b; $a /= $b; @m[1] = 5; @m[1] /= $b; ' +
        '@n++; unroll(3) { @u = 1; } $i = 1; $r = ((uint8[8])0x0102030405060708)[$i]; exit(); }',
    );
    assert.deepEqual(positioned(ctx), [
      `${DIVIDE.slice(0, 9)}@44`,
      `${DIVIDE.slice(0, 9)}@53`,
      'once:Map full;@63',
      `${DIVIDE.slice(0, 9)}@74`,
      'once:Map full;@74',
      'once:Map full;@87',
      'once:Map full;@105',
      `${OOB.slice(0, 9)}@128`,
    ]);
  });

  it('-k: a lookup-miss warning at each map read, none where a map is named (delete, clear, print)', () => {
    const text =
      'BEGIN { @m[1] = 1; @c = count(); $v = @m[2] + @c; print(@m[1]); delete(@m[1]); clear(@m); print(@c); }';
    assert.deepEqual(printfTable(compileCtx(text)), [MAP_FULL, MAP_FULL]);
    assert.deepEqual(positioned(compileCtx(text, true)), [
      'once:Map full;@9',
      'once:Map full;@20',
      `${LOOKUP.slice(0, 9)}@39`,
      `${LOOKUP.slice(0, 9)}@57`,
    ]);
  });

  it('reports a warning the pass did not foresee as an internal error naming the file', () => {
    const ctx = compileCtx('BEGIN { $z = 7 / 2; }');
    const table = ctx.types!.get(ctx.units![0]!)!;
    assert.throws(() => warningId(ctx.resourceIds!.warnings, table, ctx.ast!.probes[0]!.pos, DIVIDE), {
      message:
        /^internal: the resource pass foresaw no run-time warning "Divide or modulo by 0 detected" at 1:1 \(codegen\/warning-ids\.ts\)/,
    });
  });

  it('numbers each kind from 0, units in order, a loop callback body where its for is', () => {
    const ctx = compileCtx(
      'BEGIN { @m[1] = 2; for ($kv : @m) { printf("kv %d\\n", $kv.0); join(0, ":"); } system("true"); } ' +
        'END { time(); join(0); cat("/dev/null"); errorf("e"); warnf("w"); }',
    );
    assert.deepEqual(printfTable(ctx), ['kv %d\n', 'true', '/dev/null', 'e', 'w', MAP_FULL]);
    assert.deepEqual(ctx.tables!.resources.joinSeparators, [':', ' ']);
    assert.deepEqual(ctx.tables!.resources.timeFormats, ['%H:%M:%S\n']);
    assert.equal(ctx.tables!.resources.joinBufName, 'join_buf');
  });

  it('gives each unit of a multi-match probe its own ids (each unit has its own types)', () => {
    const ctx = compileCtx('interval:ms:100,interval:ms:200 { printf("t %d\\n", 1); time(); }');
    assert.equal(ctx.units!.length, 2);
    assert.deepEqual(printfTable(ctx), ['t %d\n', 't %d\n']);
    assert.deepEqual(ctx.tables!.resources.timeFormats, ['%H:%M:%S\n', '%H:%M:%S\n']);
    const [a, b] = ctx.units!.map((u) => ctx.types!.get(u)!);
    const call = ctx.ast!.probes[0]!.body.stmts[0]!;
    assert.equal(call.kind, 'ExprStmt');
    const printf = (call as { expr: CallExpr }).expr;
    assert.equal(resourceId(ctx.resourceIds!, a!, printf), 0);
    assert.equal(resourceId(ctx.resourceIds!, b!, printf), 1);
  });

  it('plans the stack maps of kstack/ustack values before code generation, once per kind and limit', () => {
    const text =
      'profile:hz:99 { @a[kstack(3)] = count(); @b[kstack(3)] = count(); @c[ustack] = count(); @d[kstack] = count(); ' +
      '@e[ustack(build_id, 5)] = count(); }';
    const ctx = compileCtx(text);
    assert.deepEqual(
      [...ctx.resourceIds!.stackMaps.values()],
      [
        { name: 'stack_k3', scratch: 'stack_k3_buf', user: false, limit: 3, frameSize: 8 },
        { name: 'stack_u127', scratch: 'stack_u127_buf', user: true, limit: 127, frameSize: 8 },
        { name: 'stack_k127', scratch: 'stack_k127_buf', user: false, limit: 127, frameSize: 8 },
        // struct bpf_stack_build_id frames (32 bytes)
        { name: 'stack_ub5', scratch: 'stack_ub5_buf', user: true, limit: 5, frameSize: 32 },
      ],
    );
    // what the runtime creates
    assert.deepEqual(
      compile({ name: 'stdin', text }, { unsafe: true }).compiled.stackMaps.map((m) => m.name),
      ['stack_k3', 'stack_u127', 'stack_k127', 'stack_ub5'],
    );
  });

  it('reports a call it gave no id as an internal error naming the call and the file', () => {
    const ids: ResourceIds = emptyResourceIds();
    const c: CallExpr = {
      kind: 'CallExpr',
      name: 'printf',
      args: [],
      pos: { line: 3, col: 5, offset: 0, end: 0 },
    } as unknown as CallExpr;
    assert.throws(() => resourceId(ids, new TypeTable(), c), {
      message: /^internal: the resource pass assigned no id to printf\(\) at 3:5 \(codegen\/resource-ids\.ts\)/,
    });
  });
});
