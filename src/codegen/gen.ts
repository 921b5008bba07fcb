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
import { FP, R0, R1, R2, R3, R4, R5, R9 } from '../bpf/opcodes.js';
import { BpfscopeError } from '../errors.js';
import type { SyscallTable } from '../lang/probe.js';
import type {
  AssignStmt,
  BinaryExpr,
  Block,
  CallExpr,
  Expr,
  FieldExpr,
  ForStmt,
  IfStmt,
  MapExpr,
  Span,
  Stmt,
  VarExpr,
} from '../lang/ast.js';
import { nodesOfKind } from '../lang/astwalk.js';
import { builtinFunction, builtinVariable, type BuiltinGen, type GenValue } from '../lang/builtins/registry.js';
import { positionalInt } from '../lang/lexer.js';
import type { Target, UaddrTarget } from '../lang/target.js';
import { btfVarId, kernelBtf, recordFields } from '../lang/btf-types.js';
import {
  type Analyzer,
  type ProbeUnit,
  PT_REGS_OFFSETS,
  ptonBytes,
  signalNumber,
  storageType,
} from '../lang/passes/semantic.js';
import { type RecordField, type SType, sizeOf, tupleLayout, typeKey, U64 } from '../lang/types.js';
import { compilePrintf } from '../lang/printf.js';
import { emitAggregation } from './aggregate.js';
import { copyMem, Frame, MAP_FRAME_BIAS, storeBytes, zeroStack } from './frame.js';
import { type HelperArg, IrFunction } from './ir.js';
import {
  AsyncAction,
  JOIN_ARG_SIZE,
  JOIN_MAX_ARGS,
  type MapPlan,
  type FuncTablePlan,
  type ProgramResources,
  type StackMapPlan,
} from './plan.js';

/** A generated value: a scalar in a register, or `size` bytes of stack at r10+off. */
export type Val = { kind: 'reg'; reg: number } | { kind: 'mem'; off: number; size: number };

export type { HelperArg } from './ir.js';

/** The frame-map base register (callee-saved: helper calls keep it). */
const FRAME_MAP_BASE = R9;

/** Tables shared by all programs of one compilation. */
export interface GenTables {
  maps: Map<string, MapPlan>;
  /** What the programs need at run time (printf formats, scratch maps, ...), collected while generating. */
  resources: ProgramResources;
  /** Stack trace maps used so far, by IR map name. */
  stackMaps: Map<string, StackMapPlan>;
  /** Function-name tables of multi-attach probes that read `func` (ProbeGen.funcFromCookie), by IR map name. */
  funcTables: Map<string, FuncTablePlan>;
  positional: string[];
  cpid: number | undefined;
  /** `-p PID`: every probe but BEGIN/END only runs for this process (current bpftrace, since 0.24). */
  filterPid?: number;
  /** `-k`: run-time warnings where a map lookup finds nothing (bpftrace's warning level 2). */
  helperWarnings?: boolean;
  probeNameSize: number;
  /** CLOCK_MONOTONIC ns at session start, for `elapsed`. */
  startNs: bigint;
  /** tseries() reads its clock from this scalar map (RuntimeConfig.dummyTsMap, a test hook) instead of TAI. */
  dummyTsMap?: string;
  /** Host facts (CPUs, PID namespace, kernel symbols, cgroup ids, uaddr): codegen reads nothing of the host itself. */
  target: Target;
}

const CMP_OPS: Record<string, { u: I.JmpOpName; s: I.JmpOpName; inv: string }> = {
  '==': { u: 'jeq', s: 'jeq', inv: '!=' },
  '!=': { u: 'jne', s: 'jne', inv: '==' },
  '<': { u: 'jlt', s: 'jslt', inv: '>=' },
  '<=': { u: 'jle', s: 'jsle', inv: '>' },
  '>': { u: 'jgt', s: 'jsgt', inv: '<=' },
  '>=': { u: 'jge', s: 'jsge', inv: '<' },
};

export class ProbeGen {
  readonly fn: IrFunction;
  readonly frame: Frame;
  private ctx = 0;
  private readonly vars = new Map<string, Val>();
  /** Stack copies of register variables whose address is taken (`&$x`), by name: their frame offsets. */
  private readonly shadows = new Map<string, number>();
  private readonly endLabel: string;
  /** Enclosing loops' break/continue targets, innermost last. */
  private readonly loops: { brk: string; cont: string }[] = [];

  /** Callback subprograms of this program (`for ($kv : @m)` bodies), shared with nested generators. */
  readonly subprogs: { fn: IrFunction; params: number }[];

  constructor(
    readonly tables: GenTables,
    readonly unit: ProbeUnit,
    readonly analyzer: Analyzer,
    name: string,
    parent?: ProbeGen,
    /** Keep the frame in a frame map (see codegen/frame.ts): set when the frame outgrew the BPF stack. */
    private readonly frameInMap = false,
  ) {
    this.fn = new IrFunction(name);
    if (frameInMap) this.fn.frameBase = FRAME_MAP_BASE;
    this.frame = new Frame(this.fn, frameInMap);
    this.endLabel = this.fn.newLabel('end');
    this.subprogs = parent ? parent.subprogs : [];
  }

  /** Generate the whole program. */
  generate(): IrFunction {
    const fn = this.fn;
    const probe = this.unit.probe;
    fn.pos = probe.pos;
    this.ctx = fn.vreg();
    fn.emit(I.mov64(this.ctx, R1));
    const sizeFrame = this.frameInMap ? this.enterFrameMap() : undefined;
    // Scratch variables: scalars get a register, buffers a permanent stack slot; all start zeroed.
    for (const [name, t] of this.analyzer.variables) {
      if (t.kind === 'int' || t.kind === 'bool' || t.kind === 'pointer') {
        const r = fn.vreg();
        fn.emit(I.mov64Imm(r, 0));
        this.vars.set(name, { kind: 'reg', reg: r });
        if (this.analyzer.addressTakenVariables.has(name)) {
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
    // profile events are opened for the target already)
    const timer = this.unit.expanded.provider === 'interval' || this.unit.expanded.provider === 'profile';
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

  /** The register frame slots are addressed from (r10, or r9 into the frame map). */
  get fb(): number {
    return this.fn.frameBase;
  }

  /**
   * Prologue of a frame kept in a frame map: r9 = &frame_map[this CPU] + MAP_FRAME_BIAS (the frame's slots start
   * at -MAP_FRAME_BIAS; a missing value ends the probe). Returns the function that records the map (one value of
   * the frame's final size per possible CPU) for the loader once the body is generated.
   */
  private enterFrameMap(): () => void {
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

  // ---- helpers ---------------------------------------------------------------------------------------------

  private at(pos: Span): void {
    this.fn.pos = pos;
  }

  /** Call helper `id` with `args` (evaluated already); returns a vreg holding r0. */
  callHelper(id: number, args: HelperArg[]): number {
    const fn = this.fn;
    const regs = [R1, R2, R3, R4, R5];
    args.forEach((a, i) => {
      const r = regs[i]!;
      if (typeof a === 'number') fn.emit(I.mov64(r, a));
      else if ('stack' in a) {
        fn.emit(I.mov64(r, this.fb));
        fn.emit(I.alu64Imm('add', r, a.stack));
      } else if ('fp' in a) {
        fn.emit(I.mov64(r, FP));
        fn.emit(I.alu64Imm('add', r, a.fp));
      } else if ('map' in a) fn.emit(I.ldMapFd(r, a.map));
      else fn.emit(I.mov64Imm(r, a.imm));
    });
    fn.emit(I.call(id, args.length));
    const res = fn.vreg();
    fn.emit(I.mov64(res, R0));
    return res;
  }

  /** A constant into a fresh register. */
  constant(v: bigint | number): number {
    const r = this.fn.vreg();
    const b = BigInt(v);
    if (b >= -0x80000000n && b <= 0x7fffffffn) this.fn.emit(I.mov64Imm(r, Number(b)));
    else this.fn.emit(I.ldImm64(r, BigInt.asIntN(64, b)));
    return r;
  }

  /** Write a value of type `t` to [base+off] (the destination area has `destSize` bytes for buffers). */
  storeVal(v: Val, t: SType, base: number, off: number, destSize?: number): void {
    if (v.kind === 'reg') {
      const size = t.kind === 'int' ? t.size : t.kind === 'bool' ? 1 : 8;
      this.fn.emit(I.stx(size as 1 | 2 | 4 | 8, base, v.reg, off));
      return;
    }
    copyMem(this.fn, base, off, this.fb, v.off, Math.min(v.size, destSize ?? v.size));
  }

  /**
   * Write a value converted to the storage type `st` (ints as 8 bytes) into a zeroed area. `from` is the value's own
   * type: a tuple whose element layout differs from `st`'s (a shorter string, a narrower int: `@[1] = ("by", 3)`
   * after `@[1] = ("hellolongstr", 2)`) is converted element by element, nested tuples too.
   */
  storeAs(v: Val, st: SType, base: number, off: number, from?: SType): void {
    if (st.kind === 'tuple' && v.kind === 'mem') {
      if (from?.kind === 'tuple' && from.elems.length === st.elems.length && typeKey(from) !== typeKey(st)) {
        this.convertTuple(v.off, from, st, base, off);
        return;
      }
      copyMem(this.fn, base, off, this.fb, v.off, Math.min(v.size, sizeOf(st)));
      return;
    }
    this.storeVal(v, st, base, off, sizeOf(st));
  }

  /** Evaluate `e` and store it as `st` (see storeAs), converting from `e`'s own type. */
  storeExpr(e: Expr, st: SType, base: number, off: number): void {
    this.storeAs(this.expr(e), st, base, off, e.type);
  }

  /**
   * Copy the tuple at [fb+srcOff] laid out as `from` into [base+off] laid out as `to`, element by element; record
   * fields are matched by name (`(bar=1, foo=2)` stored as `(foo, bar)`).
   */
  private convertTuple(
    srcOff: number,
    from: Extract<SType, { kind: 'tuple' }>,
    to: Extract<SType, { kind: 'tuple' }>,
    base: number,
    off: number,
  ): void {
    const sl = tupleLayout(from.elems);
    const dl = tupleLayout(to.elems);
    to.elems.forEach((et, i) => {
      const j = to.names && from.names ? from.names.indexOf(to.names[i]!) : i;
      const ft = from.elems[j]!;
      const so = srcOff + sl.offsets[j]!;
      let ev: Val;
      if (ft.kind === 'int' || ft.kind === 'bool') {
        const size = ft.kind === 'int' ? ft.size : 1;
        const r = this.fn.vreg();
        this.fn.emit(I.ldx(size as 1 | 2 | 4 | 8, r, this.fb, so));
        if (ft.kind === 'int' && ft.signed) this.normalize(r, ft.size, true);
        ev = this.reg(r);
      } else {
        ev = { kind: 'mem', off: so, size: sizeOf(ft) };
      }
      this.storeAs(ev, et, base, off + dl.offsets[i]!, ft);
    });
  }

  /** Evaluate `e` into a scalar register. */
  scalar(e: Expr): number {
    const v = this.expr(e);
    if (v.kind !== 'reg') throw new BpfscopeError('internal: expected a scalar value');
    return v.reg;
  }

  /** Evaluate `e` to a value that lives in stack memory (copying a register value to the stack). */
  mem(e: Expr): { off: number; size: number } {
    const v = this.expr(e);
    if (v.kind === 'mem') return v;
    const off = this.frame.temp(8);
    this.fn.emit(I.stx(8, this.fb, v.reg, off));
    return { off, size: 8 };
  }

  // ---- statements ------------------------------------------------------------------------------------------

  private block(b: Block): void {
    for (const s of b.stmts) this.frame.scope(() => this.stmt(s));
  }

  private stmt(s: Stmt): void {
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
        const n = Number(this.analyzer.constInt(s.count, 'unroll count') ?? 0);
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
        if (!this.analyzer.isConstInt(range.start) || !this.analyzer.isConstInt(range.end)) {
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
  private forMap(s: ForStmt, m: MapExpr): void {
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
            const kvType = s.variable.type as Extract<SType, { kind: 'tuple' }>;
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
  private forRangeLoop(s: ForStmt, range: Extract<Expr, { kind: 'RangeExpr' }>): void {
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
  private callbackLoop(
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
    const cb = new ProbeGen(this.tables, this.unit, this.analyzer, cbName, this);
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
  private loopCallbackBody(
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

  private ifStmt(s: IfStmt): void {
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

  private exprStmt(e: Expr): void {
    if (e.kind === 'CallExpr') {
      this.callStmt(e);
      return;
    }
    this.expr(e);
  }

  private assign(s: AssignStmt): void {
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
            this.scaledStep(v, target.type),
            target.type ?? s.value.type!,
            s.value.type!,
          );
        this.syncShadow(target.name);
      } else {
        const v = this.expr(s.value);
        zeroStack(fn, slot.off, slot.size);
        this.storeAs(v, target.type!, this.fb, slot.off, s.value.type);
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
      this.mapUpdateInt(plan, target, s.op.slice(0, -1), v, s.value.type!);
      return;
    }
    const v = this.expr(s.value);
    const keyOff = this.mapKey(plan, target);
    const valOff = this.frame.temp(plan.valueSize);
    if (v.kind === 'mem' || plan.valueSize !== 8) zeroStack(fn, valOff, plan.valueSize);
    this.storeAs(v, plan.valueType, this.fb, valOff, s.value.type);
    this.warnIfMapFull(
      this.callHelper(H.map_update_elem, [{ map: plan.kernelName }, { stack: keyOff }, { stack: valOff }, { imm: 0 }]),
    );
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

  /** `v` as a step for a value of type `t`: whole elements for a pointer (C pointer arithmetic), else `v` itself. */
  private scaledStep(v: number, t: SType | undefined): number {
    if (t?.kind !== 'pointer') return v;
    const size = t.to.kind === 'none' ? 1 : Math.max(1, sizeOf(t.to));
    if (size === 1) return v;
    const r = this.fn.vreg();
    this.fn.emit(I.mov64(r, v));
    this.fn.emit(I.alu64Imm('mul', r, size));
    return r;
  }

  /** `dst op= v` on a register, with signedness from the types. */
  private compound(dst: number, op: string, v: number, lt: SType, rt: SType): void {
    const signed = isSigned(lt) && isSigned(rt);
    this.arith(op, dst, v, signed);
  }

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

  // ---- calls used as statements ------------------------------------------------------------------------------

  private callStmt(c: CallExpr): void {
    switch (c.name) {
      case 'printf':
        this.printf(c);
        return;
      case 'system':
        this.printf(c, AsyncAction.SYSTEM);
        return;
      case 'errorf':
        this.printf(c, AsyncAction.ERRORF);
        return;
      case 'warnf':
        this.printf(c, AsyncAction.WARNF);
        return;
      case 'cat':
        this.printf(c, AsyncAction.CAT);
        return;
      case 'debugf':
        this.debugf(c);
        return;
      case 'exit': {
        // Set the exit flag first: the EXIT record can be lost when the ring buffer is full, the flag cannot.
        const key = this.frame.temp(8);
        this.fn.emit(I.st(4, this.fb, key, 0));
        const p = this.callHelper(H.map_lookup_elem, [{ map: this.tables.resources.exitName }, { stack: key }]);
        const skip = this.fn.newLabel('noflag');
        this.fn.emit(I.jmpImm('jeq', p, 0, skip));
        if (c.args.length) {
          // exit(code): the process exit status rides in bits 8-15 of the flag (see Session.exitCode)
          const v = this.fn.vreg();
          this.fn.emit(I.mov64(v, this.scalar(c.args[0]!)));
          this.fn.emit(I.alu64Imm('and', v, 0xff));
          this.fn.emit(I.alu64Imm('lsh', v, 8));
          this.fn.emit(I.alu64Imm('or', v, 1));
          this.fn.emit(I.stx(8, p, v, 0));
        } else {
          this.fn.emit(I.st(8, p, 0, 1));
        }
        this.fn.mark(skip);
        this.asyncRecord(AsyncAction.EXIT, 0, 0, () => {});
        this.fn.emit(I.ja(this.endLabel));
        return;
      }
      case 'time': {
        const fmt = c.args[0]?.kind === 'StrLit' ? c.args[0].value : '%H:%M:%S\n';
        const id = this.tables.resources.timeFormats.push(fmt) - 1;
        this.asyncRecord(AsyncAction.TIME, id, 0, () => {});
        return;
      }
      case 'clear':
      case 'zero': {
        const plan = this.tables.maps.get((c.args[0] as MapExpr).name)!;
        this.asyncRecord(c.name === 'clear' ? AsyncAction.CLEAR : AsyncAction.ZERO, plan.index, 0, () => {});
        return;
      }
      case 'delete':
        this.deleteCall(c);
        return;
      case 'join':
        this.join(c);
        return;
      case 'signal': {
        const a = c.args[0]!;
        const sig = a.kind === 'StrLit' ? this.constant(signalNumber(a.value) ?? 0) : this.scalar(a);
        this.callHelper(H.send_signal, [sig]);
        return;
      }
      case 'print': {
        const a = c.args[0]!;
        if (a.kind === 'MapExpr' && a.keys.length === 0) {
          const plan = this.tables.maps.get(a.name)!;
          const top = c.args[1] ? (this.analyzer.constInt(c.args[1], 'print top') ?? 0) : 0;
          const div = c.args[2] ? (this.analyzer.constInt(c.args[2], 'print div') ?? 0) : 0;
          this.asyncRecord(AsyncAction.PRINT_MAP, plan.index, 16, (rec) => {
            this.fn.emit(I.st(8, this.fb, rec + 8, top));
            this.fn.emit(I.st(8, this.fb, rec + 16, div));
          });
          return;
        }
        const t = storageType(a.type!);
        const size = sizeOf(t);
        const id =
          this.tables.resources.printValues.push({ id: this.tables.resources.printValues.length, type: t }) - 1;
        const v = this.expr(a);
        this.asyncRecord(AsyncAction.PRINT_VALUE, id, size, (rec) => this.storeAs(v, t, this.fb, rec + 8, a.type));
        return;
      }
      default:
        this.expr(c);
    }
  }

  /**
   * Build an async record `[u64 action | id << 32][payload]` on the stack and send it with ringbuf_output; on
   * failure (ring full) count a lost event.
   */
  private asyncRecord(action: AsyncAction, id: number, payload: number, fill: (recOff: number) => void): void {
    const fn = this.fn;
    const size = 8 + payload;
    const rec = this.frame.temp(size);
    if (payload > 0) zeroStack(fn, rec + 8, payload);
    fill(rec);
    fn.emit(I.st(4, this.fb, rec, action));
    fn.emit(I.st(4, this.fb, rec + 4, id));
    const flags = this.ringbufFlags();
    const r = this.callHelper(H.ringbuf_output, [
      { map: this.tables.resources.ringbufName },
      { stack: rec },
      { imm: Math.ceil(size / 8) * 8 },
      flags,
    ]);
    this.countLost(r);
  }

  /**
   * The ringbuf_output flags: the u64 the consumer keeps in the wake-control map (runtime/ringbuf.ts): 0 while it
   * sleeps waiting for a wakeup, BPF_RB_NO_WAKEUP while it polls. A wakeup costs the traced CPU an irq_work
   * interrupt (~9 us in a VM), so records sent while the consumer is polling anyway must not ask for one.
   */
  private ringbufFlags(): number {
    const fn = this.fn;
    const key = this.frame.temp(8);
    fn.emit(I.st(4, this.fb, key, 0));
    const p = this.callHelper(H.map_lookup_elem, [{ map: this.tables.resources.wakeName }, { stack: key }]);
    const flags = fn.vreg();
    fn.emit(I.mov64Imm(flags, 0));
    const none = fn.newLabel('wake');
    fn.emit(I.jmpImm('jeq', p, 0, none));
    fn.emit(I.ldx(8, flags, p, 0));
    fn.mark(none);
    return flags;
  }

  /** If `res` (a helper result) is negative, add one to the lost-events counter. */
  private countLost(res: number): void {
    const fn = this.fn;
    const ok = fn.newLabel('sent');
    fn.emit(I.jmpImm('jsge', res, 0, ok));
    const key = this.frame.temp(8);
    fn.emit(I.st(4, this.fb, key, 0));
    const p = this.callHelper(H.map_lookup_elem, [{ map: this.tables.resources.lostName }, { stack: key }]);
    fn.emit(I.jmpImm('jeq', p, 0, ok));
    const one = this.constant(1);
    fn.emit(I.atomicAdd(8, p, one, 0));
    fn.mark(ok);
  }

  private printf(c: CallExpr, action: AsyncAction = AsyncAction.PRINTF): void {
    const fmt = (c.args[0] as { value: string }).value;
    compilePrintf(fmt);
    const argTypes = c.args.slice(1).map((a) => storageType(a.type!));
    const layout = tupleLayout(argTypes);
    const id = this.tables.resources.printfs.length;
    this.tables.resources.printfs.push({
      id,
      format: fmt,
      argTypes,
      offsets: layout.offsets,
      payloadSize: layout.size,
      pos: c.pos,
    });
    const vals = c.args.slice(1).map((a) => this.expr(a));
    this.asyncRecord(action, id, layout.size, (rec) => {
      vals.forEach((v, i) => this.storeAs(v, argTypes[i]!, this.fb, rec + 8 + layout.offsets[i]!, c.args[i + 1]!.type));
    });
  }

  /**
   * `debugf(fmt, args...)`: bpf_trace_vprintk into the kernel's trace buffer (tracefs `trace`/`trace_pipe`, event
   * `bpf_trace_printk`), formatted by the kernel. The values go as an array of u64; a string by its address.
   */
  private debugf(c: CallExpr): void {
    const fn = this.fn;
    const lit = c.args[0] as { value: string; bytes?: Uint8Array };
    const fmt = Buffer.concat([Buffer.from(lit.bytes ?? Buffer.from(lit.value)), Buffer.alloc(1)]);
    const vals = c.args.slice(1).map((a) => this.expr(a));
    const data = vals.length ? this.frame.temp(8 * vals.length) : 0;
    vals.forEach((v, i) => {
      if (v.kind === 'reg') {
        fn.emit(I.stx(8, this.fb, v.reg, data + 8 * i));
        return;
      }
      const p = fn.vreg();
      fn.emit(I.mov64(p, this.fb));
      fn.emit(I.alu64Imm('add', p, v.off));
      fn.emit(I.stx(8, this.fb, p, data + 8 * i));
    });
    const f = this.constBytes(fmt, fmt.length);
    if (f.kind !== 'mem') throw new BpfscopeError('internal: debugf format');
    this.callHelper(H.trace_vprintk, [
      { stack: f.off },
      { imm: fmt.length },
      vals.length ? { stack: data } : { imm: 0 },
      { imm: 8 * vals.length },
    ]);
  }

  // ---- expressions -------------------------------------------------------------------------------------------

  expr(e: Expr): Val {
    const fn = this.fn;
    const saved = fn.pos;
    fn.pos = e.pos;
    try {
      return this.exprInner(e);
    } finally {
      fn.pos = saved;
    }
  }

  private reg(r: number): Val {
    return { kind: 'reg', reg: r };
  }

  private exprInner(e: Expr): Val {
    const fn = this.fn;
    switch (e.kind) {
      case 'IntLit':
        return this.reg(this.constant(e.value));
      case 'BoolLit':
        return this.reg(this.constant(e.value ? 1 : 0));
      case 'StrLit':
        return this.constBytes(e.bytes ?? Buffer.from(e.value), sizeOf(e.type!));
      case 'PositionalExpr': {
        if (e.count) return this.reg(this.constant(this.tables.positional.length));
        const s = this.tables.positional[e.index - 1];
        if (e.type!.kind === 'string') return this.constString(s ?? '', sizeOf(e.type!));
        return this.reg(this.constant(s === undefined ? 0n : (positionalInt(s) ?? 0n)));
      }
      case 'BuiltinExpr':
        if (e.enumValue !== undefined) return this.reg(this.constant(e.enumValue));
        return this.builtin(e.name, e.type!);
      case 'VarExpr':
        return this.vars.get(e.name)!;
      case 'MapExpr':
        return this.mapRead(e);
      case 'BinaryExpr':
        return this.binary(e);
      case 'UnaryExpr': {
        if (e.op === '*') {
          const pt = e.operand.type as Extract<SType, { kind: 'pointer' }>;
          return this.loadMem(e.type!, this.scalar(e.operand), 0, pt.space);
        }
        if (e.op === '&') return this.reg(this.variableAddress((e.operand as VarExpr).name));
        const v = this.scalar(e.operand);
        const r = fn.vreg();
        fn.emit(I.mov64(r, v));
        if (e.op === '-') fn.emit(I.neg64(r));
        else if (e.op === '~') fn.emit(I.alu64Imm('xor', r, -1));
        else if (e.op === '!') return this.reg(this.boolOf((f) => this.branchIfFalse(e.operand, f)));
        return this.reg(r);
      }
      case 'IncDecExpr':
        return this.incDec(e);
      case 'TernaryExpr':
        return this.ternary(e);
      case 'FieldExpr':
        return this.field(e);
      case 'IndexExpr': {
        const obj = e.object;
        // s[i] on a string: its i-th byte (0 past the buffer's end)
        if (obj.type?.kind === 'string') return this.stringIndex(obj, e.index);
        // p[i] on a pointer: *(p + i)
        if (obj.type?.kind === 'pointer') {
          const addr = this.pointerOffset(this.scalar(obj), e.index, obj.type.to, '+');
          return this.loadMem(e.type!, addr, 0, obj.type.space);
        }
        // constant index into a record array field (args.args[2])
        if (obj.kind === 'FieldExpr' && obj.object.kind === 'BuiltinExpr' && obj.object.name === 'args') {
          const f = this.argsField(obj);
          const t = f.type;
          if (t.kind === 'array') {
            const idx = Number((e.index as { value: bigint }).value ?? 0);
            const es = sizeOf(t.elem);
            return this.loadCtx(t.elem, f.offset + idx * es);
          }
        }
        // constant index into an array field of a kernel struct (curtask->cpus_mask.bits[0])
        if (obj.kind === 'FieldExpr' && obj.type?.kind === 'array' && isMemoryLocation(obj)) {
          const loc = this.fieldLocation(obj);
          const idx = Number(this.analyzer.constInt(e.index, 'array index') ?? 0);
          return this.loadMem(obj.type.elem, loc.base, loc.off + idx * sizeOf(obj.type.elem), loc.space);
        }
        // constant index into any other array value held in the frame (`((int8[8])x)[0]`, `$a[1]`, `@m[k][2]`)
        if (obj.type?.kind === 'array') {
          const v = this.expr(obj);
          const elem = obj.type.elem;
          const idx = Number(this.analyzer.constInt(e.index, 'array index') ?? 0);
          if (v.kind !== 'mem') throw new BpfscopeError('internal: array value in a register');
          const off = v.off + idx * sizeOf(elem);
          if (elem.kind === 'int' || elem.kind === 'bool' || elem.kind === 'pointer') {
            const r = fn.vreg();
            fn.emit(I.ldx(sizeOf(elem) as 1 | 2 | 4 | 8, r, this.fb, off));
            if (elem.kind === 'int' && elem.signed) this.normalize(r, elem.size, true);
            return this.reg(r);
          }
          return { kind: 'mem', off, size: sizeOf(elem) };
        }
        throw new BpfscopeError('internal: unsupported index expression');
      }
      case 'CastExpr': {
        const t = e.type!;
        const from = e.operand.type!;
        if (t.kind === 'array' || from.kind === 'array') return this.reinterpretCast(e.operand, from, t);
        const v = this.scalar(e.operand);
        const r = fn.vreg();
        fn.emit(I.mov64(r, v));
        if (t.kind === 'int') this.normalize(r, t.size, t.signed);
        if (t.kind === 'bool') {
          // (bool)x: 1 when x is non-zero
          const done = fn.newLabel('tobool');
          fn.emit(I.jmpImm('jeq', r, 0, done));
          fn.emit(I.mov64Imm(r, 1));
          fn.mark(done);
        }
        return this.reg(r);
      }
      case 'TupleExpr': {
        const t = e.type as Extract<SType, { kind: 'tuple' }>;
        const l = tupleLayout(t.elems);
        const off = this.frame.temp(l.size);
        zeroStack(fn, off, l.size);
        e.elems.forEach((x, i) => this.storeExpr(x, t.elems[i]!, this.fb, off + l.offsets[i]!));
        return { kind: 'mem', off, size: l.size };
      }
      case 'CallExpr':
        return this.callExpr(e);
      case 'BlockExpr':
        // `{ stmts; value }`: the statements, then the value
        for (const st of e.stmts) this.stmt(st);
        return this.expr(e.value);
      case 'SizeofExpr':
      case 'OffsetofExpr':
        return this.reg(this.constant(this.analyzer.constSizeof(e) ?? 0));
      default:
        throw new BpfscopeError(`internal: unsupported expression ${e.kind}`);
    }
  }

  /**
   * Array casts (`(int8[8])x`, `(uint32)arr`): the operand's bytes, reinterpreted. An integer is stored to a stack
   * temporary (little-endian, its `sizeOf(from)` bytes); a string or array already in memory is reused; an array cast
   * to an integer is loaded from its bytes.
   */
  private reinterpretCast(operand: Expr, from: SType, to: SType): Val {
    const fn = this.fn;
    const size = sizeOf(to);
    if (from.kind === 'int' || from.kind === 'bool') {
      const r = this.scalar(operand);
      const off = this.frame.temp(8);
      fn.emit(I.stx(8, this.fb, r, off));
      return { kind: 'mem', off, size };
    }
    const v = this.expr(operand);
    if (v.kind !== 'mem') throw new BpfscopeError('internal: array cast of a register value');
    if (to.kind === 'array') return { kind: 'mem', off: v.off, size };
    const r = fn.vreg();
    fn.emit(I.ldx(size as 1 | 2 | 4 | 8, r, this.fb, v.off));
    if (to.kind === 'int') this.normalize(r, to.size, to.signed);
    return this.reg(r);
  }

  /** Truncate/extend a 64-bit register to an integer of `size` bytes. */
  private normalize(r: number, size: number, signed: boolean): void {
    if (size === 8) return;
    const shift = 64 - size * 8;
    this.fn.emit(I.alu64Imm('lsh', r, shift));
    this.fn.emit(I.alu64Imm(signed ? 'arsh' : 'rsh', r, shift));
  }

  constString(s: string, size: number): Val {
    return this.constBytes(Buffer.from(s), size);
  }

  /**
   * `func` of a multi-attach probe: the name of function number bpf_get_attach_cookie() (the link's cookie for it)
   * from the program's function-name table (an ARRAY map the runtime fills, see {@link GenTables.funcTables}),
   * copied into a `size`-byte string temporary (empty if the cookie is out of range).
   */
  private funcFromCookie(funcs: readonly string[], size: number): Val {
    const cookie = this.callHelper(H.get_attach_cookie, [this.ctx]);
    return this.nameFromTable(this.nameTable('func_names', funcs, size), cookie, size);
  }

  /** The IR map name of a name table (`prefix_N`), registered in {@link GenTables.funcTables} on first use. */
  private nameTable(prefix: string, names: readonly string[], size: number): string {
    const tables = this.tables.funcTables;
    let name = [...tables.values()].find((t) => t.funcs === names)?.name;
    if (name === undefined) {
      name = `${prefix}_${tables.size}`;
      tables.set(name, { name, valueSize: (size + 7) & ~7, funcs: names });
    }
    return name;
  }

  /** Entry `index` (a u32 register) of name table `map`, copied into a `size`-byte string temporary (empty if none). */
  private nameFromTable(map: string, index: number, size: number): Val {
    const fn = this.fn;
    const key = this.frame.temp(8);
    fn.emit(I.stx(4, this.fb, index, key));
    const p = this.callHelper(H.map_lookup_elem, [{ map }, { stack: key }]);
    const off = this.frame.temp(size);
    zeroStack(fn, off, size);
    const missing = fn.newLabel('noname');
    fn.emit(I.jmpImm('jeq', p, 0, missing));
    copyMem(fn, this.fb, off, p, 0, size);
    fn.mark(missing);
    return { kind: 'mem', off, size };
  }

  /** The IR name of the name table of a syscall wildcard (see {@link syscallFilter}). */
  private syscallTableName(table: SyscallTable): string {
    return this.nameTable('syscall_names', table.names, this.tables.probeNameSize);
  }

  /**
   * A syscall wildcard on `raw_syscalls:sys_*` (probes/syscalls.ts): end the probe unless the record's syscall
   * number names a matched event in the table (ARRAY map number -> probe name, '' for the others), and for 32-bit
   * compat syscalls (`task->thread_info.status & TS_COMPAT`), which the syscall tracepoints skip as well.
   */
  private syscallFilter(table: SyscallTable): void {
    const fn = this.fn;
    const id = fn.vreg();
    fn.emit(I.ldx(8, id, this.ctx, table.idOffset));
    // unsigned: a negative id (no syscall, -1) is out of range too
    fn.emit(I.jmpImm('jge', id, table.names.length, this.endLabel));
    const key = this.frame.temp(8);
    fn.emit(I.stx(4, this.fb, id, key));
    const p = this.callHelper(H.map_lookup_elem, [{ map: this.syscallTableName(table) }, { stack: key }]);
    fn.emit(I.jmpImm('jeq', p, 0, this.endLabel));
    const first = fn.vreg();
    fn.emit(I.ldx(1, first, p, 0));
    fn.emit(I.jmpImm('jeq', first, 0, this.endLabel));
    const task = this.callHelper(H.get_current_task, []);
    fn.emit(I.alu64Imm('add', task, table.compatStatusOffset));
    const status = this.frame.temp(8);
    fn.emit(I.st(8, this.fb, status, 0));
    this.callHelper(H.probe_read_kernel, [{ stack: status }, { imm: 4 }, task]);
    const st = fn.vreg();
    fn.emit(I.ldx(4, st, this.fb, status));
    fn.emit(I.jmpImm('jset', st, table.compatMask, this.endLabel));
  }

  /** `probe` of a syscall wildcard: the name of the record's syscall number from the table, in a stack temporary. */
  private syscallProbeName(table: SyscallTable, size: number): Val {
    const id = this.fn.vreg();
    this.fn.emit(I.ldx(8, id, this.ctx, table.idOffset));
    return this.nameFromTable(this.syscallTableName(table), id, size);
  }

  /** Constant bytes, NUL padded to `size`, in a stack temporary. */
  constBytes(bytes: Uint8Array, size: number): Val {
    const off = this.frame.temp(size);
    storeBytes(this.fn, off, bytes, size);
    return { kind: 'mem', off, size };
  }

  private builtin(name: string, t: SType): Val {
    const fn = this.fn;
    const registered = builtinVariable(name)?.generate;
    if (registered) return this.genValue(registered(this.builtinGen(), t));
    switch (name) {
      case 'pid':
      case 'tid':
        return this.pidTid(name, 'curr_ns');
      case 'elapsed': {
        const r = this.callHelper(H.ktime_get_ns, []);
        const s = this.constant(this.tables.startNs);
        fn.emit(I.alu64('sub', r, s));
        return this.reg(r);
      }
      case 'cpid':
        return this.reg(this.constant(this.tables.cpid ?? 0));
      case 'probe':
        // a syscall wildcard on raw_syscalls: the matched event's name, by syscall number
        if (this.unit.expanded.syscalls) return this.syscallProbeName(this.unit.expanded.syscalls, sizeOf(t));
        // a multi-attach probe: the matched function's own probe name, by attach cookie
        if (this.unit.expanded.probeNames) return this.funcFromCookie(this.unit.expanded.probeNames, sizeOf(t));
        return this.constString(this.unit.expanded.name, sizeOf(t));
      case 'probetype':
        // bpftrace's probe type names: `special` for BEGIN/END, else the provider's canonical name
        return this.constString(this.unit.expanded.special ? 'special' : this.unit.expanded.provider, sizeOf(t));
      case 'kstack':
      case 'ustack':
        return this.stack(t as Extract<SType, { kind: 'kstack' | 'ustack' }>);
      case 'usermode': {
        if (this.unit.expanded.special) return this.reg(this.constant(1));
        // x86-64: the saved code segment's privilege level is 3 in user mode
        const cs = this.loadCtx(U64, PT_REGS_OFFSETS.cs!);
        if (cs.kind !== 'reg') throw new BpfscopeError('internal: usermode');
        fn.emit(I.alu64Imm('and', cs.reg, 3));
        const r = fn.vreg();
        const done = fn.newLabel('um');
        fn.emit(I.mov64Imm(r, 0));
        fn.emit(I.jmpImm('jne', cs.reg, 3, done));
        fn.emit(I.mov64Imm(r, 1));
        fn.mark(done);
        return this.reg(r);
      }
      case 'ppid': {
        // curtask->real_parent->tgid, offsets from BTF
        const btf = kernelBtf();
        const task = btf.findType('task_struct', 4)!;
        const parentOff = btf.member(task, 'real_parent')!.offset;
        const tgidOff = btf.member(task, 'tgid')!.offset;
        const cur = this.callHelper(H.get_current_task, []);
        const parent = this.loadMem(U64, cur, parentOff, 'kernel');
        if (parent.kind !== 'reg') throw new BpfscopeError('internal: ppid');
        return this.loadMem({ kind: 'int', size: 4, signed: false }, parent.reg, tgidOff, 'kernel');
      }
      case 'retval':
        return this.loadCtx(t, this.unit.expanded.regs!.ret);
      case 'func':
        if (this.unit.expanded.funcs) return this.funcFromCookie(this.unit.expanded.funcs, sizeOf(t));
        return this.constString(this.unit.expanded.func!, sizeOf(t));
    }
    if (/^arg\d+$/.test(name) && this.unit.expanded.usdtArgs) {
      const a = this.unit.expanded.usdtArgs[Number(name.slice(3))]!;
      if (a.kind === 'const') return this.reg(this.constant(a.value));
      if (a.kind === 'reg') return this.loadCtx(t, a.regOffset);
      const base = this.fn.vreg();
      this.fn.emit(I.ldx(8, base, this.ctx, a.regOffset));
      return this.loadMem(t, base, a.disp, 'user');
    }
    if (/^arg\d+$/.test(name)) return this.loadCtx(t, this.unit.expanded.regs!.args[Number(name.slice(3))]!);
    if (name === 'ctx') {
      const r = this.fn.vreg();
      this.fn.emit(I.mov64(r, this.ctx));
      return this.reg(r);
    }
    if (name === 'args' && t.kind === 'record') {
      // the whole args struct as a value: the context's bytes [0, size) (a tracepoint record, or the u64 argument
      // slots of rawtracepoint/fentry), read with bpf_probe_read_kernel into a zeroed stack buffer
      const size = sizeOf(t);
      const off = this.frame.temp(size);
      zeroStack(this.fn, off, size);
      this.callHelper(H.probe_read_kernel, [{ stack: off }, { imm: t.size }, this.ctx]);
      return { kind: 'mem', off, size };
    }
    throw new BpfscopeError(`internal: unsupported builtin ${name}`);
  }

  /**
   * A stack: `{s64 stack id, u32 pid, u32 0}` on the stack. As current bpftrace does, the frames are read with
   * bpf_get_stack() into a per-CPU scratch value (`limit` u64 IPs, zero-filled by the kernel), the id is a 63-bit
   * FNV-1a hash of the frames, and the frames are stored under that id in a HASH map (BPF_NOEXIST: a stack already
   * stored costs one lookup). Unlike bpf_get_stackid()'s STACK_TRACE map, two different stacks never collide into
   * a lost stack. A negative id is the helper's error (-EFAULT: no stack in this context), printed as an empty stack.
   */
  private stack(t: Extract<SType, { kind: 'kstack' | 'ustack' }>): Val {
    const fn = this.fn;
    const user = t.kind === 'ustack';
    const limit = Math.max(1, t.limit);
    const name = `stack_${user ? 'u' : 'k'}${limit}`;
    const scratch = `${name}_buf`;
    if (!this.tables.stackMaps.has(name)) this.tables.stackMaps.set(name, { name, scratch, user, limit });
    const off = this.frame.temp(16);
    const key = this.frame.temp(8);
    const BPF_F_USER_STACK = 1 << 8;
    const BPF_NOEXIST = 1;
    const ENOMEM = 12;
    const EFAULT = 14;
    const id = fn.vreg();
    const done = fn.newLabel('stack_done');
    fn.emit(I.mov64Imm(id, -ENOMEM));
    fn.emit(I.st(8, this.fb, key, 0));
    const buf = this.callHelper(H.map_lookup_elem, [{ map: scratch }, { stack: key }]);
    fn.emit(I.jmpImm('jeq', buf, 0, done));
    const n = this.callHelper(H.get_stack, [this.ctx, buf, { imm: 8 * limit }, { imm: user ? BPF_F_USER_STACK : 0 }]);
    fn.emit(I.mov64(id, n));
    fn.emit(I.jmpImm('jslt', n, 0, done));
    // no frames (a syscall tracepoint on 6.1 records none): "no stack", as bpf_get_stackid's -EFAULT
    const some = fn.newLabel('stack_some');
    fn.emit(I.jmpImm('jne', n, 0, some));
    fn.emit(I.mov64Imm(id, -EFAULT));
    fn.emit(I.ja(done));
    fn.mark(some);
    // FNV-1a over the frames, one u64 at a time, up to the first zero (the kernel zero-fills the rest).
    const h = this.constant(0xcbf29ce484222325n);
    const prime = this.constant(0x100000001b3n);
    const ptr = fn.vreg();
    fn.emit(I.mov64(ptr, buf));
    const hashed = fn.newLabel('stack_hashed');
    for (let i = 0; i < limit; i++) {
      const ip = fn.vreg();
      fn.emit(I.ldx(8, ip, ptr, i * 8));
      fn.emit(I.jmpImm('jeq', ip, 0, hashed));
      fn.emit(I.alu64('xor', h, ip));
      fn.emit(I.alu64('mul', h, prime));
    }
    fn.mark(hashed);
    fn.emit(I.alu64Imm('rsh', h, 1));
    fn.emit(I.mov64(id, h));
    fn.emit(I.stx(8, this.fb, h, key));
    this.callHelper(H.map_update_elem, [{ map: name }, { stack: key }, buf, { imm: BPF_NOEXIST }]);
    fn.mark(done);
    fn.emit(I.stx(8, this.fb, id, off));
    if (user) {
      const pid = this.callHelper(H.get_current_pid_tgid, []);
      fn.emit(I.alu64Imm('rsh', pid, 32));
      fn.emit(I.stx(4, this.fb, pid, off + 8));
    } else {
      fn.emit(I.st(4, this.fb, off + 8, 0));
    }
    fn.emit(I.st(4, this.fb, off + 12, 0));
    return { kind: 'mem', off, size: 16 };
  }

  /**
   * Whether str/buf/macaddr read their argument's address from user memory: the space semantic analysis found
   * (CallExpr.space); without one, the pointer's own space, else the probe's (user in uprobe/uretprobe/usdt).
   */
  private readsUser(c: CallExpr): boolean {
    if (c.space) return c.space === 'user';
    const at = c.args[0]?.type;
    if (at?.kind === 'pointer') return at.space === 'user';
    const p = this.unit.expanded.provider;
    return p === 'uprobe' || p === 'uretprobe' || p === 'usdt';
  }

  /** `macaddr(x)`: 6 bytes copied from an array/string value or read from a pointer (by its address space). */
  private macaddr(c: CallExpr): Val {
    const fn = this.fn;
    const off = this.frame.temp(8);
    fn.emit(I.st(8, this.fb, off, 0));
    const a = c.args[0]!;
    const at = a.type!;
    if (at.kind === 'string' || at.kind === 'array') {
      const v = this.mem(a);
      copyMem(fn, this.fb, off, this.fb, v.off, 6);
    } else {
      const ptr = this.scalar(a);
      const user = this.readsUser(c);
      this.callHelper(user ? H.probe_read_user : H.probe_read_kernel, [{ stack: off }, { imm: 6 }, ptr]);
    }
    return { kind: 'mem', off, size: 6 };
  }

  /** `len(stack)`: the frames stored under the stack's id (0 when the kernel recorded none). */
  private stackDepth(c: CallExpr): Val {
    const fn = this.fn;
    const t = c.args[0]!.type as Extract<SType, { kind: 'kstack' | 'ustack' }>;
    const limit = Math.max(1, t.limit);
    const name = `stack_${t.kind === 'ustack' ? 'u' : 'k'}${limit}`;
    const v = this.mem(c.args[0]!);
    const r = fn.vreg();
    const done = fn.newLabel('len');
    fn.emit(I.mov64Imm(r, 0));
    const p = this.callHelper(H.map_lookup_elem, [{ map: name }, { stack: v.off }]);
    fn.emit(I.jmpImm('jeq', p, 0, done));
    const ip = fn.vreg();
    for (let i = 0; i < limit; i++) {
      fn.emit(I.ldx(8, ip, p, i * 8));
      fn.emit(I.jmpImm('jeq', ip, 0, done));
      fn.emit(I.mov64Imm(r, i + 1));
    }
    fn.mark(done);
    return this.reg(r);
  }

  /**
   * `strcontains(haystack, needle)`: 1 when needle occurs in haystack, else 0 (an empty needle is found). Unrolled
   * over both buffers; neither is read past its first NUL. A literal needle is compared against immediates.
   */
  private strcontains(c: CallExpr): Val {
    const fn = this.fn;
    const h = this.mem(c.args[0]!);
    const needleArg = c.args[1]!;
    const literal = needleArg.kind === 'StrLit' ? Buffer.from(needleArg.value) : undefined;
    const n = literal ? undefined : this.mem(needleArg);
    const r = fn.vreg();
    const found = fn.newLabel('sc_found');
    const end = fn.newLabel('sc_end');
    const x = fn.vreg();
    const y = fn.vreg();
    const needleMax = literal ? literal.length : n!.size;
    if (literal && literal.length === 0) {
      fn.emit(I.mov64Imm(r, 1));
      return this.reg(r);
    }
    fn.emit(I.mov64Imm(r, 0));
    if (!literal) {
      fn.emit(I.ldx(1, y, this.fb, n!.off));
      fn.emit(I.jmpImm('jeq', y, 0, found));
    }
    const hayEnd = h.size;
    for (let i = 0; i < hayEnd; i++) {
      const room = hayEnd - i;
      // a literal longer than the rest of the haystack buffer cannot match here or later
      if (literal && literal.length > room) break;
      const next = fn.newLabel('sc_next');
      // the haystack's NUL ends the search (a non-empty needle cannot start there)
      fn.emit(I.ldx(1, x, this.fb, h.off + i));
      fn.emit(I.jmpImm('jeq', x, 0, end));
      for (let j = 0; j < Math.min(needleMax, room); j++) {
        if (j > 0) fn.emit(I.ldx(1, x, this.fb, h.off + i + j));
        if (literal) {
          fn.emit(I.jmpImm('jne', x, literal[j]!, next));
        } else {
          fn.emit(I.ldx(1, y, this.fb, n!.off + j));
          fn.emit(I.jmpImm('jeq', y, 0, found));
          fn.emit(I.jmp('jne', x, y, next));
        }
      }
      if (!literal && needleMax > room) {
        // the haystack buffer ends here: a match only if the needle ends too
        fn.emit(I.ldx(1, y, this.fb, n!.off + room));
        fn.emit(I.jmpImm('jne', y, 0, next));
      }
      // every needle byte matched (a literal, or a needle buffer without a NUL)
      fn.emit(I.ja(found));
      fn.mark(next);
    }
    fn.emit(I.ja(end));
    fn.mark(found);
    fn.emit(I.mov64Imm(r, 1));
    fn.mark(end);
    return this.reg(r);
  }

  private argsField(e: FieldExpr): RecordField {
    const rec = this.unit.expanded.args;
    if (rec?.kind !== 'record') throw new BpfscopeError('internal: args without a record type');
    return rec.fields.find((f) => f.name === e.field)!;
  }

  private field(e: FieldExpr): Val {
    const obj = e.object;
    if (obj.kind === 'BuiltinExpr' && obj.name === 'args') {
      const f = this.argsField(e);
      if ((f as { dataLoc?: boolean }).dataLoc) return this.dataLocString(f, sizeOf(e.type!));
      return this.loadCtx(f.type, f.offset);
    }
    const t = obj.type!;
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
        return this.reg(r);
      }
      return { kind: 'mem', off, size: sizeOf(et) };
    }
    if (t.kind === 'record' && !isMemoryLocation(obj)) return this.frameField(e, t);
    const loc = this.fieldLocation(e);
    return this.loadMem(e.type!, loc.base, loc.off, loc.space, loc.field);
  }

  /** `s.f` on a struct value held in the frame (a variable's, a map's, a tuple element's copy). */
  private frameField(e: FieldExpr, rec: Extract<SType, { kind: 'record' }>): Val {
    const fn = this.fn;
    const v = this.expr(e.object);
    if (v.kind !== 'mem') throw new BpfscopeError('internal: struct value not in memory');
    const field = recordFields(kernelBtf(), rec).find((f) => f.name === e.field)!;
    const t = e.type!;
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
   * `join(argv [, sep])`: copy up to JOIN_MAX_ARGS strings of a NULL-terminated pointer array into a per-CPU scratch
   * map value (too large for the stack) and send it as one JOIN record.
   */
  private join(c: CallExpr): void {
    const fn = this.fn;
    this.tables.resources.joinBufName = 'join_buf';
    const sep = c.args[1]?.kind === 'StrLit' ? c.args[1].value : ' ';
    const id = this.tables.resources.joinSeparators.push(sep) - 1;
    const argv = this.scalar(c.args[0]!);
    const user = c.space !== 'kernel';
    const key = this.frame.temp(8);
    fn.emit(I.st(4, this.fb, key, 0));
    const p = this.callHelper(H.map_lookup_elem, [{ map: 'join_buf' }, { stack: key }]);
    const skip = fn.newLabel('join_skip');
    const send = fn.newLabel('join_send');
    fn.emit(I.jmpImm('jeq', p, 0, skip));
    fn.emit(I.st(4, p, 0, AsyncAction.JOIN));
    fn.emit(I.st(4, p, 4, id));
    const slotPtr = this.frame.temp(8);
    for (let i = 0; i < JOIN_MAX_ARGS; i++) {
      const slot = 8 + i * JOIN_ARG_SIZE;
      fn.emit(I.st(1, p, slot, 0));
      fn.emit(I.st(8, this.fb, slotPtr, 0));
      const src = fn.vreg();
      fn.emit(I.mov64(src, argv));
      fn.emit(I.alu64Imm('add', src, i * 8));
      this.callHelper(user ? H.probe_read_user : H.probe_read_kernel, [{ stack: slotPtr }, { imm: 8 }, src]);
      const s = fn.vreg();
      fn.emit(I.ldx(8, s, this.fb, slotPtr));
      fn.emit(I.jmpImm('jeq', s, 0, send));
      const dst = fn.vreg();
      fn.emit(I.mov64(dst, p));
      fn.emit(I.alu64Imm('add', dst, slot));
      this.callHelper(user ? H.probe_read_user_str : H.probe_read_kernel_str, [dst, { imm: JOIN_ARG_SIZE }, s]);
    }
    fn.mark(send);
    const flags = this.ringbufFlags();
    const r = this.callHelper(H.ringbuf_output, [
      { map: this.tables.resources.ringbufName },
      p,
      { imm: 8 + JOIN_MAX_ARGS * JOIN_ARG_SIZE },
      flags,
    ]);
    this.countLost(r);
    fn.mark(skip);
  }

  /**
   * `path(p[, size])`: bpf_d_path(p, buf, size) into a zeroed stack string. `p` is a `struct path *`, or a struct
   * path member (`args.file->f_path`), whose address is passed so the verifier still sees a BTF pointer.
   */
  private dPath(c: CallExpr): Val {
    const a = c.args[0]!;
    let ptr: number;
    if (a.type!.kind === 'record' && a.kind === 'FieldExpr') {
      const loc = this.fieldLocation(a);
      ptr = this.fn.vreg();
      this.fn.emit(I.mov64(ptr, loc.base));
      if (loc.off) this.fn.emit(I.alu64Imm('add', ptr, loc.off));
    } else ptr = this.scalar(a);
    const size = sizeOf(c.type!);
    const off = this.frame.temp(size);
    zeroStack(this.fn, off, size);
    this.callHelper(H.d_path, [ptr, { stack: off }, { imm: size }]);
    return { kind: 'mem', off, size };
  }

  /**
   * `len(@m)`: bpf_for_each_map_elem with a callback that adds one to a per-CPU counter (`len_count`) whose address
   * it gets through the callback context (a real stack slot: the helper takes it only from there).
   */
  private mapLen(m: MapExpr): Val {
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
  private deleteCall(c: CallExpr): number {
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

  /**
   * `uaddr(sym)`: a fixed-address executable's symbol is a constant; in a position-independent binary it is
   * `ip - probeVaddr + vaddr` (the load bias from where the probe fired; see probes/uaddr.ts).
   */
  private uaddr(symbol: string): Val {
    const t = this.tables.target.resolveUaddr(this.unit.expanded, symbol) as UaddrTarget;
    if (t.probeVaddr === undefined) return this.reg(this.constant(BigInt(t.vaddr)));
    const r = this.fn.vreg();
    this.fn.emit(I.ldx(8, r, this.ctx, PT_REGS_OFFSETS.ip!));
    this.fn.emit(I.alu64Imm('add', r, t.vaddr - t.probeVaddr));
    return this.reg(r);
  }

  /**
   * `ntop([af,] addr)`: `{u64 family, u8[16] address}`. An integer is an IPv4 address in network byte order
   * (AF_INET); a 4-byte array is IPv4 and a 16-byte array IPv6 unless the family says otherwise.
   */
  private ntop(c: CallExpr): Val {
    const fn = this.fn;
    const off = this.frame.temp(24);
    zeroStack(fn, off, 24);
    const a = c.args[c.args.length - 1]!;
    const at = a.type!;
    const AF_INET = 2;
    const AF_INET6 = 10;
    if (at.kind === 'int') {
      fn.emit(I.stx(4, this.fb, this.scalar(a), off + 8));
      fn.emit(I.st(8, this.fb, off, AF_INET));
    } else {
      const v = this.mem(a);
      const size = Math.min(16, v.size);
      copyMem(fn, this.fb, off + 8, this.fb, v.off, size);
      fn.emit(I.st(8, this.fb, off, size === 16 ? AF_INET6 : AF_INET));
    }
    if (c.args.length === 2) fn.emit(I.stx(8, this.fb, this.scalar(c.args[0]!), off));
    return { kind: 'mem', off, size: 24 };
  }

  /** Where `p->f` / `s.f` lives: a base address register, a byte offset and the address space. */
  private fieldLocation(e: FieldExpr): { base: number; off: number; space: 'kernel' | 'user'; field: RecordField } {
    const ot = e.object.type!;
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
  private location(e: Expr): { base: number; off: number; space: 'kernel' | 'user' } {
    if (e.kind === 'UnaryExpr' && e.op === '*') {
      const pt = e.operand.type as Extract<SType, { kind: 'pointer' }>;
      return { base: this.scalar(e.operand), off: 0, space: pt.space };
    }
    if (e.kind === 'FieldExpr') {
      const l = this.fieldLocation(e);
      return { base: l.base, off: l.off, space: l.space };
    }
    throw new BpfscopeError('internal: not a memory location');
  }

  /** Read a value of type `t` from `[base + off]` in kernel or user memory with bpf_probe_read_*. */
  private loadMem(t: SType, base: number, off: number, space: 'kernel' | 'user', field?: RecordField): Val {
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
  private loadCtx(t: SType, offset: number): Val {
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
  private dataLocString(f: RecordField, size: number): Val {
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

  private mapRead(m: MapExpr): Val {
    const fn = this.fn;
    const plan = this.tables.maps.get(m.name)!;
    const keyOff = this.mapKey(plan, m);
    if (plan.perCpu && ['count', 'sum', 'min', 'max', 'avg'].includes(plan.valueType.kind)) {
      return this.reg(this.aggregateRead(plan, { stack: keyOff }));
    }
    const p = this.callHelper(H.map_lookup_elem, [{ map: plan.kernelName }, { stack: keyOff }]);
    const t = m.type!;
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
   * `-k`: the run-time warning of a map read that finds no element, at the expression being generated (bpftrace's
   * HELPER_ERROR runtime error for map_lookup_elem, `output/text.cpp` runtime_error; its retcode is always 0).
   */
  private lookupMissWarning(): void {
    const id = this.tables.resources.printfs.length;
    this.tables.resources.printfs.push({
      id,
      format:
        "Can't lookup map element because it does not exist.\nAdditional Info - helper: map_lookup_elem, retcode: 0",
      argTypes: [],
      offsets: [],
      payloadSize: 0,
      ...(this.fn.pos ? { pos: this.fn.pos } : {}),
    });
    this.asyncRecord(AsyncAction.WARNF, id, 0, () => {});
  }

  /**
   * The value of a count/sum/min/max/avg map entry as `@m[k]` reads it in an expression: the per-CPU slots (layouts
   * in aggregate.ts) combined over every possible CPU with bpf_map_lookup_percpu_elem (Linux 5.19), as bpftrace:
   * counts and sums added, the smallest/largest set min/max, avg = total / count (truncated toward zero; 0 when no
   * CPU has a value). A missing key reads as 0.
   */
  private aggregateRead(plan: MapPlan, key: HelperArg): number {
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

  private incDec(e: Expr & { kind: 'IncDecExpr' }): Val {
    const fn = this.fn;
    const t = e.target.kind === 'VarExpr' ? e.target.type : this.tables.maps.get(e.target.name)?.valueType;
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

  private ternary(e: Expr & { kind: 'TernaryExpr' }): Val {
    const fn = this.fn;
    const t = e.type!;
    const elseL = fn.newLabel('tern_else');
    const done = fn.newLabel('tern_done');
    if (t.kind === 'int' || t.kind === 'bool' || t.kind === 'pointer' || t.kind === 'none') {
      const r = fn.vreg();
      this.branchIfFalse(e.cond, elseL);
      if (t.kind === 'none') {
        this.exprStmt(e.then);
        fn.emit(I.ja(done));
        fn.mark(elseL);
        this.exprStmt(e.else);
        fn.mark(done);
        return this.reg(this.constant(0));
      }
      fn.emit(I.mov64(r, this.scalar(e.then)));
      fn.emit(I.ja(done));
      fn.mark(elseL);
      fn.emit(I.mov64(r, this.scalar(e.else)));
      fn.mark(done);
      return this.reg(r);
    }
    const size = sizeOf(t);
    const off = this.frame.temp(size);
    zeroStack(fn, off, size);
    this.branchIfFalse(e.cond, elseL);
    this.storeExpr(e.then, t, this.fb, off);
    fn.emit(I.ja(done));
    fn.mark(elseL);
    this.storeExpr(e.else, t, this.fb, off);
    fn.mark(done);
    return { kind: 'mem', off, size };
  }

  /** Materialise a condition as 0/1: `jumpFalse` jumps to its label argument when false. */
  private boolOf(jumpFalse: (falseLabel: string) => void, invert = true): number {
    const fn = this.fn;
    const r = fn.vreg();
    const l = fn.newLabel('bool');
    // For '!x': result 1 when x is false.
    fn.emit(I.mov64Imm(r, invert ? 1 : 0));
    const falseL = fn.newLabel('isfalse');
    jumpFalse(falseL);
    fn.emit(I.mov64Imm(r, invert ? 0 : 1));
    fn.emit(I.ja(l));
    fn.mark(falseL);
    fn.mark(l);
    return r;
  }

  /** Emit a jump to `label` when `e` is false (zero); falls through when true. */
  branchIfFalse(e: Expr, label: string): void {
    const fn = this.fn;
    if (e.kind === 'UnaryExpr' && e.op === '!') {
      const skip = fn.newLabel('not');
      this.branchIfFalse(e.operand, skip);
      fn.emit(I.ja(label));
      fn.mark(skip);
      return;
    }
    if (e.kind === 'BinaryExpr' && e.op === '&&') {
      this.branchIfFalse(e.left, label);
      this.branchIfFalse(e.right, label);
      return;
    }
    if (e.kind === 'BinaryExpr' && e.op === '||') {
      const isTrue = fn.newLabel('or_true');
      const tryRight = fn.newLabel('or_right');
      this.branchIfFalse(e.left, tryRight);
      fn.emit(I.ja(isTrue));
      fn.mark(tryRight);
      this.branchIfFalse(e.right, label);
      fn.mark(isTrue);
      return;
    }
    if (e.kind === 'BinaryExpr' && CMP_OPS[e.op]) {
      const lt = e.left.type!;
      const rt = e.right.type!;
      if ((lt.kind === 'string' && rt.kind === 'string') || (lt.kind === 'buffer' && rt.kind === 'buffer')) {
        // buffers: the 8-byte length header first, so buffers of different lengths differ
        const eq = this.stringEquals(e.left, e.right);
        fn.emit(I.jmpImm(e.op === '==' ? 'jeq' : 'jne', eq, 0, label));
        return;
      }
      const l = this.scalar(e.left);
      const signed = isSigned(lt) && isSigned(rt);
      const inv = CMP_OPS[CMP_OPS[e.op]!.inv]!;
      const imm = this.immediate(e.right);
      if (imm !== undefined) {
        fn.emit(I.jmpImm(signed ? inv.s : inv.u, l, imm, label));
        return;
      }
      const r = this.scalar(e.right);
      fn.emit(I.jmp(signed ? inv.s : inv.u, l, r, label));
      return;
    }
    const v = this.expr(e);
    if (v.kind !== 'reg') throw new BpfscopeError('internal: condition is not a scalar');
    fn.emit(I.jmpImm('jeq', v.reg, 0, label));
  }

  /**
   * `pid`/`tid` as seen from bpfscope's PID namespace (`curr_ns`, the builtins' meaning in current bpftrace) or the
   * initial one (`init`): bpf_get_current_pid_tgid, or bpf_get_ns_current_pid_tgid when bpfscope runs in another
   * namespace (its `struct bpf_pidns_info { u32 pid; u32 tgid; }`: tid, then pid).
   */
  private pidTid(name: string, ns: string): Val {
    const fn = this.fn;
    const pidns = ns === 'curr_ns' ? this.tables.target.pidNamespace() : null;
    if (!pidns) {
      const r = this.callHelper(H.get_current_pid_tgid, []);
      if (name === 'pid') fn.emit(I.alu64Imm('rsh', r, 32));
      else fn.emit(I.mov32(r, r));
      return this.reg(r);
    }
    const info = this.frame.temp(8);
    fn.emit(I.st(8, this.fb, info, 0));
    this.callHelper(H.get_ns_current_pid_tgid, [
      this.constant(pidns.dev),
      this.constant(pidns.ino),
      { stack: info },
      { imm: 8 },
    ]);
    const r = fn.vreg();
    fn.emit(I.ldx(4, r, this.fb, info + (name === 'pid' ? 4 : 0)));
    return this.reg(r);
  }

  /** After a write to register variable `name`: its stack copy for `&$x`, when it has one, takes the new value. */
  private syncShadow(name: string): void {
    const off = this.shadows.get(name);
    const v = this.vars.get(name);
    if (off !== undefined && v?.kind === 'reg') this.fn.emit(I.stx(8, this.fb, v.reg, off));
  }

  /**
   * `&$x`: the address of the variable's frame slot (a buffer variable's own, a register variable's stack copy). In
   * a loop body run as a callback, a register variable of the enclosing probe has no copy: its current value is
   * copied to a temporary, valid for the statement.
   */
  private variableAddress(name: string): number {
    const fn = this.fn;
    const v = this.vars.get(name)!;
    let off: number;
    if (v.kind === 'mem') off = v.off;
    else {
      const shadow = this.shadows.get(name);
      if (shadow !== undefined) off = shadow;
      else {
        off = this.frame.temp(8);
        fn.emit(I.stx(8, this.fb, v.reg, off));
      }
    }
    const r = fn.vreg();
    fn.emit(I.mov64(r, this.fb));
    fn.emit(I.alu64Imm('add', r, off));
    return r;
  }

  /**
   * `percpu_kaddr(name[, cpu])`: ld_imm64 of the variable's BTF id, then bpf_per_cpu_ptr (NULL for a CPU that does
   * not exist) or bpf_this_cpu_ptr. The verifier's typed pointer is copied through the stack with
   * bpf_probe_read_kernel so that the result is a plain integer address, usable anywhere a `uint64 *` is.
   */
  private percpuKaddr(c: CallExpr): Val {
    const fn = this.fn;
    const name = (c.args[0] as { value: string }).value;
    const id = btfVarId(kernelBtf(), name);
    if (id === undefined) throw new BpfscopeError(`internal: no BTF variable ${name}`);
    const base = fn.vreg();
    fn.emit(I.ldBtfId(base, id));
    const p = c.args[1]
      ? this.callHelper(H.per_cpu_ptr, [base, this.scalar(c.args[1])])
      : this.callHelper(H.this_cpu_ptr, [base]);
    const slot = this.frame.temp(16);
    fn.emit(I.stx(8, this.fb, p, slot));
    this.callHelper(H.probe_read_kernel, [{ stack: slot + 8 }, { imm: 8 }, { stack: slot }]);
    const r = fn.vreg();
    fn.emit(I.ldx(8, r, this.fb, slot + 8));
    return this.reg(r);
  }

  /** 1 if two strings are equal (compared over the shorter buffer; both are NUL padded), else 0. */
  private stringEquals(a: Expr, b: Expr): number {
    const fn = this.fn;
    const va = this.mem(a);
    const vb = this.mem(b);
    const n = Math.min(va.size, vb.size);
    const r = fn.vreg();
    const ne = fn.newLabel('str_ne');
    const done = fn.newLabel('str_done');
    const x = fn.vreg();
    const y = fn.vreg();
    let i = 0;
    while (i < n) {
      const c = n - i >= 8 ? 8 : n - i >= 4 ? 4 : n - i >= 2 ? 2 : 1;
      fn.emit(I.ldx(c, x, this.fb, va.off + i));
      fn.emit(I.ldx(c, y, this.fb, vb.off + i));
      fn.emit(I.jmp('jne', x, y, ne));
      i += c;
    }
    fn.emit(I.mov64Imm(r, 1));
    fn.emit(I.ja(done));
    fn.mark(ne);
    fn.emit(I.mov64Imm(r, 0));
    fn.mark(done);
    return r;
  }

  private binary(e: BinaryExpr): Val {
    const fn = this.fn;
    if (CMP_OPS[e.op] || e.op === '&&' || e.op === '||') {
      return this.reg(this.boolOf((falseL) => this.branchIfFalse(e, falseL), false));
    }
    if (e.type?.kind === 'pointer' && (e.op === '+' || e.op === '-')) {
      const ptrLeft = e.left.type?.kind === 'pointer';
      const p = this.scalar(ptrLeft ? e.left : e.right);
      return this.reg(this.pointerOffset(p, ptrLeft ? e.right : e.left, e.type.to, e.op));
    }
    const l = this.scalar(e.left);
    const imm = this.immediate(e.right);
    const immOps: Record<string, I.AluOpName> = {
      '+': 'add',
      '-': 'sub',
      '*': 'mul',
      '&': 'and',
      '|': 'or',
      '^': 'xor',
      '<<': 'lsh',
      '>>': 'rsh',
      '/': 'div',
      '%': 'mod',
    };
    // a constant operand uses the instruction's immediate form (a non-zero divisor needs no zero check);
    // negative immediates are sign-extended by the CPU, so only use them where that is the 64-bit value
    if (imm !== undefined && immOps[e.op] && !((e.op === '/' || e.op === '%') && imm <= 0)) {
      const res = fn.vreg();
      fn.emit(I.mov64(res, l));
      const log2 = imm > 0 && (imm & (imm - 1)) === 0 ? Math.log2(imm) : -1;
      // unsigned / and % by a power of two are a shift and a mask: the verifier tracks their ranges (it does not
      // for BPF_DIV), which loops like `while ($b > 1) { $b = $b / 2; }` need to verify
      if (log2 >= 0 && e.op === '/') fn.emit(I.alu64Imm('rsh', res, log2));
      else if (log2 >= 0 && e.op === '%') fn.emit(I.alu64Imm('and', res, imm - 1));
      else fn.emit(I.alu64Imm(immOps[e.op]!, res, imm));
      return this.reg(res);
    }
    const r = this.scalar(e.right);
    const res = fn.vreg();
    fn.emit(I.mov64(res, l));
    this.arith(e.op, res, r, isSigned(e.left.type!) && isSigned(e.right.type!));
    return this.reg(res);
  }

  /** The byte at `index` of a string value (int8; 0 when the index is outside the string's buffer). */
  private stringIndex(str: Expr, index: Expr): Val {
    const fn = this.fn;
    const v = this.mem(str);
    const r = fn.vreg();
    const k = this.analyzer.isConstInt(index) ? Number(this.analyzer.constInt(index, 'index')) : undefined;
    if (k !== undefined) {
      if (k >= 0 && k < v.size) {
        fn.emit(I.ldx(1, r, this.fb, v.off + k));
        this.normalize(r, 1, true);
      } else fn.emit(I.mov64Imm(r, 0));
      return this.reg(r);
    }
    // a run-time index: bounds-checked, then one byte read through bpf_probe_read_kernel from our own stack
    const i = this.scalar(index);
    const out = this.frame.temp(8);
    fn.emit(I.st(8, this.fb, out, 0));
    const skip = fn.newLabel('sidx');
    fn.emit(I.jmpImm('jge', i, v.size, skip));
    const addr = fn.vreg();
    fn.emit(I.mov64(addr, this.fb));
    fn.emit(I.alu64Imm('add', addr, v.off));
    fn.emit(I.alu64('add', addr, i));
    this.callHelper(H.probe_read_kernel, [{ stack: out }, { imm: 1 }, addr]);
    fn.mark(skip);
    fn.emit(I.ldx(1, r, this.fb, out));
    this.normalize(r, 1, true);
    return this.reg(r);
  }

  /** `ptr op n` in C terms: a new register holding ptr moved by n elements of type `elem` (void/unknown: bytes). */
  private pointerOffset(ptr: number, n: Expr, elem: SType, op: '+' | '-'): number {
    const fn = this.fn;
    const size = elem.kind === 'none' ? 1 : Math.max(1, sizeOf(elem));
    const res = fn.vreg();
    fn.emit(I.mov64(res, this.scalar(n)));
    if (size !== 1) fn.emit(I.alu64Imm('mul', res, size));
    if (op === '-') fn.emit(I.neg64(res));
    fn.emit(I.alu64('add', res, ptr));
    return res;
  }

  /** The value of a compile-time integer operand that fits an instruction's signed 32-bit immediate. */
  private immediate(e: Expr): number | undefined {
    let v: bigint | undefined;
    if (e.kind === 'IntLit') v = e.value;
    else if (e.kind === 'BuiltinExpr' && e.name === 'cpid' && this.tables.cpid !== undefined)
      v = BigInt(this.tables.cpid);
    else if (e.kind === 'PositionalExpr' && e.type?.kind === 'int') {
      v = e.count
        ? BigInt(this.tables.positional.length)
        : (positionalInt(this.tables.positional[e.index - 1] ?? '0') ?? 0n);
    }
    if (v === undefined || v < -0x80000000n || v > 0x7fffffffn) return undefined;
    return Number(v);
  }

  /** dst = dst op src (64-bit), with C semantics for signed division and remainder. */
  arith(op: string, dst: number, src: number, _signed: boolean): void {
    const fn = this.fn;
    const simple: Record<string, I.AluOpName> = {
      '+': 'add',
      '-': 'sub',
      '*': 'mul',
      '&': 'and',
      '|': 'or',
      '^': 'xor',
      '<<': 'lsh',
    };
    if (simple[op]) {
      fn.emit(I.alu64(simple[op]!, dst, src));
      return;
    }
    if (op === '>>') {
      fn.emit(I.alu64('rsh', dst, src));
      return;
    }
    if (op === '/' || op === '%') {
      // Unsigned, as current bpftrace (CreateCheckedBinop): x / 0 and x % 0 give 1, with a run-time warning at the
      // expression's position (the one being generated: see expr())
      const zero = fn.newLabel('divz');
      const done = fn.newLabel('divd');
      fn.emit(I.jmpImm('jeq', src, 0, zero));
      fn.emit(I.alu64(op === '/' ? 'div' : 'mod', dst, src));
      fn.emit(I.ja(done));
      fn.mark(zero);
      this.runtimeWarning(
        'Divide or modulo by 0 detected. This can lead to unexpected results. 1 is being used as the result.',
      );
      fn.emit(I.mov64Imm(dst, 1));
      fn.mark(done);
      return;
    }
    throw new BpfscopeError(`internal: unsupported operator ${op}`);
  }

  /**
   * Emit a WARNF record for a fixed message, positioned at the current expression or statement (the user-space
   * side prints it as `FILE:L:C: WARNING: message`); `once`: printed at most once per run.
   */
  runtimeWarning(message: string, once = false): void {
    const fn = this.fn;
    const id = this.tables.resources.printfs.length;
    this.tables.resources.printfs.push({
      id,
      format: message.replaceAll('%', '%%'),
      argTypes: [],
      offsets: [],
      payloadSize: 0,
      ...(fn.pos ? { pos: fn.pos } : {}),
      ...(once ? { once } : {}),
    });
    this.asyncRecord(AsyncAction.WARNF, id, 0, () => {});
  }

  /**
   * After a map_update_elem that returned `rc`: bpftrace's warning when the map is full (-E2BIG), printed once per
   * statement and run.
   */
  warnIfMapFull(rc: number): void {
    const fn = this.fn;
    const ok = fn.newLabel('upd_ok');
    fn.emit(I.jmpImm('jne', rc, -7, ok));
    this.runtimeWarning(
      "Map full; can't update element. Try increasing max_map_keys config or manually setting the max entries in a map declaration e.g. `let @a = hash(5000)`",
      true,
    );
    fn.mark(ok);
  }

  /** What a registered builtin's code generation may use (lang/builtins/types.ts BuiltinGen). */
  /** What a registry builtin's code is given (lang/builtins/types.ts). */
  private builtinGen(): BuiltinGen {
    const fn = this.fn;
    return {
      scalar: (e) => this.scalar(e),
      mem: (e) => this.mem(e),
      constant: (v) => this.constant(v),
      callHelper: (id, args) => this.callHelper(id, args),
      constBytes: (bytes, size) => this.constBytes(bytes, size),
      zeroedTemp: (size) => {
        const off = this.frame.temp(size);
        zeroStack(fn, off, size);
        return off;
      },
      emit: (...insns) => insns.forEach((i) => fn.emit(i)),
      vreg: () => fn.vreg(),
      newLabel: (prefix) => fn.newLabel(prefix),
      mark: (label) => fn.mark(label),
      fb: this.fb,
      probe: this.unit.expanded,
      target: this.tables.target,
    };
  }

  private genValue(v: number | GenValue): Val {
    return typeof v === 'number' ? this.reg(v) : v;
  }

  private callExpr(c: CallExpr): Val {
    const fn = this.fn;
    const registered = builtinFunction(c.name)?.generate;
    if (registered) return this.genValue(registered(c, this.builtinGen()));
    if (c.name === 'kstack' || c.name === 'ustack') {
      return this.stack(c.type as Extract<SType, { kind: 'kstack' | 'ustack' }>);
    }
    switch (c.name) {
      case 'buf': {
        const t = c.type as Extract<SType, { kind: 'buffer' }>;
        const off = this.frame.temp(8 + t.size);
        zeroStack(fn, off, 8 + t.size);
        fn.emit(I.st(8, this.fb, off, t.size));
        const a = c.args[0]!;
        const at = a.type!;
        if (at.kind === 'string' || at.kind === 'array') {
          const v = this.mem(a);
          copyMem(fn, this.fb, off + 8, this.fb, v.off, Math.min(t.size, v.size));
        } else if (t.size > 0) {
          const ptr = this.scalar(a);
          const user = this.readsUser(c);
          this.callHelper(user ? H.probe_read_user : H.probe_read_kernel, [{ stack: off + 8 }, { imm: t.size }, ptr]);
        }
        return { kind: 'mem', off, size: 8 + t.size };
      }
      case 'pton': {
        const bytes = ptonBytes((c.args[0] as { value: string }).value)!;
        return this.constBytes(bytes, bytes.length);
      }
      case 'percpu_kaddr':
        return this.percpuKaddr(c);
      case 'socket_cookie':
        // the argument keeps the verifier's BTF pointer type (a ctx field); the helper returns 0 for NULL
        return this.reg(this.callHelper(H.get_socket_cookie, [this.scalar(c.args[0]!)]));
      case 'pid':
      case 'tid':
        return this.pidTid(c.name, c.args.length ? (c.args[0] as { name: string }).name : 'curr_ns');
      case 'uaddr':
        return this.uaddr((c.args[0] as { value: string }).value);
      case 'getopt': {
        // a compile-time constant (semantic analysis resolved the option)
        const v = (c as CallExpr & { getoptValue?: bigint | boolean | string }).getoptValue;
        if (typeof v === 'string') return this.constString(v, sizeOf(c.type!));
        return this.reg(this.constant(typeof v === 'boolean' ? (v ? 1n : 0n) : (v ?? 0n)));
      }
      case 'delete': {
        // current bpftrace: delete() is true when the key existed
        const r = this.deleteCall(c);
        const b = this.fn.vreg();
        const done = this.fn.newLabel('deleted');
        this.fn.emit(I.mov64Imm(b, 1));
        this.fn.emit(I.jmpImm('jeq', r, 0, done));
        this.fn.emit(I.mov64Imm(b, 0));
        this.fn.mark(done);
        return this.reg(b);
      }
      case 'path':
        return this.dPath(c);
      case 'macaddr':
        return this.macaddr(c);
      case 'len':
        if (c.args[0]!.kind === 'MapExpr') return this.mapLen(c.args[0] as MapExpr);
        return this.stackDepth(c);
      case 'strcontains':
        return this.strcontains(c);
      case 'reg':
        return this.loadCtx(U64, PT_REGS_OFFSETS[(c.args[0] as { value: string }).value]!);
      case 'usym': {
        const addr = this.scalar(c.args[0]!);
        const off = this.frame.temp(16);
        fn.emit(I.stx(8, this.fb, addr, off));
        const pid = this.callHelper(H.get_current_pid_tgid, []);
        fn.emit(I.alu64Imm('rsh', pid, 32));
        fn.emit(I.stx(4, this.fb, pid, off + 8));
        fn.emit(I.st(4, this.fb, off + 12, 0));
        return { kind: 'mem', off, size: 16 };
      }
      case 'ntop':
        return this.ntop(c);
      case 'has_key': {
        const m = c.args[0] as MapExpr;
        const plan = this.tables.maps.get(m.name)!;
        const keyOff = this.frame.temp(plan.keySize);
        zeroStack(fn, keyOff, plan.keySize);
        const k = c.args[1]!;
        const kt = plan.keyTypes.length === 1 ? plan.keyTypes[0]! : { kind: 'tuple' as const, elems: plan.keyTypes };
        this.storeExpr(k, kt, this.fb, keyOff);
        const p = this.callHelper(H.map_lookup_elem, [{ map: plan.kernelName }, { stack: keyOff }]);
        const r = fn.vreg();
        const done = fn.newLabel('hk');
        fn.emit(I.mov64Imm(r, 0));
        fn.emit(I.jmpImm('jeq', p, 0, done));
        fn.emit(I.mov64Imm(r, 1));
        fn.mark(done);
        return this.reg(r);
      }
      case 'strncmp': {
        const a = this.mem(c.args[0]!);
        const b = this.mem(c.args[1]!);
        const n = Math.min(Number(this.analyzer.constInt(c.args[2]!, 'strncmp length') ?? 0), a.size, b.size);
        const r = fn.vreg();
        const x = fn.vreg();
        const y = fn.vreg();
        const differ = fn.newLabel('sn_ne');
        const done = fn.newLabel('sn_done');
        for (let i = 0; i < n; i++) {
          fn.emit(I.ldx(1, x, this.fb, a.off + i));
          fn.emit(I.ldx(1, y, this.fb, b.off + i));
          fn.emit(I.jmp('jne', x, y, differ));
          fn.emit(I.jmpImm('jeq', x, 0, done));
        }
        fn.emit(I.ja(done));
        fn.mark(differ);
        fn.emit(I.mov64Imm(r, 1));
        const end = fn.newLabel('sn_end');
        fn.emit(I.ja(end));
        fn.mark(done);
        fn.emit(I.mov64Imm(r, 0));
        fn.mark(end);
        return this.reg(r);
      }
    }
    if (c.name === 'str') {
      const t = c.type!;
      const size = sizeOf(t);
      const a = c.args[0]!;
      if (a.type!.kind === 'string') {
        const v = this.mem(a);
        const off = this.frame.temp(size);
        zeroStack(fn, off, size);
        copyMem(fn, this.fb, off, this.fb, v.off, Math.min(size - 1, v.size));
        return { kind: 'mem', off, size };
      }
      const ptr = this.scalar(a);
      const off = this.frame.temp(size);
      zeroStack(fn, off, size);
      let n: number | { reg: number } = size;
      if (c.args.length === 2 && c.args[1]!.kind !== 'IntLit' && c.args[1]!.kind !== 'PositionalExpr') {
        // runtime length: clamp to the buffer
        const len = this.scalar(c.args[1]!);
        const r = fn.vreg();
        fn.emit(I.mov64(r, len));
        const ok = fn.newLabel('len_ok');
        fn.emit(I.jmpImm('jle', r, size, ok));
        fn.emit(I.mov64Imm(r, size));
        fn.mark(ok);
        n = { reg: r };
      }
      // A typed pointer knows its address space; a plain integer is a user address only in user-space probes
      // (current bpftrace: kprobe/tracepoint integers are kernel addresses; use uptr() for user ones) unless it
      // was derived from one of known space (semantic analysis's CallExpr.space).
      const userSpace = this.readsUser(c);
      const helper = userSpace ? H.probe_read_user_str : H.probe_read_kernel_str;
      this.callHelper(helper, [{ stack: off }, typeof n === 'number' ? { imm: n } : n.reg, ptr]);
      return { kind: 'mem', off, size };
    }
    this.callStmt(c);
    return this.reg(this.constant(0));
  }
}

/** Expressions denoting a struct in kernel or user memory (`*p`, `p->s`, `(*p).s`), read with bpf_probe_read_*. */
function isMemoryLocation(e: Expr): boolean {
  if (e.kind === 'UnaryExpr') return e.op === '*';
  if (e.kind !== 'FieldExpr') return false;
  const ot = e.object.type;
  return ot?.kind === 'pointer' || (ot?.kind === 'record' && isMemoryLocation(e.object));
}

function isSigned(t: SType): boolean {
  return t.kind === 'int' && t.signed;
}
