/**
 * The analyser's expressions (part of semantic.ts Analyzer): the type of each expression, builtin variables typed
 * by the probe (`args`, `argN`, `retval`, `func`, ...), fields, and calls (a registry builtin's `check`).
 */

import {
  BUILTIN_FUNCTIONS,
  builtinFunction,
  FIXED_TYPE_VARIABLES,
  FUNCTION_NAMES,
  statusOf,
  variableNamed,
} from '../builtins/registry.js';
import { DEFAULT_STACK_LIMIT } from '../builtins/stack.js';
import { literalIntType, sameShape, storageType, unify, withNames } from '../typeops.js';
import { PT_REGS_CONTEXTS } from '../ptregs.js';
import type { CallExpr, Expr, Span } from '../ast.js';
import { positionalInt } from '../lexer.js';
import { isBuiltinName } from '../parser.js';
import { btfEnumByName, btfRecordByName, kernelBtf, recordFields, withBtf } from '../btf-types.js';
import { closestNames, didYouMean } from '../suggest.js';
import { userVarName } from './varscope.js';
import { BOOL, I64, isAggregation, type SType, sizeOf, stringType, typeEquals, typeName, U32, U64 } from '../types.js';
import { AnalyzerBase, kernelEnumerator, isLocation, isSigned } from './semantic-base.js';
import { binopSigned, btKeyTypes, btTypeOf, keyTypesText } from '../bt-int-types.js';

export abstract class ExprAnalyzer extends AnalyzerBase {
  /** Type an expression; returns null when unknown (only during inference). */
  expr(e: Expr): SType | null {
    const t = this.exprInner(e);
    if (t) this.table.set(e, t);
    // compile-time integers go into the table too, for code generation (TypeTable.constInt)
    if (this.final && (e.kind === 'IntLit' || e.kind === 'UnaryExpr' || e.kind === 'PositionalExpr'))
      this.constValue(e);
    return t;
  }

  protected exprInner(e: Expr): SType | null {
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
            `Argument mismatch for ${label}: trying to access with arguments: ${keyTypesText(btKeyTypes(e.keys, this.btVars, (k) => this.table.find(k)).map((k) => k.type))} when map expects arguments: ${keyTypesText(m.btKeyTypes?.map((k) => k.type) ?? m.keyTypes)}`,
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
        if (l.kind === 'array' && r.kind === 'array') {
          // integer arrays of one type, compared byte for byte by == and != (bpftrace type_checker.cpp, Binop)
          if (e.op !== '==' && e.op !== '!=') {
            this.error(e.pos, `The ${e.op} operator cannot be used on arrays.`);
            return null;
          }
          if (l.count !== r.count) {
            this.error(e.pos, 'Only arrays of same size support comparison operators.');
            return null;
          }
          if (l.elem.kind !== 'int' || r.elem.kind !== 'int' || !typeEquals(l, r)) {
            this.error(e.pos, 'Only arrays of same sized integer support comparison operators.');
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
        // a non-negative literal takes the other operand's sign (bpftrace: `$u % 10` is unsigned)
        const bl = btTypeOf(e.left, l, this.btVars);
        const br = btTypeOf(e.right, r, this.btVars);
        const signed = binopSigned(e.op, bl, br, isSigned(l), isSigned(r));
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
          this.table.set(target, t);
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
          elems.push(x.kind === 'IntLit' ? literalIntType(x.value) : t.kind === 'int' ? t : storageType(t));
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
        // any other type written in C (`char *`, `struct Foo **`, `int32 **`, `uint64_t`, `size_t`): its base from the
        // C words, the program's definitions or BTF, then the pointers
        const base = spec.arrayCount === null ? this.castBase(spec.name) : undefined;
        if (base && spec.pointerDepth > 0) {
          if (t && t.kind !== 'int' && t.kind !== 'pointer')
            this.error(e.pos, `Cannot cast from '${typeName(t)}' to '${spec.name} ${'*'.repeat(spec.pointerDepth)}'`);
          const space = this.addressSpace(e.operand);
          let p: SType = base;
          for (let i = 0; i < spec.pointerDepth; i++) p = { kind: 'pointer', to: p, space };
          return p;
        }
        if (!base && spec.arrayCount === null && !['string', 'buffer', 'inet'].includes(spec.name)) {
          this.error(spec.pos, `Unknown type: '${spec.name}' (not defined in the program nor in the kernel's BTF)`);
          return null;
        }
        const named = spec.pointerDepth === 0 && base?.kind === 'int' ? base : undefined;
        if ((!m && !named) || spec.pointerDepth > 0 || spec.arrayCount !== null) {
          this.error(spec.pos, `Cast to '${spec.name}${'*'.repeat(spec.pointerDepth)}' is not supported yet`);
          return null;
        }
        const to: SType = named ?? { kind: 'int', size: (Number(m![2]) / 8) as 1 | 2 | 4 | 8, signed: m![1] !== 'u' };
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
          // bpftrace type_checker.cpp (ArrayAccess): a constant index is checked here, except on a zero-length
          // (flexible) array member; any other integer index is checked at run time (codegen: a warning when out of
          // bounds). The element type is returned after an error too, so later uses report nothing more.
          const elem = this.inSpace(t.elem, this.addressSpace(e.object));
          const idx = this.constValue(e.index);
          const it = this.table.find(e.index);
          if (idx !== null && idx < 0n) {
            this.error(
              e.index.pos,
              `The array index operator [] only accepts non-negative integer indices. Got: ${typeName(it ?? I64)}`,
            );
          } else if (idx !== null && t.count !== 0 && idx >= BigInt(t.count)) {
            this.error(e.pos, `the index ${idx} is out of bounds for array of size ${t.count}`);
          } else if (idx === null && it && it.kind !== 'int') {
            this.error(
              e.index.pos,
              `The array index operator [] only accepts non-negative integer indices. Got: ${typeName(it)}`,
            );
          }
          return elem;
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
          const it = this.table.find(e.index);
          if (it && it.kind !== 'int') {
            this.error(e.index.pos, `The index of [] must be an integer (${typeName(it)} provided)`);
            return null;
          }
          return { kind: 'int', size: 1, signed: true };
        }
        if (t.kind === 'pointer' && (t.to.kind === 'int' || t.to.kind === 'pointer')) {
          const it = this.table.find(e.index);
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
        if (v === null) return null;
        this.table.setSize(e, v);
        return U64;
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

  protected builtin(name: string, pos: Span): SType | null {
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
    if (name === 'kstack' || name === 'ustack') {
      const mode = this.opts.stackMode ?? 'bpftrace';
      if (name === 'ustack') return { kind: name, limit: DEFAULT_STACK_LIMIT, mode };
      if (mode !== 'build_id') return { kind: name, limit: DEFAULT_STACK_LIMIT, mode };
      // bpftrace's type resolver: the same warning and fallback
      this.warn(pos, "'build_id' stack mode can only be used for ustack. Falling back to 'raw' mode.");
      return { kind: name, limit: DEFAULT_STACK_LIMIT, mode: 'raw' };
    }
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
      // iter: the iterator's context, `struct bpf_iter__NAME *` (its fields are read straight from the context)
      if (p === 'iter' && u.expanded.iter !== undefined) {
        const rec = btfRecordByName(kernelBtf(), `struct bpf_iter__${u.expanded.iter}`);
        if (rec) return { kind: 'pointer', to: rec, space: 'kernel' };
      }
      this.error(pos, `The ctx builtin can not be used with '${p}' probes`);
      return null;
    }
    if (name === 'usermode') {
      // BEGIN/END run in bpftrace's own process (user-space uprobes there): 1 (tests/runtime/builtin
      // "usermode_builtin_in_begin_end"); probes without the task's registers (tracepoint, rawtracepoint,
      // fentry/fexit, iter) run in the kernel: 0, as bpftrace folds it (fold_literals.cpp, AttachPoint::check_available)
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

  protected field(e: Expr & { kind: 'FieldExpr' }): SType | null {
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
      if (f.type.kind === 'int' && f.type.enum?.unresolved) return this.tracepointEnum(f.type);
      // a pointer field of a struct in user memory points into user memory (bpftrace: the field takes the
      // struct's AddrSpace); a struct value of unknown origin (a map's) takes the probe's
      return this.inSpace(f.type, this.addressSpace(e.object));
    }
    this.error(e.pos, `Can not access field '${e.field}' on expression of type '${typeName(t)}'`);
    return null;
  }

  /**
   * A tracepoint field declared `enum E` (see tracepointFieldType): the int with kernel BTF's enumerators of `enum E`,
   * or the plain int when BTF has no such enum.
   */
  private tracepointEnum(t: Extract<SType, { kind: 'int' }>): SType {
    const { enum: info, ...int } = t;
    let found: SType | undefined;
    try {
      found = btfEnumByName(kernelBtf(), info!.name);
    } catch {
      found = undefined; // no kernel BTF: the value stays a number
    }
    return found?.kind === 'int' && found.enum ? { ...int, enum: found.enum } : int;
  }

  protected call(c: CallExpr): SType | null {
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
}
