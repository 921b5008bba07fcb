import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as I from '../../src/bpf/insn.js';
import {
  BPF_B,
  BPF_CMPXCHG,
  BPF_DW,
  BPF_FETCH,
  BPF_H,
  BPF_OR,
  BPF_PSEUDO_MAP_FD,
  BPF_PSEUDO_MAP_VALUE,
  BPF_W,
  LD_IMM64,
} from '../../src/bpf/opcodes.js';

describe('sizes', () => {
  it('maps byte counts to size codes and back', () => {
    assert.deepEqual([1, 2, 4, 8].map(I.sizeCode), [BPF_B, BPF_H, BPF_W, BPF_DW]);
    assert.deepEqual([0x71, 0x69, 0x61, 0x79].map(I.sizeBytes), [1, 2, 4, 8]);
    assert.throws(() => I.sizeCode(3), RangeError);
  });
});

describe('constructors', () => {
  it('builds ld_imm64 with the full value and map references', () => {
    assert.deepEqual(I.ldImm64(3, -1n), {
      code: LD_IMM64,
      dst: 3,
      src: 0,
      off: 0,
      imm: -1,
      imm64: 0xffffffffffffffffn,
    });
    assert.deepEqual(I.ldMapFd(1, '@x'), {
      code: LD_IMM64,
      dst: 1,
      src: BPF_PSEUDO_MAP_FD,
      off: 0,
      imm: 0,
      imm64: 0n,
      mapRef: '@x',
    });
    assert.deepEqual(I.ldMapValue(2, 'fmt', 24), {
      code: LD_IMM64,
      dst: 2,
      src: BPF_PSEUDO_MAP_VALUE,
      off: 0,
      imm: 0,
      imm64: 24n << 32n,
      mapRef: 'fmt',
    });
    assert.throws(() => I.ldImm64(0, 1n << 64n), RangeError);
  });
  it('takes the helper argument count from the table unless given', () => {
    assert.equal(I.call('map_update_elem').callArgs, 4);
    assert.equal(I.call(14).callArgs, 0);
    assert.equal(I.call('trace_printk').callArgs, 2);
    assert.equal(I.call('trace_printk', 4).callArgs, 4);
    assert.equal(I.call(5000, 1).imm, 5000);
    assert.throws(() => I.call('no_such_helper'), RangeError);
    assert.throws(() => I.call(5000), RangeError);
    assert.throws(() => I.call('ktime_get_ns', 6), RangeError);
  });
  it('keeps jump targets symbolic', () => {
    assert.deepEqual(I.jmpImm('jne', 20, 5, 'L1'), { code: 0x55, dst: 20, src: 0, off: 0, imm: 5, target: 'L1' });
    assert.deepEqual(I.jmp32Imm('jsgt', 20, 0xffffffff, 'L2'), {
      code: 0x66,
      dst: 20,
      src: 0,
      off: 0,
      imm: -1,
      target: 'L2',
    });
    assert.deepEqual(I.ja('L3'), { code: 0x05, dst: 0, src: 0, off: 0, imm: 0, target: 'L3' });
  });
  it('accepts opcode constants as well as names', () => {
    assert.deepEqual(I.alu64(0x00, 1, 2), I.alu64('add', 1, 2));
    assert.deepEqual(I.jmp(0x10, 1, 2, 'x'), I.jmp('jeq', 1, 2, 'x'));
  });
  it('builds the atomic variants', () => {
    assert.equal(I.atomic(8, BPF_OR | BPF_FETCH, 1, 2, 0).imm, 0x41);
    assert.equal(I.atomic(4, BPF_CMPXCHG, 1, 2, 0).code, 0xc3);
    assert.throws(() => I.atomic(8, 0x30, 1, 2, 0), RangeError);
  });
  it('rejects immediates that would be sign-extended wrongly and bad offsets', () => {
    assert.throws(() => I.mov64Imm(0, 0x80000000), RangeError);
    assert.throws(() => I.alu64Imm('add', 0, 2 ** 32), RangeError);
    assert.throws(() => I.jmpImm('jeq', 0, 0xffffffff, 'L'), RangeError);
    assert.throws(() => I.ldx(8, 0, 10, 40000), RangeError);
    assert.throws(() => I.alu64('neg' as never, 0, 1), RangeError);
    assert.equal(I.mov32Imm(0, 0xffffffff).imm, -1);
  });
});

describe('encode/decode', () => {
  it('round-trips every field, including negative off and imm', () => {
    const insns = [
      { code: 0x61, dst: 9, src: 10, off: -32768, imm: 0 },
      { code: 0x07, dst: 1, src: 0, off: 32767, imm: -2147483648 },
      { code: 0x18, dst: 2, src: 1, off: 0, imm: 2147483647 },
      { code: 0x00, dst: 0, src: 0, off: 0, imm: -1 },
    ];
    const buf = I.encode(insns);
    assert.equal(buf.length, 32);
    assert.equal(buf.toString('hex', 0, 8), '61a9008000000000');
    assert.deepEqual(I.decode(buf), insns);
  });
  it('writes imm given as u32 as its s32 pattern', () => {
    assert.equal(
      I.encode([{ code: 0xb4, dst: 1, src: 0, off: 0, imm: 0xfffffffe }]).toString('hex'),
      'b4010000feffffff',
    );
  });
  it('rejects virtual registers and out-of-range fields', () => {
    assert.throws(() => I.encode([{ code: 0xbf, dst: 16, src: 0, off: 0, imm: 0 }]), /virtual registers/);
    assert.throws(() => I.encode([{ code: 0x05, dst: 0, src: 0, off: 40000, imm: 0 }]), /not s16/);
    assert.throws(() => I.encode([{ code: 0xb7, dst: 0, src: 0, off: 0, imm: 2 ** 32 }]), /32 bits/);
    assert.throws(() => I.decode(new Uint8Array(12)), /multiple of 8/);
  });
  it('combines the two halves of ld_imm64', () => {
    const [lo, hi] = I.decodeHex('18060000efcdab890000000067452301');
    assert.equal(I.imm64Of(lo!, hi), 0x123456789abcdefn);
  });
  it('classifies instructions', () => {
    assert.equal(I.isJump(I.ja('x')), true);
    assert.equal(I.isJump(I.call(1)), false);
    assert.equal(I.isJump(I.exit()), false);
    assert.equal(I.isUncondJump({ code: 0x06, dst: 0, src: 0, off: 0, imm: 5 }), true);
    assert.equal(I.slotCount(I.ldImm64(0, 5n)), 2);
    assert.equal(I.slotCount(I.exit()), 1);
  });
});
