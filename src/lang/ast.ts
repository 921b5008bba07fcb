/**
 * AST of bpftrace's language (bpftrace `docs/language.md`). Every node carries a `pos` (source span) so that
 * diagnostics, IR instructions and verifier rejections can point at the user's code. Nodes carry no types: the
 * semantic pass (`lang/passes/semantic.ts`) puts them in a table beside the AST, one per expanded probe
 * (`lang/type-table.ts`).
 */
import type { AddrSpace } from './types.js';

/** A source span: 1-based line and column of the first character, 0-based [offset, end) character offsets. */
export interface Span {
  line: number;
  col: number;
  offset: number;
  end: number;
  /** For code from a macro's body: the call it was expanded at (diagnostics add `expanded from` there). */
  expandedFrom?: Span;
}

export interface Program {
  kind: 'Program';
  pos: Span;
  /** `config = { key = value; ... }` block, if present. */
  config: ConfigItem[];
  /** `let @name = hash(N);` map declarations of the preamble (bpftrace v0.24+). */
  mapDecls: MapDecl[];
  /** `macro name(params) { ... }` definitions (bpftrace v0.22+), expanded by lang/passes/macros.ts. */
  macros: MacroDecl[];
  /** C `struct`/`union`/`enum` definitions of the preamble, as written (parsed by lang/cdefs.ts). */
  cDefinitions: { text: string; pos: Span }[];
  probes: Probe[];
}

/**
 * `macro name($var, @map, ident) { stmts; value }`: a parameter is a scratch variable (passed by reference: the
 * argument must be a variable), a map (the argument must be a map), or a bare name (any expression, substituted).
 */
export interface MacroDecl {
  kind: 'MacroDecl';
  pos: Span;
  name: string;
  params: { kind: 'var' | 'map' | 'ident'; name: string; pos: Span }[];
  stmts: Stmt[];
  /** The block's last expression without `;`, the macro's value; null for a macro used as a statement. */
  value: Expr | null;
}

/** `let @name = TYPE(MAX_ENTRIES);`: the BPF map type (`hash`, `lruhash`, ...) and size of one map. */
export interface MapDecl {
  kind: 'MapDecl';
  pos: Span;
  /** Map name without '@' ('' for `@`). */
  name: string;
  /** The declared type as written (checked by semantic analysis). */
  mapType: string;
  typePos: Span;
  maxEntries: bigint;
  maxEntriesPos: Span;
}

export interface ConfigItem {
  kind: 'ConfigItem';
  pos: Span;
  key: string;
  value: bigint | string;
}

export interface Probe {
  kind: 'Probe';
  pos: Span;
  attachPoints: AttachPoint[];
  predicate: Expr | null;
  body: Block;
}

/**
 * One attach point as written, e.g. `tracepoint:syscalls:sys_enter_*`, `t:sched:sched_switch`, `interval:s:1`,
 * `BEGIN`, `uprobe:"/bin/my app":main`. `provider` is the text before the first ':' (unexpanded alias),
 * `parts` the remaining ':'-separated fields with quotes removed. Interpreting them is the probe providers' job.
 */
export interface AttachPoint {
  kind: 'AttachPoint';
  pos: Span;
  raw: string;
  provider: string;
  parts: string[];
}

export interface Block {
  kind: 'Block';
  pos: Span;
  stmts: Stmt[];
}

export type Stmt = ExprStmt | AssignStmt | VarDeclStmt | IfStmt | WhileStmt | UnrollStmt | ForStmt | JumpStmt | Block;

export interface ExprStmt {
  kind: 'ExprStmt';
  pos: Span;
  expr: Expr;
}

/** Assignment operators: `=` and the compound forms bpftrace accepts. */
export type AssignOp = '=' | '+=' | '-=' | '*=' | '/=' | '%=' | '&=' | '|=' | '^=' | '<<=' | '>>=';

/** `@m[k] = v`, `$x = v`, `@m += v`, `$x <<= 2`. The target is a MapExpr or a VarExpr. */
export interface AssignStmt {
  kind: 'AssignStmt';
  pos: Span;
  target: MapExpr | VarExpr;
  op: AssignOp;
  value: Expr;
}

/** `let $x;`, `let $x = v;`, `let $x: type = v;` */
export interface VarDeclStmt {
  kind: 'VarDeclStmt';
  pos: Span;
  variable: VarExpr;
  typeName: TypeSpec | null;
  value: Expr | null;
}

export interface IfStmt {
  kind: 'IfStmt';
  pos: Span;
  cond: Expr;
  then: Block;
  /** `else { }` or `else if ...` (an IfStmt). */
  else: Block | IfStmt | null;
}

export interface WhileStmt {
  kind: 'WhileStmt';
  pos: Span;
  cond: Expr;
  body: Block;
}

export interface UnrollStmt {
  kind: 'UnrollStmt';
  pos: Span;
  count: Expr;
  body: Block;
}

/** `for ($kv : @map) { }` or `for ($i : start..end) { }` */
export interface ForStmt {
  kind: 'ForStmt';
  pos: Span;
  variable: VarExpr;
  iterable: MapExpr | RangeExpr;
  body: Block;
}

export interface JumpStmt {
  kind: 'JumpStmt';
  pos: Span;
  jump: 'return' | 'break' | 'continue';
  value: Expr | null;
}

/** A C-like type as written in casts and declarations: `uint32`, `int8`, `struct task_struct *`, `string`. */
export interface TypeSpec {
  kind: 'TypeSpec';
  pos: Span;
  name: string;
  pointerDepth: number;
  /** `[N]` array suffix, if any. */
  arrayCount: number | null;
  /**
   * A type written as a call of a registry type function (`typeof(expr)`, `typeof(TYPE)`; lang/builtins/ role
   * `type`): the analyser resolves it and fills in `name`, `pointerDepth` and `arrayCount`.
   */
  of?: { fn: string; arg: Expr | TypeSpec };
}

export type Expr =
  | IntLit
  | StrLit
  | BoolLit
  | BuiltinExpr
  | PositionalExpr
  | VarExpr
  | MapExpr
  | CallExpr
  | BinaryExpr
  | UnaryExpr
  | IncDecExpr
  | TernaryExpr
  | FieldExpr
  | IndexExpr
  | CastExpr
  | TupleExpr
  | RangeExpr
  | SizeofExpr
  | OffsetofExpr
  | BlockExpr;

interface ExprBase {
  pos: Span;
}

export interface IntLit extends ExprBase {
  kind: 'IntLit';
  value: bigint;
}

/** A string literal with escapes already decoded (`\n`, `\t`, `\"`, `\\`, `\xNN`, octal). */
export interface StrLit extends ExprBase {
  kind: 'StrLit';
  value: string;
  /**
   * The literal's exact bytes, without a NUL terminator: source characters UTF-8 encoded, `\xNN`/octal escapes as
   * the raw byte (in `value` such a byte b is the code unit b, so `value` alone cannot tell "\xc3\xa9" from "é").
   * Set by the parser.
   */
  bytes?: Uint8Array;
}

export interface BoolLit extends ExprBase {
  kind: 'BoolLit';
  value: boolean;
}

/**
 * A builtin identifier: `pid`, `tid`, `uid`, `gid`, `comm`, `nsecs`, `elapsed`, `cpu`, `probe`, `cpid`, `args`,
 * `arg0`..`argN`, `retval`, `func`, `curtask`, `kstack`, `ustack`, ... (bpftrace `docs/language.md` builtins).
 */
export interface BuiltinExpr extends ExprBase {
  kind: 'BuiltinExpr';
  name: string;
  /** Set by semantic analysis when `name` is a kernel enumerator from BTF (`TCP_ESTABLISHED`): its value. */
  enumValue?: bigint;
}

/** `$1`..`$N` (index >= 1) or `$#` (index 0 with count = true). */
export interface PositionalExpr extends ExprBase {
  kind: 'PositionalExpr';
  index: number;
  count: boolean;
}

/** A scratch variable `$name`. */
export interface VarExpr extends ExprBase {
  kind: 'VarExpr';
  name: string;
}

/** `@`, `@name`, `@name[k]`, `@name[k1, k2]` (several keys form a tuple key). `name` includes no '@'; '' for `@`. */
export interface MapExpr extends ExprBase {
  kind: 'MapExpr';
  name: string;
  keys: Expr[];
}

/** A function call: `count()`, `printf("%d\n", x)`, `str(args.filename, 8)`, `hist(x)`, `exit()`. */
export interface CallExpr extends ExprBase {
  kind: 'CallExpr';
  name: string;
  args: Expr[];
  /**
   * Set by semantic analysis for str/buf/macaddr/join: the memory their first argument's address points into
   * (user or kernel; the pointer's own space when it is a pointer).
   */
  space?: AddrSpace;
  /**
   * Set by semantic analysis for str(): bytes the helper may read when more than the result's size (current
   * bpftrace's `pad_max_strlen()`: one more than `max_strlen` below 1024, so a string that fills the result without
   * its NUL is known to be truncated and prints with `str_trunc_trailer`).
   */
  strRead?: number;
  /**
   * `typeof(...)` written where a value is (a macro's argument: `m(typeof(uint64*))`), kept as its TypeSpec; the
   * macro expander writes it where the macro's parameter names a type (lang/passes/macros.ts), anywhere else it is
   * an error. `args` is then empty.
   */
  typeArg?: TypeSpec;
}

export type BinaryOp =
  '+' | '-' | '*' | '/' | '%' | '&' | '|' | '^' | '<<' | '>>' | '==' | '!=' | '<' | '<=' | '>' | '>=' | '&&' | '||';

export interface BinaryExpr extends ExprBase {
  kind: 'BinaryExpr';
  op: BinaryOp;
  left: Expr;
  right: Expr;
}

/** `!x`, `~x`, `-x`, `*ptr` (deref), `&x` (address-of) */
export interface UnaryExpr extends ExprBase {
  kind: 'UnaryExpr';
  op: '!' | '~' | '-' | '*' | '&';
  operand: Expr;
}

/** `x++`, `++x`, `@m[k]--`, ... on a map or variable. */
export interface IncDecExpr extends ExprBase {
  kind: 'IncDecExpr';
  op: '++' | '--';
  prefix: boolean;
  target: MapExpr | VarExpr;
}

export interface TernaryExpr extends ExprBase {
  kind: 'TernaryExpr';
  cond: Expr;
  then: Expr;
  else: Expr;
}

/** `args.filename`, `args->filename`, `$task->pid`, `$tuple.0` (numeric field on tuples). */
export interface FieldExpr extends ExprBase {
  kind: 'FieldExpr';
  object: Expr;
  field: string;
  arrow: boolean;
}

export interface IndexExpr extends ExprBase {
  kind: 'IndexExpr';
  object: Expr;
  index: Expr;
}

export interface CastExpr extends ExprBase {
  kind: 'CastExpr';
  typeSpec: TypeSpec;
  operand: Expr;
}

export interface TupleExpr extends ExprBase {
  kind: 'TupleExpr';
  elems: Expr[];
  /** A record `(a = 1, b = "x")`: the field names, one per element. */
  names?: string[];
}

/** `a..b` (only in `for` ranges). */
export interface RangeExpr extends ExprBase {
  kind: 'RangeExpr';
  start: Expr;
  end: Expr;
}

export interface SizeofExpr extends ExprBase {
  kind: 'SizeofExpr';
  /** sizeof(TYPE) or sizeof(expr) */
  target: TypeSpec | Expr;
}

export interface OffsetofExpr extends ExprBase {
  kind: 'OffsetofExpr';
  typeSpec: TypeSpec;
  field: string;
}

/** `{ stmt; stmt; expr }` used as an expression (newer bpftrace). */
export interface BlockExpr extends ExprBase {
  kind: 'BlockExpr';
  stmts: Stmt[];
  value: Expr;
}
