/**
 * The pass manager (src/lang/passes/manager.ts), the compiler's pass list (compiler.ts COMPILE_PASSES) and the AST
 * visitor (src/lang/visitor.ts) that the rewriting passes share.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { COMPILE_PASSES } from '../../src/compiler.js';
import type { Expr, Stmt } from '../../src/lang/ast.js';
import { CompileError } from '../../src/lang/diagnostics.js';
import { parse } from '../../src/lang/parser.js';
import { foldLiterals } from '../../src/lang/passes/fold.js';
import { need, type Pass, PassManager } from '../../src/lang/passes/manager.js';
import { AstMutator } from '../../src/lang/visitor.js';

interface Ctx {
  input: number;
  doubled?: number;
  text?: string;
}

const double: Pass<Ctx> = {
  name: 'double',
  reads: ['input'],
  produces: ['doubled'],
  run: (c) => {
    c.doubled = c.input * 2;
  },
};
const show: Pass<Ctx> = {
  name: 'show',
  reads: ['doubled'],
  produces: ['text'],
  run: (c) => {
    c.text = `=${need(c, 'doubled')}`;
  },
};

describe('PassManager', () => {
  it('runs the passes in order over one context, up to a named pass if asked', () => {
    const pm = new PassManager<Ctx>([double, show], ['input']);
    assert.deepEqual(pm.names, ['double', 'show']);
    assert.deepEqual(pm.run({ input: 21 }), { input: 21, doubled: 42, text: '=42' });
    assert.deepEqual(pm.run({ input: 1 }, 'double'), { input: 1, doubled: 2 });
  });

  it('refuses a list in which a pass reads what no earlier pass produces, or two passes produce one field', () => {
    assert.throws(() => new PassManager<Ctx>([show, double], ['input']), {
      message: "pass show reads 'doubled', which no earlier pass produces",
    });
    assert.throws(() => new PassManager<Ctx>([double, { ...double, name: 'again' }], ['input']), {
      message: "pass again produces 'doubled', already produced by double",
    });
    assert.throws(() => new PassManager<Ctx>([double], ['input', 'doubled']), {
      message: "pass double produces 'doubled', already produced by (initial)",
    });
  });

  it('fails a pass that does not set a field it declares, and need() a field not set yet', () => {
    const lazy: Pass<Ctx> = { name: 'lazy', reads: [], produces: ['text'], run: () => {} };
    assert.throws(() => new PassManager<Ctx>([lazy], ['input']).run({ input: 0 }), {
      message: "pass lazy did not produce 'text'",
    });
    assert.throws(() => need<Ctx, 'text'>({ input: 0 }, 'text'), { message: "compiler context has no 'text' yet" });
  });

  it("holds the compiler's passes in bpftrace's order", () => {
    assert.deepEqual(COMPILE_PASSES.names, [
      'parse',
      'config',
      'positional_params',
      'macro_expansion',
      'stdlib_wrappers',
      'block_aggregations',
      'fold_literals',
      'variable_scopes',
      'control_flow',
      'c_definitions',
      'attach_points',
      'semantic',
      'map_decls',
      'resources',
      'codegen',
    ]);
  });
});

/** Every node kind under `node`, found by walking its fields (independent of the visitor's per-kind lists). */
function kindsByReflection(node: unknown, out = new Map<string, number>()): Map<string, number> {
  if (Array.isArray(node)) for (const x of node) kindsByReflection(x, out);
  else if (node && typeof node === 'object' && !ArrayBuffer.isView(node)) {
    const kind = (node as { kind?: unknown }).kind;
    if (typeof kind === 'string' && !['Probe', 'AttachPoint', 'Program', 'TypeSpec'].includes(kind)) {
      out.set(kind, (out.get(kind) ?? 0) + 1);
    }
    for (const [k, v] of Object.entries(node)) if (k !== 'pos' && k !== 'type') kindsByReflection(v, out);
  }
  return out;
}

class Counter extends AstMutator {
  readonly seen = new Map<string, number>();
  override stmt(s: Stmt): Stmt {
    // a nested { } block reaches block() through stmt(): count it once, there
    if (s.kind !== 'Block') this.seen.set(s.kind, (this.seen.get(s.kind) ?? 0) + 1);
    return super.stmt(s);
  }
  override block(b: Stmt & { kind: 'Block' }) {
    this.seen.set('Block', (this.seen.get('Block') ?? 0) + 1);
    return super.block(b);
  }
  override expr(e: Expr): Expr {
    this.seen.set(e.kind, (this.seen.get(e.kind) ?? 0) + 1);
    return super.expr(e);
  }
}

describe('AstMutator', () => {
  it('visits every statement and expression of a program that uses every node kind, each once', () => {
    const text =
      'struct S { int x; } kprobe:f /pid > 1/ { $a = 1; let $b: int64 = -$a; @m[$a, "s"] = count(); $t = (1, true); ' +
      'if ($a) { $a++; } else if ($b) { break; } else { return; } while ($a < 3) { $a += 1; continue; } ' +
      'unroll(2) { $a = $a ? 1 : 2; } for ($k : 0..3) { $c = ((struct S *)$a)->x; } ' +
      '$d = sizeof(int32) + sizeof($a) + offsetof(struct S, x); $e = $t.0; $f = args.x[1]; $g = $1 + @m[1, "s"]; ' +
      '$h = { let $i = 2; $i }; { $j = 1; } }';
    const ast = parse({ name: 'stdin', text });
    const expected = kindsByReflection(ast.probes);
    // every kind of ast.ts is in the program (a kind added later must be added here too)
    assert.deepEqual([...expected.keys()].sort(), [
      'AssignStmt',
      'BinaryExpr',
      'Block',
      'BlockExpr',
      'BoolLit',
      'BuiltinExpr',
      'CallExpr',
      'CastExpr',
      'ExprStmt',
      'FieldExpr',
      'ForStmt',
      'IfStmt',
      'IncDecExpr',
      'IndexExpr',
      'IntLit',
      'JumpStmt',
      'MapExpr',
      'OffsetofExpr',
      'PositionalExpr',
      'RangeExpr',
      'SizeofExpr',
      'StrLit',
      'TernaryExpr',
      'TupleExpr',
      'UnaryExpr',
      'UnrollStmt',
      'VarDeclStmt',
      'VarExpr',
      'WhileStmt',
    ]);
    const c = new Counter();
    c.program(ast);
    assert.deepEqual(new Map([...c.seen].sort()), new Map([...expected].sort()));
  });

  it('lets fold_literals fold inside block expressions and range bounds, and report overflow there', () => {
    const ast = parse({ name: 'stdin', text: 'BEGIN { $a = { let $b = 1; 2 * 3 }; for ($i : 0..(1 + 2)) { } }' });
    foldLiterals(ast);
    const body = ast.probes[0]!.body.stmts;
    const blockValue = body[0]!.kind === 'AssignStmt' && body[0]!.value.kind === 'BlockExpr' && body[0]!.value.value;
    assert.deepEqual(blockValue && blockValue.kind === 'IntLit' && blockValue.value, 6n);
    const range = body[1]!.kind === 'ForStmt' && body[1]!.iterable.kind === 'RangeExpr' && body[1]!.iterable.end;
    assert.deepEqual(range && range.kind === 'IntLit' && range.value, 3n);
    assert.throws(
      () => foldLiterals(parse({ name: 'stdin', text: 'BEGIN { $a = { 0x7fffffffffffffff * 4 }; }' })),
      (e: unknown) =>
        e instanceof CompileError &&
        e.diagnostics.map((d) => d.message).join() === 'unable to fold literals due to overflow or underflow',
    );
  });
});
