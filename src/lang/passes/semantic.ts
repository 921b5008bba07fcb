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

import { constants as osConstants } from 'node:os';
import { net } from '../../builtins.js';
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
import { checkPrintfArgs, compilePrintf } from '../printf.js';
import type { AssignStmt, Block, CallExpr, Expr, MapExpr, Probe, Span, Stmt, TypeSpec, VarExpr } from '../ast.js';
import { positionalInt } from '../lexer.js';
import { isBuiltinName } from '../parser.js';
import {
  btfEnumByName,
  btfEnumInfo,
  btfRecordByName,
  btfVarId,
  kernelBtf,
  materializeRecord,
  recordFields,
  withBtf,
} from '../btf-types.js';
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
  /** `stack_mode` config: the mode of `kstack`/`ustack` written without one (default `bpftrace`). */
  stackMode?: 'bpftrace' | 'perf' | 'raw';
  /** The program's own C struct/union/enum definitions (lang/cdefs.ts); they take precedence over BTF. */
  cTypes?: CTypes;
  /** Host facts: kernel symbols (kaddr, percpu_kaddr), cgroup ids (cgroupid), uaddr() resolution. */
  target: Target;
}

/** The clocks of `nsecs(mode)` (bpftrace's TimestampMode): declared with nsecs in lang/builtins/time.ts. */
export { NSECS_CLOCKS } from '../builtins/time.js';

/** Frames kept by kstack/ustack without a limit, and the most allowed (the kernel's perf_event_max_stack default). */
export const DEFAULT_STACK_LIMIT = 127;
export const MAX_STACK_LIMIT = 127;

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

/** A tuple type, a record when `names` is given. */
function withNames(t: Extract<SType, { kind: 'tuple' }>, names: string[] | undefined): SType {
  return names ? { ...t, names } : t;
}

/** Widen an integer/bool type to what maps and variables store (64-bit ints). */
export function storageType(t: SType): SType {
  if (t.kind === 'int') return t.enum ? { kind: 'int', size: 8, signed: false, enum: t.enum } : t.signed ? I64 : U64;
  if (t.kind === 'tuple') return withNames({ kind: 'tuple', elems: t.elems.map(storageType) }, t.names);
  // a struct value (`*p`, `args`): its fields loaded, so the runtime can print it without BTF
  if (t.kind === 'record') return materializeRecord(t.btfId !== undefined ? kernelBtf() : undefined, t);
  return t;
}

/** Join two storage types where they may be unified (ints of either sign, strings of different sizes). */
function unify(a: SType, b: SType): SType | null {
  if (a.kind === 'int' && b.kind === 'int') {
    // the same enum stays that enum; an enum with other integers is stored as a plain integer (bpftrace)
    if (a.enum && b.enum?.name === a.enum.name) return a;
    return a.signed && b.signed ? I64 : a.signed || b.signed ? I64 : U64;
  }
  if (a.kind === 'string' && b.kind === 'string') return stringType(Math.max(a.size, b.size));
  if (a.kind === 'buffer' && b.kind === 'buffer') return { kind: 'buffer', size: Math.max(a.size, b.size) };
  if (a.kind === 'tuple' && b.kind === 'tuple' && a.elems.length === b.elems.length) {
    if (!a.names !== !b.names) return null;
    // records with the same fields in another order: b's fields in a's order (stores convert by name)
    const order = a.names ? a.names.map((n) => b.names!.indexOf(n)) : a.elems.map((_, i) => i);
    if (order.includes(-1)) return null;
    const elems: SType[] = [];
    for (let i = 0; i < a.elems.length; i++) {
      const u = unify(a.elems[i]!, b.elems[order[i]!]!);
      if (!u) return null;
      elems.push(u);
    }
    return withNames({ kind: 'tuple', elems }, a.names);
  }
  if (typeKey(a) === typeKey(b)) return a;
  // the same pointer type in two address spaces (a map set in a uprobe and in a kprobe): the first one's
  if (a.kind === 'pointer' && b.kind === 'pointer' && typeKey(a.to) === typeKey(b.to)) return a;
  return null;
}

function sameShape(a: SType, b: SType): boolean {
  return unify(a, b) !== null;
}

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
  private getopt(c: CallExpr): SType | null {
    const args = c.args;
    if (!this.argCount(c, 1, 3)) return null;
    const name = args[0]!;
    if (name.kind !== 'StrLit') {
      this.error(name.pos, 'getopt() expects a string literal option name');
      return null;
    }
    if (args[2] && args[2].kind !== 'StrLit') this.error(args[2].pos, 'getopt() expects a string literal description');
    if (!this.getopts.get(name.value)) this.getopts.set(name.value, args[2]?.kind === 'StrLit' ? args[2].value : '');
    const given = this.opts.named?.get(name.value);
    const def = args[1];
    const call = c as CallExpr & { getoptValue?: bigint | boolean | string };
    const bad = (kind: string): null => {
      // about the command line, not the program: no source position (bpftrace)
      this.error(undefined, `program command line option --${name.value} invalid ${kind} (value: ${String(given)})`);
      return null;
    };
    if (def === undefined || def.kind === 'BoolLit') {
      const d = def?.kind === 'BoolLit' ? def.value : false;
      const v =
        given === undefined
          ? d
          : given === true || /^(true|1)$/i.test(given)
            ? true
            : /^(false|0)$/i.test(given)
              ? false
              : undefined;
      if (v === undefined) return bad('boolean');
      call.getoptValue = v;
      return BOOL;
    }
    if (def.kind === 'StrLit') {
      const v = given === undefined ? def.value : given === true ? '' : given;
      call.getoptValue = v;
      return stringType(Buffer.byteLength(v) + 1);
    }
    const d = this.constValue(def);
    if (d === null) {
      this.error(def.pos, 'getopt() expects a literal default (an integer, a string or a bool)');
      return null;
    }
    let v = d;
    if (given !== undefined) {
      if (given === true || !/^-?(0x[0-9a-f]+|0[0-7]*|[1-9][0-9]*)$/i.test(given)) return bad('integer');
      const neg = given.startsWith('-');
      const mag = BigInt(neg ? given.slice(1) : given);
      v = neg ? -mag : mag;
    }
    call.getoptValue = v;
    return d < 0n ? I64 : U64;
  }

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
      if (!value && prev.valueType.kind === 'tseries' && valueType.kind === 'tseries') {
        this.error(m.pos, 'Different tseries bounds in a single map unsupported');
        return;
      }
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
    const own = builtinFunction(c.name);
    if (own?.check) {
      const t = own.check(c, this.builtinChecker());
      if (t) c.type = t;
      return t;
    }
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
        if (vt.kind === 'stats' || vt.kind === 'hist' || vt.kind === 'lhist' || vt.kind === 'tseries') {
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
    if (name === 'kstack' || name === 'ustack')
      return { kind: name, limit: DEFAULT_STACK_LIMIT, mode: this.opts.stackMode ?? 'bpftrace' };
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
    const mapArg = (i: number, fn: string): MapExpr | null => {
      const a = args[i];
      if (a?.kind !== 'MapExpr') {
        this.error(a?.pos ?? c.pos, `${fn}() expects a map argument`);
        return null;
      }
      return a;
    };
    switch (c.name) {
      case 'system':
      case 'cat':
      case 'errorf':
      case 'warnf':
      case 'debugf':
      case 'printf': {
        if (c.name === 'system' && !this.opts.unsafe) {
          this.error(c.pos, 'system() is an unsafe function being used in safe mode (use --unsafe)');
        }
        if (args.length === 0 || args[0]!.kind !== 'StrLit') {
          this.error(c.pos, `${c.name}() expects a string literal as its first argument`);
          args.forEach((a) => this.expr(a));
          return { kind: 'none' };
        }
        const types: SType[] = [];
        let ok = true;
        for (const a of args.slice(1)) {
          const t = this.expr(a);
          if (!t) ok = false;
          else types.push(t);
        }
        if (ok && this.final) {
          const err = checkPrintfArgs(compilePrintf((args[0] as { value: string }).value), types);
          if (err) this.error(c.pos, err);
        }
        if (c.name === 'debugf') {
          // bpf_trace_vprintk: at most 12 values, each an integer or a pointer (strings are passed by address)
          if (args.length > 13) this.error(c.pos, 'debugf() takes at most 12 arguments after the format');
          types.forEach((t, i) => {
            if (!['int', 'bool', 'pointer', 'string'].includes(t.kind))
              this.error(args[i + 1]!.pos, `debugf() cannot print a value of type ${typeName(t)}`);
          });
        }
        return { kind: 'none' };
      }
      case 'exit': {
        if (args.length > 1) this.error(c.pos, 'exit() takes at most one argument');
        const t = args[0] ? this.expr(args[0]) : null;
        if (t && t.kind !== 'int')
          this.error(args[0]!.pos, `exit() expects an integer exit code (${typeName(t)} provided)`);
        return { kind: 'none' };
      }
      case 'time':
        if (args.length > 1 || (args.length === 1 && args[0]!.kind !== 'StrLit')) {
          this.error(c.pos, 'time() expects an optional string literal format');
        }
        return { kind: 'none' };
      case 'clear':
      case 'zero': {
        if (args.length !== 1) this.error(c.pos, `${c.name}() requires one argument`);
        const m = mapArg(0, c.name);
        if (m) {
          if (m.keys.length) this.error(m.pos, `The map passed to ${c.name}() should not be indexed by a key`);
          this.checkMapExists(m);
        }
        return { kind: 'none' };
      }
      case 'delete': {
        if (args.length === 2) {
          const m = mapArg(0, 'delete');
          if (m) {
            this.checkMapExists(m);
            const t = this.expr(args[1]!);
            const sym = this.maps.get(m.name);
            if (t && sym) {
              const keyT =
                sym.keyTypes.length === 1 ? sym.keyTypes[0]! : { kind: 'tuple' as const, elems: sym.keyTypes };
              if (!sameShape(storageType(t), keyT)) this.error(args[1]!.pos, `delete(): key type mismatch`);
            }
          }
          return BOOL;
        }
        if (args.length !== 1) {
          this.error(c.pos, 'delete() requires 1 or 2 arguments');
          return BOOL;
        }
        const m = mapArg(0, 'delete');
        if (m) {
          const sym = this.maps.get(m.name);
          this.mapKeyTypes(m);
          if (!sym) this.error(m.pos, `Undefined map: @${m.name}`);
          else if (sym.keyTypes.length > 0 && m.keys.length === 0) {
            this.error(m.pos, `delete() of a keyed map needs a key: delete(@${m.name}[key])`);
          }
        }
        return BOOL;
      }
      case 'print': {
        if (args.length === 0 || args.length > 3) {
          this.error(c.pos, 'print() requires 1 to 3 arguments');
          return { kind: 'none' };
        }
        const a = args[0]!;
        if (a.kind === 'MapExpr' && a.keys.length === 0) {
          this.checkMapExists(a);
          for (const x of args.slice(1)) {
            const v = this.constValue(x);
            if (v === null) this.error(x.pos, 'print(): top and div arguments must be integer literals');
          }
          return { kind: 'none' };
        }
        if (args.length > 1) this.error(c.pos, 'Non-map print() only takes 1 argument');
        const t = this.expr(a);
        if (t && (t.kind === 'none' || isAggregation(t)))
          this.error(a.pos, `print() can not print a value of type ${typeName(t)}`);
        if (t?.kind === 'record' && this.structValueFits(a.pos, t)) a.type = storageType(t);
        return { kind: 'none' };
      }
      case 'kstack':
      case 'ustack':
        return this.stackCall(c);
      case 'reg': {
        if (!this.argCount(c, 1, 1)) return null;
        const a = args[0]!;
        if (a.kind !== 'StrLit' || PT_REGS_OFFSETS[a.value] === undefined) {
          this.error(a.pos, `reg() expects a register name: ${Object.keys(PT_REGS_OFFSETS).join(', ')}`);
          return null;
        }
        if (!this.unit!.expanded.regs || this.unit!.expanded.provider === 'rawtracepoint') {
          this.error(c.pos, `reg() can not be used with '${this.unit!.expanded.provider}' probes`);
          return null;
        }
        return U64;
      }
      case 'buf': {
        if (!this.argCount(c, 1, 2)) return null;
        const t = this.expr(args[0]!);
        c.space = this.addressSpace(args[0]!);
        let n: number | null = t?.kind === 'string' ? t.size : t?.kind === 'array' ? t.count * sizeOf(t.elem) : null;
        if (args.length === 2) {
          const v = this.constValue(args[1]!);
          if (v === null || v < 0n) {
            this.error(args[1]!.pos, 'buf() expects an integer literal length');
            return null;
          }
          n = Number(v);
        }
        if (t && t.kind !== 'string' && t.kind !== 'array' && t.kind !== 'pointer' && t.kind !== 'int') {
          this.error(args[0]!.pos, `buf() expects a string, array or pointer (${typeName(t)} provided)`);
          return null;
        }
        if (n === null) {
          this.error(c.pos, 'buf() of a pointer needs a length: buf(ptr, n)');
          return null;
        }
        return { kind: 'buffer', size: Math.min(n, this.opts.maxStrlen ?? DEFAULT_STRLEN) };
      }
      case 'pton': {
        if (!this.argCount(c, 1, 1)) return null;
        const a = args[0]!;
        const bytes = a.kind === 'StrLit' ? ptonBytes(a.value) : undefined;
        if (!bytes) {
          this.error(a.pos, 'pton() expects a string literal IPv4 or IPv6 address');
          return null;
        }
        return { kind: 'array', elem: { kind: 'int', size: 1, signed: false }, count: bytes.length };
      }
      case 'path': {
        // bpf_d_path(): fentry/fexit (and iter) programs of the kernel's btf_allowlist_d_path functions only
        if (!this.argCount(c, 1, 2)) return null;
        const p = this.unit!.expanded.provider;
        if (p !== 'fentry' && p !== 'fexit') {
          this.error(
            c.pos,
            `path() can only be used in fentry/fexit probes (the kernel's bpf_d_path helper), not '${p}'`,
          );
          return null;
        }
        const t = this.expr(args[0]!);
        const isPath = (x: SType | null): boolean => x?.kind === 'record' && x.name === 'struct path';
        if (t && !isPath(t) && !(t.kind === 'pointer' && isPath(t.to))) {
          this.error(args[0]!.pos, `path() expects a struct path or a pointer to one (${typeName(t)} provided)`);
          return null;
        }
        let size = this.opts.maxStrlen ?? DEFAULT_STRLEN;
        if (args[1]) {
          const n = this.constValue(args[1]);
          if (n === null || n <= 0n) {
            this.error(args[1].pos, 'path() expects a positive integer literal size');
            return null;
          }
          size = Number(n);
        }
        return stringType(size);
      }
      case 'getopt':
        return this.getopt(c);
      case 'uaddr': {
        if (!this.argCount(c, 1, 1)) return null;
        const a = args[0]!;
        if (a.kind !== 'StrLit') {
          this.error(a.pos, 'uaddr() expects a string literal symbol name');
          return null;
        }
        const target = this.opts.target.resolveUaddr(this.unit!.expanded, a.value);
        if (typeof target === 'string') {
          this.error(c.pos, target);
          return null;
        }
        const size = ([1, 2, 4, 8] as const).find((n) => n === target.size) ?? 8;
        return { kind: 'pointer', to: { kind: 'int', size, signed: false }, space: 'user' };
      }
      case 'socket_cookie': {
        // socket_cookie(sk): bpf_get_socket_cookie on a BTF-typed socket pointer (fentry/fexit, rawtracepoint args)
        if (!this.argCount(c, 1, 1)) return null;
        const t = this.expr(args[0]!);
        if (!t) return null;
        const to = t.kind === 'pointer' && t.to.kind === 'record' ? t.to.name.replace(/^struct\s+/, '') : '';
        if (to !== 'sock' && to !== 'sock_common') {
          this.error(args[0]!.pos, `socket_cookie() expects a 'struct sock *' (${typeName(t)} provided)`);
          return null;
        }
        if (!['fentry', 'fexit', 'rawtracepoint'].includes(this.unit!.expanded.provider)) {
          this.error(
            c.pos,
            `socket_cookie() needs the kernel's typed socket pointer: use it in fentry, fexit or rawtracepoint probes`,
          );
          return null;
        }
        return U64;
      }
      case 'percpu_kaddr': {
        // percpu_kaddr(name[, cpu]): a per-CPU kernel variable's address on `cpu` or this CPU (bpftrace docs/stdlib.md)
        if (!this.argCount(c, 1, 2)) return null;
        const a = args[0]!;
        if (a.kind !== 'StrLit') {
          this.error(a.pos, 'percpu_kaddr() expects a string literal variable name');
          return null;
        }
        if (args[1]) {
          const t = this.expr(args[1]);
          if (t && t.kind !== 'int')
            this.error(args[1].pos, `percpu_kaddr() expects an integer cpu (${typeName(t)} provided)`);
        }
        if (btfVarId(kernelBtf(), a.value) === undefined) {
          this.error(c.pos, `Could not resolve variable "${a.value}" from BTF`);
          return null;
        }
        if (this.opts.target.kernelSymbolAddress(a.value) === undefined) {
          // the verifier finds a variable's address with kallsyms, which lists data symbols only with KALLSYMS_ALL
          this.error(
            c.pos,
            `percpu_kaddr(): the kernel cannot give the address of "${a.value}" (not in /proc/kallsyms: this kernel is built without CONFIG_KALLSYMS_ALL)`,
          );
          return null;
        }
        return { kind: 'pointer', to: U64, space: 'kernel' };
      }
      case 'pid':
      case 'tid': {
        // pid(curr_ns) / pid(init): the id as seen from bpfscope's PID namespace or the initial one (bpftrace 0.23)
        if (
          args.length > 1 ||
          (args[0] && (args[0].kind !== 'BuiltinExpr' || !['curr_ns', 'init'].includes(args[0].name)))
        ) {
          this.error(c.pos, `${c.name}() expects no argument, curr_ns or init`);
          return null;
        }
        return U32;
      }
      case 'usym': {
        if (!this.argCount(c, 1, 1)) return null;
        const t = this.expr(args[0]!);
        if (t && t.kind !== 'int' && t.kind !== 'pointer') {
          this.error(args[0]!.pos, `${c.name}() expects an integer or pointer argument (${typeName(t)} provided)`);
        }
        return { kind: c.name };
      }
      case 'ntop': {
        if (!this.argCount(c, 1, 2)) return null;
        const types = args.map((a) => this.expr(a));
        const addr = types[types.length - 1];
        if (types.length === 2 && types[0] && types[0].kind !== 'int') {
          this.error(args[0]!.pos, `ntop() expects an integer address family (${typeName(types[0])} provided)`);
        }
        if (addr) {
          const size = addr.kind === 'string' ? addr.size : addr.kind === 'array' ? addr.count * sizeOf(addr.elem) : 0;
          if (addr.kind !== 'int' && size !== 4 && size !== 16) {
            this.error(
              args[args.length - 1]!.pos,
              `ntop() expects an integer or a 4 or 16 byte array (${typeName(addr)} provided)`,
            );
          }
        }
        return { kind: 'inet' };
      }
      case 'join': {
        if (!this.argCount(c, 1, 2)) return { kind: 'none' };
        const t = this.expr(args[0]!);
        // a plain integer: user memory unless it is known to be a kernel address (bpfscope's join default)
        c.space = this.spaceOf(args[0]!) ?? 'user';
        if (t && t.kind !== 'pointer' && t.kind !== 'int') {
          this.error(args[0]!.pos, `join() expects a pointer to an array of strings (${typeName(t)} provided)`);
        }
        if (args[1] && args[1].kind !== 'StrLit') this.error(args[1].pos, 'join() expects a string literal separator');
        return { kind: 'none' };
      }
      case 'has_key': {
        if (!this.argCount(c, 2, 2)) return null;
        const m = mapArg(0, 'has_key');
        if (m) {
          if (m.keys.length) this.error(m.pos, 'has_key() expects a map without a key: has_key(@m, key)');
          this.checkMapExists(m);
        }
        const kt = this.expr(args[1]!);
        const info = m ? this.maps.get(m.name) : undefined;
        if (m && info && kt) {
          const label = m.name === '' ? '@' : `@${m.name}`;
          if (info.keyTypes.length === 0) {
            this.error(m.pos, `call to has_key() expects a map with explicit keys (non-scalar map); ${label} has none`);
          } else {
            // a multi-key map takes its key as a tuple: has_key(@m, (1, "a"))
            const given = info.keyTypes.length > 1 && kt.kind === 'tuple' ? kt.elems : [kt];
            if (
              given.length !== info.keyTypes.length ||
              !given.every((k, i) => sameShape(storageType(k), info.keyTypes[i]!))
            ) {
              this.error(
                args[1]!.pos,
                `Argument mismatch for ${label}: trying to access with arguments: [${given.map(typeName).join(', ')}] when map expects arguments: [${info.keyTypes.map(typeName).join(', ')}]`,
              );
            }
          }
        }
        return BOOL;
      }
      case 'strcontains': {
        if (!this.argCount(c, 2, 2)) return null;
        for (const x of args) {
          const t = this.expr(x);
          if (t && t.kind !== 'string') this.error(x.pos, `strcontains() expects strings (${typeName(t)} provided)`);
        }
        return BOOL;
      }
      case 'len': {
        if (!this.argCount(c, 1, 1)) return null;
        const a0 = args[0]!;
        if (a0.kind === 'MapExpr' && a0.keys.length === 0) {
          // len(@m): the number of elements (bpf_for_each_map_elem counting them)
          this.checkMapExists(a0);
          const sym = this.maps.get(a0.name);
          if (sym && sym.keyTypes.length === 0) {
            this.error(a0.pos, 'call to len() expects a map with explicit keys (non-scalar map)');
            return null;
          }
          return U64;
        }
        const t = this.expr(args[0]!);
        if (t && t.kind !== 'kstack' && t.kind !== 'ustack') {
          this.error(args[0]!.pos, `len() expects a map, a kstack or a ustack (${typeName(t)} provided)`);
          return null;
        }
        return I64;
      }
      case 'macaddr': {
        if (!this.argCount(c, 1, 1)) return null;
        const t = this.expr(args[0]!);
        c.space = this.addressSpace(args[0]!);
        const size = t?.kind === 'array' ? t.count * sizeOf(t.elem) : t?.kind === 'string' ? t.size : null;
        if (t && t.kind !== 'pointer' && t.kind !== 'int' && (size === null || size < 6)) {
          this.error(args[0]!.pos, `macaddr() expects a 6-byte array or a pointer (${typeName(t)} provided)`);
          return null;
        }
        return { kind: 'macaddr' };
      }
      case 'strncmp': {
        if (!this.argCount(c, 3, 3)) return null;
        const a = this.expr(args[0]!);
        const b = this.expr(args[1]!);
        for (const [t, x] of [
          [a, args[0]!],
          [b, args[1]!],
        ] as const) {
          if (t && t.kind !== 'string') this.error(x.pos, `strncmp() expects strings (${typeName(t)} provided)`);
        }
        if (this.constValue(args[2]!) === null) this.error(args[2]!.pos, 'strncmp() expects an integer literal length');
        return I64;
      }
      case 'signal': {
        if (!this.argCount(c, 1, 1)) return { kind: 'none' };
        if (!this.opts.unsafe)
          this.error(c.pos, 'signal() is an unsafe function being used in safe mode (use --unsafe)');
        const a = args[0]!;
        if (a.kind === 'StrLit') {
          if (signalNumber(a.value) === undefined) this.error(a.pos, `Invalid signal: ${a.value}`);
        } else {
          const t = this.expr(a);
          if (t && t.kind !== 'int')
            this.error(a.pos, `signal() expects a signal name or number (${typeName(t)} provided)`);
        }
        return { kind: 'none' };
      }
      case 'str': {
        if (args.length < 1 || args.length > 2) {
          this.error(c.pos, `str() requires 1 or 2 arguments (${args.length} provided)`);
          return null;
        }
        const t = this.expr(args[0]!);
        c.space = this.addressSpace(args[0]!);
        if (t && t.kind !== 'int' && t.kind !== 'pointer' && t.kind !== 'string') {
          this.error(c.pos, `str() expects an integer or a pointer type as first argument (${typeName(t)} provided)`);
        }
        let size = this.opts.maxStrlen ?? DEFAULT_STRLEN;
        if (args.length === 2) {
          const lt = this.expr(args[1]!);
          const n = this.constValue(args[1]!);
          if (n !== null) {
            if (n < 0n) this.error(args[1]!.pos, 'str() length must be non-negative');
            // the length includes the NUL terminator (bpftrace: str(args.filename, 5) gives 4 characters)
            size = Math.max(1, Math.min(Number(n), this.opts.maxStrlen ?? DEFAULT_STRLEN));
          } else if (lt && lt.kind !== 'int') {
            this.error(args[1]!.pos, `str() expects an integer length (${typeName(lt)} provided)`);
          }
        }
        if (t && t.kind === 'string') return stringType(Math.min(size, Math.max(t.size, 1)));
        return stringType(size);
      }
    }
    if (builtin?.role === 'statement') return { kind: 'none' };
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

  /**
   * `struct NAME` / `union NAME` / a typedef: the program's own C definition first, then the probed binary's DWARF (in
   * a uprobe), then the kernel's BTF.
   */
  private namedType(spec: string): SType | undefined {
    const mine = this.opts.cTypes?.records.get(spec.trim().replace(/\s+/, ' '));
    return mine ?? this.unit?.expanded.userType?.(spec) ?? btfRecordByName(kernelBtf(), spec);
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

  /** `kstack(mode)`, `kstack(limit)`, `kstack(mode, limit)` (bpftrace docs/stdlib.md). */
  private stackCall(c: CallExpr): SType | null {
    let mode: 'bpftrace' | 'perf' | 'raw' = this.opts.stackMode ?? 'bpftrace';
    let limit = DEFAULT_STACK_LIMIT;
    if (c.args.length > 2) {
      this.error(c.pos, `${c.name}() takes at most 2 arguments (${c.args.length} provided)`);
      return null;
    }
    c.args.forEach((a, i) => {
      if (a.kind === 'BuiltinExpr' && i === 0 && ['bpftrace', 'perf', 'raw'].includes(a.name)) {
        mode = a.name as typeof mode;
        return;
      }
      const n = this.constValue(a);
      if (n === null) {
        this.error(
          a.pos,
          `${c.name}: invalid ${i === 0 ? 'mode or limit' : 'limit'} (expected bpftrace, perf, raw or an integer)`,
        );
        return;
      }
      if (n < 0n || n > BigInt(MAX_STACK_LIMIT)) {
        this.error(a.pos, `${c.name}: limit must be between 0 and ${MAX_STACK_LIMIT}`);
        return;
      }
      limit = Number(n);
    });
    return { kind: c.name as 'kstack' | 'ustack', limit, mode };
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

/** inet_pton(3) of an IPv4 or IPv6 address literal (bpftrace's `pton()`), or undefined when invalid. */
export function ptonBytes(text: string): Buffer | undefined {
  const kind = net().isIP(text);
  if (kind === 4) return Buffer.from(text.split('.').map(Number));
  if (kind !== 6) return undefined;
  // an embedded IPv4 tail (`::ffff:1.2.3.4`) becomes its two 16-bit groups
  const v4 = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  const t = v4
    ? `${v4[1]}${((Number(v4[2]) << 8) | Number(v4[3])).toString(16)}:${((Number(v4[4]) << 8) | Number(v4[5])).toString(16)}`
    : text;
  const hex = (part: string): number[] => (part ? part.split(':').map((x) => parseInt(x, 16)) : []);
  const gap = t.indexOf('::');
  const head = hex(gap < 0 ? t : t.slice(0, gap));
  const tail = gap < 0 ? [] : hex(t.slice(gap + 2));
  const groups = gap < 0 ? head : [...head, ...new Array(8 - head.length - tail.length).fill(0), ...tail];
  if (groups.length !== 8) return undefined;
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(g, i * 2));
  return out;
}

/** x86-64 `struct pt_regs` byte offsets by register name (uapi asm/ptrace.h; KERNEL.md). */
export const PT_REGS_OFFSETS: Record<string, number> = {
  r15: 0,
  r14: 8,
  r13: 16,
  r12: 24,
  bp: 32,
  bx: 40,
  r11: 48,
  r10: 56,
  r9: 64,
  r8: 72,
  ax: 80,
  cx: 88,
  dx: 96,
  si: 104,
  di: 112,
  orig_ax: 120,
  ip: 128,
  pc: 128, // bpftrace's alias of ip (arch/x86_64.cpp)
  cs: 136,
  flags: 144,
  sp: 152,
  ss: 160,
};

/**
 * Probe providers whose program context starts with the traced task's `struct pt_regs` (kprobe/uprobe programs, and
 * perf_event programs, whose `struct bpf_perf_event_data` begins with the registers): `usermode` reads `cs` there.
 */
export const PT_REGS_CONTEXTS: ReadonlySet<string> = new Set([
  'kprobe',
  'kretprobe',
  'uprobe',
  'uretprobe',
  'usdt',
  'profile',
  'interval',
  'software',
  'hardware',
]);

/** Signal number for a name like `SIGKILL`/`KILL` (Linux numbering), or undefined. */
export function signalNumber(name: string): number | undefined {
  const n = name.toUpperCase().replace(/^SIG/, '');
  const signals = (osConstants.signals as Record<string, number>)[`SIG${n}`];
  return signals;
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
