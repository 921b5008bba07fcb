import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { disassembleIr } from '../../src/bpf/disasm.js';
import * as I from '../../src/bpf/insn.js';
import { IrFunction } from '../../src/codegen/ir.js';
import { peephole } from '../../src/codegen/peephole.js';
import { allocateRegisters } from '../../src/codegen/regalloc.js';
import { runIr } from './interp.js';
import { arbProgram, buildIr } from './randprog.js';

describe('peephole', () => {
  it('removes jumps to the next instruction and threads jumps to jumps', () => {
    const fn = new IrFunction('j');
    fn.emit(I.mov64Imm(0, 1));
    fn.emit(I.jmpImm('jeq', 0, 0, 'a'));
    fn.emit(I.ja('b'));
    fn.mark('a');
    fn.emit(I.ja('c'));
    fn.mark('b');
    fn.emit(I.alu64Imm('add', 0, 1));
    fn.emit(I.ja('x'));
    fn.mark('x');
    fn.mark('c');
    fn.emit(I.exit());
    const stats = peephole(fn);
    assert.deepEqual(disassembleIr(fn.items), ['  r0 = 1', '  if r0 == 0x0 goto c', '  r0 += 1', 'c:', '  exit']);
    assert.ok(stats.threaded >= 1 && stats.jumpsToNext >= 2, JSON.stringify(stats));
  });

  it('removes unreachable code, which the verifier would reject', () => {
    const fn = new IrFunction('u');
    fn.emit(I.mov64Imm(0, 0));
    fn.emit(I.exit());
    fn.emit(I.mov64Imm(0, 1)); // after exit, no label
    fn.mark('dead');
    fn.emit(I.mov64Imm(0, 2)); // label nobody jumps to
    fn.emit(I.ja('dead'));
    const stats = peephole(fn);
    assert.deepEqual(disassembleIr(fn.items), ['  r0 = 0', '  exit']);
    assert.equal(stats.unreachable, 3);
  });

  it('removes redundant copies in straight-line code only', () => {
    const fn = new IrFunction('m');
    fn.emit(I.mov64(6, 1));
    fn.emit(I.mov64(1, 6)); // r1 already equals r6
    fn.emit(I.mov64Imm(2, 5)); // dead: overwritten next without being read
    fn.emit(I.ldx(8, 2, 1, 0));
    fn.emit(I.mov64Imm(3, 5)); // kept: read by the next instruction
    fn.emit(I.ldx(8, 3, 3, 0));
    fn.emit(I.mov64Imm(1, 9)); // kept: the call does not read r1 but is never used to prove deadness
    fn.emit(I.call('ktime_get_ns'));
    fn.emit(I.exit());
    peephole(fn);
    assert.deepEqual(disassembleIr(fn.items), [
      '  r6 = r1',
      '  r2 = *(u64 *)(r1 +0)',
      '  r3 = 5',
      '  r3 = *(u64 *)(r3 +0)',
      '  r1 = 9',
      '  call bpf_ktime_get_ns#5',
      '  exit',
    ]);
  });

  it('property: random programs compute the same after peephole, before and after allocation', () => {
    fc.assert(
      fc.property(arbProgram(), fc.nat(255), (spec, seed) => {
        const ctx = Buffer.alloc(64, seed);
        const fn = buildIr(spec);
        const want = runIr(fn.items, { ctx }).r0;
        peephole(fn);
        assert.equal(runIr(fn.items, { ctx }).r0, want);
        allocateRegisters(fn);
        peephole(fn);
        assert.equal(runIr(fn.items, { ctx }).r0, want);
      }),
      { numRuns: 200 },
    );
  });
});
