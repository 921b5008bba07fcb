/**
 * bpftrace's stdlib spellings of builtins (its `src/stdlib/base.bt` wraps each builtin in a macro; `docs/stdlib.md`),
 * rewritten after user macros are expanded (a user macro of the same name and arity wins, as in bpftrace):
 * - `__builtin_comm` (any `__builtin_NAME` of a builtin) is the builtin `comm`;
 * - `comm()`, `cpu()`, `elapsed()`, ... (a builtin called without arguments) is the builtin;
 * - `ppid(task)` is `task->real_parent->tgid`;
 * - `pcomm`, `leader_comm`, `leader_tid` (bare, `NAME()` or `NAME(task)`, as bpftrace's stdlib macros) are
 *   `task->real_parent->comm`, `task->group_leader->comm` and `task->group_leader->pid`, `task` being `curtask`
 *   when not given;
 * - `config()` and `__builtin_config` are a record of the configuration bpfscope runs with (current bpftrace's
 *   `__builtin_config`, ast/passes/builtins.cpp): `cpp_demangle`, `print_maps_on_exit`, `show_debug_info` (bool),
 *   `max_cat_bytes`, `max_map_keys`, `max_probes`, `max_strlen`, `perf_rb_pages` (int), `str_trunc_trailer`,
 *   `missing_probes`, `stack_mode`, `license` (string); the variables bpfscope does not honour yet (`log_size`,
 *   `on_stack_limit`, ...) are left out, so reading one is an error, never a value bpfscope does not use. A field of
 *   it (`config().max_strlen`) is the literal;
 * - `container_of(ptr, typeof(TYPE), member)` is `(TYPE *)((uint64)ptr - offsetof(TYPE, member))` (bpftrace's
 *   stdlib macro, `stdlib/meta.bt`); another form is left to the analyser, which refuses it;
 * - `is_err(ptr)` is `(uint64)ptr >= 2^64 - 4095` (bpftrace's stdlib macro: the pointer is an ERR_PTR, -4095..-1);
 * - the statement `assert(cond, msg)` is `if (!cond) { errorf("assert failed: %s", msg); exit(1); }` (bpftrace's
 *   stdlib macro; the error names the assert's position in the program, where bpftrace names its macro's line in
 *   `stdlib/base.bt`);
 * - a block expression without statements whose value is a literal (what a macro like `macro m() { "hi" }`
 *   expands to) is the literal, so functions that need literals (`printf(m())`) accept it.
 */
import type {
  BuiltinExpr,
  CallExpr,
  CastExpr,
  Expr,
  FieldExpr,
  IfStmt,
  Program,
  Stmt,
  TupleExpr,
  TypeSpec,
} from '../ast.js';
import { builtinVariable } from '../builtins/registry.js';
import { AstMutator } from '../visitor.js';
import { PAGE, type RuntimeConfig } from './config.js';

/** A builtin variable (not a pattern like `argN`); `NAME()` of one with `ownFunction` is left to the analyser. */
function variable(name: string): { ownFunction?: boolean } | undefined {
  const v = builtinVariable(name);
  return v && !v.pattern ? v : undefined;
}

/**
 * Rewrite the stdlib spellings in place (see the module comment).
 *
 * @param config the resolved configuration `config()` reads (absent: `config()` is left alone, and so an error)
 */
export function resolveStdlibWrappers(program: Program, config?: RuntimeConfig): void {
  new StdlibWrappers(config).program(program);
}

/** `config()`'s record (see the module comment), literals at `e`'s position. */
function configRecord(e: Expr, c: RuntimeConfig): TupleExpr {
  const pos = e.pos;
  const fields: [string, boolean | number | string][] = [
    ['cpp_demangle', true],
    ['print_maps_on_exit', c.printMapsOnExit],
    ['show_debug_info', c.showDebugInfo],
    ['max_cat_bytes', c.maxCatBytes],
    ['max_map_keys', c.maxMapKeys],
    ['max_probes', c.maxProbes],
    ['max_strlen', c.maxStrlen],
    ['perf_rb_pages', c.ringbufSize / PAGE],
    ['str_trunc_trailer', c.strTruncTrailer],
    ['missing_probes', c.missingProbes],
    ['stack_mode', c.stackMode],
    ['license', c.license],
  ];
  const elems: Expr[] = fields.map(([, v]) =>
    typeof v === 'boolean'
      ? { kind: 'BoolLit', pos, value: v }
      : typeof v === 'number'
        ? { kind: 'IntLit', pos, value: BigInt(v) }
        : { kind: 'StrLit', pos, value: v },
  );
  return { kind: 'TupleExpr', pos, elems, names: fields.map(([k]) => k) };
}

function builtin(e: Expr, name: string): BuiltinExpr {
  return { kind: 'BuiltinExpr', pos: e.pos, name };
}

/** The task fields bpftrace's stdlib macros of these names read (`base.bt`): `[link, field]`. */
const TASK_FIELDS: ReadonlyMap<string, readonly [string, string]> = new Map([
  ['pcomm', ['real_parent', 'comm']],
  ['leader_comm', ['group_leader', 'comm']],
  ['leader_tid', ['group_leader', 'pid']],
]);

/** `task->LINK->FIELD` for a {@link TASK_FIELDS} name; `task` is `curtask` when absent. */
function taskField(e: Expr, name: string, task?: Expr): Expr | undefined {
  const f = TASK_FIELDS.get(name);
  if (!f) return undefined;
  const object: Expr = task ?? builtin(e, 'curtask');
  const link: FieldExpr = { kind: 'FieldExpr', pos: e.pos, object, field: f[0], arrow: true };
  return { kind: 'FieldExpr', pos: e.pos, object: link, field: f[1], arrow: true };
}

/** `container_of(ptr, typeof(TYPE), member)` rewritten (see the module comment), or undefined for another form. */
function containerOf(c: CallExpr): Expr | undefined {
  const [ptr, type, member] = c.args;
  if (c.args.length !== 3 || !ptr || type?.kind !== 'CallExpr' || type.name !== 'typeof') return undefined;
  const written = type.typeArg?.of?.arg;
  if (written?.kind !== 'TypeSpec' || member?.kind !== 'BuiltinExpr') return undefined;
  const pos = c.pos;
  const t: TypeSpec = { ...written, pos };
  const u64: TypeSpec = { kind: 'TypeSpec', pos, name: 'uint64', pointerDepth: 0, arrayCount: null };
  const address: CastExpr = { kind: 'CastExpr', pos, typeSpec: u64, operand: ptr };
  const back: Expr = {
    kind: 'BinaryExpr',
    pos,
    op: '-',
    left: address,
    right: { kind: 'OffsetofExpr', pos, typeSpec: t, field: member.name },
  };
  return { kind: 'CastExpr', pos, typeSpec: { ...t, pointerDepth: t.pointerDepth + 1 }, operand: back };
}

function replacement(e: Expr, config: RuntimeConfig | undefined): Expr | undefined {
  if (e.kind === 'CallExpr' && e.name === 'container_of') return containerOf(e);
  if (
    config &&
    ((e.kind === 'BuiltinExpr' && e.name === '__builtin_config') ||
      (e.kind === 'CallExpr' && e.name === 'config' && e.args.length === 0))
  ) {
    return configRecord(e, config);
  }
  if (e.kind === 'FieldExpr' && !e.arrow && e.object.kind === 'TupleExpr' && e.object.names) {
    // a field of a record of literals (config().max_strlen) is the literal
    const i = e.object.names.indexOf(e.field);
    const v = e.object.elems[i];
    if (v && e.object.elems.every(isLiteral)) return v;
  }
  if (e.kind === 'BuiltinExpr' && e.name.startsWith('__builtin_')) {
    const name = e.name.slice('__builtin_'.length);
    return variable(name) ? (taskField(e, name) ?? builtin(e, name)) : undefined;
  }
  if (e.kind === 'BuiltinExpr') return taskField(e, e.name);
  if (e.kind === 'CallExpr') {
    if (e.args.length <= 1 && TASK_FIELDS.has(e.name)) return taskField(e, e.name, e.args[0]);
    const v = e.args.length === 0 ? variable(e.name) : undefined;
    if (v) return v.ownFunction ? undefined : builtin(e, e.name);
    if (e.name === 'is_err' && e.args.length === 1) return isErr(e, e.args[0]!);
    if (e.name === 'ppid' && e.args.length === 1) {
      const parent: FieldExpr = {
        kind: 'FieldExpr',
        pos: e.pos,
        object: e.args[0]!,
        field: 'real_parent',
        arrow: true,
      };
      return { kind: 'FieldExpr', pos: e.pos, object: parent, field: 'tgid', arrow: true };
    }
  }
  if (e.kind === 'BlockExpr' && e.stmts.length === 0 && ['StrLit', 'IntLit', 'BoolLit'].includes(e.value.kind)) {
    return e.value;
  }
  return undefined;
}

/**
 * `is_err(ptr)`: whether `ptr` is an ERR_PTR, a value in [-4095, -1] as a 64-bit integer (the kernel's IS_ERR();
 * bpftrace's stdlib macro, `base.bt`), written `(uint64)ptr >= 2^64 - 4095` so that `ptr` is evaluated once.
 */
function isErr(e: CallExpr, ptr: Expr): Expr {
  const pos = e.pos;
  const u64: TypeSpec = { kind: 'TypeSpec', pos, name: 'uint64', pointerDepth: 0, arrayCount: null };
  return {
    kind: 'BinaryExpr',
    pos,
    op: '>=',
    left: { kind: 'CastExpr', pos, typeSpec: u64, operand: ptr },
    right: { kind: 'IntLit', pos, value: (1n << 64n) - 4095n },
  };
}

function isLiteral(e: Expr): boolean {
  return e.kind === 'StrLit' || e.kind === 'IntLit' || e.kind === 'BoolLit';
}

/** Rewrites bottom-up: a node's children first, then the node. */
class StdlibWrappers extends AstMutator {
  constructor(private readonly config: RuntimeConfig | undefined) {
    super();
  }

  override expr(e: Expr): Expr {
    super.expr(e);
    return replacement(e, this.config) ?? e;
  }

  override stmt(s: Stmt): Stmt {
    const r = super.stmt(s);
    if (r.kind !== 'ExprStmt' || r.expr.kind !== 'CallExpr' || r.expr.name !== 'assert' || r.expr.args.length !== 2) {
      return r;
    }
    const pos = r.expr.pos;
    const [cond, msg] = r.expr.args as [Expr, Expr];
    const call = (name: string, args: Expr[]): Stmt => ({
      kind: 'ExprStmt',
      pos,
      expr: { kind: 'CallExpr', pos, name, args } satisfies CallExpr,
    });
    const out: IfStmt = {
      kind: 'IfStmt',
      pos,
      cond: { kind: 'UnaryExpr', pos, op: '!', operand: cond },
      then: {
        kind: 'Block',
        pos,
        stmts: [
          call('errorf', [{ kind: 'StrLit', pos, value: 'assert failed: %s' }, msg]),
          call('exit', [{ kind: 'IntLit', pos, value: 1n }]),
        ],
      },
      else: null,
    };
    return out;
  }
}
