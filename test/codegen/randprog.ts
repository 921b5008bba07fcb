/**
 * Random IR programs for property tests of register allocation and emission: a pool of virtual registers all
 * defined at entry (from the context, constants and ld_imm64) and all combined into r0 at the end (so they are
 * live throughout), with ALU operations, if/else diamonds, counted loops (backward jumps), helper calls taking
 * arguments in r1-r5 and returning in r0, stack slot stores/loads and atomic adds, as the code generator emits them.
 */
import fc from 'fast-check';
import { HELPERS } from '../../src/bpf/helpers.js';
import * as I from '../../src/bpf/insn.js';
import { FP, R0, R1 } from '../../src/bpf/opcodes.js';
import { IrFunction } from '../../src/codegen/ir.js';

type AluName = 'add' | 'sub' | 'mul' | 'div' | 'sdiv' | 'mod' | 'smod' | 'or' | 'and' | 'xor' | 'lsh' | 'rsh' | 'arsh';
type JmpName = 'jeq' | 'jne' | 'jgt' | 'jge' | 'jlt' | 'jle' | 'jsgt' | 'jsge' | 'jslt' | 'jsle' | 'jset';

export type Operand = { reg: number } | { imm: number };
export type Stmt =
  | { k: 'alu'; op: AluName; wide: boolean; dst: number; src: Operand }
  | { k: 'mov'; wide: boolean; dst: number; src: number }
  | { k: 'neg'; dst: number }
  | { k: 'const64'; dst: number; value: bigint }
  | { k: 'ctx'; dst: number; off: number }
  | { k: 'store'; slot: number; src: number }
  | { k: 'load'; slot: number; dst: number }
  | { k: 'atomic'; slot: number; src: number }
  | { k: 'call'; args: number[]; dst: number }
  | { k: 'if'; op: JmpName; wide: boolean; a: number; b: Operand; yes: Stmt[]; no: Stmt[] }
  | { k: 'loop'; n: number; body: Stmt[] };

export interface ProgSpec {
  /** Number of pool registers (indices in statements are taken modulo this). */
  nvars: number;
  /** Number of 8-byte stack slots the "code generator" uses. */
  nslots: number;
  body: Stmt[];
}

export interface GenOptions {
  minVars?: number;
  maxVars?: number;
  /** Only calls that run the same in the kernel: `get_current_pid_tgid` (no arguments). */
  kernelSafe?: boolean;
  maxDepth?: number;
}

const ALU_NAMES: AluName[] = [
  'add',
  'sub',
  'mul',
  'div',
  'sdiv',
  'mod',
  'smod',
  'or',
  'and',
  'xor',
  'lsh',
  'rsh',
  'arsh',
];
const JMP_NAMES: JmpName[] = ['jeq', 'jne', 'jgt', 'jge', 'jlt', 'jle', 'jsgt', 'jsge', 'jslt', 'jsle', 'jset'];

const idx = fc.nat(63);
const smallImm = fc.oneof(fc.integer({ min: -16, max: 16 }), fc.integer({ min: -0x80000000, max: 0x7fffffff }));

function aluStmt(): fc.Arbitrary<Stmt> {
  return fc
    .record({
      op: fc.constantFrom(...ALU_NAMES),
      wide: fc.boolean(),
      dst: idx,
      useReg: fc.boolean(),
      reg: idx,
      imm: smallImm,
    })
    .map(({ op, wide, dst, useReg, reg, imm }): Stmt => {
      if (useReg) return { k: 'alu', op, wide, dst, src: { reg } };
      const bits = wide ? 64 : 32;
      if (op === 'lsh' || op === 'rsh' || op === 'arsh') imm = ((imm % bits) + bits) % bits;
      if ((op === 'div' || op === 'mod' || op === 'sdiv' || op === 'smod') && imm === 0) imm = 7;
      return { k: 'alu', op, wide, dst, src: { imm } };
    });
}

/** fast-check arbitrary of random program specs. */
export function arbProgram(opts: GenOptions = {}): fc.Arbitrary<ProgSpec> {
  const maxArgs = opts.kernelSafe ? 0 : 5;
  const { stmt } = fc.letrec<{ stmt: Stmt; block: Stmt[] }>((tie) => ({
    stmt: fc.oneof(
      { maxDepth: opts.maxDepth ?? 3, depthIdentifier: 'prog' },
      aluStmt(),
      aluStmt(),
      fc.record({ k: fc.constant('mov' as const), wide: fc.boolean(), dst: idx, src: idx }),
      fc.record({ k: fc.constant('neg' as const), dst: idx }),
      fc.record({
        k: fc.constant('const64' as const),
        dst: idx,
        value: fc.bigInt({ min: -(1n << 63n), max: (1n << 64n) - 1n }),
      }),
      fc.record({ k: fc.constant('ctx' as const), dst: idx, off: fc.nat(7) }),
      fc.record({ k: fc.constant('store' as const), slot: fc.nat(7), src: idx }),
      fc.record({ k: fc.constant('load' as const), slot: fc.nat(7), dst: idx }),
      fc.record({ k: fc.constant('atomic' as const), slot: fc.nat(7), src: idx }),
      fc.record({ k: fc.constant('call' as const), args: fc.array(idx, { maxLength: maxArgs }), dst: idx }),
      fc.record({
        k: fc.constant('if' as const),
        op: fc.constantFrom(...JMP_NAMES),
        wide: fc.boolean(),
        a: idx,
        b: fc.oneof(fc.record({ reg: idx }), fc.record({ imm: smallImm })),
        yes: tie('block') as fc.Arbitrary<Stmt[]>,
        no: tie('block') as fc.Arbitrary<Stmt[]>,
      }),
      fc.record({
        k: fc.constant('loop' as const),
        n: fc.integer({ min: 1, max: 3 }),
        body: tie('block') as fc.Arbitrary<Stmt[]>,
      }),
    ),
    block: fc.array(tie('stmt'), { maxLength: 6, depthIdentifier: 'prog' }),
  }));
  return fc.record({
    nvars: fc.integer({ min: opts.minVars ?? 1, max: opts.maxVars ?? 24 }),
    nslots: fc.integer({ min: 1, max: 8 }),
    body: fc.array(stmt, { minLength: 1, maxLength: 25 }),
  });
}

/** Helper id used for a fake call with `n` arguments: the first helper in the table taking exactly `n`. */
export function helperWithArgs(n: number): number {
  if (n === 0) return 14; // get_current_pid_tgid
  return HELPERS.find((h) => h !== undefined && h.args === n && !h.variadic)!.id;
}

/** Builds the IR of a spec (as the code generator would: calls through r1-r5/r0, ctx copied out of r1). */
export function buildIr(spec: ProgSpec, name = 'rand'): IrFunction {
  const fn = new IrFunction(name);
  const ctx = fn.vreg();
  fn.emit(I.mov64(ctx, R1));
  const slots: number[] = [];
  for (let s = 0; s < spec.nslots; s++) {
    const off = fn.allocStack(8);
    slots.push(off);
    fn.emit(I.st(8, FP, off, s));
  }
  const vars: number[] = [];
  for (let i = 0; i < spec.nvars; i++) {
    const v = fn.vreg();
    vars.push(v);
    if (i % 3 === 0) fn.emit(I.ldx(8, v, ctx, 8 * (i % 8)));
    else if (i % 3 === 1) fn.emit(I.mov64Imm(v, i * 7 - 30));
    else fn.emit(I.ldImm64(v, BigInt(i) * 0x0123456789abcdn));
  }
  const V = (n: number) => vars[n % vars.length]!;
  const S = (n: number) => slots[n % slots.length]!;
  const block = (stmts: Stmt[]) => {
    for (const s of stmts) stmt(s);
  };
  const stmt = (s: Stmt) => {
    switch (s.k) {
      case 'alu':
        if ('reg' in s.src)
          fn.emit(s.wide ? I.alu64(s.op, V(s.dst), V(s.src.reg)) : I.alu32(s.op, V(s.dst), V(s.src.reg)));
        else fn.emit(s.wide ? I.alu64Imm(s.op, V(s.dst), s.src.imm) : I.alu32Imm(s.op, V(s.dst), s.src.imm));
        break;
      case 'mov':
        fn.emit(s.wide ? I.mov64(V(s.dst), V(s.src)) : I.mov32(V(s.dst), V(s.src)));
        break;
      case 'neg':
        fn.emit(I.neg64(V(s.dst)));
        break;
      case 'const64':
        fn.emit(I.ldImm64(V(s.dst), s.value));
        break;
      case 'ctx':
        fn.emit(I.ldx(8, V(s.dst), ctx, 8 * s.off));
        break;
      case 'store':
        fn.emit(I.stx(8, FP, V(s.src), S(s.slot)));
        break;
      case 'load':
        fn.emit(I.ldx(8, V(s.dst), FP, S(s.slot)));
        break;
      case 'atomic':
        fn.emit(I.atomicAdd(8, FP, V(s.src), S(s.slot)));
        break;
      case 'call':
        for (const [k, a] of s.args.entries()) fn.emit(I.mov64(R1 + k, V(a)));
        fn.emit(I.call(helperWithArgs(s.args.length), s.args.length));
        fn.emit(I.mov64(V(s.dst), R0));
        break;
      case 'if': {
        const els = fn.newLabel('else');
        const end = fn.newLabel('end');
        // Jump to the else branch when the condition holds (any op is fine for testing).
        if ('reg' in s.b)
          fn.emit(s.wide ? I.jmp(s.op, V(s.a), V(s.b.reg), els) : I.jmp32(s.op, V(s.a), V(s.b.reg), els));
        else fn.emit(s.wide ? I.jmpImm(s.op, V(s.a), s.b.imm, els) : I.jmp32Imm(s.op, V(s.a), s.b.imm, els));
        block(s.yes);
        fn.emit(I.ja(end));
        fn.mark(els);
        block(s.no);
        fn.mark(end);
        break;
      }
      case 'loop': {
        const c = fn.vreg();
        const top = fn.newLabel('loop');
        fn.emit(I.mov64Imm(c, s.n));
        fn.mark(top);
        block(s.body);
        fn.emit(I.alu64Imm('sub', c, 1));
        fn.emit(I.jmpImm('jne', c, 0, top));
        break;
      }
    }
  };
  block(spec.body);
  const acc = fn.vreg();
  fn.emit(I.mov64(acc, vars[0]!));
  for (let i = 1; i < vars.length; i++) {
    fn.emit(I.alu64Imm('mul', acc, 31));
    fn.emit(I.alu64(i % 2 ? 'xor' : 'add', acc, vars[i]!));
  }
  for (const off of slots) {
    const t = fn.vreg();
    fn.emit(I.ldx(8, t, FP, off));
    fn.emit(I.alu64('add', acc, t));
  }
  const t = fn.vreg();
  fn.emit(I.mov64(t, acc));
  fn.emit(I.alu64Imm('rsh', t, 32));
  fn.emit(I.alu64('xor', acc, t));
  fn.emit(I.mov64(R0, acc));
  fn.emit(I.exit());
  return fn;
}

/** Deep copy of an IrFunction's items into a new function with the same counters (allocation mutates in place). */
export function cloneFn(fn: IrFunction): IrFunction {
  const c = new IrFunction(fn.name);
  const { items: _items, ...counters } = fn as unknown as Record<string, unknown>;
  Object.assign(c, structuredClone(counters));
  c.items.push(...fn.items.map((i) => ({ ...i })));
  return c;
}
