/**
 * The code generator's expressions (part of gen.ts ProbeGen): operators, casts, conditions, the builtin variables
 * still generated here (context variables, stacks, `pid`/`tid` namespaces); calls are in gen-calls.ts.
 */

import { HELPER_ID as H } from '../bpf/helpers.js';
import * as I from '../bpf/insn.js';
import { BpfscopeError } from '../errors.js';
import type { BinaryExpr, Expr, VarExpr } from '../lang/ast.js';
import { builtinVariable } from '../lang/builtins/registry.js';
import { positionalInt } from '../lang/lexer.js';
import { kernelBtf } from '../lang/btf-types.js';
import { PT_REGS_CONTEXTS, PT_REGS_OFFSETS } from '../lang/ptregs.js';
import { literalIntType } from '../lang/typeops.js';
import { type SType, sizeOf, tupleLayout, U64 } from '../lang/types.js';
import { zeroStack } from './frame.js';
import { isMemoryLocation } from '../lang/typeops.js';
import { ALU_OPS, CMP_OPS, isSigned, type Val } from './gen-core.js';
import { AccessGen } from './gen-access.js';
import { stackMapPlan } from './resource-ids.js';
import { WARN_ARRAY_OOB } from './warning-ids.js';

export abstract class ExprGen extends AccessGen {
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

  protected exprInner(e: Expr): Val {
    const fn = this.fn;
    switch (e.kind) {
      case 'IntLit':
        return this.reg(this.constant(e.value));
      case 'BoolLit':
        return this.reg(this.constant(e.value ? 1 : 0));
      case 'StrLit':
        return this.constBytes(e.bytes ?? Buffer.from(e.value), sizeOf(this.types.get(e)));
      case 'PositionalExpr': {
        if (e.count) return this.reg(this.constant(this.tables.positional.length));
        const s = this.tables.positional[e.index - 1];
        if (this.types.get(e).kind === 'string') return this.constString(s ?? '', sizeOf(this.types.get(e)));
        return this.reg(this.constant(s === undefined ? 0n : (positionalInt(s) ?? 0n)));
      }
      case 'BuiltinExpr':
        if (e.enumValue !== undefined) return this.reg(this.constant(e.enumValue));
        return this.builtin(e.name, this.types.get(e));
      case 'VarExpr':
        return this.vars.get(e.name)!;
      case 'MapExpr':
        return this.mapRead(e);
      case 'BinaryExpr':
        return this.binary(e);
      case 'UnaryExpr': {
        if (e.op === '*') {
          const pt = this.types.get(e.operand) as Extract<SType, { kind: 'pointer' }>;
          return this.loadMem(this.types.get(e), this.scalar(e.operand), 0, pt.space);
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
        const ot = this.types.find(obj);
        // s[i] on a string: its i-th byte (0 past the buffer's end)
        if (ot?.kind === 'string') return this.stringIndex(obj, e.index);
        // p[i] on a pointer: *(p + i)
        if (ot?.kind === 'pointer') {
          const addr = this.pointerOffset(this.scalar(obj), e.index, ot.to, '+');
          return this.loadMem(this.types.get(e), addr, 0, ot.space);
        }
        if (ot?.kind === 'array') return this.arrayIndex(obj, ot, e.index, this.types.get(e));
        throw new BpfscopeError('internal: unsupported index expression');
      }
      case 'CastExpr': {
        const t = this.types.get(e);
        const from = this.types.get(e.operand);
        if (t.kind === 'array' || from.kind === 'array') return this.reinterpretCast(e.operand, from, t);
        const v = this.scalar(e.operand);
        const r = fn.vreg();
        fn.emit(I.mov64(r, v));
        if (t.kind === 'int') this.normalize(r, t.size, t.signed);
        if (t.kind === 'pointer' && from.kind === 'int') {
          // bpftrace converts an integer to a pointer zero-extended from the integer's own width, a negative literal
          // having its smallest signed type (language.md "Integers"): `(uint8 *)-1` is 0xff, as bpftrace prints it
          const lit = constLiteral(e.operand);
          const size = lit !== undefined && lit < 0n ? literalIntType(lit).size : from.size;
          if (size < 8) this.normalize(r, size, false);
        }
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
        const t = this.types.get(e) as Extract<SType, { kind: 'tuple' }>;
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
        return this.reg(this.constant(this.types.size(e)));
      default:
        throw new BpfscopeError(`internal: unsupported expression ${e.kind}`);
    }
  }

  /**
   * Array casts (`(int8[8])x`, `(uint32)arr`): the operand's bytes, reinterpreted. An integer is stored to a stack
   * temporary (little-endian, its `sizeOf(from)` bytes); a string or array already in memory is reused; an array cast
   * to an integer is loaded from its bytes.
   */
  protected reinterpretCast(operand: Expr, from: SType, to: SType): Val {
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

  protected builtin(name: string, t: SType): Val {
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
        // no pt_regs context (tracepoint, fentry, ...): always kernel mode, as bpftrace folds it
        if (!PT_REGS_CONTEXTS.has(this.unit.expanded.provider)) return this.reg(this.constant(0));
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
  protected stack(t: Extract<SType, { kind: 'kstack' | 'ustack' }>): Val {
    const fn = this.fn;
    const { name, scratch, user, limit, frameSize } = stackMapPlan(t);
    if (!this.tables.ids.stackMaps.has(name)) {
      throw new BpfscopeError(`internal: the resource pass planned no stack map ${name} (codegen/resource-ids.ts)`);
    }
    const off = this.frame.temp(16);
    const key = this.frame.temp(8);
    const BPF_F_USER_STACK = 1 << 8;
    const BPF_F_USER_BUILD_ID = 1 << 11;
    const BPF_NOEXIST = 1;
    const ENOMEM = 12;
    const EFAULT = 14;
    const id = fn.vreg();
    const done = fn.newLabel('stack_done');
    fn.emit(I.mov64Imm(id, -ENOMEM));
    fn.emit(I.st(8, this.fb, key, 0));
    const buf = this.callHelper(H.map_lookup_elem, [{ map: scratch }, { stack: key }]);
    fn.emit(I.jmpImm('jeq', buf, 0, done));
    const flags = (user ? BPF_F_USER_STACK : 0) | (frameSize === 32 ? BPF_F_USER_BUILD_ID : 0);
    const n = this.callHelper(H.get_stack, [this.ctx, buf, { imm: frameSize * limit }, { imm: flags }]);
    fn.emit(I.mov64(id, n));
    fn.emit(I.jmpImm('jslt', n, 0, done));
    // no frames (a syscall tracepoint on 6.1 records none): "no stack", as bpf_get_stackid's -EFAULT
    const some = fn.newLabel('stack_some');
    fn.emit(I.jmpImm('jne', n, 0, some));
    fn.emit(I.mov64Imm(id, -EFAULT));
    fn.emit(I.ja(done));
    fn.mark(some);
    // FNV-1a over the frames, one u64 at a time, up to the first frame whose first u64 is zero (the kernel
    // zero-fills the rest; a build_id frame starts with its nonzero status)
    const h = this.constant(0xcbf29ce484222325n);
    const prime = this.constant(0x100000001b3n);
    const ptr = fn.vreg();
    fn.emit(I.mov64(ptr, buf));
    const hashed = fn.newLabel('stack_hashed');
    for (let i = 0; i < limit; i++) {
      for (let w = 0; w < frameSize / 8; w++) {
        const ip = fn.vreg();
        fn.emit(I.ldx(8, ip, ptr, i * frameSize + w * 8));
        if (w === 0) fn.emit(I.jmpImm('jeq', ip, 0, hashed));
        fn.emit(I.alu64('xor', h, ip));
        fn.emit(I.alu64('mul', h, prime));
      }
    }
    fn.mark(hashed);
    fn.emit(I.alu64Imm('rsh', h, 1));
    fn.emit(I.mov64(id, h));
    fn.emit(I.stx(8, this.fb, h, key));
    this.callHelper(H.map_update_elem, [{ map: name }, { stack: key }, buf, { imm: BPF_NOEXIST }]);
    fn.mark(done);
    fn.emit(I.stx(8, this.fb, id, off));
    if (user) {
      // the pid bpfscope's /proc knows the process by (bpfscope in a PID namespace: the namespace's pid)
      const pid = (this.pidTid('pid', 'curr_ns') as { kind: 'reg'; reg: number }).reg;
      fn.emit(I.stx(4, this.fb, pid, off + 8));
    } else {
      fn.emit(I.st(4, this.fb, off + 8, 0));
    }
    fn.emit(I.st(4, this.fb, off + 12, 0));
    return { kind: 'mem', off, size: 16 };
  }

  protected ternary(e: Expr & { kind: 'TernaryExpr' }): Val {
    const fn = this.fn;
    const t = this.types.get(e);
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
  protected boolOf(jumpFalse: (falseLabel: string) => void, invert = true): number {
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
      const lt = this.types.get(e.left);
      const rt = this.types.get(e.right);
      if (
        (lt.kind === 'string' && rt.kind === 'string') ||
        (lt.kind === 'buffer' && rt.kind === 'buffer') ||
        (lt.kind === 'array' && rt.kind === 'array')
      ) {
        // buffers: the 8-byte length header first, so buffers of different lengths differ; arrays (== and != only,
        // of one type: semantic analysis) byte for byte
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
  protected pidTid(name: string, ns: string): Val {
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

  /** 1 if two strings are equal (compared over the shorter buffer; both are NUL padded), else 0. */
  protected stringEquals(a: Expr, b: Expr): number {
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

  protected binary(e: BinaryExpr): Val {
    const fn = this.fn;
    if (CMP_OPS[e.op] || e.op === '&&' || e.op === '||') {
      return this.reg(this.boolOf((falseL) => this.branchIfFalse(e, falseL), false));
    }
    const et = this.types.find(e);
    if (et?.kind === 'pointer' && (e.op === '+' || e.op === '-')) {
      const ptrLeft = this.types.find(e.left)?.kind === 'pointer';
      const p = this.scalar(ptrLeft ? e.left : e.right);
      return this.reg(this.pointerOffset(p, ptrLeft ? e.right : e.left, et.to, e.op));
    }
    const l = this.scalar(e.left);
    const imm = this.immediate(e.right);
    const immOps = ALU_OPS;
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
    this.arith(e.op, res, r, isSigned(this.types.get(e.left)) && isSigned(this.types.get(e.right)));
    return this.reg(res);
  }

  /**
   * `a[i]` on an array of type `t`, giving an element of type `elem`. A constant index was checked by semantic
   * analysis. A run-time index is checked against the array's size as bpftrace does (codegen_llvm.cpp ArrayAccess):
   * out of bounds prints bpftrace's warning `Array access out of bounds. This can lead to unexpected results.` at
   * the expression; an array in kernel or user memory is then still read at that index, as bpftrace reads it, while
   * an array held in the program's own memory (variables, map values, casts) gives 0 (its bytes end there). A
   * zero-length (flexible) array member has no size to check against and is read at any index.
   */
  protected arrayIndex(obj: Expr, t: Extract<SType, { kind: 'array' }>, index: Expr, elem: SType): Val {
    const fn = this.fn;
    const es = sizeOf(t.elem);
    const k = this.constInt(index);
    // a constant index into a tracepoint record's array field (args.args[2]): read from the context
    if (
      k !== undefined &&
      obj.kind === 'FieldExpr' &&
      obj.object.kind === 'BuiltinExpr' &&
      obj.object.name === 'args'
    ) {
      const f = this.argsField(obj);
      if (f.type.kind === 'array') return this.loadCtx(t.elem, f.offset + k * es);
    }
    // an array field of a struct in kernel or user memory (curtask->cpus_mask.bits[0], $a.x[$i]): one element read
    if (obj.kind === 'FieldExpr' && isMemoryLocation(obj, this.types)) {
      const loc = this.fieldLocation(obj);
      if (k !== undefined) return this.loadMem(elem, loc.base, loc.off + k * es, loc.space);
      const i = this.scalar(index);
      if (t.count > 0) {
        const ok = fn.newLabel('aidx_ok');
        fn.emit(I.jmpImm('jlt', i, t.count, ok));
        this.runtimeWarning(WARN_ARRAY_OOB);
        fn.mark(ok);
      }
      const addr = fn.vreg();
      fn.emit(I.mov64(addr, i));
      if (es !== 1) fn.emit(I.alu64Imm('mul', addr, es));
      fn.emit(I.alu64('add', addr, loc.base));
      return this.loadMem(elem, addr, loc.off, loc.space);
    }
    // any other array value held in the frame (`((int8[8])x)[0]`, `$a[1]`, `@m[k][$i]`)
    const v = this.expr(obj);
    if (v.kind !== 'mem') throw new BpfscopeError('internal: array value in a register');
    const scalarElem = elem.kind === 'int' || elem.kind === 'bool' || elem.kind === 'pointer';
    let off: number;
    if (k !== undefined) {
      off = v.off + k * es;
    } else {
      // bounds-checked, then the element copied through bpf_probe_read_kernel from our own stack (the verifier
      // takes no variable offsets into the stack); 0 when out of bounds
      const i = this.scalar(index);
      off = this.frame.temp(Math.max(8, es));
      zeroStack(fn, off, Math.max(8, es));
      const oob = fn.newLabel('aidx_oob');
      const done = fn.newLabel('aidx_done');
      fn.emit(I.jmpImm('jge', i, t.count, oob));
      const addr = fn.vreg();
      fn.emit(I.mov64(addr, i));
      if (es !== 1) fn.emit(I.alu64Imm('mul', addr, es));
      fn.emit(I.alu64('add', addr, this.fb));
      fn.emit(I.alu64Imm('add', addr, v.off));
      this.callHelper(H.probe_read_kernel, [{ stack: off }, { imm: es }, addr]);
      fn.emit(I.ja(done));
      fn.mark(oob);
      this.runtimeWarning(WARN_ARRAY_OOB);
      fn.mark(done);
    }
    if (scalarElem) {
      const r = fn.vreg();
      fn.emit(I.ldx(es as 1 | 2 | 4 | 8, r, this.fb, off));
      if (elem.kind === 'int' && elem.signed) this.normalize(r, elem.size, true);
      return this.reg(r);
    }
    return { kind: 'mem', off, size: es };
  }

  /** The byte at `index` of a string value (int8; 0 when the index is outside the string's buffer). */
  protected stringIndex(str: Expr, index: Expr): Val {
    const fn = this.fn;
    const v = this.mem(str);
    const r = fn.vreg();
    const k = this.constInt(index);
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
  protected pointerOffset(ptr: number, n: Expr, elem: SType, op: '+' | '-'): number {
    const fn = this.fn;
    const size = elem.kind === 'none' ? 1 : Math.max(1, sizeOf(elem));
    const res = fn.vreg();
    fn.emit(I.mov64(res, this.scalar(n)));
    if (size !== 1) fn.emit(I.alu64Imm('mul', res, size));
    if (op === '-') fn.emit(I.neg64(res));
    fn.emit(I.alu64('add', res, ptr));
    return res;
  }
}

/** The value of an integer literal, possibly negated (`-1` before or after folding), else undefined. */
function constLiteral(e: Expr): bigint | undefined {
  if (e.kind === 'IntLit') return e.value;
  if (e.kind === 'UnaryExpr' && e.op === '-' && e.operand.kind === 'IntLit') return -e.operand.value;
  return undefined;
}
