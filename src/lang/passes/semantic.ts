/**
 * Semantic analysis: types every expression, infers map key/value types across all probes (a fixed-point over the
 * program, since a map may be read in one probe before the probe that assigns it), and reports bpftrace's errors
 * (type mismatches, aggregations not assigned to maps, unknown builtins, bad printf arguments, ...).
 *
 * Typing rules follow bpftrace (`src/ast/passes/semantic_analyser.cpp`, `docs/language.md`):
 * - integer literals are int64; `pid`/`tid`/`uid`/`gid`/`cpu` are uint32; `nsecs`/`elapsed` uint64; `comm` string[16];
 * - arithmetic is done in 64 bits; the result is signed when either operand is (shifts: when the left one is);
 * - `/` and `%` are unsigned divisions and `>>` a logical shift, as current bpftrace's codegen does;
 * - comparisons and `!`, `&&`, `||` give a bool (current bpftrace; 0.17 gave 0/1 integers, see docs/compat.md);
 * - maps and variables store integers widened to 64 bits; strings unify to the largest size assigned.
 */

import type { ExpandedProbe } from '../probe.js';
import type { Target } from '../target.js';
import {
  BUILTIN_FUNCTIONS,
  builtinFunction,
  FIXED_TYPE_VARIABLES,
  FUNCTION_NAMES,
  isAggregationFunction,
  statusOf,
  variableNamed,
  type BuiltinChecker,
} from '../builtins/registry.js';
import { DEFAULT_STACK_LIMIT } from '../builtins/stack.js';
import { sameShape, storageType, unify, withNames } from '../typeops.js';
import { PT_REGS_CONTEXTS } from '../ptregs.js';
import type { AssignStmt, Block, CallExpr, Expr, MapExpr, Probe, Span, Stmt, TypeSpec, VarExpr } from '../ast.js';
import { positionalInt } from '../lexer.js';
import { isBuiltinName } from '../parser.js';
import { btfEnumByName, btfEnumInfo, btfRecordByName, kernelBtf, recordFields, withBtf } from '../btf-types.js';
import type { CTypes } from '../cdefs.js';
import { CompileError, type Diagnostic } from '../diagnostics.js';
import { closestNames, didYouMean } from '../suggest.js';
import { userVarName } from './varscope.js';
import {
  type AddrSpace,
  type RecordField,
  BOOL,
  DEFAULT_STRLEN,
  I64,
  isAggregation,
  type SType,
  sizeOf,
  stringType,
  typeKey,
  typeName,
  U32,
  U64,
} from '../types.js';

/** A map after analysis: its key element types (`[]` for `@x`) and value type. */
export interface MapSymbol {
  name: string;
  keyTypes: SType[];
  valueType: SType;
  /** First place it was assigned, for messages. */
  pos: Span;
}

/** One probe body compiled for one expanded attach point. */
export interface ProbeUnit {
  probe: Probe;
  expanded: ExpandedProbe;
  /** Index of the AST probe in the program (for naming). */
  probeIndex: number;
}

export interface AnalysisOptions {
  /** Positional parameters `$1..$N` as given on the command line. */
  positional: string[];
  /** Named program options after `--` (`--aa=5`, `--dd` → true), read by getopt(). */
  named?: Map<string, string | true>;
  /** Child pid for `cpid` (`-c`), if any. */
  cpid?: number;
  /** Size of the `probe` builtin's string (longest probe name + 1). */
  probeNameSize: number;
  /** `--unsafe`: allow signal() and other functions with side effects on the system. */
  unsafe?: boolean;
  /** `max_strlen` config: size of strings read by str() (default 64 bytes). */
  maxStrlen?: number;
  /** The program's own C struct/union/enum definitions (lang/cdefs.ts); they take precedence over BTF. */
  cTypes?: CTypes;
  /** Host facts: kernel symbols (kaddr, percpu_kaddr), cgroup ids (cgroupid), uaddr() resolution. */
  target: Target;
}

/** The clocks of `nsecs(mode)` (bpftrace's TimestampMode): declared with nsecs in lang/builtins/time.ts. */
export { NSECS_CLOCKS } from '../builtins/time.js';

export { DEFAULT_STACK_LIMIT, MAX_STACK_LIMIT } from '../builtins/stack.js';

/** A kernel enumerator by name from BTF, or undefined (also when the kernel has no BTF). */
function kernelEnumerator(name: string): { value: bigint; type: SType } | undefined {
  try {
    const btf = kernelBtf();
    const v = btf.enumerator(name);
    if (!v) return undefined;
    const info = btfEnumInfo(btf, v.enumId);
    return { value: v.value, type: info ? { kind: 'int', size: 8, signed: false, enum: info } : U64 };
  } catch {
    return undefined;
  }
}

/** The largest struct copied as a value onto the BPF stack, bytes. */
const MAX_STRUCT_VALUE = 256;

/**
 * Every function name the analyser accepts (the registry's implemented functions): the candidates of "Did you
 * mean" after "Unknown function". test/lang/suggest.test.ts checks each one is accepted.
 */
export { FUNCTION_NAMES } from '../builtins/registry.js';

/**
 * Analyse a whole program. Returns the map table; annotates nothing permanently (call `typeUnit` per unit before
 * code generation). Throws CompileError with every diagnostic found.
 */
export class Analyzer {
  readonly maps = new Map<string, MapSymbol>();
  /** Option names getopt() reads (compile() rejects other named options). */
  /** Named program options the program reads with getopt(): name → description ('' when none is given). */
  readonly getopts = new Map<string, string>();
  private diags: Diagnostic[] = [];
  private final = false;
  private vars = new Map<string, SType>();
  private addressTaken = new Set<string>();
  /** Address spaces carried by integer/struct scratch variables of the unit (see {@link spaceOf}). */
  private varSpaces = new Map<string, AddrSpace>();
  private unit: ProbeUnit | null = null;
  private changed = false;
  /** Expressions being indexed (`x[i]`): BTF array fields may be read only element by element. */
  private readonly indexing = new WeakSet<Expr>();
  /** Nesting depth of while/for loops (break/continue are valid inside). */
  private loopDepth = 0;

  constructor(
    readonly units: ProbeUnit[],
    readonly opts: AnalysisOptions,
  ) {}

  /** Infer map types to a fixed point, then check every unit with errors on. */
  analyze(): void {
    for (let iter = 0; iter < 8; iter++) {
      this.changed = false;
      this.final = false;
      for (const u of this.units) this.typeUnit(u, false);
      if (!this.changed) break;
    }
    this.final = true;
    this.diags = [];
    for (const u of this.units) this.typeUnit(u, true);
    const errors = this.diags.filter((d) => d.severity === 'error');
    if (errors.length) throw new CompileError(dedupe(this.diags));
  }

  /** Scratch variables of the unit typed last, with their storage types. */
  get variables(): ReadonlyMap<string, SType> {
    return this.vars;
  }

  /** Scratch variables of the unit typed last whose address is taken (`&$x`). */
  get addressTakenVariables(): ReadonlySet<string> {
    return this.addressTaken;
  }

  /** Warnings collected by the final pass. */
  get warnings(): Diagnostic[] {
    return this.diags.filter((d) => d.severity === 'warning');
  }

  /** Type one unit's predicate and body (annotating `expr.type`); used again right before its codegen. */
  typeUnit(u: ProbeUnit, final: boolean): void {
    this.final = final;
    this.unit = u;
    this.vars = new Map();
    this.untyped = new Set();
    this.addressTaken = new Set();
    this.varSpaces = new Map();
    if (u.probe.predicate) this.expr(u.probe.predicate);
    this.block(u.probe.body);
    this.varMemo.set(u, new Map(this.vars));
  }

  /** `let $x;` variables of the unit being typed (typed by a later assignment; zero until then). */
  private untyped = new Set<string>();
  /** Each unit's variable types from its previous typing: a `let $x;` read before its assignment takes them. */
  private readonly varMemo = new Map<ProbeUnit, Map<string, SType>>();

  /** Records an error (on the final typing only); `hint` is printed after the source marker ("Did you mean"). */
  private error(pos: Span | undefined, message: string, hint?: string): void {
    if (!this.final) return;
    this.diags.push({ severity: 'error', message, ...(pos ? { pos } : {}), ...(hint ? { hint } : {}) });
  }

  private warn(pos: Span, message: string): void {
    if (this.final) this.diags.push({ severity: 'warning', message, pos });
  }

  private block(b: Block): void {
    for (const s of b.stmts) this.stmt(s);
  }

  private stmt(s: Stmt): void {
    switch (s.kind) {
      case 'ExprStmt':
        this.exprStatement(s.expr);
        return;
      case 'AssignStmt':
        this.assign(s);
        return;
      case 'VarDeclStmt': {
        if (s.value) {
          if (s.typeName?.of) this.typeCall(s.typeName);
          const t = this.expr(s.value);
          if (t) this.defineVar(s.variable, storageType(t));
          this.noteVarSpace(s.variable.name, s.value);
        } else if (s.typeName && (!s.typeName.of || this.typeCall(s.typeName) !== null)) {
          const m = /^(u?)int(8|16|32|64)$/.exec(s.typeName.name);
          const spec = s.typeName;
          if (m && spec.pointerDepth === 0 && spec.arrayCount === null) {
            this.defineVar(
              s.variable,
              storageType({ kind: 'int', size: (Number(m[2]) / 8) as 1 | 2 | 4 | 8, signed: !m[1] }),
            );
          } else if (spec.pointerDepth > 0 && spec.arrayCount === null && (m || this.namedType(spec.name))) {
            // `let $f: struct task_struct *;` (bpftrace variable "variable declaration with builtin")
            let t: SType = m
              ? { kind: 'int', size: (Number(m[2]) / 8) as 1 | 2 | 4 | 8, signed: !m[1] }
              : this.namedType(spec.name)!;
            // a declared pointer points where the probe's plain addresses do (as a cast of an integer would)
            for (let i = 0; i < spec.pointerDepth; i++) t = { kind: 'pointer', to: t, space: this.probeSpace() };
            this.defineVar(s.variable, t);
          } else if (s.typeName.name !== 'string') {
            this.error(s.typeName.pos, `Declaring a variable of type '${s.typeName.name}' is not supported yet`);
          }
        }
        // `let $x;`: the first assignment gives the type; until then the variable reads as zero
        if (!s.value && !s.typeName) this.untyped.add(s.variable.name);
        return;
      }
      case 'IfStmt':
        this.condition(s.cond);
        this.block(s.then);
        if (s.else) this.stmt(s.else);
        return;
      case 'Block':
        this.block(s);
        return;
      case 'WhileStmt':
        this.condition(s.cond);
        this.loopDepth++;
        this.block(s.body);
        this.loopDepth--;
        return;
      case 'UnrollStmt': {
        const n = this.constValue(s.count);
        if (n === null) this.error(s.count.pos, 'unroll count must be an integer literal');
        else if (n < 1n) this.error(s.count.pos, 'unroll minimum value is 1');
        else if (n > 100n) this.error(s.count.pos, 'unroll maximum value is 100');
        this.block(s.body);
        return;
      }
      case 'ForStmt': {
        if (s.iterable.kind === 'MapExpr') {
          const kv = this.mapLoopType(s.iterable);
          // (without a type for the loop variable the body would only repeat the error as undefined variables)
          if (!kv) return;
          this.defineVar(s.variable, kv);
          this.loopDepth++;
          this.block(s.body);
          this.loopDepth--;
          return;
        }
        const a = this.expr(s.iterable.start);
        const b = this.expr(s.iterable.end);
        for (const [t, x] of [
          [a, s.iterable.start],
          [b, s.iterable.end],
        ] as const) {
          if (t && t.kind !== 'int') this.error(x.pos, `Loop range bounds must be integers (${typeName(t)} provided)`);
        }
        this.defineVar(s.variable, I64);
        this.loopDepth++;
        this.block(s.body);
        this.loopDepth--;
        return;
      }
      case 'JumpStmt':
        if (s.jump !== 'return' && this.loopDepth === 0) this.error(s.pos, `'${s.jump}' is only valid inside a loop`);
        if (s.value) {
          // `return $a;` in a probe (bpftrace basic "probe return"): the value is evaluated; the probe's result stays
          // bpfscope's own (a program's return code only matters to the kernel, e.g. for perf event sampling)
          const t = this.expr(s.value);
          if (t && t.kind !== 'int' && t.kind !== 'bool')
            this.error(s.value.pos, `return expects an integer (${typeName(t)} provided)`);
        }
        return;
    }
  }

  private condition(e: Expr): void {
    const t = this.expr(e);
    if (t && t.kind !== 'int' && t.kind !== 'bool' && t.kind !== 'pointer') {
      this.error(e.pos, `Invalid condition: ${typeName(t)} is not an integer`);
    }
  }

  private exprStatement(e: Expr): void {
    if (e.kind === 'CallExpr' && isAggregationFunction(e.name)) {
      this.error(e.pos, `${e.name}() should be directly assigned to a map`);
      return;
    }
    if (e.kind === 'CallExpr' || e.kind === 'IncDecExpr') {
      this.expr(e);
      return;
    }
    this.expr(e);
  }

  private defineVar(v: VarExpr, t: SType): void {
    const prev = this.vars.get(v.name);
    if (!prev) {
      this.vars.set(v.name, t);
      v.type = t;
      return;
    }
    const u = unify(prev, t);
    if (!u) {
      this.error(
        v.pos,
        `Type mismatch for $${userVarName(v.name)}: trying to assign value of type '${typeName(t)}' when variable already contains a value of type '${typeName(prev)}'`,
      );
      return;
    }
    this.vars.set(v.name, u);
    v.type = u;
  }

  private mapKeyTypes(m: MapExpr): SType[] | null {
    const out: SType[] = [];
    for (const k of m.keys) {
      const t = this.expr(k);
      if (!t) return null;
      if (t.kind === 'none' || isAggregation(t)) {
        this.error(k.pos, `Invalid map key type: ${typeName(t)}`);
        return null;
      }
      if (t.kind === 'record' && !this.structValueFits(k.pos, t)) return null;
      out.push(storageType(t));
    }
    // `@a[$t]` with $t a tuple is `@a[$t.0, $t.1, ...]`: several keys are one tuple key (bpftrace prints both alike)
    const only = out.length === 1 ? out[0]! : undefined;
    if (only?.kind === 'tuple' && !only.names && only.elems.length > 1) return only.elems;
    return out;
  }

  /**
   * `getopt(name[, default[, description]])` (bpftrace docs/stdlib.md): a named program option given after `--`,
   * typed by the default (no default: a bool flag; an integer: int64 when negative, else uint64; a string). The
   * value is a compile-time constant stored on the call (`getoptValue`); a value of the wrong type is an error.
   */
  /**
   * A C struct copied as a value (`print(*p)`, `@x = args`, `@[*p]`) lives on the 512-byte BPF stack: at most
   * MAX_STRUCT_VALUE bytes. Reports a positioned error otherwise.
   */
  private structValueFits(pos: Span, t: Extract<SType, { kind: 'record' }>): boolean {
    if (t.size <= MAX_STRUCT_VALUE) return true;
    this.error(
      pos,
      `${t.name} is ${t.size} bytes: struct values larger than ${MAX_STRUCT_VALUE} bytes (the BPF stack is 512) are not supported yet; read its fields instead`,
    );
    return false;
  }

  /** Record/unify a map's type at an assignment site. */
  private defineMap(m: MapExpr, keyTypes: SType[], valueType: SType): void {
    const prev = this.maps.get(m.name);
    const label = m.name === '' ? '@' : `@${m.name}`;
    if (!prev) {
      this.maps.set(m.name, { name: m.name, keyTypes, valueType, pos: m.pos });
      this.changed = true;
      m.type = valueType;
      return;
    }
    if (prev.keyTypes.length !== keyTypes.length || !prev.keyTypes.every((k, i) => sameShape(k, keyTypes[i]!))) {
      this.error(
        m.pos,
        `Argument mismatch for ${label}: trying to access with arguments: [${keyTypes.map(typeName).join(', ')}] when map expects arguments: [${prev.keyTypes.map(typeName).join(', ')}]`,
      );
      return;
    }
    const keys = prev.keyTypes.map((k, i) => unify(k, keyTypes[i]!)!);
    let value: SType | null;
    if (isAggregation(prev.valueType) || isAggregation(valueType)) {
      value = typeKey(prev.valueType) === typeKey(valueType) ? prev.valueType : null;
      if (!value && prev.valueType.kind === valueType.kind && valueType.kind !== 'lhist') value = prev.valueType;
    } else {
      value = unify(prev.valueType, valueType);
    }
    if (!value) {
      this.error(
        m.pos,
        `Type mismatch for ${label}: trying to assign value of type '${typeName(valueType)}' when map already contains a value of type '${typeName(prev.valueType)}'`,
      );
      return;
    }
    if (typeKey(value) !== typeKey(prev.valueType) || keys.map(typeKey).join() !== prev.keyTypes.map(typeKey).join()) {
      this.changed = true;
    }
    prev.keyTypes = keys;
    prev.valueType = value;
    m.type = value;
  }

  private assign(s: AssignStmt): void {
    const target = s.target;
    const v = s.value;
    if (target.kind === 'MapExpr') {
      const keys = this.mapKeyTypes(target);
      if (v.kind === 'CallExpr' && isAggregationFunction(v.name)) {
        if (s.op !== '=') this.error(s.pos, `${v.name}() can only be assigned with '='`);
        const t = this.aggregation(v);
        if (t && keys) this.defineMap(target, keys, t);
        return;
      }
      const t = this.expr(v);
      if (!t || !keys) return;
      if (t.kind === 'none') {
        this.error(v.pos, `Cannot assign a value of type none to a map`);
        return;
      }
      if (s.op !== '=') {
        if (t.kind !== 'int' && t.kind !== 'bool') this.error(v.pos, `Compound assignment needs an integer value`);
        const prev = this.maps.get(target.name);
        if (prev?.valueType.kind === 'pointer' && (s.op === '+=' || s.op === '-=')) {
          this.defineMap(target, keys, prev.valueType);
          return;
        }
        if (prev && prev.valueType.kind !== 'int' && !isAggregation(prev.valueType)) {
          this.error(target.pos, `Compound assignment to a map of type ${typeName(prev.valueType)}`);
        }
        if (prev && isAggregation(prev.valueType)) {
          this.error(target.pos, `Compound assignment to an aggregation map is not supported`);
          return;
        }
      }
      if (t.kind === 'record' && !this.structValueFits(v.pos, t)) return;
      this.defineMap(target, keys, storageType(t));
      return;
    }
    // variable
    const t = this.expr(v);
    if (!t) return;
    if (v.kind === 'CallExpr' && isAggregationFunction(v.name)) return;
    if (t.kind === 'none') {
      this.error(v.pos, `Cannot assign a value of type none to a variable`);
      return;
    }
    if (s.op !== '=') {
      const prev = this.vars.get(target.name);
      if (!prev) {
        this.error(target.pos, `Undefined or undeclared variable: $${userVarName(target.name)}`);
        return;
      }
      const pointerStep = prev.kind === 'pointer' && (s.op === '+=' || s.op === '-=');
      if (prev.kind !== 'int' && !pointerStep)
        this.error(target.pos, `Compound assignment to a variable of type ${typeName(prev)}`);
      target.type = prev;
      return;
    }
    if (t.kind === 'record' && !this.structValueFits(v.pos, t)) return;
    this.defineVar(target, storageType(t));
    this.noteVarSpace(target.name, v);
  }

  /**
   * The address space of the memory a plain value points into or was read from, as bpftrace's AddrSpace on
   * non-pointer types (src/ast/passes/types/type_resolver.cpp): a pointer's own space; `*p`, `p->f`, `p[i]`, `s.f`
   * take their object's; casts keep their operand's; arithmetic takes the left operand's, else the right one's;
   * kaddr() is kernel; `args` is user in uprobes and `syscalls:*` tracepoints, kernel elsewhere; a variable keeps
   * its value's. undefined: none known (plain integers such as arg0, retval, reg(), literals), which means the
   * probe's own space ({@link probeSpace}).
   */
  private spaceOf(e: Expr): AddrSpace | undefined {
    if (e.type?.kind === 'pointer') return e.type.space;
    switch (e.kind) {
      case 'UnaryExpr':
        return e.op === '&' ? 'kernel' : this.spaceOf(e.operand);
      case 'FieldExpr':
      case 'IndexExpr':
        return this.spaceOf(e.object);
      case 'CastExpr':
        return this.spaceOf(e.operand);
      case 'BinaryExpr':
        if (!['+', '-', '*', '/', '%', '&', '|', '^', '<<', '>>'].includes(e.op)) return undefined;
        return this.spaceOf(e.left) ?? this.spaceOf(e.right);
      case 'CallExpr':
        return e.name === 'kaddr' || e.name === 'percpu_kaddr' ? 'kernel' : undefined;
      case 'BuiltinExpr': {
        if (e.name !== 'args' || !this.unit) return undefined;
        const x = this.unit.expanded;
        if (x.provider === 'tracepoint') return x.name.startsWith('tracepoint:syscalls:') ? 'user' : 'kernel';
        return this.probeSpace();
      }
      case 'VarExpr':
        return this.varSpaces.get(e.name);
      default:
        return undefined;
    }
  }

  /**
   * Where a plain integer used as an address points in this probe (bpftrace find_addrspace): user memory in
   * uprobe/uretprobe/usdt, kernel memory elsewhere (bpftrace uses the legacy bpf_probe_read in BEGIN/END,
   * interval and profile probes, where bpfscope reads kernel memory).
   */
  private probeSpace(): AddrSpace {
    const p = this.unit?.expanded.provider;
    return p === 'uprobe' || p === 'uretprobe' || p === 'usdt' ? 'user' : 'kernel';
  }

  /** The address space an integer-valued expression points into, when used as an address. */
  private addressSpace(e: Expr): AddrSpace {
    return this.spaceOf(e) ?? this.probeSpace();
  }

  private noteVarSpace(name: string, value: Expr): void {
    const sp = this.spaceOf(value);
    if (sp) this.varSpaces.set(name, sp);
    else this.varSpaces.delete(name);
  }

  /**
   * A pointer read out of user memory points into user memory (bpftrace SizedType::GetPointeeTy); one read out of
   * kernel memory keeps its declared space (kernel, or user for BTF's `__user` tag).
   */
  private inSpace(t: SType, space: AddrSpace | undefined): SType {
    return t.kind === 'pointer' && space === 'user' && t.space !== 'user' ? { ...t, space } : t;
  }

  /** Type an aggregation call (`count()`, `hist(x)`, ...) and check its arguments. */
  private aggregation(c: CallExpr): SType | null {
    const args = c.args.map((a) => this.expr(a));
    const need = (n: number, m = n): boolean => {
      if (c.args.length < n || c.args.length > m) {
        this.error(
          c.pos,
          `${c.name}() requires ${n === m ? n : `${n}-${m}`} argument${m === 1 ? '' : 's'} (${c.args.length} provided)`,
        );
        return false;
      }
      return true;
    };
    const intArg = (i: number): boolean => {
      const t = args[i];
      if (t && t.kind !== 'int' && t.kind !== 'bool') {
        this.error(c.args[i]!.pos, `${c.name}() only supports integer arguments (${typeName(t)} provided)`);
        return false;
      }
      return true;
    };
    const signed = (i: number): boolean => {
      const t = args[i];
      return !!t && t.kind === 'int' && t.signed;
    };
    switch (c.name) {
      case 'count':
        if (!need(0)) return null;
        c.type = { kind: 'count' };
        return c.type;
      case 'sum':
      case 'avg':
      case 'min':
      case 'max':
      case 'stats':
        if (!need(1) || !intArg(0)) return null;
        c.type = { kind: c.name, signed: signed(0) } as SType;
        return c.type;
      case 'hist': {
        if (!need(1, 2) || !intArg(0)) return null;
        let bits = 0;
        if (c.args.length === 2) {
          const k = this.constInt(c.args[1]!, 'hist: bits');
          if (k === null) return null;
          if (k < 0 || k > 5) {
            this.error(c.args[1]!.pos, `hist: bits must be between 0 and 5 (${k} provided)`);
            return null;
          }
          bits = k;
        }
        c.type = { kind: 'hist', bits };
        return c.type;
      }
      case 'lhist': {
        if (!need(4) || !intArg(0)) return null;
        const min = this.constInt(c.args[1]!, 'lhist: min');
        const max = this.constInt(c.args[2]!, 'lhist: max');
        const step = this.constInt(c.args[3]!, 'lhist: step');
        if (min === null || max === null || step === null) return null;
        if (step <= 0) {
          this.error(c.args[3]!.pos, 'lhist() step must be >= 1');
          return null;
        }
        if (min < 0) {
          this.error(c.args[1]!.pos, 'lhist() min must be non-negative');
          return null;
        }
        if (min > max) {
          this.error(c.args[1]!.pos, 'lhist() min must be less than max');
          return null;
        }
        if ((max - min) / step > 1000) {
          this.error(c.pos, 'lhist() too many buckets, must be <= 1000 (rows = (max - min) / step)');
          return null;
        }
        c.type = { kind: 'lhist', min, max, step };
        return c.type;
      }
    }
    return null;
  }

  /** Evaluate a compile-time integer (literal, positional parameter, negation). */
  constInt(e: Expr, what: string): number | null {
    const v = this.constValue(e);
    if (v === null) {
      this.error(e.pos, `${what} must be an integer literal`);
      return null;
    }
    return Number(v);
  }

  /** Whether `e` is a compile-time integer (a literal, possibly negated or cast). */
  isConstInt(e: Expr): boolean {
    return this.constValue(e) !== null;
  }

  private constValue(e: Expr): bigint | null {
    if (e.kind === 'IntLit') return e.value;
    if (e.kind === 'UnaryExpr' && e.op === '-') {
      const v = this.constValue(e.operand);
      return v === null ? null : -v;
    }
    if (e.kind === 'PositionalExpr') {
      if (e.count) return BigInt(this.opts.positional.length);
      const s = this.opts.positional[e.index - 1];
      const v = s === undefined ? undefined : positionalInt(s);
      if (v !== undefined) return v;
    }
    return null;
  }

  /** Type an expression; returns null when unknown (only during inference). */
  expr(e: Expr): SType | null {
    const t = this.exprInner(e);
    if (t) e.type = t;
    return t;
  }

  private exprInner(e: Expr): SType | null {
    switch (e.kind) {
      case 'IntLit':
        return e.value > 0x7fffffffffffffffn ? U64 : I64;
      case 'StrLit':
        return stringType((e.bytes?.length ?? Buffer.byteLength(e.value)) + 1);
      case 'BoolLit':
        return BOOL;
      case 'BuiltinExpr': {
        // an identifier that is no builtin may be a kernel enumerator (bpftrace resolves them from BTF)
        if (!isBuiltinName(e.name)) {
          // typed as its enum (64-bit, as bpftrace), so that it prints as its name
          const v = this.opts.cTypes?.enumerators.get(e.name) ?? kernelEnumerator(e.name);
          if (v) {
            e.enumValue = v.value;
            const info = v.type.kind === 'int' ? v.type.enum : undefined;
            if (info) return { kind: 'int', size: 8, signed: false, enum: info };
            return v.value < 0n ? I64 : U64;
          }
        }
        return this.builtin(e.name, e.pos);
      }
      case 'PositionalExpr': {
        if (e.count) return I64;
        const s = this.opts.positional[e.index - 1];
        if (s === undefined) {
          // bpftrace: an unset positional parameter is 0 / "" (with a check only in str())
          return I64;
        }
        return positionalInt(s) !== undefined ? I64 : stringType(Buffer.byteLength(s) + 1);
      }
      case 'VarExpr': {
        let t = this.vars.get(e.name);
        if (!t && this.untyped.has(e.name)) {
          // read before the assignment that types it (bpftrace: zero of that type): the type a previous pass saw, or
          // a provisional integer in the first pass
          t = this.varMemo.get(this.unit!)?.get(e.name) ?? (this.final ? undefined : I64);
        }
        if (!t) {
          this.error(e.pos, `Undefined or undeclared variable: $${userVarName(e.name)}`);
          return null;
        }
        return t;
      }
      case 'MapExpr': {
        const keys = this.mapKeyTypes(e);
        const m = this.maps.get(e.name);
        if (!m) {
          this.error(e.pos, `Undefined map: ${e.name === '' ? '@' : `@${e.name}`}`, this.mapHint(e.name));
          return null;
        }
        if (keys && (keys.length !== m.keyTypes.length || !keys.every((k, i) => sameShape(k, m.keyTypes[i]!)))) {
          const label = e.name === '' ? '@' : `@${e.name}`;
          this.error(
            e.pos,
            `Argument mismatch for ${label}: trying to access with arguments: [${keys.map(typeName).join(', ')}] when map expects arguments: [${m.keyTypes.map(typeName).join(', ')}]`,
          );
        }
        const vt = m.valueType;
        if (vt.kind === 'count' || vt.kind === 'sum' || vt.kind === 'min' || vt.kind === 'max' || vt.kind === 'avg') {
          // combined over the CPUs at run time (codegen aggregateRead)
          return vt.kind === 'count' ? U64 : (vt as { signed: boolean }).signed ? I64 : U64;
        }
        if (vt.kind === 'stats' || vt.kind === 'hist' || vt.kind === 'lhist') {
          this.error(e.pos, `Reading a ${vt.kind}() map in an expression is not supported`);
          return null;
        }
        return vt;
      }
      case 'CallExpr':
        return this.call(e);
      case 'BinaryExpr': {
        const l = this.expr(e.left);
        const r = this.expr(e.right);
        if (!l || !r) return null;
        if (e.op === '&&' || e.op === '||') {
          for (const [t, x] of [
            [l, e.left],
            [r, e.right],
          ] as const) {
            if (t.kind !== 'int' && t.kind !== 'bool' && t.kind !== 'pointer') {
              this.error(x.pos, `Invalid operand of type ${typeName(t)} for '${e.op}'`);
            }
          }
          return BOOL;
        }
        if (l.kind === 'string' || r.kind === 'string' || l.kind === 'buffer' || r.kind === 'buffer') {
          // strings with strings, buffers with buffers (bpftrace variable:buf_equality), by == and != only
          if (l.kind !== r.kind || (e.op !== '==' && e.op !== '!=')) {
            this.error(e.pos, `Type mismatch for '${e.op}': comparing '${typeName(l)}' with '${typeName(r)}'`);
            return null;
          }
          return BOOL;
        }
        const isNum = (t: SType): boolean => t.kind === 'int' || t.kind === 'bool' || t.kind === 'pointer';
        if (!isNum(l) || !isNum(r)) {
          this.error(e.pos, `Type mismatch for '${e.op}': comparing '${typeName(l)}' with '${typeName(r)}'`);
          return null;
        }
        if (['==', '!=', '<', '<=', '>', '>='].includes(e.op)) return BOOL;
        // C pointer arithmetic: pointer +/- integer stays a pointer, moved by whole elements
        if (l.kind === 'pointer' && r.kind !== 'pointer' && (e.op === '+' || e.op === '-')) return l;
        if (r.kind === 'pointer' && l.kind !== 'pointer' && e.op === '+') return r;
        const signed = e.op === '<<' || e.op === '>>' ? isSigned(l) : isSigned(l) || isSigned(r);
        if ((e.op === '/' || e.op === '%') && isSigned(l) && isSigned(r)) {
          this.warn(
            e.pos,
            `signed operands for '${e.op}' can lead to undefined behavior (cast to unsigned to silence warning)`,
          );
        }
        return signed ? I64 : U64;
      }
      case 'UnaryExpr': {
        const t = this.expr(e.operand);
        if (!t) return null;
        if (e.op === '*') {
          if (t.kind !== 'pointer' || t.to.kind === 'none') {
            this.error(e.pos, `Can not dereference a value of type '${typeName(t)}'`);
            return null;
          }
          const fixed = ['int', 'bool', 'record', 'pointer', 'tuple', 'string', 'username', 'array'];
          if (!fixed.includes(t.to.kind)) {
            this.error(e.pos, `Dereferencing a pointer to ${typeName(t.to)} is not supported yet`);
            return null;
          }
          return this.inSpace(t.to, t.space);
        }
        if (e.op === '&') {
          // `&$x`: the address of a scratch variable's stack slot (bpftrace variable address tests)
          if (e.operand.kind !== 'VarExpr') {
            this.error(e.pos, `The address-of operator is only supported on scratch variables ($x) yet`);
            return null;
          }
          this.addressTaken.add(e.operand.name);
          return { kind: 'pointer', to: t, space: 'kernel' };
        }
        if (t.kind !== 'int' && t.kind !== 'bool' && t.kind !== 'pointer') {
          this.error(e.pos, `Invalid type for unary operator '${e.op}': ${typeName(t)}`);
          return null;
        }
        if (e.op === '!') return BOOL;
        if (e.op === '-') return I64;
        return isSigned(t) ? I64 : U64;
      }
      case 'IncDecExpr': {
        const target = e.target;
        if (target.kind === 'VarExpr') {
          const t = this.vars.get(target.name);
          if (!t) {
            this.error(target.pos, `Undefined or undeclared variable: $${userVarName(target.name)}`);
            return null;
          }
          if (t.kind !== 'int' && t.kind !== 'pointer') this.error(e.pos, `${e.op} needs an integer variable`);
          target.type = t;
          return t;
        }
        const keys = this.mapKeyTypes(target);
        if (!keys) return null;
        const prev = this.maps.get(target.name);
        if (prev && prev.valueType.kind !== 'int' && prev.valueType.kind !== 'pointer') {
          this.error(e.pos, `${e.op} needs a map of integers (${typeName(prev.valueType)} found)`);
          return null;
        }
        // a pointer map stays a pointer map (moved by whole elements)
        this.defineMap(target, keys, prev?.valueType.kind === 'pointer' ? prev.valueType : I64);
        return this.maps.get(target.name)?.valueType ?? I64;
      }
      case 'TernaryExpr': {
        this.condition(e.cond);
        const a = this.expr(e.then);
        const b = this.expr(e.else);
        if (!a || !b) return null;
        if (a.kind === 'none' && b.kind === 'none') return a;
        const u = unify(storageType(a), storageType(b));
        if (!u) {
          this.error(e.pos, `Ternary operator must return the same type: have '${typeName(a)}' and '${typeName(b)}'`);
          return null;
        }
        return u;
      }
      case 'FieldExpr':
        return this.field(e);
      case 'TupleExpr': {
        const elems: SType[] = [];
        for (const x of e.elems) {
          const t = this.expr(x);
          if (!t) return null;
          if (t.kind === 'none' || isAggregation(t)) {
            this.error(x.pos, `Invalid tuple element type: ${typeName(t)}`);
            return null;
          }
          elems.push(storageType(t));
        }
        if (e.names && new Set(e.names).size !== e.names.length) {
          this.error(e.pos, 'Named arguments must be unique');
          return null;
        }
        return withNames({ kind: 'tuple', elems }, e.names);
      }
      case 'CastExpr': {
        if (e.typeSpec.of && this.typeCall(e.typeSpec) === null) return null;
        const t = this.expr(e.operand);
        const spec = e.typeSpec;
        if (spec.pointerDepth === 1 && spec.arrayCount === null && /^(struct|union)\s/.test(spec.name)) {
          const rec = this.namedType(spec.name);
          if (!rec) {
            this.error(spec.pos, `Unknown type: '${spec.name}' (not defined in the program nor in the kernel's BTF)`);
            return null;
          }
          if (t && t.kind !== 'int' && t.kind !== 'pointer')
            this.error(e.pos, `Cannot cast from '${typeName(t)}' to '${spec.name} *'`);
          return { kind: 'pointer', to: rec, space: this.addressSpace(e.operand) };
        }
        const plain = spec.arrayCount === null;
        if (spec.name === 'bool' && spec.pointerDepth === 0 && plain) {
          if (t && t.kind !== 'int' && t.kind !== 'bool' && t.kind !== 'pointer')
            this.error(e.pos, `Cannot cast from '${typeName(t)}' to 'bool'`);
          return BOOL;
        }
        if (spec.name === 'void' && spec.pointerDepth === 1 && plain) {
          if (t && t.kind !== 'int' && t.kind !== 'pointer')
            this.error(e.pos, `Cannot cast from '${typeName(t)}' to 'void *'`);
          return { kind: 'pointer', to: { kind: 'none' }, space: this.addressSpace(e.operand) };
        }
        if (/^enum\s/.test(spec.name) && spec.pointerDepth === 0 && plain) {
          // an enum is an integer of its BTF size (bpftrace: `(enum x)1`)
          const name = spec.name.replace(/^enum\s+/, '').trim();
          const mine = this.opts.cTypes?.enums.get(`enum ${name}`);
          if (mine) {
            if (t && t.kind !== 'int') this.error(e.pos, `Cannot cast from '${typeName(t)}' to '${spec.name}'`);
            return mine;
          }
          const enumType = btfEnumByName(kernelBtf(), name);
          if (!enumType) {
            this.error(spec.pos, `Unknown type: '${spec.name}' (not in the kernel's BTF)`);
            return null;
          }
          if (t && t.kind !== 'int') this.error(e.pos, `Cannot cast from '${typeName(t)}' to '${spec.name}'`);
          return enumType;
        }
        const m = /^(u?)int(8|16|32|64)$/.exec(spec.name);
        if (m && spec.pointerDepth === 1 && spec.arrayCount === null) {
          if (t && t.kind !== 'int' && t.kind !== 'pointer')
            this.error(e.pos, `Cannot cast from '${typeName(t)}' to '${spec.name} *'`);
          const to: SType = { kind: 'int', size: (Number(m[2]) / 8) as 1 | 2 | 4 | 8, signed: m[1] !== 'u' };
          return { kind: 'pointer', to, space: this.addressSpace(e.operand) };
        }
        if ((m || spec.name === 'bool') && spec.pointerDepth === 0 && spec.arrayCount !== null)
          return this.arrayCast(e, t);
        if (!m || spec.pointerDepth > 0 || spec.arrayCount !== null) {
          this.error(spec.pos, `Cast to '${spec.name}${'*'.repeat(spec.pointerDepth)}' is not supported yet`);
          return null;
        }
        const to: SType = { kind: 'int', size: (Number(m[2]) / 8) as 1 | 2 | 4 | 8, signed: m[1] !== 'u' };
        if (t && t.kind === 'array' && t.elem.kind === 'int') {
          // an integer array reinterpreted as one integer of the same size (bpftrace: `(uint32)pton("127.0.0.1")`)
          if (sizeOf(t) !== to.size)
            this.error(
              e.pos,
              `Cannot cast from '${typeName(t)}' (${sizeOf(t)} bytes) to '${spec.name}' (${to.size} bytes)`,
            );
          return to;
        }
        if (t && t.kind !== 'int' && t.kind !== 'bool' && t.kind !== 'pointer') {
          this.error(e.pos, `Cannot cast from '${typeName(t)}' to '${spec.name}'`);
        }
        return to;
      }
      case 'IndexExpr': {
        this.indexing.add(e.object);
        const t = this.expr(e.object);
        this.expr(e.index);
        if (!t) return null;
        if (t.kind === 'array') {
          const idx = this.constValue(e.index);
          if (idx === null) {
            this.error(e.index.pos, 'Array index must be a constant integer for now');
            return null;
          }
          if (idx < 0n || idx >= BigInt(t.count)) {
            this.error(e.index.pos, `Index ${idx} out of bounds for array of size ${t.count}`);
            return null;
          }
          return this.inSpace(t.elem, this.addressSpace(e.object));
        }
        if (t.kind === 'tuple') {
          // `$t[1 + 1]`: a constant index into a tuple is the element access `$t.2` (bpftrace tuples:array-style)
          const idx = this.constValue(e.index);
          if (idx === null || idx < 0n || idx >= BigInt(t.elems.length)) {
            this.error(e.index.pos, `Tuple index must be a constant integer from 0 to ${t.elems.length - 1}`);
            return null;
          }
          Object.assign(e, { kind: 'FieldExpr', field: String(idx) });
          return t.elems[Number(idx)]!;
        }
        if (t.kind === 'string') {
          const it = e.index.type;
          if (it && it.kind !== 'int') {
            this.error(e.index.pos, `The index of [] must be an integer (${typeName(it)} provided)`);
            return null;
          }
          return { kind: 'int', size: 1, signed: true };
        }
        if (t.kind === 'pointer' && (t.to.kind === 'int' || t.to.kind === 'pointer')) {
          const it = e.index.type;
          if (it && it.kind !== 'int') {
            this.error(e.index.pos, `The index of [] must be an integer (${typeName(it)} provided)`);
            return null;
          }
          return this.inSpace(t.to, t.space);
        }
        this.error(e.pos, `The [] operator can not be used on expressions of type ${typeName(t)}`);
        return null;
      }
      case 'SizeofExpr':
      case 'OffsetofExpr': {
        const v = this.constSizeof(e);
        return v === null ? null : U64;
      }
      case 'BlockExpr': {
        for (const st of e.stmts) this.stmt(st);
        return this.expr(e.value);
      }
      case 'RangeExpr':
        this.error(e.pos, `${e.kind.replace('Expr', '')} expressions are not supported yet`);
        return null;
    }
  }

  private builtin(name: string, pos: Span): SType | null {
    const u = this.unit!;
    if (name === 'probe') return stringType(this.opts.probeNameSize);
    if (name === 'probetype') return stringType(16);
    if (name === 'curtask') {
      const task = this.namedType('struct task_struct');
      if (!task) {
        this.error(pos, 'curtask needs struct task_struct in the kernel BTF');
        return null;
      }
      return { kind: 'pointer', to: task, space: 'kernel' };
    }
    if (name === 'kstack' || name === 'ustack') return { kind: name, limit: DEFAULT_STACK_LIMIT, mode: 'bpftrace' };
    if (name === 'cpid') {
      if (this.opts.cpid === undefined) {
        this.error(pos, 'cpid cannot be used without child command (-c)');
        return null;
      }
      return U32;
    }
    if (name === 'args') {
      if (!u.expanded.args) {
        this.error(pos, `The args builtin can not be used with '${u.expanded.provider}' probes`);
        return null;
      }
      return u.expanded.args;
    }
    if (/^arg\d+$/.test(name) && u.expanded.usdtArgs) {
      const a = u.expanded.usdtArgs[Number(name.slice(3))];
      if (!a) {
        this.error(pos, `${name} is not available: ${u.expanded.name} has ${u.expanded.usdtArgs.length} argument(s)`);
        return null;
      }
      return { kind: 'int', size: a.size as 1 | 2 | 4 | 8, signed: a.signed };
    }
    if (/^arg\d+$/.test(name)) {
      const regs = u.expanded.regs;
      const n = Number(name.slice(3));
      if (!regs) {
        this.error(pos, `The ${name} builtin can not be used with '${u.expanded.provider}' probes`);
        return null;
      }
      if (n >= regs.args.length) {
        this.error(pos, `${name} is not available: only arg0..arg${regs.args.length - 1} are passed in registers`);
        return null;
      }
      return U64;
    }
    if (name === 'retval') {
      if (!u.expanded.retprobe || !u.expanded.regs) {
        this.error(pos, `The retval builtin can only be used with return probes (not '${u.expanded.provider}')`);
        return null;
      }
      return U64;
    }
    if (name === 'func') {
      const funcs = u.expanded.funcs ?? (u.expanded.func !== undefined ? [u.expanded.func] : undefined);
      if (funcs === undefined) {
        this.error(pos, `The func builtin can not be used with '${u.expanded.provider}' probes`);
        return null;
      }
      return stringType(funcs.reduce((m, f) => Math.max(m, Buffer.byteLength(f) + 1), 1));
    }
    if (name === 'ctx') {
      // bpftrace: the probe's context pointer; tracepoints: their args struct, register contexts: struct pt_regs
      const p = u.expanded.provider;
      if (p === 'tracepoint' && u.expanded.args) return { kind: 'pointer', to: u.expanded.args, space: 'kernel' };
      if (PT_REGS_CONTEXTS.has(p)) {
        const regs = btfRecordByName(kernelBtf(), 'struct pt_regs');
        if (regs) return { kind: 'pointer', to: regs, space: 'kernel' };
      }
      if (p === 'rawtracepoint' || p === 'fentry' || p === 'fexit')
        return { kind: 'pointer', to: U64, space: 'kernel' };
      this.error(pos, `The ctx builtin can not be used with '${p}' probes`);
      return null;
    }
    if (name === 'usermode') {
      // BEGIN/END run in bpftrace's own process (user-space uprobes there): 1 (tests/runtime/builtin
      // "usermode_builtin_in_begin_end")
      if (!PT_REGS_CONTEXTS.has(u.expanded.provider) && !u.expanded.special) {
        this.error(pos, `The usermode builtin can not be used with '${u.expanded.provider}' probes`);
        return null;
      }
      return { kind: 'int', size: 1, signed: false };
    }
    const t = FIXED_TYPE_VARIABLES.get(name);
    if (!t) {
      const v = variableNamed(name);
      const notYet = v !== undefined && statusOf(v) !== 'yes';
      this.error(
        pos,
        notYet
          ? `${name} is a bpftrace builtin bpfscope does not support yet (see docs/language.md)`
          : `Unknown identifier: '${name}'`,
        notYet ? undefined : didYouMean(closestNames(name, FIXED_TYPE_VARIABLES.keys())),
      );
      return null;
    }
    return t;
  }

  private field(e: Expr & { kind: 'FieldExpr' }): SType | null {
    const t = this.expr(e.object);
    if (!t) return null;
    if (t.kind === 'tuple' && t.names) {
      const i = t.names.indexOf(e.field);
      if (i < 0) {
        this.error(
          e.pos,
          `Record does not contain a field named '${e.field}'`,
          didYouMean(closestNames(e.field, t.names)),
        );
        return null;
      }
      return t.elems[i]!;
    }
    if (t.kind === 'tuple') {
      const i = Number(e.field);
      if (!/^\d+$/.test(e.field) || i >= t.elems.length) {
        this.error(e.pos, `Invalid tuple index: ${e.field}. Found ${t.elems.length} elements in tuple.`);
        return null;
      }
      return t.elems[i]!;
    }
    // `p->field` on a pointer to a struct; `s.field` on a struct reached through a pointer (or args)
    let rec: Extract<SType, { kind: 'record' }> | undefined;
    // current bpftrace also accepts `p.field` on a pointer to a struct (it dereferences implicitly)
    if (t.kind === 'pointer' && t.to.kind === 'record') rec = t.to;
    else if (t.kind === 'record') rec = t;
    if (rec) {
      if (
        rec.btfId !== undefined &&
        e.object.kind !== 'BuiltinExpr' &&
        !e.arrow &&
        t.kind === 'record' &&
        !isLocation(e.object)
      ) {
        this.error(e.pos, `Can not access field '${e.field}' of a struct value: use a pointer (->)`);
        return null;
      }
      rec = rec.btfId === undefined && rec.fields.length === 0 ? withBtf(kernelBtf(), rec) : rec;
      const fields = rec.btfId !== undefined ? recordFields(kernelBtf(), rec) : rec.fields;
      const f = fields.find((x) => x.name === e.field);
      if (!f) {
        const what =
          e.object.kind === 'BuiltinExpr' && e.object.name === 'args' ? `${this.unit!.expanded.name}` : rec.name;
        this.error(
          e.pos,
          `Can't find field '${e.field}' in ${e.object.kind === 'BuiltinExpr' && e.object.name === 'args' ? `args of ${what}` : what}`,
          didYouMean(
            closestNames(
              e.field,
              fields.map((x) => x.name),
            ),
          ),
        );
        return null;
      }
      if (f.type.kind === 'none' || (f.type.kind === 'array' && rec.btfId !== undefined && !this.indexing.has(e))) {
        this.error(
          e.pos,
          `Field '${e.field}' of ${rec.name} has a type bpfscope cannot read yet (${typeName(f.type)})`,
        );
        return null;
      }
      // a pointer field of a struct in user memory points into user memory (bpftrace: the field takes the
      // struct's AddrSpace); a struct value of unknown origin (a map's) takes the probe's
      return this.inSpace(f.type, this.addressSpace(e.object));
    }
    this.error(e.pos, `Can not access field '${e.field}' on expression of type '${typeName(t)}'`);
    return null;
  }

  private call(c: CallExpr): SType | null {
    const builtin = builtinFunction(c.name);
    if (builtin?.role === 'aggregation') {
      this.error(c.pos, `${c.name}() should be directly assigned to a map`);
      c.args.forEach((a) => this.expr(a));
      return null;
    }
    if (builtin?.check) {
      if (builtin.arity && !this.argCount(c, builtin.arity[0], builtin.arity[1])) return null;
      return builtin.check(c, this.builtinChecker());
    }
    const args = c.args;
    if (BUILTIN_FUNCTIONS.has(c.name) || FIXED_TYPE_VARIABLES.has(c.name)) {
      this.error(c.pos, `${c.name}() is a bpftrace function bpfscope does not support yet (see docs/language.md)`);
    } else this.error(c.pos, `Unknown function: '${c.name}'`, didYouMean(closestNames(c.name, FUNCTION_NAMES)));
    args.forEach((a) => this.expr(a));
    return null;
  }

  /**
   * `(intN[K])x` / `(intN[])x`: an integer, string or integer array reinterpreted as an array of K integers (K from
   * the operand's size when omitted), bpftrace's array casts; the sizes must be equal.
   */
  private arrayCast(e: Expr & { kind: 'CastExpr' }, t: SType | null): SType | null {
    const spec = e.typeSpec;
    const m = /^(u?)int(8|16|32|64)$/.exec(spec.name);
    // `(bool[2])(uint16)1`: one byte a bool (bpftrace bool:bool array)
    const elem: SType = m ? { kind: 'int', size: (Number(m[2]) / 8) as 1 | 2 | 4 | 8, signed: m[1] !== 'u' } : BOOL;
    const elemSize = sizeOf(elem);
    if (!t) return null;
    if (t.kind !== 'int' && t.kind !== 'string' && !(t.kind === 'array' && t.elem.kind === 'int')) {
      this.error(e.pos, `Cannot cast from '${typeName(t)}' to '${spec.name}[]'`);
      return null;
    }
    const bytes = sizeOf(t);
    const count = spec.arrayCount === 0 ? Math.floor(bytes / elemSize) : spec.arrayCount!;
    if (count * elemSize !== bytes) {
      this.error(
        e.pos,
        `Cannot cast from '${typeName(t)}' (${bytes} bytes) to '${spec.name}[${count}]' (${count * elemSize} bytes)`,
      );
      return null;
    }
    return { kind: 'array', elem, count };
  }

  /** `struct NAME` / `union NAME` / a typedef: the program's own C definition first, then the kernel's BTF. */
  private namedType(spec: string): SType | undefined {
    const mine = this.opts.cTypes?.records.get(spec.trim().replace(/\s+/, ' '));
    return mine ?? btfRecordByName(kernelBtf(), spec);
  }

  /** Value of `sizeof(...)` / `offsetof(T, f)` (compile-time, from BTF or the language's types), or null. */
  constSizeof(e: Expr): number | null {
    if (e.kind === 'SizeofExpr') {
      const target = e.target;
      if (target.kind === 'TypeSpec') {
        if (target.of) {
          const r = this.typeCall(target);
          if (r === null) return null;
          if (r.type) return sizeOf(r.type);
        }
        if (target.pointerDepth > 0) return 8;
        const m = /^(u?)int(8|16|32|64)$/.exec(target.name);
        if (m) return (Number(m[2]) / 8) * (target.arrayCount ?? 1);
        const rec = this.namedType(target.name);
        if (!rec && target.pointerDepth === 0 && target.arrayCount === null && /^\w+$/.test(target.name)) {
          // `sizeof(BTF_VAR_STATIC)`: an enumerator is a 64-bit value (bpftrace btf:enum_value_reference)
          if (this.opts.cTypes?.enumerators.get(target.name) ?? kernelEnumerator(target.name)) return 8;
        }
        if (!rec) {
          this.error(target.pos, `Unknown type: '${target.name}'`);
          return null;
        }
        return sizeOf(rec) * (target.arrayCount ?? 1);
      }
      const t = this.expr(target);
      return t ? sizeOf(t) : null;
    }
    if (e.kind === 'OffsetofExpr') {
      if (e.typeSpec.of && this.typeCall(e.typeSpec) === null) return null;
      const rec = this.namedType(e.typeSpec.name);
      if (!rec || rec.kind !== 'record') {
        this.error(e.typeSpec.pos, `Unknown type: '${e.typeSpec.name}'`);
        return null;
      }
      // `offsetof(struct Foo, bar.x)`: a path through nested struct members, offsets summed
      let cur: SType = rec;
      let off = 0;
      for (const name of e.field.split('.')) {
        const f: RecordField | undefined =
          cur.kind === 'record' ? recordFields(kernelBtf(), cur).find((x) => x.name === name) : undefined;
        if (!f) {
          this.error(
            e.pos,
            `'${typeName(cur)}' has no field named '${name}'`,
            cur.kind === 'record'
              ? didYouMean(
                  closestNames(
                    name,
                    recordFields(kernelBtf(), cur).map((x) => x.name),
                  ),
                )
              : undefined,
          );
          return null;
        }
        off += f.offset;
        cur = f.type;
      }
      return off;
    }
    return null;
  }

  /**
   * A type written as a call of a registry type function (`typeof(x)`, TypeSpec `of`): resolved by the function,
   * and the spec's name, pointer depth and array count filled in; null after an error.
   */
  private typeCall(spec: TypeSpec): { type?: SType } | null {
    const { fn, arg } = spec.of!;
    if (arg.kind === 'TypeSpec' && arg.of && this.typeCall(arg) === null) return null;
    const r = builtinFunction(fn)!.typeOf!(arg, this.builtinChecker());
    if (!r) return null;
    spec.name = r.written.name;
    spec.pointerDepth = r.written.pointerDepth;
    spec.arrayCount = r.written.arrayCount;
    return r;
  }

  /** What a registry builtin's check is given (lang/builtins/types.ts). */
  private builtinChecker(): BuiltinChecker {
    return {
      expr: (e) => this.expr(e),
      error: (pos, message) => this.error(pos, message),
      argCount: (call, min, max) => this.argCount(call, min, max),
      constValue: (e) => this.constValue(e),
      addressSpace: (e) => this.addressSpace(e),
      spaceOf: (e) => this.spaceOf(e),
      mapArg: (call, i) => {
        const a = call.args[i];
        if (a?.kind === 'MapExpr') return a;
        this.error(a?.pos ?? call.pos, `${call.name}() expects a map argument`);
        return null;
      },
      map: (name) => this.maps.get(name),
      checkMapExists: (m) => this.checkMapExists(m),
      mapKeyTypes: (m) => this.mapKeyTypes(m),
      structValueFits: (pos, t) => this.structValueFits(pos, t),
      namedOption: (name, description) => {
        if (!this.getopts.get(name)) this.getopts.set(name, description);
        return this.opts.named?.get(name);
      },
      final: this.final,
      probe: this.unit!.expanded,
      maxStrlen: this.opts.maxStrlen ?? DEFAULT_STRLEN,
      unsafe: this.opts.unsafe ?? false,
      target: this.opts.target,
    };
  }

  /** Check the argument count of a call; false (with an error) when it is wrong. */
  private argCount(c: CallExpr, min: number, max: number): boolean {
    if (c.args.length >= min && c.args.length <= max) return true;
    const want = min === max ? `${min}` : `${min} to ${max}`;
    this.error(c.pos, `${c.name}() requires ${want} argument${max === 1 ? '' : 's'} (${c.args.length} provided)`);
    c.args.forEach((a) => this.expr(a));
    return false;
  }

  /**
   * The type of `$kv` in `for ($kv : @m)`: (key, value), the key a tuple for a map with several keys; count and
   * sum values are the sum over CPUs. Null (with an error) for maps a loop cannot walk.
   */
  private mapLoopType(m: MapExpr): SType | null {
    const label = m.name === '' ? '@' : `@${m.name}`;
    if (m.keys.length) {
      this.error(m.pos, `for loops iterate over a whole map: use ${label}, not ${label}[...]`);
      return null;
    }
    const sym = this.maps.get(m.name);
    if (!sym) {
      this.checkMapExists(m);
      return null;
    }
    if (sym.keyTypes.length === 0) {
      this.error(m.pos, `Loop expression must be a map with keys: ${label} has none`);
      return null;
    }
    const vt = sym.valueType;
    let value: SType;
    if (vt.kind === 'count') value = U64;
    else if (vt.kind === 'sum' || vt.kind === 'min' || vt.kind === 'max' || vt.kind === 'avg')
      value = vt.signed ? I64 : U64;
    else if (isAggregation(vt)) {
      this.error(m.pos, `for loops over ${vt.kind}() maps are not supported yet`);
      return null;
    } else value = vt;
    const key = sym.keyTypes.length === 1 ? sym.keyTypes[0]! : { kind: 'tuple' as const, elems: sym.keyTypes };
    return { kind: 'tuple', elems: [key, value] };
  }

  private checkMapExists(m: MapExpr): void {
    if (!this.maps.has(m.name)) {
      this.error(m.pos, `Undefined map: ${m.name === '' ? '@' : `@${m.name}`}`, this.mapHint(m.name));
    }
  }

  /** "Did you mean @x?" among the program's maps, for an undefined map `@name`. */
  private mapHint(name: string): string | undefined {
    if (name === '') return undefined;
    return didYouMean(
      closestNames(
        name,
        [...this.maps.keys()].filter((k) => k !== ''),
      ).map((k) => `@${k}`),
    );
  }
}

/** Expressions that denote memory (a struct reached through a pointer), so `.field` reads from it. */
function isLocation(e: Expr): boolean {
  return (e.kind === 'UnaryExpr' && e.op === '*') || e.kind === 'FieldExpr';
}

function isSigned(t: SType): boolean {
  return t.kind === 'int' ? t.signed : false;
}

function dedupe(ds: Diagnostic[]): Diagnostic[] {
  const seen = new Set<string>();
  return ds.filter((d) => {
    const k = `${d.message}@${d.pos?.offset}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

export const _test = { unify, storageType };

export { storageType } from '../typeops.js';
export { PT_REGS_CONTEXTS, PT_REGS_OFFSETS } from '../ptregs.js';
export { ptonBytes } from '../builtins/net.js';
export { signalNumber } from '../builtins/output.js';
