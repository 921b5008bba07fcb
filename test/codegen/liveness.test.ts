import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as I from '../../src/bpf/insn.js';
import { BPF_CMPXCHG, BPF_FETCH, BPF_XCHG, BPF_XOR } from '../../src/bpf/opcodes.js';
import { IrFunction } from '../../src/codegen/ir.js';
import { buildBlocks, computeLiveness, defUse } from '../../src/codegen/liveness.js';

const V = 16;

describe('defUse', () => {
  const cases: [string, ReturnType<typeof I.mov64>, number[], number[]][] = [
    ['mov64 X', I.mov64(V, V + 1), [V], [V + 1]],
    ['mov64 K', I.mov64Imm(V, 3), [V], []],
    ['mov32 X', I.mov32(V, V + 1), [V], [V + 1]],
    ['alu64 X', I.alu64('add', V, V + 1), [V], [V, V + 1]],
    ['alu32 K', I.alu32Imm('lsh', V, 3), [V], [V]],
    ['neg', I.neg64(V), [V], [V]],
    ['endian', I.endian(V, 16, 'be'), [V], [V]],
    ['ldx', I.ldx(4, V, V + 1, 8), [V], [V + 1]],
    ['ldx from fp', I.ldx(8, V, 10, -8), [V], []],
    ['st', I.st(8, V, 0, 1), [], [V]],
    ['stx', I.stx(8, V, V + 1, 0), [], [V, V + 1]],
    ['stx to fp', I.stx(8, 10, V + 1, -8), [], [V + 1]],
    ['atomic add', I.atomicAdd(8, V, V + 1, 0), [], [V, V + 1]],
    ['atomic fetch xor', I.atomic(8, BPF_XOR | BPF_FETCH, V, V + 1, 0), [V + 1], [V, V + 1]],
    ['atomic xchg', I.atomic(4, BPF_XCHG, V, V + 1, 0), [V + 1], [V, V + 1]],
    ['atomic cmpxchg', I.atomic(8, BPF_CMPXCHG, V, V + 1, 0), [0], [V, V + 1, 0]],
    ['ld_imm64', I.ldImm64(V, 1n), [V], []],
    ['ld map fd', I.ldMapFd(1, 'm'), [1], []],
    ['jmp X', I.jmp('jeq', V, V + 1, 'L'), [], [V, V + 1]],
    ['jmp32 K', I.jmp32Imm('jne', V, 1, 'L'), [], [V]],
    ['ja', I.ja('L'), [], []],
    ['call 2 args', I.call('map_lookup_elem'), [0, 1, 2, 3, 4, 5], [1, 2]],
    ['call 0 args', I.call('ktime_get_ns'), [0, 1, 2, 3, 4, 5], []],
    ['call explicit args', I.call('trace_printk', 4), [0, 1, 2, 3, 4, 5], [1, 2, 3, 4]],
    ['exit', I.exit(), [], [0]],
  ];
  for (const [name, insn, defs, uses] of cases) {
    it(name, () => assert.deepEqual(defUse(insn), { defs, uses }));
  }
  it('counts call arguments from the helper table when callArgs is missing', () => {
    assert.deepEqual(defUse({ code: 0x85, dst: 0, src: 0, off: 0, imm: 2 }).uses, [1, 2, 3, 4]);
  });
});

function diamond(): IrFunction {
  const fn = new IrFunction('d');
  const a = fn.vreg(); // 16
  const b = fn.vreg(); // 17
  fn.emit(I.mov64(a, 1)); // 0
  fn.emit(I.jmpImm('jeq', a, 0, 'else')); // 1
  fn.emit(I.mov64Imm(b, 1)); // 2
  fn.emit(I.ja('end')); // 3
  fn.mark('else'); // 4
  fn.emit(I.mov64Imm(b, 2)); // 5
  fn.mark('end'); // 6
  fn.emit(I.alu64('add', b, a)); // 7
  fn.emit(I.mov64(0, b)); // 8
  fn.emit(I.exit()); // 9
  return fn;
}

describe('buildBlocks', () => {
  it('splits a diamond into four blocks with the right edges', () => {
    const blocks = buildBlocks(diamond().items);
    assert.deepEqual(
      blocks.map((b) => [b.start, b.end, b.succs, b.preds]),
      [
        [0, 2, [2, 1], []],
        [2, 4, [3], [0]],
        [4, 6, [3], [0]],
        [6, 10, [], [1, 2]],
      ],
    );
  });
  it('rejects jumps to unknown labels and duplicate labels', () => {
    assert.throws(() => buildBlocks([I.ja('nowhere'), I.exit()]), /undefined label nowhere/);
    assert.throws(() => buildBlocks([{ label: 'a' }, { label: 'a' }, I.exit()]), /defined twice/);
  });
});

describe('computeLiveness', () => {
  it('diamond: a is live through both arms, b only after its definitions', () => {
    const lv = computeLiveness(diamond().items);
    assert.deepEqual([...lv.liveIn[0]!].sort(), [1]);
    assert.deepEqual([...lv.liveIn[1]!], [16]);
    assert.deepEqual([...lv.liveIn[3]!].sort(), [16, 17]);
    assert.deepEqual([...lv.insnLiveOut[0]!], [16]);
    assert.deepEqual([...lv.insnLiveOut[2]!].sort(), [16, 17]);
    assert.deepEqual([...lv.insnLiveOut[8]!], [0]);
    assert.equal(lv.insnLiveOut[4], undefined);
  });
  it('loop: a value used after the loop and one carried around the back edge stay live in the body', () => {
    const fn = new IrFunction('l');
    const acc = fn.vreg(); // 16
    const n = fn.vreg(); // 17
    const k = fn.vreg(); // 18: defined before the loop, used only after it
    fn.emit(I.mov64Imm(acc, 0));
    fn.emit(I.mov64Imm(n, 5));
    fn.emit(I.mov64Imm(k, 9));
    fn.mark('top'); // 3
    fn.emit(I.alu64('add', acc, n)); // 4
    fn.emit(I.alu64Imm('sub', n, 1)); // 5
    fn.emit(I.jmpImm('jne', n, 0, 'top')); // 6
    fn.emit(I.alu64('add', acc, k)); // 7
    fn.emit(I.mov64(0, acc));
    fn.emit(I.exit());
    const lv = computeLiveness(fn.items);
    // n is live after the jne because of the back edge; k is not killed by the loop.
    assert.deepEqual([...lv.insnLiveOut[6]!].sort(), [16, 17, 18]);
    assert.deepEqual([...lv.insnLiveOut[7]!], [16]);
    assert.deepEqual([...lv.insnLiveOut[5]!].sort(), [16, 17, 18]);
    const top = lv.blocks.find((b) => b.start === 3)!;
    assert.deepEqual(top.preds.sort(), [0, top.index]);
    assert.deepEqual([...lv.liveIn[top.index]!].sort(), [16, 17, 18]);
  });
  it('call: r1-r5 and r0 are defined by the call, arguments used by it', () => {
    const fn = new IrFunction('c');
    const v = fn.vreg();
    fn.emit(I.mov64Imm(1, 5)); // 0
    fn.emit(I.mov64Imm(v, 7)); // 1
    fn.emit(I.call('get_prandom_u32')); // 2: no args: r1 dead
    fn.emit(I.alu64('add', 0, v)); // 3
    fn.emit(I.exit());
    const lv = computeLiveness(fn.items);
    assert.deepEqual([...lv.insnLiveOut[0]!], []);
    assert.deepEqual([...lv.insnLiveOut[1]!], [16]);
    assert.deepEqual([...lv.insnLiveOut[2]!].sort(), [0, 16]);
  });
});
