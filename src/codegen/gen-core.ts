/**
 * The code generator's base (see gen.ts ProbeGen, which completes it): the program being built (IR function, frame,
 * variables, loop targets), helper calls, constants, stores of values into the stack or map values, asynchronous
 * records to the ring buffer, run-time warnings, and the name tables (`func`/`probe` by attach cookie, syscall
 * names). Values are either scalars in a virtual register or bytes on the stack (`Val`).
 */

import { HELPER_ID as H } from '../bpf/helpers.js';
import * as I from '../bpf/insn.js';
import { FP, R0, R1, R2, R3, R4, R5, R9 } from '../bpf/opcodes.js';
import { BpfscopeError } from '../errors.js';
import type { SyscallTable } from '../lang/probe.js';
import type { CallExpr, Expr, Span, Stmt } from '../lang/ast.js';
import { type BuiltinGen, type GenValue } from '../lang/builtins/registry.js';
import { positionalInt } from '../lang/lexer.js';
import type { Target } from '../lang/target.js';
import type { ProbeUnit } from '../lang/units.js';
import type { TypeTable } from '../lang/type-table.js';
import { type SType, sizeOf, tupleLayout, typeKey } from '../lang/types.js';
import { copyMem, Frame, storeBytes, zeroStack } from './frame.js';
import { type HelperArg, IrFunction } from './ir.js';
import { AsyncAction, type MapPlan, type FuncTablePlan, type ProgramResources } from './plan.js';
import type { ResourceIds } from './resource-ids.js';
import { WARN_DIVIDE, WARN_LOOKUP_MISS, WARN_MAP_FULL, warningId } from './warning-ids.js';

/** A generated value: a scalar in a register, or `size` bytes of stack at r10+off. */
export type Val = { kind: 'reg'; reg: number } | { kind: 'mem'; off: number; size: number };

export type { HelperArg } from './ir.js';

/** The frame-map base register (callee-saved: helper calls keep it). */
export const FRAME_MAP_BASE = R9;

/**
 * The BPF ALU operation of each binary operator of the language (all 64-bit and unsigned: `/` and `%` need a
 * divide-by-zero check, see ProbeGen arith).
 */
export const ALU_OPS: Readonly<Record<string, I.AluOpName>> = {
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

/** Tables shared by all programs of one compilation. */
export interface GenTables {
  maps: Map<string, MapPlan>;
  /**
   * What the programs need at run time (printf formats, scratch maps, ...): the resource pass's tables
   * ({@link ResourceIds}), to which generation adds run-time warnings, frame maps and scratch maps.
   */
  resources: ProgramResources;
  /** The ids the resource pass gave the calls that send records, and the stack maps (codegen/resource-ids.ts). */
  ids: ResourceIds;
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

export const CMP_OPS: Record<string, { u: I.JmpOpName; s: I.JmpOpName; inv: string }> = {
  '==': { u: 'jeq', s: 'jeq', inv: '!=' },
  '!=': { u: 'jne', s: 'jne', inv: '==' },
  '<': { u: 'jlt', s: 'jslt', inv: '>=' },
  '<=': { u: 'jle', s: 'jsle', inv: '>' },
  '>': { u: 'jgt', s: 'jsgt', inv: '<=' },
  '>=': { u: 'jge', s: 'jsge', inv: '<' },
};

export abstract class GenCore {
  readonly fn: IrFunction;
  readonly frame: Frame;
  protected ctx = 0;
  protected readonly vars = new Map<string, Val>();
  /** Stack copies of register variables whose address is taken (`&$x`), by name: their frame offsets. */
  protected readonly shadows = new Map<string, number>();
  protected readonly endLabel: string;
  /** Enclosing loops' break/continue targets, innermost last. */
  protected readonly loops: { brk: string; cont: string }[] = [];

  /** Callback subprograms of this program (`for ($kv : @m)` bodies), shared with nested generators. */
  readonly subprogs: { fn: IrFunction; params: number }[];

  constructor(
    readonly tables: GenTables,
    readonly unit: ProbeUnit,
    /** The unit's types, from the semantic pass: the only place code generation reads a type from. */
    readonly types: TypeTable,
    name: string,
    parent?: GenCore,
    /** Keep the frame in a frame map (see codegen/frame.ts): set when the frame outgrew the BPF stack. */
    protected readonly frameInMap = false,
  ) {
    this.fn = new IrFunction(name);
    if (frameInMap) this.fn.frameBase = FRAME_MAP_BASE;
    this.frame = new Frame(this.fn, frameInMap);
    this.endLabel = this.fn.newLabel('end');
    this.subprogs = parent ? parent.subprogs : [];
  }

  /** The value of a compile-time integer (TypeTable.constInt, found by the semantic pass), or undefined. */
  protected constInt(e: Expr): number | undefined {
    const v = this.types.constInt(e);
    return v === undefined ? undefined : Number(v);
  }

  /** The register frame slots are addressed from (r10, or r9 into the frame map). */
  get fb(): number {
    return this.fn.frameBase;
  }

  // ---- helpers ---------------------------------------------------------------------------------------------

  protected at(pos: Span): void {
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
    this.storeAs(this.expr(e), st, base, off, this.types.find(e));
  }

  /**
   * Copy the tuple at [fb+srcOff] laid out as `from` into [base+off] laid out as `to`, element by element; record
   * fields are matched by name (`(bar=1, foo=2)` stored as `(foo, bar)`).
   */
  protected convertTuple(
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

  /**
   * Build an async record `[u64 action | id << 32][payload]` on the stack and send it with ringbuf_output; on
   * failure (ring full) count a lost event.
   */
  protected asyncRecord(action: AsyncAction, id: number, payload: number, fill: (recOff: number) => void): void {
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
  protected ringbufFlags(): number {
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
  protected countLost(res: number): void {
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

  protected reg(r: number): Val {
    return { kind: 'reg', reg: r };
  }

  /** Truncate/extend a 64-bit register to an integer of `size` bytes. */
  protected normalize(r: number, size: number, signed: boolean): void {
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
  protected funcFromCookie(funcs: readonly string[], size: number): Val {
    const cookie = this.callHelper(H.get_attach_cookie, [this.ctx]);
    return this.nameFromTable(this.nameTable('func_names', funcs, size), cookie, size);
  }

  /** The IR map name of a name table (`prefix_N`), registered in {@link GenTables.funcTables} on first use. */
  protected nameTable(prefix: string, names: readonly string[], size: number): string {
    const tables = this.tables.funcTables;
    let name = [...tables.values()].find((t) => t.funcs === names)?.name;
    if (name === undefined) {
      name = `${prefix}_${tables.size}`;
      tables.set(name, { name, valueSize: (size + 7) & ~7, funcs: names });
    }
    return name;
  }

  /** Entry `index` (a u32 register) of name table `map`, copied into a `size`-byte string temporary (empty if none). */
  protected nameFromTable(map: string, index: number, size: number): Val {
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
  protected syscallTableName(table: SyscallTable): string {
    return this.nameTable('syscall_names', table.names, this.tables.probeNameSize);
  }

  /**
   * A syscall wildcard on `raw_syscalls:sys_*` (probes/syscalls.ts): end the probe unless the record's syscall
   * number names a matched event in the table (ARRAY map number -> probe name, '' for the others), and for 32-bit
   * compat syscalls (`task->thread_info.status & TS_COMPAT`), which the syscall tracepoints skip as well.
   */
  protected syscallFilter(table: SyscallTable): void {
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
  protected syscallProbeName(table: SyscallTable, size: number): Val {
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

  /**
   * `-k`: the run-time warning of a map read that finds no element, at the expression being generated (bpftrace's
   * HELPER_ERROR runtime error for map_lookup_elem, `output/text.cpp` runtime_error; its retcode is always 0).
   */
  protected lookupMissWarning(): void {
    this.runtimeWarning(WARN_LOOKUP_MISS);
  }

  /** After a write to register variable `name`: its stack copy for `&$x`, when it has one, takes the new value. */
  protected syncShadow(name: string): void {
    const off = this.shadows.get(name);
    const v = this.vars.get(name);
    if (off !== undefined && v?.kind === 'reg') this.fn.emit(I.stx(8, this.fb, v.reg, off));
  }

  /**
   * `&$x`: the address of the variable's frame slot (a buffer variable's own, a register variable's stack copy). In
   * a loop body run as a callback, a register variable of the enclosing probe has no copy: its current value is
   * copied to a temporary, valid for the statement.
   */
  protected variableAddress(name: string): number {
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

  /** The value of a compile-time integer operand that fits an instruction's signed 32-bit immediate. */
  protected immediate(e: Expr): number | undefined {
    let v: bigint | undefined;
    if (e.kind === 'IntLit') v = e.value;
    else if (e.kind === 'BuiltinExpr' && e.name === 'cpid' && this.tables.cpid !== undefined)
      v = BigInt(this.tables.cpid);
    else if (e.kind === 'PositionalExpr' && this.types.find(e)?.kind === 'int') {
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
    if (op !== '/' && op !== '%' && ALU_OPS[op]) {
      fn.emit(I.alu64(ALU_OPS[op]!, dst, src));
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
      this.runtimeWarning(WARN_DIVIDE);
      fn.emit(I.mov64Imm(dst, 1));
      fn.mark(done);
      return;
    }
    throw new BpfscopeError(`internal: unsupported operator ${op}`);
  }

  /**
   * Emit a WARNF record of run-time warning `message` (codegen/warning-ids.ts), positioned at the current
   * expression or statement (the user-space side prints it as `FILE:L:C: WARNING: message`). Its id, and whether
   * it is printed once per run, were decided by the resource pass.
   * @throws BpfscopeError (internal) when the pass foresaw no such warning here
   */
  runtimeWarning(message: string): void {
    const id = warningId(this.tables.ids.warnings, this.types, this.fn.pos, message);
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
    this.runtimeWarning(WARN_MAP_FULL);
    fn.mark(ok);
  }

  /** What a registry builtin's code is given (lang/builtins/types.ts). */
  protected builtinGen(): BuiltinGen {
    const fn = this.fn;
    return {
      typeOf: (e) => this.types.get(e),
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

  protected genValue(v: number | GenValue): Val {
    return typeof v === 'number' ? this.reg(v) : v;
  }

  // ---- implemented by the layers above (gen-access.ts, gen-expr.ts, gen-calls.ts, gen.ts) --------------------

  /** Generate an expression: a scalar in a register or bytes on the stack. */
  abstract expr(e: Expr): Val;
  protected abstract callExpr(c: CallExpr): Val;
  protected abstract stmt(s: Stmt): void;
  protected abstract exprStmt(e: Expr): void;
  protected abstract scaledStep(v: number, t: SType | undefined): number;
}

export function isSigned(t: SType): boolean {
  return t.kind === 'int' && t.signed;
}
