import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { disassemble, disassembleIr, formatInsn, irRegName } from '../../src/bpf/disasm.js';
import * as I from '../../src/bpf/insn.js';
import { decodeHex, encode } from '../../src/bpf/insn.js';
import { IrFunction, type IrInsn, VREG_BASE } from '../../src/codegen/ir.js';

// Instructions of programs loaded on the development kernel (Linux 6.18) with their text as printed by the kernel
// verifier log (log_level 2, `N: (code) text`): the encoding on the left is the slot(s) we loaded, the text on the
// right what the kernel printed for them. Map references are left out (the kernel prints a kernel address).
const VERIFIER_LOG: [hex: string, text: string][] = [
  ['b700000000000000', 'r0 = 0'],
  ['b7020000fbffffff', 'r2 = -5'],
  ['b4030000ffffffff', 'w3 = -1'],
  ['0702000007000000', 'r2 += 7'],
  ['a403000078563412', 'w3 ^= 305419896'],
  ['2f32000000000000', 'r2 *= r3'],
  ['cc23000000000000', 'w3 s>>= w2'],
  ['8702000000000000', 'r2 = -r2'],
  ['dc02000010000000', 'r2 = be16 r2'],
  ['d403000020000000', 'r3 = le32 r3'],
  ['3702010003000000', 'r2 s/= 3'],
  ['9702010003000000', 'r2 s%= 3'],
  ['c702000003000000', 'r2 s>>= 3'],
  ['6702000003000000', 'r2 <<= 3'],
  ['7b2af8ff00000000', '*(u64 *)(r10 -8) = r2'],
  ['620af0fffdffffff', '*(u32 *)(r10 -16) = -3'],
  ['620af4ff03000000', '*(u32 *)(r10 -12) = 3'],
  ['79a4f8ff00000000', 'r4 = *(u64 *)(r10 -8)'],
  ['71a5f0ff00000000', 'r5 = *(u8 *)(r10 -16)'],
  ['69a5f0ff00000000', 'r5 = *(u16 *)(r10 -16)'],
  ['db4af8ff00000000', 'lock *(u64 *)(r10 -8) += r4'],
  ['db4af8ff01000000', 'r4 = atomic64_fetch_add((u64 *)(r10 -8), r4)'],
  ['c34af0ff41000000', 'r4 = atomic_fetch_or((u32 *)(r10 -16), r4)'],
  ['db4af8ffe1000000', 'r4 = atomic64_xchg((u64 *)(r10 -8), r4)'],
  ['bf40000000000000', 'r0 = r4'],
  ['db4af8fff1000000', 'r0 = atomic64_cmpxchg((u64 *)(r10 -8), r0, r4)'],
  ['c34af0ff00000000', 'lock *(u32 *)(r10 -16) += r4'],
  ['18060000efcdab890000000067452301', 'r6 = 0x123456789abcdef'],
  ['18060000ffffffff00000000ffffffff', 'r6 = 0xffffffffffffffff'],
  ['bfa2000000000000', 'r2 = r10'],
  ['07020000f8ffffff', 'r2 += -8'],
  ['7a0af8ff00000000', '*(u64 *)(r10 -8) = 0'],
  ['8500000001000000', 'call bpf_map_lookup_elem#1'],
  ['1500030000000000', 'if r0 == 0x0 goto pc+3'],
  ['6d60000000000000', 'if r0 s> r6 goto pc+0'],
  ['56060000feffffff', 'if w6 != 0xfffffffe goto pc+0'],
  ['4e66000000000000', 'if w6 & w6 goto pc+0'],
  ['0500000000000000', 'goto pc+0'],
  ['bc60000000000000', 'w0 = w6'],
  ['9500000000000000', 'exit'],
  ['b7020000e8030000', 'r2 = 1000'],
  ['b703000007000000', 'r3 = 7'],
  ['bf24080000000000', 'r4 = (s8)r2'],
  ['bf24100000000000', 'r4 = (s16)r2'],
  ['bc24080000000000', 'w4 = (s8)w2'],
  ['d704000010000000', 'r4 = bswap16 r4'],
  ['d704000040000000', 'r4 = bswap64 r4'],
  ['8404000000000000', 'w4 = -w4'],
  ['3c32010000000000', 'w2 s/= w3'],
  ['9c32010000000000', 'w2 s%= w3'],
  ['3402000003000000', 'w2 /= 3'],
  ['9402000003000000', 'w2 %= 3'],
  ['7c32000000000000', 'w2 >>= w3'],
  ['1f32000000000000', 'r2 -= r3'],
  ['4f32000000000000', 'r2 |= r3'],
  ['5f32000000000000', 'r2 &= r3'],
  ['6f32000000000000', 'r2 <<= r3'],
  ['7f32000000000000', 'r2 >>= r3'],
  ['9f32000000000000', 'r2 %= r3'],
  ['af32000000000000', 'r2 ^= r3'],
  ['3f32000000000000', 'r2 /= r3'],
  ['cf32000000000000', 'r2 s>>= r3'],
  ['14020000ffffffff', 'w2 -= -1'],
  ['b405000000ffffff', 'w5 = -256'],
  ['6a0af0ff2c010000', '*(u16 *)(r10 -16) = 300'],
  ['720ae8ff03000000', '*(u8 *)(r10 -24) = 3'],
  ['91a5f8ff00000000', 'r5 = *(s8 *)(r10 -8)'],
  ['89a5f8ff00000000', 'r5 = *(s16 *)(r10 -8)'],
  ['81a5f8ff00000000', 'r5 = *(s32 *)(r10 -8)'],
  ['635afcff00000000', '*(u32 *)(r10 -4) = r5'],
  ['6b5afcff00000000', '*(u16 *)(r10 -4) = r5'],
  ['735afcff00000000', '*(u8 *)(r10 -4) = r5'],
  ['db5af8ff40000000', 'lock *(u64 *)(r10 -8) |= r5'],
  ['db5af8ff50000000', 'lock *(u64 *)(r10 -8) &= r5'],
  ['db5af8ffa0000000', 'lock *(u64 *)(r10 -8) ^= r5'],
  ['db5af8ff51000000', 'r5 = atomic64_fetch_and((u64 *)(r10 -8), r5)'],
  ['c35afcffa1000000', 'r5 = atomic_fetch_xor((u32 *)(r10 -4), r5)'],
  ['c35afcffe1000000', 'r5 = atomic_xchg((u32 *)(r10 -4), r5)'],
  ['c35afcfff1000000', 'r0 = atomic_cmpxchg((u32 *)(r10 -4), r0, r5)'],
  ['0600000000000000', 'gotol pc+0'],
  ['a5020000feffffff', 'if r2 < 0xfffffffe goto pc+0'],
  ['b502000005000000', 'if r2 <= 0x5 goto pc+0'],
  ['d502000005000000', 'if r2 s<= 0x5 goto pc+0'],
  ['c502000005000000', 'if r2 s< 0x5 goto pc+0'],
  ['3502000005000000', 'if r2 >= 0x5 goto pc+0'],
  ['7502000005000000', 'if r2 s>= 0x5 goto pc+0'],
  ['2d32000000000000', 'if r2 > r3 goto pc+0'],
  ['1e32010000000000', 'if w2 == w3 goto pc+1'],
];

// From `bpftool prog dump xlated id N opcodes` of a program loaded by bpftrace 0.17
// (`tracepoint:syscalls:sys_enter_getppid { @c[pid] = count(); @s = sum(nsecs * 3 + 7); if (pid > 100) {...} }`)
// and of a program with a BPF_PSEUDO_MAP_VALUE load; ld_imm64 map references hold the map id here (bpftool prints
// `map[id:N]`). Calls are left out: xlated calls hold a kernel address offset, not the helper id.
const BPFTOOL_XLATED: [hex: string, text: string][] = [
  ['bf16000000000000', 'r6 = r1'],
  ['7700000020000000', 'r0 >>= 32'],
  ['181100008b0000000000000000000000', 'r1 = map[id:139]'],
  ['07020000e8ffffff', 'r2 += -24'],
  ['0700000038000000', 'r0 += 56'],
  ['7900000000000000', 'r0 = *(u64 *)(r0 +0)'],
  ['b701000001000000', 'r1 = 1'],
  ['1500020000000000', 'if r0 == 0x0 goto pc+2'],
  ['7901000000000000', 'r1 = *(u64 *)(r0 +0)'],
  ['0701000001000000', 'r1 += 1'],
  ['7b1af0ff00000000', '*(u64 *)(r10 -16) = r1'],
  ['bfa3000000000000', 'r3 = r10'],
  ['07030000f0ffffff', 'r3 += -16'],
  ['b707000000000000', 'r7 = 0'],
  ['b704000000000000', 'r4 = 0'],
  ['7b7ae8ff00000000', '*(u64 *)(r10 -24) = r7'],
  ['181100008c0000000000000000000000', 'r1 = map[id:140]'],
  ['b707000007000000', 'r7 = 7'],
  ['7907000000000000', 'r7 = *(u64 *)(r0 +0)'],
  ['0707000007000000', 'r7 += 7'],
  ['2700000003000000', 'r0 *= 3'],
  ['7b7af0ff00000000', '*(u64 *)(r10 -16) = r7'],
  ['18010000000000000000000065000000', 'r1 = 0x6500000000'],
  ['2d010d0000000000', 'if r1 > r0 goto pc+13'],
  ['181200008d0000000000000000000000', 'r2 = map[id:141]'],
  ['bfa4000000000000', 'r4 = r10'],
  ['07040000f0ffffff', 'r4 += -16'],
  ['bf61000000000000', 'r1 = r6'],
  ['18030000ffffffff0000000000000000', 'r3 = 0xffffffff'],
  ['b705000010000000', 'r5 = 16'],
  ['b700000001000000', 'r0 = 1'],
  ['18270000e70000000000000008000000', 'r7 = map[id:231][0]+8'],
];

describe('disassemble: kernel-printed encodings', () => {
  for (const [hex, text] of VERIFIER_LOG) {
    it(`${hex} -> ${text}`, () => {
      const insns = decodeHex(hex);
      assert.equal(encode(insns).toString('hex'), hex, 'decode -> encode round trip');
      assert.deepEqual(disassemble(insns), [text]);
    });
  }
  for (const [hex, text] of BPFTOOL_XLATED) {
    it(`${hex} -> ${text} (bpftool)`, () => {
      const insns = decodeHex(hex);
      assert.equal(encode(insns).toString('hex'), hex);
      assert.deepEqual(disassemble(insns, { mapRef: (i) => `id:${i.imm}` }), [text]);
    });
  }
});

describe('disassemble: constructors produce the kernel encodings', () => {
  const cases: [IrInsn, string][] = [
    [I.mov64Imm(0, 0), 'b700000000000000'],
    [I.mov64Imm(2, -5), 'b7020000fbffffff'],
    [I.mov32Imm(3, -1), 'b4030000ffffffff'],
    [I.mov32Imm(5, 0xffffff00), 'b405000000ffffff'],
    [I.alu32Imm('xor', 3, 0x12345678), 'a403000078563412'],
    [I.alu64('mul', 2, 3), '2f32000000000000'],
    [I.alu32('arsh', 3, 2), 'cc23000000000000'],
    [I.neg64(2), '8702000000000000'],
    [I.endian(2, 16, 'be'), 'dc02000010000000'],
    [I.endian(3, 32, 'le'), 'd403000020000000'],
    [I.alu64Imm('sdiv', 2, 3), '3702010003000000'],
    [I.alu32('smod', 2, 3), '9c32010000000000'],
    [I.stx(8, 10, 2, -8), '7b2af8ff00000000'],
    [I.st(4, 10, -16, -3), '620af0fffdffffff'],
    [I.st(8, 10, -8, 0), '7a0af8ff00000000'],
    [I.ldx(8, 4, 10, -8), '79a4f8ff00000000'],
    [I.ldx(1, 5, 10, -16), '71a5f0ff00000000'],
    [I.atomicAdd(8, 10, 4, -8), 'db4af8ff00000000'],
    [I.atomicAdd(4, 10, 4, -16), 'c34af0ff00000000'],
    [I.mov64(2, 10), 'bfa2000000000000'],
    [I.mov32(0, 6), 'bc60000000000000'],
    [I.call('map_lookup_elem'), '8500000001000000'],
    [I.call('bpf_map_lookup_elem'), '8500000001000000'],
    [I.exit(), '9500000000000000'],
  ];
  for (const [insn, hex] of cases) {
    it(hex, () => assert.equal(encode([insn]).toString('hex'), hex));
  }
});

describe('disassemble', () => {
  it('numbers lines by slot and prints opcodes like the verifier log', () => {
    const insns = decodeHex('18060000efcdab890000000067452301' + 'b700000000000000' + '9500000000000000');
    assert.deepEqual(disassemble(insns, { pc: true, opcodes: true }), [
      '0: (18) r6 = 0x123456789abcdef',
      '2: (b7) r0 = 0',
      '3: (95) exit',
    ]);
  });
  it('prints map references with the fd by default', () => {
    const insns = decodeHex('1811000005000000' + '0000000000000000' + '1827000005000000' + '0000000010000000');
    assert.deepEqual(disassemble(insns), ['r1 = map[fd:5]', 'r7 = map[fd:5][0]+16']);
  });
  it('names unknown helpers and bpf-to-bpf calls', () => {
    assert.equal(formatInsn({ code: 0x85, dst: 0, src: 0, off: 0, imm: 9999 }), 'call unknown#9999');
    assert.equal(formatInsn({ code: 0x85, dst: 0, src: 1, off: 0, imm: -4 }), 'call pc-4');
    assert.equal(formatInsn({ code: 0x85, dst: 0, src: 0, off: 0, imm: 14 }), 'call bpf_get_current_pid_tgid#14');
  });
  it('reports garbage opcodes instead of throwing', () => {
    assert.equal(formatInsn({ code: 0xff, dst: 0, src: 0, off: 0, imm: 0 }), 'unknown opcode ff');
  });
});

describe('disassembleIr', () => {
  it('prints labels, virtual registers, label targets and map names', () => {
    const fn = new IrFunction('t');
    const v0 = fn.vreg();
    const v1 = fn.vreg();
    fn.pos = { line: 3, col: 7, offset: 0, end: 1 };
    fn.emit(I.mov64(v0, 1));
    fn.emit(I.ldMapFd(1, '@counts'));
    fn.emit(I.ldMapValue(v1, '.rodata', 8));
    fn.emit(I.ldImm64(v1, -2n));
    fn.emit(I.jmpImm('jeq', v0, 0, 'L0'));
    fn.emit(I.jmp32('jgt', v0, v1, 'L0'));
    fn.emit(I.alu32Imm('add', v1, 1));
    fn.emit(I.ja('L0'));
    fn.mark('L0');
    fn.emit(I.call('ktime_get_ns'));
    fn.emit(I.exit());
    assert.deepEqual(disassembleIr(fn.items), [
      '  v0 = r1',
      '  r1 = map[@counts]',
      '  v1 = map[.rodata][0]+8',
      '  v1 = 0xfffffffffffffffe',
      '  if v0 == 0x0 goto L0',
      '  if wv0 > wv1 goto L0',
      '  wv1 += 1',
      '  goto L0',
      'L0:',
      '  call bpf_ktime_get_ns#5',
      '  exit',
    ]);
    assert.equal(disassembleIr(fn.items, { positions: true })[0], '  v0 = r1  ; 3:7');
  });
  it('names registers', () => {
    assert.equal(irRegName(3), 'r3');
    assert.equal(irRegName(3, false), 'w3');
    assert.equal(irRegName(VREG_BASE + 17), 'v17');
    assert.equal(irRegName(VREG_BASE + 17, false), 'wv17');
  });
});
