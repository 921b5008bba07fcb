/**
 * The code generator's memory and map access (part of gen.ts ProbeGen): struct fields (`args.x`, `p->f`), loads
 * from kernel/user memory and the probe context, map keys, reads, updates, aggregation reads, `len(@m)` and
 * `delete()`.
 */

import { HELPER_ID as H } from '../bpf/helpers.js';
import * as I from '../bpf/insn.js';
import { FP, R0, R1, R4 } from '../bpf/opcodes.js';
import { BpfscopeError } from '../errors.js';
import type { CallExpr, Expr, FieldExpr, MapExpr } from '../lang/ast.js';
import { kernelBtf, recordFields } from '../lang/btf-types.js';
import { type RecordField, type SType, sizeOf, tupleLayout } from '../lang/types.js';
import { copyMem, zeroStack } from './frame.js';
import { type HelperArg, IrFunction } from './ir.js';
import { type MapPlan } from './plan.js';
import { isMemoryLocation } from '../lang/typeops.js';
import { isSigned, type Val, GenCore } from './gen-core.js';

export abstract class AccessGen extends GenCore {
  /** Build the key of `@m[k...]` on the stack; returns its offset. */
  mapKey(plan: MapPlan, m: MapExpr, extraBytes = 0): number {
    const off = this.frame.temp(plan.keySize + extraBytes);
    zeroStack(this.fn, off, plan.keySize);
    if (m.keys.length === 1 && plan.keyTypes.length > 1) {
      // one tuple-valued key for a map of several keys: its elements are the keys
      this.storeExpr(m.keys[0]!, { kind: 'tuple', elems: plan.keyTypes }, this.fb, off);
      return off;
    }
    m.keys.forEach((k, i) => {
      this.storeExpr(k, plan.keyTypes[i]!, this.fb, off + plan.keyOffsets[i]!);
    });
    return off;
  }

  /** Non-aggregate `@m[k] op= v` / `@m[k]++`: atomic add in place, or insert the initial value. */
  mapUpdateInt(plan: MapPlan, m: MapExpr, op: string, v: number, vt: SType): number {
    const fn = this.fn;
    const keyOff = this.mapKey(plan, m);
    const p = this.callHelper(H.map_lookup_elem, [{ map: plan.kernelName }, { stack: keyOff }]);
    const missing = fn.newLabel('miss');
    const done = fn.newLabel('upd');
    const result = fn.vreg();
    fn.emit(I.jmpImm('jeq', p, 0, missing));
    if (op === '+' || op === '-') {
      const delta = fn.vreg();
      fn.emit(I.mov64(delta, v));
      if (op === '-') fn.emit(I.neg64(delta));
      fn.emit(I.atomicAdd(8, p, delta, 0));
      fn.emit(I.ldx(8, result, p, 0));
    } else {
      fn.emit(I.ldx(8, result, p, 0));
      this.arith(op, result, v, isSigned(plan.valueType) && isSigned(vt));
      fn.emit(I.stx(8, p, result, 0));
    }
    fn.emit(I.ja(done));
    fn.mark(missing);
    // initial value: 0 op v
    fn.emit(I.mov64Imm(result, 0));
    this.arith(op, result, v, isSigned(plan.valueType) && isSigned(vt));
    const valOff = this.frame.temp(8);
    fn.emit(I.stx(8, this.fb, result, valOff));
    this.warnIfMapFull(
      this.callHelper(H.map_update_elem, [{ map: plan.kernelName }, { stack: keyOff }, { stack: valOff }, { imm: 0 }]),
    );
    fn.mark(done);
    return result;
  }

  protected argsField(e: FieldExpr): RecordField {
    const rec = this.unit.expanded.args;
    if (rec?.kind !== 'record') throw new BpfscopeError('internal: args without a record type');
    return rec.fields.find((f) => f.name === e.field)!;
  }

  protected field(e: FieldExpr): Val {
    const obj = e.object;
    if (obj.kind === 'BuiltinExpr' && obj.name === 'ctx' && this.unit.expanded.provider === 'iter') {
      return this.iterCtxField(e);
    }
    if (obj.kind === 'BuiltinExpr' && obj.name === 'args') {
      const f = this.argsField(e);
      if ((f as { dataLoc?: boolean }).dataLoc) return this.dataLocString(f, sizeOf(this.types.get(e)));
      return this.loadCtx(f.type, f.offset);
    }
    const t = this.types.get(obj);
    if (t.kind === 'tuple') {
      const v = this.expr(obj);
      if (v.kind !== 'mem') throw new BpfscopeError('internal: tuple not in memory');
      const i = t.names ? t.names.indexOf(e.field) : Number(e.field);
      const l = tupleLayout(t.elems);
      const et = t.elems[i]!;
      const off = v.off + l.offsets[i]!;
      if (et.kind === 'int' || et.kind === 'pointer' || et.kind === 'bool') {
        const r = this.fn.vreg();
        this.fn.emit(I.ldx(sizeOf(et) as 1 | 2 | 4 | 8, r, this.fb, off));
        // a signed member narrower than 64 bits (tuples keep their members' sizes): sign-extended
        if (et.kind === 'int' && et.signed && et.size < 8) this.normalize(r, et.size, true);
        return this.reg(r);
      }
      return { kind: 'mem', off, size: sizeOf(et) };
    }
    if (t.kind === 'record' && !isMemoryLocation(obj, this.types)) return this.frameField(e, t);
    const loc = this.fieldLocation(e);
    return this.loadMem(this.types.get(e), loc.base, loc.off, loc.space, loc.field);
  }

  /**
   * `ctx.FIELD` in an iter probe: loaded straight from the context (`struct bpf_iter__NAME`, whose pointers the
   * verifier types from BTF). As bpftrace (codegen_llvm.cpp, "check context access for iter probes"), a NULL
   * pointer field ends the program for this call: the kernel's last call of an iterator has no object.
   */
  protected iterCtxField(e: FieldExpr): Val {
    const fn = this.fn;
    const rec = (this.types.get(e.object) as Extract<SType, { kind: 'pointer' }>).to as Extract<
      SType,
      { kind: 'record' }
    >;
    const f = recordFields(kernelBtf(), rec).find((x) => x.name === e.field)!;
    const t = this.types.get(e);
    if (t.kind === 'pointer') {
      const r = fn.vreg();
      fn.emit(I.ldx(8, r, this.ctx, f.offset));
      fn.emit(I.jmpImm('jeq', r, 0, this.endLabel));
      return this.reg(r);
    }
    if (t.kind === 'int' && !f.bitSize) return this.loadCtx(t, f.offset);
    throw new BpfscopeError(`internal: iter context field ${e.field} of type ${t.kind}`);
  }

  /** `s.f` on a struct value held in the frame (a variable's, a map's, a tuple element's copy). */
  protected frameField(e: FieldExpr, rec: Extract<SType, { kind: 'record' }>): Val {
    const fn = this.fn;
    const v = this.expr(e.object);
    if (v.kind !== 'mem') throw new BpfscopeError('internal: struct value not in memory');
    const field = recordFields(kernelBtf(), rec).find((f) => f.name === e.field)!;
    const t = this.types.get(e);
    const src = v.off + field.offset;
    if (t.kind === 'int' || t.kind === 'bool' || t.kind === 'pointer') {
      const size = t.kind === 'int' ? t.size : t.kind === 'bool' ? 1 : 8;
      const shift = field.bitSize ? (field.bitOffset ?? 0) - field.offset * 8 : 0;
      const bytes = field.bitSize ? Math.min(8, Math.ceil((shift + field.bitSize) / 8)) : size;
      const tmp = this.frame.temp(8);
      fn.emit(I.st(8, this.fb, tmp, 0));
      copyMem(fn, this.fb, tmp, this.fb, src, bytes);
      const r = fn.vreg();
      fn.emit(I.ldx(8, r, this.fb, tmp));
      if (field.bitSize) {
        if (shift) fn.emit(I.alu64Imm('rsh', r, shift));
        if (field.bitSize < 32) fn.emit(I.alu64Imm('and', r, 2 ** field.bitSize - 1));
      } else if (t.kind === 'int' && t.signed && t.size < 8) this.normalize(r, t.size, true);
      return this.reg(r);
    }
    return { kind: 'mem', off: src, size: sizeOf(t) };
  }

  /**
   * `len(@m)`: bpf_for_each_map_elem with a callback that adds one to a per-CPU counter (`len_count`) whose address
   * it gets through the callback context (a real stack slot: the helper takes it only from there).
   */
  protected mapLen(m: MapExpr): Val {
    const fn = this.fn;
    const plan = this.tables.maps.get(m.name)!;
    const cbName = `${fn.name.slice(0, 40)}_len${this.subprogs.length}`;
    const cb = new IrFunction(cbName);
    // r4 = the context: a stack slot holding the counter's address (a map value)
    cb.emit(I.ldx(8, R1, R4, 0));
    cb.emit(I.ldx(8, R0, R1, 0));
    cb.emit(I.alu64Imm('add', R0, 1));
    cb.emit(I.stx(8, R1, R0, 0));
    cb.emit(I.mov64Imm(R0, 0));
    cb.emit(I.exit());
    this.subprogs.push({ fn: cb, params: 4 });
    // The counter lives in a per-CPU map value, not on the stack: the verifier follows a stack counter's exact value
    // through every callback iteration when the result is compared later, and never converges.
    this.tables.resources.lenCountName = 'len_count';
    const key = this.frame.temp(8);
    fn.emit(I.st(4, this.fb, key, 0));
    const counter = this.callHelper(H.map_lookup_elem, [{ map: 'len_count' }, { stack: key }]);
    const n = fn.vreg();
    fn.emit(I.mov64Imm(n, 0));
    const none = fn.newLabel('len_none');
    fn.emit(I.jmpImm('jeq', counter, 0, none));
    fn.emit(I.st(8, counter, 0, 0));
    const off = fn.frameBase === FP ? this.frame.temp(8) : fn.allocStack(8);
    fn.emit(I.stx(8, FP, counter, off));
    const f = fn.vreg();
    fn.emit(I.ldFunc(f, cbName));
    this.callHelper(H.for_each_map_elem, [{ map: plan.kernelName }, f, { fp: off }, { imm: 0 }]);
    const p = fn.vreg();
    fn.emit(I.ldx(8, p, FP, off));
    fn.emit(I.ldx(8, n, p, 0));
    fn.mark(none);
    return this.reg(n);
  }

  /** `delete(@m[k])` / `delete(@m, k)`: map_delete_elem; returns its result register (0 when the key existed). */
  protected deleteCall(c: CallExpr): number {
    const m = c.args[0] as MapExpr;
    const plan = this.tables.maps.get(m.name)!;
    let keyOff: number;
    if (c.args.length === 2) {
      keyOff = this.frame.temp(plan.keySize);
      zeroStack(this.fn, keyOff, plan.keySize);
      const k = c.args[1]!;
      if (plan.keyTypes.length === 1) {
        this.storeExpr(k, plan.keyTypes[0]!, this.fb, keyOff);
      } else {
        this.storeExpr(k, { kind: 'tuple', elems: plan.keyTypes }, this.fb, keyOff);
      }
    } else {
      keyOff = this.mapKey(plan, m);
    }
    return this.callHelper(H.map_delete_elem, [{ map: plan.kernelName }, { stack: keyOff }]);
  }

  /** Where `p->f` / `s.f` lives: a base address register, a byte offset and the address space. */
  protected fieldLocation(e: FieldExpr): { base: number; off: number; space: 'kernel' | 'user'; field: RecordField } {
    const ot = this.types.get(e.object);
    let base: number;
    let off = 0;
    let space: 'kernel' | 'user';
    let rec: Extract<SType, { kind: 'record' }>;
    if (ot.kind === 'pointer' && ot.to.kind === 'record') {
      base = this.scalar(e.object);
      space = ot.space;
      rec = ot.to;
    } else if (ot.kind === 'record') {
      const l = this.location(e.object);
      base = l.base;
      off = l.off;
      space = l.space;
      rec = ot;
    } else {
      throw new BpfscopeError('internal: field access on a non-struct');
    }
    const field = recordFields(kernelBtf(), rec).find((f) => f.name === e.field)!;
    return { base, off: off + field.offset, space, field };
  }

  /** The address of a struct-typed expression reached through pointers (`*p`, `p->inner`). */
  protected location(e: Expr): { base: number; off: number; space: 'kernel' | 'user' } {
    if (e.kind === 'UnaryExpr' && e.op === '*') {
      const pt = this.types.get(e.operand) as Extract<SType, { kind: 'pointer' }>;
      return { base: this.scalar(e.operand), off: 0, space: pt.space };
    }
    if (e.kind === 'FieldExpr') {
      const l = this.fieldLocation(e);
      return { base: l.base, off: l.off, space: l.space };
    }
    throw new BpfscopeError('internal: not a memory location');
  }

  /** Read a value of type `t` from `[base + off]` in kernel or user memory with bpf_probe_read_*. */
  protected loadMem(t: SType, base: number, off: number, space: 'kernel' | 'user', field?: RecordField): Val {
    const fn = this.fn;
    const addr = fn.vreg();
    fn.emit(I.mov64(addr, base));
    if (off) fn.emit(I.alu64Imm('add', addr, off));
    const read = space === 'user' ? H.probe_read_user : H.probe_read_kernel;
    if (t.kind === 'int' || t.kind === 'bool' || t.kind === 'pointer') {
      const size = t.kind === 'int' ? t.size : t.kind === 'bool' ? 1 : 8;
      const tmp = this.frame.temp(8);
      fn.emit(I.st(8, this.fb, tmp, 0));
      const r = fn.vreg();
      if (field?.bitSize) {
        const shift = (field.bitOffset ?? 0) - field.offset * 8;
        const bytes = Math.min(8, Math.ceil((shift + field.bitSize) / 8));
        this.callHelper(read, [{ stack: tmp }, { imm: bytes }, addr]);
        fn.emit(I.ldx(8, r, this.fb, tmp));
        if (shift) fn.emit(I.alu64Imm('rsh', r, shift));
        if (field.bitSize < 32) fn.emit(I.alu64Imm('and', r, 2 ** field.bitSize - 1));
        return this.reg(r);
      }
      this.callHelper(read, [{ stack: tmp }, { imm: size }, addr]);
      fn.emit(I.ldx(size as 1 | 2 | 4 | 8, r, this.fb, tmp));
      if (t.kind === 'int' && t.signed && t.size < 8) this.normalize(r, t.size, true);
      return this.reg(r);
    }
    if (t.kind === 'string') {
      const buf = this.frame.temp(t.size);
      zeroStack(fn, buf, t.size);
      this.callHelper(read, [{ stack: buf }, { imm: t.size }, addr]);
      return { kind: 'mem', off: buf, size: t.size };
    }
    if (t.kind === 'record' || t.kind === 'array' || t.kind === 'tuple' || t.kind === 'username') {
      // a struct (or array, tuple) value, `*p`: its bytes copied onto the stack (semantic analysis bounds the size)
      const size = sizeOf(t);
      const buf = this.frame.temp(size);
      zeroStack(fn, buf, size);
      this.callHelper(read, [{ stack: buf }, { imm: size }, addr]);
      return { kind: 'mem', off: buf, size };
    }
    throw new BpfscopeError(`internal: cannot read a ${t.kind} from memory`);
  }

  /** Load a tracepoint record field of type `t` at `offset` from the context. */
  protected loadCtx(t: SType, offset: number): Val {
    const fn = this.fn;
    if (t.kind === 'int') {
      const r = fn.vreg();
      fn.emit(I.ldx(t.size, r, this.ctx, offset));
      if (t.signed && t.size < 8) this.normalize(r, t.size, true);
      return this.reg(r);
    }
    if (t.kind === 'pointer' || t.kind === 'bool') {
      const r = fn.vreg();
      fn.emit(I.ldx(t.kind === 'bool' ? 1 : 8, r, this.ctx, offset));
      return this.reg(r);
    }
    // strings and arrays: copy out of the record
    const size = sizeOf(t);
    const off = this.frame.temp(size);
    zeroStack(fn, off, size);
    const src = fn.vreg();
    fn.emit(I.mov64(src, this.ctx));
    fn.emit(I.alu64Imm('add', src, offset));
    this.callHelper(H.probe_read_kernel, [{ stack: off }, { imm: size }, src]);
    return { kind: 'mem', off, size };
  }

  /** A `__data_loc char[]` field: the u32 at `offset` is (len << 16 | offset from the record start). */
  protected dataLocString(f: RecordField, size: number): Val {
    const fn = this.fn;
    const loc = fn.vreg();
    fn.emit(I.ldx(4, loc, this.ctx, f.offset));
    fn.emit(I.alu64Imm('and', loc, 0xffff));
    const src = fn.vreg();
    fn.emit(I.mov64(src, this.ctx));
    fn.emit(I.alu64('add', src, loc));
    const off = this.frame.temp(size);
    zeroStack(fn, off, size);
    this.callHelper(H.probe_read_kernel_str, [{ stack: off }, { imm: size }, src]);
    return { kind: 'mem', off, size };
  }

  protected mapRead(m: MapExpr): Val {
    const fn = this.fn;
    const plan = this.tables.maps.get(m.name)!;
    const keyOff = this.mapKey(plan, m);
    if (plan.perCpu && ['count', 'sum', 'min', 'max', 'avg'].includes(plan.valueType.kind)) {
      return this.reg(this.aggregateRead(plan, { stack: keyOff }));
    }
    const p = this.callHelper(H.map_lookup_elem, [{ map: plan.kernelName }, { stack: keyOff }]);
    const t = this.types.get(m);
    const missing = fn.newLabel('nokey');
    const done = fn.newLabel('gotkey');
    const warn = !!this.tables.helperWarnings;
    if (t.kind === 'int' || t.kind === 'bool' || t.kind === 'pointer' || t.kind === 'ksym' || t.kind === 'timestamp') {
      const r = fn.vreg();
      fn.emit(I.mov64Imm(r, 0));
      fn.emit(I.jmpImm('jeq', p, 0, warn ? missing : done));
      fn.emit(I.ldx(t.kind === 'bool' ? 1 : 8, r, p, 0));
      if (warn) {
        fn.emit(I.ja(done));
        fn.mark(missing);
        this.lookupMissWarning();
      }
      fn.mark(done);
      return this.reg(r);
    }
    const size = sizeOf(t);
    const off = this.frame.temp(size);
    zeroStack(fn, off, size);
    fn.emit(I.jmpImm('jeq', p, 0, missing));
    copyMem(fn, this.fb, off, p, 0, size);
    if (warn) {
      fn.emit(I.ja(done));
      fn.mark(missing);
      this.lookupMissWarning();
      fn.mark(done);
    } else fn.mark(missing);
    return { kind: 'mem', off, size };
  }

  /**
   * The value of a count/sum/min/max/avg map entry as `@m[k]` reads it in an expression: the per-CPU slots (layouts
   * in aggregate.ts) combined over every possible CPU with bpf_map_lookup_percpu_elem (Linux 5.19), as bpftrace:
   * counts and sums added, the smallest/largest set min/max, avg = total / count (truncated toward zero; 0 when no
   * CPU has a value). A missing key reads as 0.
   */
  protected aggregateRead(plan: MapPlan, key: HelperArg): number {
    const fn = this.fn;
    const vt = plan.valueType;
    const signed = 'signed' in vt && vt.signed;
    const total = fn.vreg();
    const count = fn.vreg();
    const any = fn.vreg();
    fn.emit(I.mov64Imm(total, 0));
    fn.emit(I.mov64Imm(count, 0));
    fn.emit(I.mov64Imm(any, 0));
    for (const cpu of this.tables.target.possibleCpus()) {
      const skip = fn.newLabel('pcpu');
      const p = this.callHelper(H.map_lookup_percpu_elem, [{ map: plan.kernelName }, key, { imm: cpu }]);
      fn.emit(I.jmpImm('jeq', p, 0, skip));
      const v = fn.vreg();
      fn.emit(I.ldx(8, v, p, 0));
      if (vt.kind === 'min' || vt.kind === 'max') {
        const set = fn.vreg();
        fn.emit(I.ldx(8, set, p, 8));
        fn.emit(I.jmpImm('jeq', set, 0, skip));
        const take = fn.newLabel('mm_take');
        fn.emit(I.jmpImm('jeq', any, 0, take));
        // keep the current result unless this CPU's value is smaller (min) / larger (max)
        const keep = vt.kind === 'min' ? (signed ? 'jsle' : 'jle') : signed ? 'jsge' : 'jge';
        fn.emit(I.jmp(keep, total, v, skip));
        fn.mark(take);
        fn.emit(I.mov64(total, v));
        fn.emit(I.mov64Imm(any, 1));
      } else {
        fn.emit(I.alu64('add', total, v));
        if (vt.kind === 'avg') {
          const n = fn.vreg();
          fn.emit(I.ldx(8, n, p, 8));
          fn.emit(I.alu64('add', count, n));
        }
      }
      fn.mark(skip);
    }
    if (vt.kind !== 'avg') return total;
    // avg: total / count, signed totals divided by magnitude (BPF's div is unsigned)
    const done = fn.newLabel('avg_done');
    const res = fn.vreg();
    fn.emit(I.mov64Imm(res, 0));
    fn.emit(I.jmpImm('jeq', count, 0, done));
    if (signed) {
      const pos = fn.newLabel('avg_pos');
      fn.emit(I.jmpImm('jsge', total, 0, pos));
      fn.emit(I.neg64(total));
      fn.emit(I.mov64(res, total));
      fn.emit(I.alu64('div', res, count));
      fn.emit(I.neg64(res));
      fn.emit(I.ja(done));
      fn.mark(pos);
    }
    fn.emit(I.mov64(res, total));
    fn.emit(I.alu64('div', res, count));
    fn.mark(done);
    return res;
  }

  protected incDec(e: Expr & { kind: 'IncDecExpr' }): Val {
    const fn = this.fn;
    const t = e.target.kind === 'VarExpr' ? this.types.find(e.target) : this.tables.maps.get(e.target.name)?.valueType;
    const one = this.scaledStep(this.constant(1), t);
    const op = e.op === '++' ? '+' : '-';
    if (e.target.kind === 'VarExpr') {
      const slot = this.vars.get(e.target.name)!;
      if (slot.kind !== 'reg') throw new BpfscopeError('internal: ++ on a buffer variable');
      const before = fn.vreg();
      fn.emit(I.mov64(before, slot.reg));
      this.arith(op, slot.reg, one, false);
      this.syncShadow(e.target.name);
      return this.reg(e.prefix ? slot.reg : before);
    }
    const plan = this.tables.maps.get(e.target.name)!;
    const after = this.mapUpdateInt(plan, e.target, op, one, plan.valueType);
    if (e.prefix) return this.reg(after);
    const before = fn.vreg();
    fn.emit(I.mov64(before, after));
    this.arith(op === '+' ? '-' : '+', before, one, false);
    return this.reg(before);
  }
}
