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

import { builtinFunction, isAggregationFunction } from '../builtins/registry.js';
import { sameShape, storageType, unify } from '../typeops.js';
import type { AssignStmt, Block, CallExpr, Expr, MapExpr, Stmt, TypeSpec, VarExpr } from '../ast.js';
import { CompileError, type Diagnostic } from '../diagnostics.js';
import { userVarName } from './varscope.js';
import { I64, isAggregation, type SType, typeKey, typeName, U64 } from '../types.js';
import { ExprAnalyzer } from './semantic-expr.js';
import { TypeTable } from '../type-table.js';
import { binopSigned, btKeyTypes, btTypeOf, type BtType, keyTypesText, promoteBt } from '../bt-int-types.js';
import { type ProbeUnit, dedupe, isSigned } from './semantic-base.js';

export * from './semantic-base.js';

export class Analyzer extends ExprAnalyzer {
  private readonly unitTypes = new Map<ProbeUnit, TypeTable>();

  /**
   * Infer map types to a fixed point, then check every unit with errors on; that last typing gives each unit its
   * {@link TypeTable} ({@link types}).
   *
   * @throws CompileError with every error found
   */
  analyze(): void {
    for (let iter = 0; iter < 8; iter++) {
      this.changed = false;
      this.final = false;
      for (const u of this.units) this.typeUnit(u, false);
      if (!this.changed) break;
    }
    this.final = true;
    this.diags = [];
    this.changed = false;
    let memoChanged = false;
    for (const u of this.units) {
      const before = this.varMemo.get(u);
      this.unitTypes.set(u, this.typeUnit(u, true));
      if (!sameVariables(before, this.vars)) memoChanged = true;
    }
    const errors = this.diags.filter((d) => d.severity === 'error');
    if (errors.length) throw new CompileError(dedupe(this.diags));
    if (this.changed || memoChanged) {
      // the checking typing still changed a map or a variable (no fixed point in the inference's rounds, or `let $x;`
      // read before its assignment from another variable's earlier type): every unit typed once more with what it
      // found, its diagnostics already reported
      const diags = this.diags;
      for (const u of this.units) this.unitTypes.set(u, this.typeUnit(u, true));
      this.diags = diags;
    }
  }

  /**
   * The types of one unit, from {@link analyze}.
   *
   * @throws Error (an internal error) for a unit that was not analysed
   */
  types(u: ProbeUnit): TypeTable {
    const t = this.unitTypes.get(u);
    if (!t) throw new Error(`no types for the unit ${u.expanded.name}: analyze() has not typed it`);
    return t;
  }

  /** Warnings collected by the final pass. */
  get warnings(): Diagnostic[] {
    return this.diags.filter((d) => d.severity === 'warning');
  }

  /** Types one unit's predicate and body into a new table (`final`: with errors reported). */
  protected typeUnit(u: ProbeUnit, final: boolean): TypeTable {
    this.final = final;
    this.unit = u;
    this.table = new TypeTable();
    this.vars = this.table.variables;
    this.btVars = new Map();
    this.untyped = new Set();
    this.addressTaken = this.table.addressTaken;
    this.varSpaces = new Map();
    if (u.probe.predicate) this.expr(u.probe.predicate);
    this.block(u.probe.body);
    this.varMemo.set(u, new Map(this.vars));
    return this.table;
  }

  protected block(b: Block): void {
    for (const s of b.stmts) this.stmt(s);
  }

  protected stmt(s: Stmt): void {
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
          // `let $x: int16 = 3`: bpftrace gives the variable its declared type
          const m = s.typeName && /^(u?)int(8|16|32|64)$/.exec(s.typeName.name);
          const declared: SType | undefined =
            m && s.typeName!.pointerDepth === 0 && s.typeName!.arrayCount === null
              ? { kind: 'int', size: (Number(m[2]) / 8) as 1 | 2 | 4 | 8, signed: !m[1] }
              : undefined;
          const bt = declared ? { type: declared, flex: false } : t ? btTypeOf(s.value, t, this.btVars) : undefined;
          if (t) this.defineVar(s.variable, storageType(t), bt);
          this.noteVarSpace(s.variable.name, s.value);
        } else if (s.typeName && (!s.typeName.of || this.typeCall(s.typeName) !== null)) {
          const m = /^(u?)int(8|16|32|64)$/.exec(s.typeName.name);
          const spec = s.typeName;
          if (m && spec.pointerDepth === 0 && spec.arrayCount === null) {
            const declared: SType = { kind: 'int', size: (Number(m[2]) / 8) as 1 | 2 | 4 | 8, signed: !m[1] };
            this.defineVar(s.variable, storageType(declared), { type: declared, flex: false });
          } else if (s.typeName.name !== 'string') {
            // `let $f: struct task_struct *;`, `let $w: struct W[10];`, `let $s: struct Foo;` (bpftrace variable
            // "variable declaration with builtin", complex_types "struct-array with declared variables")
            const t = this.declaredType(spec);
            if (t) this.defineVar(s.variable, storageType(t));
            else this.error(s.typeName.pos, `Declaring a variable of type '${s.typeName.name}' is not supported yet`);
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

  protected condition(e: Expr): void {
    const t = this.expr(e);
    if (t && t.kind !== 'int' && t.kind !== 'bool' && t.kind !== 'pointer') {
      this.error(e.pos, `Invalid condition: ${typeName(t)} is not an integer`);
    }
  }

  protected exprStatement(e: Expr): void {
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

  /** Record/unify a variable's storage type `t`; `bt`: the assigned value's type as bpftrace gives it (btVars). */
  protected defineVar(v: VarExpr, t: SType, bt?: BtType): void {
    const prev = this.vars.get(v.name);
    this.noteBtVar(v.name, t, bt);
    if (!prev) {
      this.vars.set(v.name, t);
      this.table.set(v, t);
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
    this.table.set(v, u);
  }

  /**
   * The type a `let $x: TYPE` declaration names: an integer or C type (the program's definitions, DWARF, BTF) with
   * its `*`s and an optional `[N]` (an array of N of them); a declared pointer points where the probe's plain
   * addresses do, as a cast of an integer would. Undefined for a type not known or not storable in a variable.
   */
  protected declaredType(spec: TypeSpec): SType | undefined {
    const m = /^(u?)int(8|16|32|64)$/.exec(spec.name);
    let t: SType | undefined = m
      ? { kind: 'int', size: (Number(m[2]) / 8) as 1 | 2 | 4 | 8, signed: !m[1] }
      : this.castBase(spec.name);
    if (!t || (t.kind === 'none' && spec.pointerDepth === 0)) return undefined;
    if (t.kind === 'record' && spec.pointerDepth === 0 && !this.structValueFits(spec.pos, t)) return undefined;
    for (let i = 0; i < spec.pointerDepth; i++) t = { kind: 'pointer', to: t, space: this.probeSpace() };
    if (spec.arrayCount !== null) t = { kind: 'array', elem: t, count: spec.arrayCount };
    return t;
  }

  /** Joins an integer variable's bpftrace type with one more assignment's (`bt`, else the storage type `t`). */
  private noteBtVar(name: string, t: SType, bt: BtType | undefined): void {
    const next = bt && bt.type.kind === 'int' ? bt : { type: t, flex: false };
    if (next.type.kind !== 'int') {
      this.btVars.delete(name);
      return;
    }
    const prev = this.btVars.get(name);
    this.btVars.set(name, prev ? promoteBt(prev, next) : next);
  }

  /** Record/unify a map's type at an assignment site. */
  protected defineMap(m: MapExpr, keyTypes: SType[], valueType: SType): void {
    const prev = this.maps.get(m.name);
    const label = m.name === '' ? '@' : `@${m.name}`;
    const btKeys = btKeyTypes(m.keys, this.btVars, (k) => this.table.find(k));
    if (!prev) {
      this.maps.set(m.name, { name: m.name, keyTypes, valueType, btKeyTypes: btKeys, pos: m.pos });
      this.changed = true;
      this.table.set(m, valueType);
      return;
    }
    if (prev.keyTypes.length !== keyTypes.length || !prev.keyTypes.every((k, i) => sameShape(k, keyTypes[i]!))) {
      this.error(
        m.pos,
        `Argument mismatch for ${label}: trying to access with arguments: ${keyTypesText(btKeys.map((k) => k.type))} when map expects arguments: ${keyTypesText(prev.btKeyTypes?.map((k) => k.type) ?? prev.keyTypes)}`,
      );
      return;
    }
    if (prev.btKeyTypes?.length === btKeys.length)
      prev.btKeyTypes = prev.btKeyTypes.map((k, i) => promoteBt(k, btKeys[i]!));
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
    this.table.set(m, value);
  }

  protected assign(s: AssignStmt): void {
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
      const cur = this.btVars.get(target.name);
      if (cur && t.kind === 'int') {
        // bpftrace: `$x OP= v` is `$x = $x OP v`, whose 64-bit result joins the variable's type
        const vt = btTypeOf(v, t, this.btVars);
        const signed = binopSigned(s.op.slice(0, -1), cur, vt, isSigned(cur.type), isSigned(vt.type));
        this.btVars.set(target.name, promoteBt(cur, { type: signed ? I64 : U64, flex: false }));
      }
      this.table.set(target, prev);
      return;
    }
    if (t.kind === 'record' && !this.structValueFits(v.pos, t)) return;
    this.defineVar(target, storageType(t), btTypeOf(v, t, this.btVars));
    this.noteVarSpace(target.name, v);
  }

  /** Type an aggregation call (`count()`, `hist(x)`, ...) and check its arguments. */
  protected aggregation(c: CallExpr): SType | null {
    const own = builtinFunction(c.name);
    if (own?.check) {
      const t = own.check(c, this.builtinChecker());
      if (t) this.table.set(c, t);
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
        return this.typed(c, { kind: 'count' });
      case 'sum':
      case 'avg':
      case 'min':
      case 'max':
      case 'stats':
        if (!need(1) || !intArg(0)) return null;
        return this.typed(c, { kind: c.name, signed: signed(0) } as SType);
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
        return this.typed(c, { kind: 'hist', bits });
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
        return this.typed(c, { kind: 'lhist', min, max, step });
      }
    }
    return null;
  }

  /**
   * The type of `$kv` in `for ($kv : @m)`: (key, value), the key a tuple for a map with several keys; count and
   * sum values are the sum over CPUs. Null (with an error) for maps a loop cannot walk.
   */
  protected mapLoopType(m: MapExpr): SType | null {
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
}

/** Whether two variable tables hold the same names with the same types. */
function sameVariables(a: ReadonlyMap<string, SType> | undefined, b: ReadonlyMap<string, SType>): boolean {
  if (!a || a.size !== b.size) return false;
  for (const [name, t] of a) {
    const u = b.get(name);
    if (!u || typeKey(u) !== typeKey(t)) return false;
    if (u.kind === 'string' && t.kind === 'string' && u.wellFormed !== t.wellFormed) return false;
  }
  return true;
}
