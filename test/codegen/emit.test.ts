import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { disassemble } from '../../src/bpf/disasm.js';
import * as I from '../../src/bpf/insn.js';
import { emit, emitForDisplay } from '../../src/codegen/emit.js';
import { IrFunction } from '../../src/codegen/ir.js';
import { allocateRegisters } from '../../src/codegen/regalloc.js';
import { BpfscopeError } from '../../src/errors.js';
import type { Span } from '../../src/lang/ast.js';
import { runInsns, runIr } from './interp.js';
import { arbProgram, buildIr } from './randprog.js';

const span = (line: number): Span => ({ line, col: 1, offset: line * 10, end: line * 10 + 5 });

describe('emit', () => {
  it('resolves labels counting ld_imm64 as two slots, forwards and backwards', () => {
    const fn = new IrFunction('p');
    fn.emit(I.mov64Imm(0, 0)); // 0
    fn.mark('top');
    fn.emit(I.ldImm64(2, 0x1_0000_0002n)); // 1-2
    fn.emit(I.jmpImm('jgt', 0, 3, 'out')); // 3 -> 7: off 3
    fn.emit(I.alu64Imm('add', 0, 1)); // 4
    fn.emit(I.ldMapFd(1, 'm')); // 5-6
    fn.emit(I.ja('top')); // 7 -> 1: off -7
    fn.mark('out');
    fn.emit(I.exit()); // 8
    const out = emit(fn, (n) => (n === 'm' ? 42 : -1));
    assert.deepEqual(disassemble(out.insns, { pc: true }), [
      '0: r0 = 0',
      '1: r2 = 0x100000002',
      '3: if r0 > 0x3 goto pc+4',
      '4: r0 += 1',
      '5: r1 = map[fd:42]',
      '7: goto pc-7',
      '8: exit',
    ]);
    assert.equal(out.insns.length, 9);
    assert.equal(out.bytes.length, 72);
    assert.deepEqual(out.insns[1], { code: 0x18, dst: 2, src: 0, off: 0, imm: 2 });
    assert.deepEqual(out.insns[2], { code: 0, dst: 0, src: 0, off: 0, imm: 1 });
    assert.equal(out.bytes.toString('hex', 40, 56), '181100002a0000000000000000000000');
    assert.deepEqual(I.decode(out.bytes), out.insns);
  });

  it('puts the map fd in the first slot and the value offset in the second for BPF_PSEUDO_MAP_VALUE', () => {
    const fn = new IrFunction('v');
    fn.emit(I.ldMapValue(3, 'fmt', 24));
    fn.emit(I.ldImm64(4, -2n));
    fn.emit(I.exit());
    const out = emit(fn, () => 7);
    assert.deepEqual(out.insns.slice(0, 4), [
      { code: 0x18, dst: 3, src: 2, off: 0, imm: 7 },
      { code: 0, dst: 0, src: 0, off: 0, imm: 24 },
      { code: 0x18, dst: 4, src: 0, off: 0, imm: -2 },
      { code: 0, dst: 0, src: 0, off: 0, imm: -1 },
    ]);
    assert.deepEqual(disassemble(emitForDisplay(fn).insns), [
      'r3 = map[fd:0][0]+24',
      'r4 = 0xfffffffffffffffe',
      'exit',
    ]);
  });

  it('keeps the source span of every slot (both slots of ld_imm64)', () => {
    const fn = new IrFunction('s');
    fn.pos = span(1);
    fn.emit(I.mov64Imm(0, 0));
    fn.pos = span(2);
    fn.emit(I.ldImm64(1, 5n));
    fn.pos = undefined;
    fn.emit(I.exit());
    assert.deepEqual(emit(fn, () => 0).positions, [span(1), span(2), span(2), undefined]);
  });

  it('strips IR-only fields from the emitted instructions', () => {
    const fn = new IrFunction('c');
    fn.emit(I.call('ktime_get_ns'));
    fn.emit(I.exit());
    assert.deepEqual(emit(fn, () => 0).insns[0], { code: 0x85, dst: 0, src: 0, off: 0, imm: 5 });
  });

  it('turns a too-long ja into gotol and rejects a too-long conditional jump', () => {
    const far = (cond: boolean) => {
      const fn = new IrFunction('far');
      fn.emit(I.mov64Imm(0, 0));
      fn.emit(cond ? I.jmpImm('jeq', 0, 0, 'end') : I.ja('end'));
      for (let i = 0; i < 40000; i++) fn.emit(I.alu64Imm('add', 0, 1));
      fn.mark('end');
      fn.emit(I.exit());
      return fn;
    };
    const out = emit(far(false), () => 0);
    assert.deepEqual(out.insns[1], { code: 0x06, dst: 0, src: 0, off: 0, imm: 40000 });
    assert.equal(disassemble(out.insns.slice(1, 2))[0], 'gotol pc+40000');
    assert.throws(
      () => emit(far(true), () => 0),
      (e: unknown) => e instanceof BpfscopeError && /too large/.test(e.message),
    );
  });

  it('refuses unallocated virtual registers and unknown labels', () => {
    const fn = new IrFunction('v');
    fn.emit(I.mov64Imm(fn.vreg(), 1));
    assert.throws(() => emit(fn, () => 0), /virtual register left/);
    const g = new IrFunction('l');
    g.emit(I.ja('nowhere'));
    g.emit(I.exit());
    assert.throws(() => emit(g, () => 0), /undefined label nowhere/);
  });

  it('property: emitted instructions compute what the IR computes', () => {
    fc.assert(
      fc.property(arbProgram(), fc.nat(255), (spec, seed) => {
        const fn = buildIr(spec);
        const ctx = Buffer.alloc(64, seed);
        const want = runIr(fn.items, { ctx }).r0;
        allocateRegisters(fn);
        const out = emit(fn, () => 5);
        assert.equal(runInsns(out.insns, { ctx }).r0, want);
        assert.equal(out.positions.length, out.insns.length);
      }),
      { numRuns: 150 },
    );
  });
});
