import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { disassembleIr, formatIrInsn } from '../../src/bpf/disasm.js';
import * as I from '../../src/bpf/insn.js';
import { BPF_DW, BPF_LDX, BPF_MEM, BPF_STX, FP, LD_IMM64 } from '../../src/bpf/opcodes.js';
import { IrFunction, type IrInsn, isLabel, VREG_BASE } from '../../src/codegen/ir.js';
import { defUse } from '../../src/codegen/liveness.js';
import { allocateRegisters, type RegallocOptions, type RegallocResult } from '../../src/codegen/regalloc.js';
import { BpfscopeError } from '../../src/errors.js';
import { runIr } from './interp.js';
import { arbProgram, buildIr, cloneFn } from './randprog.js';

function insnsOf(fn: IrFunction): IrInsn[] {
  return fn.items.filter((i): i is IrInsn => !isLabel(i));
}

/** No virtual register left, r10 never written, no `mov rX, rX`. */
function assertPhysical(fn: IrFunction): void {
  for (const i of insnsOf(fn)) {
    assert.ok(i.dst < VREG_BASE && i.src < VREG_BASE, `virtual register left in ${formatIrInsn(i)}`);
    assert.ok(!defUse(i).defs.includes(FP), 'r10 written');
    assert.ok(!(i.code === 0xbf && i.dst === i.src && i.off === 0), 'mov rX, rX left');
  }
}

function ctxBytes(seed: number): Buffer {
  const b = Buffer.alloc(64);
  for (let i = 0; i < 64; i++) b[i] = (seed * 131 + i * 37 + 11) & 0xff;
  return b;
}

/** Allocates a copy and checks that it computes what the IR computes, for a few contexts. */
function checkSame(fn: IrFunction, seeds = [1, 2, 3], opts: RegallocOptions = {}): RegallocResult {
  const orig = cloneFn(fn);
  const res = allocateRegisters(fn, opts);
  assertPhysical(fn);
  for (const s of seeds) {
    assert.equal(runIr(fn.items, { ctx: ctxBytes(s) }).r0, runIr(orig.items, { ctx: ctxBytes(s) }).r0, `ctx seed ${s}`);
  }
  return res;
}

describe('allocateRegisters', () => {
  it('straight-line code: copies coalesced into the calling-convention registers', () => {
    const fn = new IrFunction('s');
    const ctx = fn.vreg();
    const a = fn.vreg();
    const b = fn.vreg();
    fn.emit(I.mov64(ctx, 1));
    fn.emit(I.ldx(8, a, ctx, 0));
    fn.emit(I.mov64(b, a));
    fn.emit(I.alu64Imm('mul', b, 3));
    fn.emit(I.alu64('add', b, a));
    fn.emit(I.mov64(0, b));
    fn.emit(I.exit());
    const res = checkSame(fn);
    assert.equal(res.rounds, 1);
    assert.deepEqual(res.spilled, []);
    assert.deepEqual(disassembleIr(fn.items), [
      '  r1 = *(u64 *)(r1 +0)',
      '  r0 = r1',
      '  r0 *= 3',
      '  r0 += r1',
      '  exit',
    ]);
  });

  it('diamond: a value defined in both arms gets one register', () => {
    const fn = new IrFunction('d');
    const ctx = fn.vreg();
    const x = fn.vreg();
    const y = fn.vreg();
    fn.emit(I.mov64(ctx, 1));
    fn.emit(I.ldx(8, x, ctx, 0));
    fn.emit(I.jmpImm('jgt', x, 100, 'else'));
    fn.emit(I.mov64Imm(y, 1));
    fn.emit(I.ja('end'));
    fn.mark('else');
    fn.emit(I.ldx(8, y, ctx, 8));
    fn.mark('end');
    fn.emit(I.alu64('add', y, x));
    fn.emit(I.mov64(0, y));
    fn.emit(I.exit());
    checkSame(fn, [1, 2, 3, 4, 5, 6, 7, 8]);
    const defsOfY = insnsOf(fn).filter((i) => i.code === 0xb7 || (i.code === 0x79 && i.off === 8));
    assert.equal(defsOfY.length, 2);
    assert.equal(defsOfY[0]!.dst, defsOfY[1]!.dst);
  });

  it('loop: values carried around a backward jump keep their registers', () => {
    const fn = new IrFunction('l');
    const ctx = fn.vreg();
    const acc = fn.vreg();
    const n = fn.vreg();
    const k = fn.vreg();
    fn.emit(I.mov64(ctx, 1));
    fn.emit(I.ldx(8, acc, ctx, 0));
    fn.emit(I.mov64Imm(n, 10));
    fn.emit(I.ldx(8, k, ctx, 8));
    fn.mark('top');
    const t = fn.vreg();
    fn.emit(I.mov64(t, acc));
    fn.emit(I.alu64Imm('mul', t, 7));
    fn.emit(I.alu64('xor', t, n));
    fn.emit(I.mov64(acc, t));
    fn.emit(I.alu64Imm('sub', n, 1));
    fn.emit(I.jmpImm('jne', n, 0, 'top'));
    fn.emit(I.alu64('add', acc, k));
    fn.emit(I.mov64(0, acc));
    fn.emit(I.exit());
    const res = checkSame(fn);
    assert.equal(res.spilled.length, 0);
    const regs = [res.assignment.get(acc), res.assignment.get(n), res.assignment.get(k)];
    assert.equal(new Set(regs).size, 3, `acc, n and k are live together: ${regs}`);
  });

  it('values live across a call go to r6-r9; arguments and results use r1-r5/r0', () => {
    const fn = new IrFunction('c');
    const ctx = fn.vreg();
    const a = fn.vreg();
    const b = fn.vreg();
    const tmp = fn.vreg();
    const r = fn.vreg();
    fn.emit(I.mov64(ctx, 1));
    fn.emit(I.ldx(8, a, ctx, 0));
    fn.emit(I.ldx(8, b, ctx, 8));
    fn.emit(I.ldx(8, tmp, ctx, 16)); // dies at the call
    fn.emit(I.mov64(1, tmp));
    fn.emit(I.mov64(2, a));
    fn.emit(I.call('map_lookup_elem'));
    fn.emit(I.mov64(r, 0));
    fn.emit(I.alu64('add', r, a));
    fn.emit(I.alu64('add', r, b));
    fn.emit(I.ldx(8, tmp, ctx, 24));
    fn.emit(I.alu64('add', r, tmp));
    fn.emit(I.mov64(0, r));
    fn.emit(I.exit());
    const res = checkSame(fn);
    for (const v of [ctx, a, b]) {
      const p = res.assignment.get(v)!;
      assert.ok(p >= 6 && p <= 9, `v${v - VREG_BASE} live across the call got r${p}`);
    }
    assert.equal(res.spilled.length, 0);
  });

  it('spills with 24 simultaneously live values, using aligned 8-byte slots below the frame', () => {
    const fn = new IrFunction('many');
    const ctx = fn.vreg();
    fn.emit(I.mov64(ctx, 1));
    const own = fn.allocStack(16); // the code generator's own buffer
    fn.emit(I.st(8, FP, own, 0));
    fn.emit(I.st(8, FP, own + 8, 0));
    const vals: number[] = [];
    for (let i = 0; i < 24; i++) {
      const v = fn.vreg();
      vals.push(v);
      fn.emit(I.ldx(8, v, ctx, 8 * (i % 8)));
      fn.emit(I.alu64Imm('add', v, i));
    }
    fn.emit(I.call('get_current_pid_tgid'));
    const acc = fn.vreg();
    fn.emit(I.mov64(acc, 0));
    for (const v of vals) {
      fn.emit(I.alu64Imm('mul', acc, 3));
      fn.emit(I.alu64('add', acc, v));
    }
    fn.emit(I.mov64(0, acc));
    fn.emit(I.exit());
    const res = checkSame(fn);
    assert.ok(res.spilled.length >= 20, `spilled ${res.spilled.length}`); // only r6-r9 survive the call
    assert.equal(res.spillBytes, res.spilled.length * 8);
    assert.equal(fn.frameSize, 16 + res.spillBytes);
    const spillAccess = insnsOf(fn).filter(
      (i) =>
        (i.code === (BPF_STX | BPF_DW | BPF_MEM) || i.code === (BPF_LDX | BPF_DW | BPF_MEM)) &&
        (i.src === FP || i.dst === FP) &&
        i.off < -16,
    );
    assert.ok(spillAccess.length >= 2 * res.spilled.length);
    for (const i of spillAccess) {
      assert.ok(i.off % 8 === 0 && i.off >= -fn.frameSize, `slot offset ${i.off}`);
    }
  });

  it('spills pointers as 8 bytes: the ctx pointer survives being spilled across a call', () => {
    const fn = new IrFunction('ptr');
    const ctx = fn.vreg();
    fn.emit(I.mov64(ctx, 1));
    const vals: number[] = [];
    for (let i = 0; i < 8; i++) {
      const v = fn.vreg();
      vals.push(v);
      fn.emit(I.ldx(8, v, ctx, 8 * i));
    }
    fn.emit(I.call('get_current_pid_tgid'));
    for (const v of vals) fn.emit(I.alu64('add', v, 0));
    const r = fn.vreg();
    fn.emit(I.ldx(4, r, ctx, 4)); // the interpreter throws if ctx was truncated
    for (const v of vals) fn.emit(I.alu64('add', r, v));
    fn.emit(I.mov64(0, r));
    fn.emit(I.exit());
    // Without callee-saved registers everything live across the call is spilled, ctx included.
    const res = checkSame(fn, [1, 2], { registers: [1, 2, 3, 4, 5, 0] });
    assert.ok(res.spilled.includes(ctx), `spilled ${res.spilled}`);
    const stackAccess = insnsOf(fn).filter(
      (i) => ((i.code & 7) === BPF_STX && i.dst === FP) || ((i.code & 7) === BPF_LDX && i.src === FP),
    );
    assert.ok(stackAccess.length > 0);
    for (const i of stackAccess) {
      assert.equal(i.code & 0x18, BPF_DW, 'spill access is 8 bytes');
      assert.ok(i.off % 8 === 0, 'spill slot is 8-aligned');
    }
  });

  it('rematerialises constants instead of storing them', () => {
    const fn = new IrFunction('k');
    const consts: number[] = [];
    for (let i = 0; i < 12; i++) {
      const v = fn.vreg();
      consts.push(v);
      fn.emit(i % 2 ? I.mov64Imm(v, i * 1000) : I.ldImm64(v, BigInt(i) << 40n));
    }
    fn.emit(I.call('get_current_pid_tgid'));
    const acc = fn.vreg();
    fn.emit(I.mov64(acc, 0));
    for (const v of consts) fn.emit(I.alu64('xor', acc, v));
    fn.emit(I.mov64(0, acc));
    fn.emit(I.exit());
    const res = checkSame(fn);
    assert.ok(res.rematerialized.length >= 8, `rematerialized ${res.rematerialized.length}`);
    assert.deepEqual(res.spilled, []);
    assert.equal(fn.frameSize, 0);
    const call = insnsOf(fn).findIndex((i) => i.code === 0x85);
    assert.ok(
      insnsOf(fn)
        .slice(call)
        .filter((i) => i.code === LD_IMM64).length >= 4,
    );
  });

  it('throws a BpfscopeError when spill slots would exceed the 512-byte stack', () => {
    const fn = new IrFunction('big');
    fn.allocStack(480);
    const ctx = fn.vreg();
    fn.emit(I.mov64(ctx, 1));
    const vals: number[] = [];
    for (let i = 0; i < 12; i++) {
      const v = fn.vreg();
      vals.push(v);
      fn.emit(I.ldx(8, v, ctx, 8 * (i % 8)));
    }
    fn.emit(I.call('get_current_pid_tgid'));
    for (const v of vals) fn.emit(I.alu64('add', 0, v));
    fn.emit(I.exit());
    assert.throws(
      () => allocateRegisters(fn),
      (e: unknown) => e instanceof BpfscopeError && /needs \d+ bytes of BPF stack .*limit 512/.test(e.message),
    );
  });

  it('shares a spill slot between values that are never live together', () => {
    const fn = new IrFunction('share');
    const ctx = fn.vreg();
    fn.emit(I.mov64(ctx, 1));
    for (let round = 0; round < 2; round++) {
      const vals: number[] = [];
      for (let i = 0; i < 8; i++) {
        const v = fn.vreg();
        vals.push(v);
        fn.emit(I.ldx(8, v, ctx, 8 * i));
      }
      fn.emit(I.call('get_current_pid_tgid'));
      for (const v of vals) fn.emit(I.alu64('add', 0, v));
      const out = fn.allocStack(8);
      fn.emit(I.stx(8, FP, 0, out));
    }
    fn.emit(I.ldx(8, 0, FP, -8));
    fn.emit(I.exit());
    const res = checkSame(fn);
    assert.ok(res.spilled.length >= 8, `spilled ${res.spilled.length}`);
    assert.ok(res.spillBytes < res.spilled.length * 8, `${res.spillBytes} bytes for ${res.spilled.length} spills`);
  });

  it('property: random programs compute the same after allocation', () => {
    fc.assert(
      fc.property(arbProgram(), fc.nat(1000), (spec, seed) => {
        const fn = buildIr(spec);
        const want = runIr(fn.items, { ctx: ctxBytes(seed) }).r0;
        allocateRegisters(fn);
        assertPhysical(fn);
        assert.equal(runIr(fn.items, { ctx: ctxBytes(seed) }).r0, want, disassembleIr(fn.items).join('\n'));
      }),
      { numRuns: 300 },
    );
  });

  it('property: same results when only 7 registers may be used (heavy spilling)', () => {
    fc.assert(
      fc.property(arbProgram({ minVars: 4 }), fc.nat(1000), (spec, seed) => {
        const fn = buildIr(spec);
        const want = runIr(fn.items, { ctx: ctxBytes(seed) }).r0;
        allocateRegisters(fn, { registers: [0, 1, 2, 3, 4, 5, 6] });
        assertPhysical(fn);
        for (const i of insnsOf(fn)) assert.ok(![7, 8, 9].includes(i.dst) && ![7, 8, 9].includes(i.src));
        assert.equal(runIr(fn.items, { ctx: ctxBytes(seed) }).r0, want);
      }),
      { numRuns: 200 },
    );
  });
});
