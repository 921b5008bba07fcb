/**
 * The analyser's base (see semantic.ts Analyzer, which completes it): its state (maps, variables, address spaces,
 * diagnostics), errors, constant evaluation, address spaces, type names and casts, and what it offers a builtin's
 * check (`BuiltinChecker`).
 */

import type { Target } from '../target.js';
import { builtinFunction, type BuiltinChecker } from '../builtins/registry.js';
import { storageType, unify } from '../typeops.js';
import { btTypeOf, type BtType, literalBtType } from '../bt-int-types.js';
import type { CallExpr, Expr, MapExpr, Span, Stmt, TypeSpec } from '../ast.js';
import { positionalInt } from '../lexer.js';
import { TypeTable } from '../type-table.js';
import { btfEnumByName, btfEnumInfo, btfRecordByName, kernelBtf, recordFields } from '../btf-types.js';
import { cWordType, type CTypes } from '../cdefs.js';
import type { Diagnostic } from '../diagnostics.js';
import { closestNames, didYouMean } from '../suggest.js';
import {
  type AddrSpace,
  type RecordField,
  BOOL,
  DEFAULT_STRLEN,
  isAggregation,
  type SType,
  sizeOf,
  typeName,
  U64,
} from '../types.js';

import type { MapSymbol, ProbeUnit } from '../units.js';

export type { MapSymbol, ProbeUnit } from '../units.js';

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
  stackMode?: 'bpftrace' | 'perf' | 'raw' | 'build_id';
  /** The program's own C struct/union/enum definitions (lang/cdefs.ts); they take precedence over BTF. */
  cTypes?: CTypes;
  /** Host facts: kernel symbols (kaddr, percpu_kaddr), cgroup ids (cgroupid), uaddr() resolution. */
  target: Target;
}

/** The clocks of `nsecs(mode)` (bpftrace's TimestampMode): declared with nsecs in lang/builtins/time.ts. */
export { NSECS_CLOCKS } from '../builtins/time.js';

export { DEFAULT_STACK_LIMIT, MAX_STACK_LIMIT } from '../builtins/stack.js';

/** A kernel enumerator by name from BTF, or undefined (also when the kernel has no BTF). */
export function kernelEnumerator(name: string): { value: bigint; type: SType } | undefined {
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
export const MAX_STRUCT_VALUE = 256;

/**
 * Every function name the analyser accepts (the registry's implemented functions): the candidates of "Did you
 * mean" after "Unknown function". test/lang/suggest.test.ts checks each one is accepted.
 */
export { FUNCTION_NAMES } from '../builtins/registry.js';

export abstract class AnalyzerBase {
  readonly maps = new Map<string, MapSymbol>();
  /** Option names getopt() reads (compile() rejects other named options). */
  /** Named program options the program reads with getopt(): name → description ('' when none is given). */
  readonly getopts = new Map<string, string>();
  protected diags: Diagnostic[] = [];
  protected final = false;
  /** Types of the unit being typed: its expressions, variables (`vars`) and address-taken variables. */
  protected table = new TypeTable();
  protected vars = this.table.variables;
  protected addressTaken = this.table.addressTaken;
  /** Integer scratch variables of the unit as bpftrace types them (bt-int-types.ts); `vars` holds their storage. */
  protected btVars = new Map<string, BtType>();
  /** Address spaces carried by integer/struct scratch variables of the unit (see {@link spaceOf}). */
  protected varSpaces = new Map<string, AddrSpace>();
  protected unit: ProbeUnit | null = null;
  protected changed = false;
  /** Expressions being indexed (`x[i]`): BTF array fields may be read only element by element. */
  protected readonly indexing = new WeakSet<Expr>();
  /** Nesting depth of while/for loops (break/continue are valid inside). */
  protected loopDepth = 0;

  constructor(
    readonly units: ProbeUnit[],
    readonly opts: AnalysisOptions,
  ) {}

  /** `let $x;` variables of the unit being typed (typed by a later assignment; zero until then). */
  protected untyped = new Set<string>();
  /** Each unit's variable types from its previous typing: a `let $x;` read before its assignment takes them. */
  protected readonly varMemo = new Map<ProbeUnit, Map<string, SType>>();

  /** Records an error (on the final typing only); `hint` is printed after the source marker ("Did you mean"). */
  protected error(pos: Span | undefined, message: string, hint?: string): void {
    if (!this.final) return;
    this.diags.push({ severity: 'error', message, ...(pos ? { pos } : {}), ...(hint ? { hint } : {}) });
  }

  /** Records `t` as the type of `e` in the unit's table; returns `t`. */
  protected typed(e: Expr, t: SType): SType {
    this.table.set(e, t);
    return t;
  }

  protected warn(pos: Span, message: string): void {
    if (this.final) this.diags.push({ severity: 'warning', message, pos });
  }

  protected mapKeyTypes(m: MapExpr): SType[] | null {
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
  protected structValueFits(pos: Span, t: Extract<SType, { kind: 'record' }>): boolean {
    if (t.size <= MAX_STRUCT_VALUE) return true;
    this.error(
      pos,
      `${t.name} is ${t.size} bytes: struct values larger than ${MAX_STRUCT_VALUE} bytes (the BPF stack is 512) are not supported yet; read its fields instead`,
    );
    return false;
  }

  /**
   * The address space of the memory a plain value points into or was read from, as bpftrace's AddrSpace on
   * non-pointer types (src/ast/passes/types/type_resolver.cpp): a pointer's own space; `*p`, `p->f`, `p[i]`, `s.f`
   * take their object's; casts keep their operand's; arithmetic takes the left operand's, else the right one's;
   * kaddr() is kernel; `args` is user in uprobes and `syscalls:*` tracepoints, kernel elsewhere; a variable keeps
   * its value's. undefined: none known (plain integers such as arg0, retval, reg(), literals), which means the
   * probe's own space ({@link probeSpace}).
   */
  protected spaceOf(e: Expr): AddrSpace | undefined {
    const t = this.table.find(e);
    if (t?.kind === 'pointer') return t.space;
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
  protected probeSpace(): AddrSpace {
    const p = this.unit?.expanded.provider;
    return p === 'uprobe' || p === 'uretprobe' || p === 'usdt' ? 'user' : 'kernel';
  }

  /** The address space an integer-valued expression points into, when used as an address. */
  protected addressSpace(e: Expr): AddrSpace {
    return this.spaceOf(e) ?? this.probeSpace();
  }

  protected noteVarSpace(name: string, value: Expr): void {
    const sp = this.spaceOf(value);
    if (sp) this.varSpaces.set(name, sp);
    else this.varSpaces.delete(name);
  }

  /**
   * A pointer read out of user memory points into user memory (bpftrace SizedType::GetPointeeTy); one read out of
   * kernel memory keeps its declared space (kernel, or user for BTF's `__user` tag).
   */
  protected inSpace(t: SType, space: AddrSpace | undefined): SType {
    return t.kind === 'pointer' && space === 'user' && t.space !== 'user' ? { ...t, space } : t;
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

  /**
   * The value of `e` when it is a compile-time integer; the final typing also records it in the unit's table
   * (TypeTable.constInt; the tables of the inference rounds are dropped).
   */
  protected constValue(e: Expr): bigint | null {
    const v = this.evalConst(e);
    if (v !== null && this.final) this.table.setConst(e, v);
    return v;
  }

  private evalConst(e: Expr): bigint | null {
    if (e.kind === 'IntLit') return e.value;
    if (e.kind === 'UnaryExpr' && e.op === '-') {
      const v = this.evalConst(e.operand);
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

  /**
   * `(intN[K])x` / `(intN[])x`: an integer, string or integer array reinterpreted as an array of K integers (K from
   * the operand's size when omitted), bpftrace's array casts; the sizes must be equal.
   */
  protected arrayCast(e: Expr & { kind: 'CastExpr' }, t: SType | null): SType | null {
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
  protected namedType(spec: string): SType | undefined {
    const mine = this.opts.cTypes?.records.get(spec.trim().replace(/\s+/, ' '));
    return mine ?? this.unit?.expanded.userType?.(spec) ?? btfRecordByName(kernelBtf(), spec);
  }

  /**
   * The base type a cast names (before its `*`s): a one-word C type (`char`, `long`, `uint64_t`), `void` (none),
   * `struct`/`union` or a typedef ({@link namedType}: the program's definitions, DWARF, BTF); undefined when unknown.
   */
  protected castBase(name: string): SType | undefined {
    if (name === 'void') return { kind: 'none' };
    if (name === 'bool') return BOOL;
    const word = cWordType(name);
    if (word) return word;
    if (/^enum\s/.test(name)) {
      const short = name.replace(/^enum\s+/, '').trim();
      return this.opts.cTypes?.enums.get(`enum ${short}`) ?? btfEnumByName(kernelBtf(), short);
    }
    const t = this.namedType(name);
    return t && t.kind !== 'none' ? t : undefined;
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
        if (target.pointerDepth > 0) return 8 * (target.arrayCount ?? 1);
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
      // a literal and an integer variable have bpftrace's types (`sizeof(1)` and `$x = 1; sizeof($x)` are 1)
      if (target.kind === 'IntLit') return sizeOf(literalBtType(target.value).type);
      const t = this.expr(target);
      return t ? sizeOf(btTypeOf(target, t, this.btVars).type) : null;
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
  protected typeCall(spec: TypeSpec): { type?: SType } | null {
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
  protected builtinChecker(): BuiltinChecker {
    return {
      expr: (e) => this.expr(e),
      setType: (e, t) => this.table.set(e, t),
      error: (pos, message) => this.error(pos, message),
      warn: (pos, message) => this.warn(pos, message),
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
      stackMode: this.opts.stackMode ?? 'bpftrace',
      unsafe: this.opts.unsafe ?? false,
      target: this.opts.target,
    };
  }

  /** Check the argument count of a call; false (with an error) when it is wrong. */
  protected argCount(c: CallExpr, min: number, max: number): boolean {
    if (c.args.length >= min && c.args.length <= max) return true;
    const want = min === max ? `${min}` : `${min} to ${max}`;
    this.error(c.pos, `${c.name}() requires ${want} argument${max === 1 ? '' : 's'} (${c.args.length} provided)`);
    c.args.forEach((a) => this.expr(a));
    return false;
  }

  protected checkMapExists(m: MapExpr): void {
    if (!this.maps.has(m.name)) {
      this.error(m.pos, `Undefined map: ${m.name === '' ? '@' : `@${m.name}`}`, this.mapHint(m.name));
    }
  }

  /** "Did you mean @x?" among the program's maps, for an undefined map `@name`. */
  protected mapHint(name: string): string | undefined {
    if (name === '') return undefined;
    return didYouMean(
      closestNames(
        name,
        [...this.maps.keys()].filter((k) => k !== ''),
      ).map((k) => `@${k}`),
    );
  }

  // ---- implemented by the layers above (semantic-expr.ts, semantic.ts) --------------------------------------

  /** Type an expression (null when it has an error, already reported). */
  abstract expr(e: Expr): SType | null;
  protected abstract stmt(s: Stmt): void;
  protected abstract condition(e: Expr): void;
  protected abstract defineMap(m: MapExpr, keyTypes: SType[], valueType: SType): void;
}

/** Expressions that denote memory (a struct reached through a pointer), so `.field` reads from it. */
export function isLocation(e: Expr): boolean {
  return (e.kind === 'UnaryExpr' && e.op === '*') || e.kind === 'FieldExpr';
}

export function isSigned(t: SType): boolean {
  return t.kind === 'int' ? t.signed : false;
}

export function dedupe(ds: Diagnostic[]): Diagnostic[] {
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
