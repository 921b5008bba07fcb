/**
 * Code generation: one typed probe body (for one expanded attach point) → an IrFunction on virtual registers.
 *
 * Values are either scalars in a virtual register (integers, already sign/zero-extended to 64 bits; pointers) or
 * byte buffers on the stack (strings, tuples). Helpers follow the BPF calling convention: arguments are evaluated
 * into virtual registers first, then moved into r1-r5 right before the `call`, and the result is copied out of r0
 * right after it (see `ir.ts`).
 */

import { HELPER_ID as H } from '../bpf/helpers.js';
import * as I from '../bpf/insn.js';
import { FP, R0, R1, R2, R3, R4 } from '../bpf/opcodes.js';
import { BpfscopeError } from '../errors.js';
import type { AssignStmt, Block, Expr, ForStmt, IfStmt, MapExpr, Stmt, VarExpr } from '../lang/ast.js';
import { nodesOfKind } from '../lang/astwalk.js';
import { type SType, sizeOf, tupleLayout } from '../lang/types.js';
import { emitAggregation } from './aggregate.js';
import { copyMem, MAP_FRAME_BIAS, zeroStack } from './frame.js';
import { IrFunction } from './ir.js';
import { CallGen } from './gen-calls.js';
import { FRAME_MAP_BASE, isSigned, type Val } from './gen-core.js';

export type { GenTables, Val } from './gen-core.js';
export type { HelperArg } from './ir.js';

export class ProbeGen extends CallGen {
  /** Generate the whole program. */
  generate(): IrFunction {
    const fn = this.fn;
    const probe = this.unit.probe;
    fn.pos = probe.pos;
    this.ctx = fn.vreg();
    fn.emit(I.mov64(this.ctx, R1));
    const sizeFrame = this.frameInMap ? this.enterFrameMap() : undefined;
    // Scratch variables: scalars get a register, buffers a permanent stack slot; all start zeroed.
    for (const [name, t] of this.types.variables) {
      if (t.kind === 'int' || t.kind === 'bool' || t.kind === 'pointer') {
        const r = fn.vreg();
        fn.emit(I.mov64Imm(r, 0));
        this.vars.set(name, { kind: 'reg', reg: r });
        if (this.types.addressTaken.has(name)) {
          // `&$x` of a variable kept in a register: a stack copy, rewritten whenever the variable is (syncShadow)
          const off = this.frame.permanent(8);
          fn.emit(I.st(8, this.fb, off, 0));
          this.shadows.set(name, off);
        }
      } else {
        const size = sizeOf(t);
        const off = this.frame.permanent(size);
        zeroStack(fn, off, size);
        this.vars.set(name, { kind: 'mem', off, size });
      }
    }
    // -p: task-context probes only fire for the target (interval timers run in whatever task is on the CPU, and
    // profile events are opened for the target already; iter probes run in bpfscope, their link names the target)
    const p = this.unit.expanded.provider;
    const timer = p === 'interval' || p === 'profile' || p === 'iter';
    if (this.unit.expanded.syscalls) this.syscallFilter(this.unit.expanded.syscalls);
    if (this.tables.filterPid !== undefined && !this.unit.expanded.special && !timer) {
      const tgid = this.callHelper(H.get_current_pid_tgid, []);
      fn.emit(I.alu64Imm('rsh', tgid, 32));
      fn.emit(I.jmpImm('jne', tgid, this.tables.filterPid, this.endLabel));
    }
    if (this.unit.expanded.provider === 'interval') this.skipAfterExit();
    if (probe.predicate) {
      const pred = probe.predicate;
      this.frame.scope(() => this.branchIfFalse(pred, this.endLabel));
    }
    this.block(probe.body);
    fn.mark(this.endLabel);
    fn.pos = probe.pos;
    fn.emit(I.mov64Imm(R0, 0));
    fn.emit(I.exit());
    sizeFrame?.();
    return fn;
  }

  /**
   * Prologue of a frame kept in a frame map: r9 = &frame_map[this CPU] + MAP_FRAME_BIAS (the frame's slots start
   * at -MAP_FRAME_BIAS; a missing value ends the probe). Returns the function that records the map (one value of
   * the frame's final size per possible CPU) for the loader once the body is generated.
   */
  protected enterFrameMap(): () => void {
    const fn = this.fn;
    const name = `${fn.name}_frame`.slice(0, 15);
    const key = fn.allocStack(8);
    const cpu = this.callHelper(H.get_smp_processor_id, []);
    fn.emit(I.stx(4, FP, cpu, key));
    fn.emit(I.st(4, FP, key + 4, 0));
    const p = this.callHelper(H.map_lookup_elem, [{ map: name }, { fp: key }]);
    fn.emit(I.jmpImm('jeq', p, 0, this.endLabel));
    fn.emit(I.mov64(FRAME_MAP_BASE, p));
    fn.emit(I.alu64Imm('add', FRAME_MAP_BASE, MAP_FRAME_BIAS));
    return () => {
      this.tables.resources.frameMaps.push({ name, size: Math.max(8, this.frame.size) });
    };
  }

  // ---- statements ------------------------------------------------------------------------------------------

  protected block(b: Block): void {
    for (const s of b.stmts) this.frame.scope(() => this.stmt(s));
  }

  protected stmt(s: Stmt): void {
    this.at(s.pos);
    switch (s.kind) {
      case 'ExprStmt':
        this.exprStmt(s.expr);
        return;
      case 'AssignStmt':
        this.assign(s);
        return;
      case 'VarDeclStmt':
        if (s.value) {
          this.assign({
            kind: 'AssignStmt',
            pos: s.pos,
            target: s.variable,
            op: '=',
            value: s.value,
          });
        }
        return;
      case 'IfStmt':
        this.ifStmt(s);
        return;
      case 'Block':
        this.block(s);
        return;
      case 'JumpStmt': {
        if (s.value) this.frame.scope(() => this.expr(s.value!));
        const loop = this.loops[this.loops.length - 1];
        if (s.jump === 'break') this.fn.emit(I.ja(loop!.brk));
        else if (s.jump === 'continue') this.fn.emit(I.ja(loop!.cont));
        else this.fn.emit(I.ja(this.endLabel));
        return;
      }
      case 'WhileStmt': {
        const fn = this.fn;
        const top = fn.newLabel('while');
        const end = fn.newLabel('wend');
        fn.mark(top);
        this.frame.scope(() => this.branchIfFalse(s.cond, end));
        this.loops.push({ brk: end, cont: top });
        this.block(s.body);
        this.loops.pop();
        fn.emit(I.ja(top));
        fn.mark(end);
        return;
      }
      case 'UnrollStmt': {
        const n = this.constInt(s.count) ?? 0;
        for (let i = 0; i < n; i++) this.block(s.body);
        return;
      }
      case 'ForStmt': {
        if (s.iterable.kind === 'MapExpr') {
          this.forMap(s, s.iterable);
          return;
        }
        const fn = this.fn;
        const range = s.iterable;
        if (this.constInt(range.start) === undefined || this.constInt(range.end) === undefined) {
          this.forRangeLoop(s, range);
          return;
        }
        const slot = this.vars.get(s.variable.name)!;
        if (slot.kind !== 'reg') throw new BpfscopeError('internal: loop variable not in a register');
        const endV = fn.vreg();
        fn.emit(I.mov64(slot.reg, this.scalar(range.start)));
        fn.emit(I.mov64(endV, this.scalar(range.end)));
        const top = fn.newLabel('for');
        const next = fn.newLabel('fnext');
        const end = fn.newLabel('fend');
        fn.mark(top);
        fn.emit(I.jmp('jsge', slot.reg, endV, end));
        this.loops.push({ brk: end, cont: next });
        this.block(s.body);
        this.loops.pop();
        fn.mark(next);
        fn.emit(I.alu64Imm('add', slot.reg, 1));
        fn.emit(I.ja(top));
        fn.mark(end);
        return;
      }
      default:
        throw new BpfscopeError(`internal: unsupported statement ${(s as Stmt).kind}`);
    }
  }

  /**
   * `for ($kv : @m) { body }` with bpf_for_each_map_elem: the body becomes a callback subprogram (see
   * {@link callbackLoop}); `$kv` is (key, value), count() and sum() values summed over the CPUs.
   */
  protected forMap(s: ForStmt, m: MapExpr): void {
    const plan = this.tables.maps.get(m.name)!;
    this.callbackLoop(
      s,
      4,
      (f, ctxOff) => {
        this.callHelper(H.for_each_map_elem, [{ map: plan.kernelName }, f, { fp: ctxOff }, { imm: 0 }]);
      },
      (cb) => {
        const fn = cb.fn;
        const key = fn.vreg();
        const value = fn.vreg();
        const c = fn.vreg();
        fn.emit(I.mov64(key, R2));
        fn.emit(I.mov64(value, R3));
        fn.emit(I.mov64(c, R4));
        return {
          c,
          loopVar: () => {
            const kvType = this.types.get(s.variable) as Extract<SType, { kind: 'tuple' }>;
            const kl = tupleLayout(kvType.elems);
            const kv = cb.frame.permanent(kl.size);
            zeroStack(fn, kv, kl.size);
            copyMem(fn, FP, kv + kl.offsets[0]!, key, 0, sizeOf(kvType.elems[0]!));
            if (plan.perCpu) {
              // count/sum/min/max/avg: every CPU's slot combined, as `@m[k]` reads it
              const total = cb.aggregateRead(plan, key);
              fn.emit(I.stx(8, FP, total, kv + kl.offsets[1]!));
            } else {
              copyMem(fn, FP, kv + kl.offsets[1]!, value, 0, sizeOf(kvType.elems[1]!));
            }
            return { kind: 'mem', off: kv, size: kl.size };
          },
        };
      },
    );
  }

  /**
   * `for ($i : a..b)` whose bounds are not both constants, with bpf_loop (the verifier cannot bound such a loop
   * itself): `max(b - a, 0)` iterations of a callback (see {@link callbackLoop}) with `$i = a + index`.
   */
  protected forRangeLoop(s: ForStmt, range: Extract<Expr, { kind: 'RangeExpr' }>): void {
    const fn = this.fn;
    const start = fn.vreg();
    fn.emit(I.mov64(start, this.scalar(range.start)));
    const n = fn.vreg();
    fn.emit(I.mov64(n, this.scalar(range.end)));
    fn.emit(I.alu64('sub', n, start));
    // an empty range skips the call: with a known-empty bpf_loop the verifier never visits the callback and 6.18
    // then fails a later callback's program ("No program to jit ... subprog < 0")
    const skip = fn.newLabel('range_empty');
    fn.emit(I.jmpImm('jsle', n, 0, skip));
    this.callbackLoop(
      s,
      2,
      (f, ctxOff) => {
        fn.emit(I.stx(8, FP, start, ctxOff + 16));
        this.callHelper(H.loop, [n, f, { fp: ctxOff }, { imm: 0 }]);
      },
      (cb) => {
        const cfn = cb.fn;
        const index = cfn.vreg();
        const c = cfn.vreg();
        cfn.emit(I.mov64(index, R1));
        cfn.emit(I.mov64(c, R2));
        return {
          c,
          loopVar: () => {
            const v = cfn.vreg();
            cfn.emit(I.ldx(8, v, c, 16));
            cfn.emit(I.alu64('add', v, index));
            return { kind: 'reg', reg: v };
          },
        };
      },
    );
    fn.mark(skip);
  }

  /**
   * A loop whose body runs as a callback subprogram of a looping helper (bpf_for_each_map_elem, bpf_loop). The
   * scratch variables the body uses travel in a context struct on this function's stack (`{u64 probe ctx, u64
   * returned, u64 loop datum, variables...}`): copied in before the call, read by the callback at entry, written
   * back by it on every exit and read back here, so the body sees and updates them as in a plain loop. `break`
   * stops the loop (the callback returns 1), `continue` goes on (0), `return` sets `returned` and stops, and the
   * probe then ends. `call` emits the helper call given the callback's address and the context's stack offset;
   * `prologue` reads the callback's arguments and yields the context pointer and the loop variable's value.
   */
  protected callbackLoop(
    s: ForStmt,
    params: number,
    call: (callback: number, ctxOff: number) => void,
    prologue: (cb: ProbeGen) => { c: number; loopVar: () => Val },
  ): void {
    const fn = this.fn;
    const names = [...new Set(nodesOfKind<VarExpr>(s.body, 'VarExpr').map((v) => v.name))].filter(
      (n) => n !== s.variable.name && this.vars.has(n),
    );
    const layout = new Map<string, { slot: number; val: Val }>();
    let size = 24;
    for (const n of names) {
      const val = this.vars.get(n)!;
      layout.set(n, { slot: size, val });
      size += val.kind === 'reg' ? 8 : Math.ceil(val.size / 8) * 8;
    }
    // on the real stack: the looping helpers take the callback context only from there
    const off = this.fn.frameBase === FP ? this.frame.permanent(size) : fn.allocStack(size);
    fn.emit(I.stx(8, FP, this.ctx, off));
    fn.emit(I.st(8, FP, off + 8, 0));
    for (const { slot, val } of layout.values()) {
      if (val.kind === 'reg') fn.emit(I.stx(8, FP, val.reg, off + slot));
      else copyMem(fn, FP, off + slot, this.fb, val.off, val.size);
    }
    const cbName = `${this.fn.name.slice(0, 40)}_loop${this.subprogs.length}`;
    const cb = new ProbeGen(this.tables, this.unit, this.types, cbName, this);
    this.subprogs.push({ fn: cb.fn, params });
    cb.loopCallbackBody(s, layout, prologue(cb));
    const f = fn.vreg();
    fn.emit(I.ldFunc(f, cbName));
    call(f, off);
    for (const { slot, val } of layout.values()) {
      if (val.kind === 'reg') fn.emit(I.ldx(8, val.reg, FP, off + slot));
      else copyMem(fn, this.fb, val.off, FP, off + slot, val.size);
    }
    for (const n of layout.keys()) this.syncShadow(n);
    const ret = fn.vreg();
    fn.emit(I.ldx(8, ret, FP, off + 8));
    fn.emit(I.jmpImm('jne', ret, 0, this.endLabel));
  }

  /** The callback of {@link callbackLoop}, after its argument prologue. */
  protected loopCallbackBody(
    s: ForStmt,
    layout: Map<string, { slot: number; val: Val }>,
    entry: { c: number; loopVar: () => Val },
  ): void {
    const fn = this.fn;
    fn.pos = s.pos;
    const { c } = entry;
    this.ctx = fn.vreg();
    fn.emit(I.ldx(8, this.ctx, c, 0));
    const local = new Map<string, Val>();
    for (const [n, { slot, val }] of layout) {
      if (val.kind === 'reg') {
        const r = fn.vreg();
        fn.emit(I.ldx(8, r, c, slot));
        local.set(n, { kind: 'reg', reg: r });
      } else {
        const o = this.frame.permanent(val.size);
        copyMem(fn, this.fb, o, c, slot, val.size);
        local.set(n, { kind: 'mem', off: o, size: val.size });
      }
      this.vars.set(n, local.get(n)!);
    }
    this.vars.set(s.variable.name, entry.loopVar());
    const brk = fn.newLabel('cb_break');
    const cont = fn.newLabel('cb_next');
    this.loops.push({ brk, cont });
    this.block(s.body);
    this.loops.pop();
    const leave = (label: string, rc: number, returned: boolean): void => {
      fn.mark(label);
      fn.pos = s.pos;
      if (returned) fn.emit(I.st(8, c, 8, 1));
      for (const [n, { slot }] of layout) {
        const v = local.get(n)!;
        if (v.kind === 'reg') fn.emit(I.stx(8, c, v.reg, slot));
        else copyMem(fn, c, slot, this.fb, v.off, v.size);
      }
      fn.emit(I.mov64Imm(R0, rc));
      fn.emit(I.exit());
    };
    leave(cont, 0, false);
    leave(brk, 1, false);
    leave(this.endLabel, 1, true);
  }

  protected ifStmt(s: IfStmt): void {
    const elseL = this.fn.newLabel('else');
    const doneL = this.fn.newLabel('fi');
    this.frame.scope(() => this.branchIfFalse(s.cond, elseL));
    this.block(s.then);
    if (s.else) this.fn.emit(I.ja(doneL));
    this.fn.mark(elseL);
    if (s.else) {
      if (s.else.kind === 'IfStmt') this.frame.scope(() => this.ifStmt(s.else as IfStmt));
      else this.block(s.else);
      this.fn.mark(doneL);
    }
  }

  protected exprStmt(e: Expr): void {
    if (e.kind === 'CallExpr') {
      this.callStmt(e);
      return;
    }
    this.expr(e);
  }

  protected assign(s: AssignStmt): void {
    const fn = this.fn;
    const target = s.target;
    if (target.kind === 'VarExpr') {
      const slot = this.vars.get(target.name)!;
      if (slot.kind === 'reg') {
        const v = this.scalar(s.value);
        if (s.op === '=') fn.emit(I.mov64(slot.reg, v));
        else
          this.compound(
            slot.reg,
            s.op.slice(0, -1),
            this.scaledStep(v, this.types.find(target)),
            this.types.find(target) ?? this.types.get(s.value),
            this.types.get(s.value),
          );
        this.syncShadow(target.name);
      } else {
        const v = this.expr(s.value);
        zeroStack(fn, slot.off, slot.size);
        this.storeAs(v, this.types.get(target), this.fb, slot.off, this.types.find(s.value));
      }
      return;
    }
    const plan = this.tables.maps.get(target.name)!;
    if (s.value.kind === 'CallExpr' && plan.perCpu) {
      const args = s.value.args;
      emitAggregation(this, plan, target, s.value, args);
      return;
    }
    if (s.op !== '=') {
      const v = this.scaledStep(this.scalar(s.value), plan.valueType);
      this.mapUpdateInt(plan, target, s.op.slice(0, -1), v, this.types.get(s.value));
      return;
    }
    const v = this.expr(s.value);
    const keyOff = this.mapKey(plan, target);
    const valOff = this.frame.temp(plan.valueSize);
    if (v.kind === 'mem' || plan.valueSize !== 8) zeroStack(fn, valOff, plan.valueSize);
    this.storeAs(v, plan.valueType, this.fb, valOff, this.types.find(s.value));
    this.warnIfMapFull(
      this.callHelper(H.map_update_elem, [{ map: plan.kernelName }, { stack: keyOff }, { stack: valOff }, { imm: 0 }]),
    );
  }

  /** `v` as a step for a value of type `t`: whole elements for a pointer (C pointer arithmetic), else `v` itself. */
  protected scaledStep(v: number, t: SType | undefined): number {
    if (t?.kind !== 'pointer') return v;
    const size = t.to.kind === 'none' ? 1 : Math.max(1, sizeOf(t.to));
    if (size === 1) return v;
    const r = this.fn.vreg();
    this.fn.emit(I.mov64(r, v));
    this.fn.emit(I.alu64Imm('mul', r, size));
    return r;
  }

  /** `dst op= v` on a register, with signedness from the types. */
  protected compound(dst: number, op: string, v: number, lt: SType, rt: SType): void {
    const signed = isSigned(lt) && isSigned(rt);
    this.arith(op, dst, v, signed);
  }

  /**
   * Interval probes do nothing once exit() has set the exit flag: a 1 ms timer would otherwise keep running (and
   * undo what the exit path's clear()s did) until user space has read the EXIT record and detached.
   */
  private skipAfterExit(): void {
    const key = this.frame.temp(8);
    this.fn.emit(I.st(4, this.fb, key, 0));
    const p = this.callHelper(H.map_lookup_elem, [{ map: this.tables.resources.exitName }, { stack: key }]);
    const go = this.fn.newLabel('noexit');
    this.fn.emit(I.jmpImm('jeq', p, 0, go));
    const flag = this.fn.vreg();
    this.fn.emit(I.ldx(8, flag, p, 0));
    this.fn.emit(I.jmpImm('jne', flag, 0, this.endLabel));
    this.fn.mark(go);
  }
}
