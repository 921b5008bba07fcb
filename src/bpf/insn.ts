/**
 * BPF instruction constructors, classification, and the binary encoder/decoder.
 *
 * Encoding (`Documentation/bpf/standardization/instruction-set.rst`, `struct bpf_insn` in
 * `include/uapi/linux/bpf.h`): 8 bytes little-endian per slot: `code` (u8), `dst_reg` (low nibble) and `src_reg`
 * (high nibble) in one byte, `off` (s16), `imm` (s32). `ld_imm64` (code 0x18) occupies two slots; the second has
 * code 0 and carries the upper 32 bits of the immediate in its `imm`.
 *
 * The constructors return {@link SymInsn}s, so registers may be virtual (>= VREG_BASE) and jumps name a label.
 * They throw a RangeError on arguments no valid instruction can encode (a bug in the caller, not a user error).
 *
 * The instruction types live here, in the lowest layer that handles instructions: codegen's IR (`codegen/ir.ts`)
 * extends {@link SymInsn} with a source span, and the encoder, disassembler, loader and verifier tooling only need
 * these shapes.
 */
import { helperById, helperByName } from './helpers.js';
import {
  BPF_PSEUDO_BTF_ID,
  BPF_PSEUDO_FUNC,
  BPF_ADD,
  BPF_ALU,
  BPF_ALU64,
  BPF_AND,
  BPF_ARSH,
  BPF_ATOMIC,
  BPF_B,
  BPF_CALL,
  BPF_CMPXCHG,
  BPF_DIV,
  BPF_DW,
  BPF_END,
  BPF_EXIT,
  BPF_FETCH,
  BPF_H,
  BPF_JA,
  BPF_JEQ,
  BPF_JGE,
  BPF_JGT,
  BPF_JLE,
  BPF_JLT,
  BPF_JMP,
  BPF_JMP32,
  BPF_JNE,
  BPF_JSET,
  BPF_JSGE,
  BPF_JSGT,
  BPF_JSLE,
  BPF_JSLT,
  BPF_K,
  BPF_LDX,
  BPF_LSH,
  BPF_MEM,
  BPF_MOD,
  BPF_MOV,
  BPF_MUL,
  BPF_NEG,
  BPF_OR,
  BPF_PSEUDO_MAP_FD,
  BPF_PSEUDO_MAP_VALUE,
  BPF_RSH,
  BPF_ST,
  BPF_STX,
  BPF_SUB,
  BPF_W,
  BPF_X,
  BPF_XCHG,
  BPF_XOR,
  LD_IMM64,
} from './opcodes.js';

/** Register numbers >= VREG_BASE are virtual; 0-10 are the physical BPF registers (r10 = frame pointer). */
export const VREG_BASE = 16;

/** One raw BPF instruction (8 bytes when encoded): `code`, `dst` and `src` registers, signed 16-bit `off`, signed 32-bit `imm`. */
export interface Insn {
  code: number;
  dst: number;
  src: number;
  off: number;
  imm: number;
}

/** Where in the user's program an instruction came from (a 1-based line and column; `lang/ast.ts` Span has both). */
export interface SourcePos {
  line: number;
  col: number;
}

/**
 * A symbolic instruction: a raw instruction whose registers may be virtual, plus what the emitter resolves later
 * (jump labels, 64-bit immediates, map and subprogram references).
 */
export interface SymInsn extends Insn {
  /** Jump target label for conditional jumps and `ja` (code class JMP/JMP32, not CALL/EXIT); `off` is then ignored. */
  target?: string;
  /** For ld_imm64 (code 0x18): the full 64-bit immediate (`imm` ignored). */
  imm64?: bigint;
  /** For ld_imm64 with src = BPF_PSEUDO_MAP_FD / BPF_PSEUDO_MAP_VALUE: name of the map whose fd goes in `imm`. */
  mapRef?: string;
  /** For ld_imm64 with src = BPF_PSEUDO_FUNC: name of the subprogram whose address it loads (see loader link). */
  funcRef?: string;
  /** For BPF_CALL to a helper: how many argument registers (r1..rN) the helper reads. */
  callArgs?: number;
}

/** A symbolic instruction with the source position it was generated for (codegen/ir.ts IrInsn is one). */
export interface PositionedInsn extends SymInsn {
  pos?: SourcePos;
}

/** A jump target in a symbolic instruction list. */
export interface InsnLabel {
  label: string;
}

/** An item of a symbolic instruction list: an instruction or a label. */
export type SymItem = PositionedInsn | InsnLabel;

export function isLabel(i: SymItem): i is InsnLabel {
  return (i as InsnLabel).label !== undefined;
}

/** Access size in bytes of a load, store or atomic. */
export type MemSize = 1 | 2 | 4 | 8;

/** ALU operation: an opcode constant (`BPF_ADD`...) or its name. `sdiv`/`smod` are BPF_DIV/BPF_MOD with off = 1. */
export type AluOp = number | AluOpName;
export type AluOpName =
  'add' | 'sub' | 'mul' | 'div' | 'sdiv' | 'or' | 'and' | 'lsh' | 'rsh' | 'mod' | 'smod' | 'xor' | 'arsh';

/** Conditional jump operation: an opcode constant (`BPF_JEQ`...) or its name. */
export type JmpOp = number | JmpOpName;
export type JmpOpName = 'jeq' | 'jgt' | 'jge' | 'jset' | 'jne' | 'jsgt' | 'jsge' | 'jlt' | 'jle' | 'jslt' | 'jsle';

const ALU_OPS: Record<AluOpName, [op: number, off: number]> = {
  add: [BPF_ADD, 0],
  sub: [BPF_SUB, 0],
  mul: [BPF_MUL, 0],
  div: [BPF_DIV, 0],
  sdiv: [BPF_DIV, 1],
  or: [BPF_OR, 0],
  and: [BPF_AND, 0],
  lsh: [BPF_LSH, 0],
  rsh: [BPF_RSH, 0],
  mod: [BPF_MOD, 0],
  smod: [BPF_MOD, 1],
  xor: [BPF_XOR, 0],
  arsh: [BPF_ARSH, 0],
};
const BINARY_ALU = new Set([
  BPF_ADD,
  BPF_SUB,
  BPF_MUL,
  BPF_DIV,
  BPF_OR,
  BPF_AND,
  BPF_LSH,
  BPF_RSH,
  BPF_MOD,
  BPF_XOR,
  BPF_ARSH,
]);

const JMP_OPS: Record<JmpOpName, number> = {
  jeq: BPF_JEQ,
  jgt: BPF_JGT,
  jge: BPF_JGE,
  jset: BPF_JSET,
  jne: BPF_JNE,
  jsgt: BPF_JSGT,
  jsge: BPF_JSGE,
  jlt: BPF_JLT,
  jle: BPF_JLE,
  jslt: BPF_JSLT,
  jsle: BPF_JSLE,
};
const COND_JMP = new Set(Object.values(JMP_OPS));

// ---------------------------------------------------------------------------------------------------------------
// Sizes and classification

/** Size field (`BPF_B`/`BPF_H`/`BPF_W`/`BPF_DW`) for an access of `bytes` bytes. Throws RangeError otherwise. */
export function sizeCode(bytes: number): number {
  switch (bytes) {
    case 1:
      return BPF_B;
    case 2:
      return BPF_H;
    case 4:
      return BPF_W;
    case 8:
      return BPF_DW;
    default:
      throw new RangeError(`invalid BPF access size ${bytes} (want 1, 2, 4 or 8)`);
  }
}

/** Access size in bytes encoded in the size field of `code` (bits 3-4). */
export function sizeBytes(code: number): MemSize {
  switch (code & 0x18) {
    case BPF_B:
      return 1;
    case BPF_H:
      return 2;
    case BPF_W:
      return 4;
    default:
      return 8;
  }
}

/** Instruction class (low 3 bits of `code`: BPF_LD ... BPF_ALU64). */
export function insnClass(code: number): number {
  return code & 0x07;
}

/** Operation bits (4-7) of an ALU or JMP opcode. */
export function insnOp(code: number): number {
  return code & 0xf0;
}

/** Memory mode bits (5-7) of a load/store opcode. */
export function insnMode(code: number): number {
  return code & 0xe0;
}

/** True for the two-slot 64-bit immediate load (`code` 0x18). */
export function isLdImm64(insn: Insn): boolean {
  return insn.code === LD_IMM64;
}

/** True for a JMP/JMP32 instruction that transfers control within the program (conditional jumps and `ja`). */
export function isJump(insn: Insn): boolean {
  const cls = insnClass(insn.code);
  if (cls !== BPF_JMP && cls !== BPF_JMP32) return false;
  const op = insnOp(insn.code);
  return op !== BPF_CALL && op !== BPF_EXIT;
}

/** True for an unconditional jump (`ja`, or JMP32 `gotol`). */
export function isUncondJump(insn: Insn): boolean {
  const cls = insnClass(insn.code);
  return (cls === BPF_JMP || cls === BPF_JMP32) && insnOp(insn.code) === BPF_JA;
}

/** True for a helper (or bpf-to-bpf) call. */
export function isCall(insn: Insn): boolean {
  return insn.code === (BPF_JMP | BPF_CALL);
}

/** True for `exit`. */
export function isExit(insn: Insn): boolean {
  return insn.code === (BPF_JMP | BPF_EXIT);
}

/** Number of 8-byte slots the instruction takes once emitted (2 for ld_imm64, else 1). */
export function slotCount(insn: Insn): 1 | 2 {
  return insn.code === LD_IMM64 ? 2 : 1;
}

// ---------------------------------------------------------------------------------------------------------------
// Constructors

function checkReg(r: number, what: string): number {
  if (!Number.isInteger(r) || r < 0) throw new RangeError(`invalid ${what} register ${r}`);
  return r;
}

function checkOff(off: number): number {
  if (!Number.isInteger(off) || off < -0x8000 || off > 0x7fff) throw new RangeError(`BPF offset ${off} is not s16`);
  return off;
}

/** Immediates that the CPU sign-extends to 64 bits must be s32. */
function checkImm64(imm: number): number {
  if (!Number.isInteger(imm) || imm < -0x80000000 || imm > 0x7fffffff) {
    throw new RangeError(`BPF immediate ${imm} is not s32 (use ldImm64 for wider constants)`);
  }
  return imm;
}

/** 32-bit operations accept any u32 or s32 value; stored signed. */
function checkImm32(imm: number): number {
  if (!Number.isInteger(imm) || imm < -0x80000000 || imm > 0xffffffff) {
    throw new RangeError(`BPF immediate ${imm} does not fit in 32 bits`);
  }
  return imm | 0;
}

function aluOp(op: AluOp): [number, number] {
  if (typeof op === 'string') {
    const r = ALU_OPS[op];
    if (!r) throw new RangeError(`unknown ALU operation '${op}'`);
    return r;
  }
  if (!BINARY_ALU.has(op)) throw new RangeError(`not a binary ALU operation: 0x${op.toString(16)}`);
  return [op, 0];
}

function jmpOp(op: JmpOp): number {
  const o = typeof op === 'string' ? JMP_OPS[op] : op;
  if (o === undefined || !COND_JMP.has(o)) throw new RangeError(`not a conditional jump operation: ${String(op)}`);
  return o;
}

function insn(code: number, dst: number, src: number, off: number, imm: number): SymInsn {
  return { code, dst: checkReg(dst, 'dst'), src: checkReg(src, 'src'), off, imm };
}

/** `dst = src` (64-bit). */
export function mov64(dst: number, src: number): SymInsn {
  return insn(BPF_ALU64 | BPF_MOV | BPF_X, dst, src, 0, 0);
}

/** `dst = imm` (imm s32, sign-extended to 64 bits). */
export function mov64Imm(dst: number, imm: number): SymInsn {
  return insn(BPF_ALU64 | BPF_MOV | BPF_K, dst, 0, 0, checkImm64(imm));
}

/** `wdst = wsrc` (32-bit: the upper half of dst is zeroed). */
export function mov32(dst: number, src: number): SymInsn {
  return insn(BPF_ALU | BPF_MOV | BPF_X, dst, src, 0, 0);
}

/** `wdst = imm` (u32 or s32 immediate; the upper half of dst is zeroed). */
export function mov32Imm(dst: number, imm: number): SymInsn {
  return insn(BPF_ALU | BPF_MOV | BPF_K, dst, 0, 0, checkImm32(imm));
}

/** `dst op= src` (64-bit). */
export function alu64(op: AluOp, dst: number, src: number): SymInsn {
  const [o, off] = aluOp(op);
  return insn(BPF_ALU64 | o | BPF_X, dst, src, off, 0);
}

/** `dst op= imm` (64-bit; imm s32, sign-extended). */
export function alu64Imm(op: AluOp, dst: number, imm: number): SymInsn {
  const [o, off] = aluOp(op);
  return insn(BPF_ALU64 | o | BPF_K, dst, 0, off, checkImm64(imm));
}

/** `wdst op= wsrc` (32-bit; the upper half of dst is zeroed). */
export function alu32(op: AluOp, dst: number, src: number): SymInsn {
  const [o, off] = aluOp(op);
  return insn(BPF_ALU | o | BPF_X, dst, src, off, 0);
}

/** `wdst op= imm` (32-bit). */
export function alu32Imm(op: AluOp, dst: number, imm: number): SymInsn {
  const [o, off] = aluOp(op);
  return insn(BPF_ALU | o | BPF_K, dst, 0, off, checkImm32(imm));
}

/** `dst = -dst` (64-bit). */
export function neg64(dst: number): SymInsn {
  return insn(BPF_ALU64 | BPF_NEG | BPF_K, dst, 0, 0, 0);
}

/**
 * Byte-order conversion `dst = be16/32/64 dst` or `le16/32/64` (BPF_ALU | BPF_END, source bit = BPF_TO_BE 0x08 /
 * BPF_TO_LE 0x00, imm = width in bits). The result is zero-extended from `bits`.
 */
export function endian(dst: number, bits: 16 | 32 | 64, order: 'le' | 'be'): SymInsn {
  if (bits !== 16 && bits !== 32 && bits !== 64) throw new RangeError(`invalid endian width ${bits}`);
  return insn(BPF_ALU | BPF_END | (order === 'be' ? BPF_X : BPF_K), dst, 0, 0, bits);
}

/** `dst = *(uN *)(src + off)`: load `size` bytes, zero-extended. */
export function ldx(size: MemSize, dst: number, src: number, off: number): SymInsn {
  return insn(BPF_LDX | sizeCode(size) | BPF_MEM, dst, src, checkOff(off), 0);
}

/** `*(uN *)(dst + off) = src`: store the low `size` bytes of src. */
export function stx(size: MemSize, dst: number, src: number, off: number): SymInsn {
  return insn(BPF_STX | sizeCode(size) | BPF_MEM, dst, src, checkOff(off), 0);
}

/** `*(uN *)(dst + off) = imm`: store an immediate (s32, sign-extended for 8-byte stores). */
export function st(size: MemSize, dst: number, off: number, imm: number): SymInsn {
  return insn(BPF_ST | sizeCode(size) | BPF_MEM, dst, 0, checkOff(off), size === 8 ? checkImm64(imm) : checkImm32(imm));
}

/** `lock *(uN *)(dst + off) += src` (BPF_STX | BPF_ATOMIC, imm = BPF_ADD). */
export function atomicAdd(size: 4 | 8, dst: number, src: number, off: number): SymInsn {
  return atomic(size, BPF_ADD, dst, src, off);
}

/**
 * Any atomic memory operation: `op` is the imm of BPF_STX | BPF_ATOMIC (BPF_ADD/OR/AND/XOR, optionally
 * `| BPF_FETCH` to return the old value in src, BPF_XCHG, or BPF_CMPXCHG which compares with r0 and returns the old
 * value in r0).
 */
export function atomic(size: 4 | 8, op: number, dst: number, src: number, off: number): SymInsn {
  if (size !== 4 && size !== 8) throw new RangeError(`atomic operations are 4 or 8 bytes, not ${size}`);
  const base = op & ~BPF_FETCH;
  if (op !== BPF_XCHG && op !== BPF_CMPXCHG && ![BPF_ADD, BPF_OR, BPF_AND, BPF_XOR].includes(base)) {
    throw new RangeError(`invalid atomic operation 0x${op.toString(16)}`);
  }
  return insn(BPF_STX | sizeCode(size) | BPF_ATOMIC, dst, src, checkOff(off), op);
}

/** `dst = value` for any 64-bit value (ld_imm64, two slots when emitted). `value` may be given signed or unsigned. */
export function ldImm64(dst: number, value: bigint): SymInsn {
  if (value < -(1n << 63n) || value >= 1n << 64n) throw new RangeError(`ld_imm64 value ${value} exceeds 64 bits`);
  const v = BigInt.asUintN(64, value);
  return { ...insn(LD_IMM64, dst, 0, 0, Number(BigInt.asIntN(32, v))), imm64: v };
}

/** `dst = &map` (ld_imm64 with src = BPF_PSEUDO_MAP_FD); the map's fd is filled in by `emit`. */
export function ldMapFd(dst: number, mapName: string): SymInsn {
  return { ...insn(LD_IMM64, dst, BPF_PSEUDO_MAP_FD, 0, 0), imm64: 0n, mapRef: mapName };
}

/**
 * `dst = &kernel variable` (ld_imm64 with src = BPF_PSEUDO_BTF_ID): `btfId` is a VAR of vmlinux BTF (btf object fd
 * 0 in the second slot). For a per-CPU variable the verifier types the result as a per-CPU pointer, usable with
 * bpf_per_cpu_ptr / bpf_this_cpu_ptr (include/uapi/linux/bpf.h).
 */
export function ldBtfId(dst: number, btfId: number): SymInsn {
  return { ...insn(LD_IMM64, dst, BPF_PSEUDO_BTF_ID, 0, btfId), imm64: BigInt(btfId) };
}

/**
 * `dst = &subprogram` (ld_imm64 with src = BPF_PSEUDO_FUNC): a callback for helpers like bpf_for_each_map_elem.
 * The imm (the subprogram's first slot relative to the next one) is filled in when the program is linked.
 */
export function ldFunc(dst: number, funcName: string): SymInsn {
  return { ...insn(LD_IMM64, dst, BPF_PSEUDO_FUNC, 0, 0), imm64: 0n, funcRef: funcName };
}

/**
 * `dst = &map_value[0] + offset` for an array map's single value (ld_imm64 with src = BPF_PSEUDO_MAP_VALUE). The
 * offset (bytes, u32) is kept as the upper 32 bits of `imm64`, where it sits in the encoding (second slot's imm);
 * `emit` puts the map fd in the lower 32 bits.
 */
export function ldMapValue(dst: number, mapName: string, offset: number): SymInsn {
  if (!Number.isInteger(offset) || offset < 0 || offset > 0xffffffff)
    throw new RangeError(`invalid map value offset ${offset}`);
  return { ...insn(LD_IMM64, dst, BPF_PSEUDO_MAP_VALUE, 0, 0), imm64: BigInt(offset) << 32n, mapRef: mapName };
}

/** `if dst op src goto target` (64-bit compare). */
export function jmp(op: JmpOp, dst: number, src: number, target: string): SymInsn {
  return { ...insn(BPF_JMP | jmpOp(op) | BPF_X, dst, src, 0, 0), target };
}

/** `if dst op imm goto target` (64-bit compare; imm s32 sign-extended). */
export function jmpImm(op: JmpOp, dst: number, imm: number, target: string): SymInsn {
  return { ...insn(BPF_JMP | jmpOp(op) | BPF_K, dst, 0, 0, checkImm64(imm)), target };
}

/** `if wdst op wsrc goto target` (32-bit compare). */
export function jmp32(op: JmpOp, dst: number, src: number, target: string): SymInsn {
  return { ...insn(BPF_JMP32 | jmpOp(op) | BPF_X, dst, src, 0, 0), target };
}

/** `if wdst op imm goto target` (32-bit compare). */
export function jmp32Imm(op: JmpOp, dst: number, imm: number, target: string): SymInsn {
  return { ...insn(BPF_JMP32 | jmpOp(op) | BPF_K, dst, 0, 0, checkImm32(imm)), target };
}

/** `goto target`. */
export function ja(target: string): SymInsn {
  return { ...insn(BPF_JMP | BPF_JA, 0, 0, 0, 0), target };
}

/**
 * Call a helper by id or name (`'map_lookup_elem'` or `'bpf_map_lookup_elem'`). `argCount` (registers r1..rN read)
 * defaults to the helper table's count; pass it for variadic `trace_printk`. Throws RangeError for an unknown helper
 * name, or an unknown id without `argCount`.
 */
export function call(helper: number | string, argCount?: number): SymInsn {
  const info = typeof helper === 'string' ? helperByName(helper) : helperById(helper);
  if (!info && (typeof helper === 'string' || argCount === undefined)) {
    throw new RangeError(`unknown BPF helper ${String(helper)}`);
  }
  const id = info ? info.id : (helper as number);
  const args = argCount ?? info!.args;
  if (!Number.isInteger(args) || args < 0 || args > 5)
    throw new RangeError(`helper argument count ${args} not in 0..5`);
  return { ...insn(BPF_JMP | BPF_CALL, 0, 0, 0, id), callArgs: args };
}

/** `exit`: return r0. */
export function exit(): SymInsn {
  return insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

// ---------------------------------------------------------------------------------------------------------------
// Binary encoding

/** Bytes per instruction slot. */
export const INSN_SIZE = 8;

/**
 * Encodes raw instructions (ld_imm64 already expanded into its two slots, physical registers 0-10 only) into the
 * kernel's `struct bpf_insn` array layout. Throws RangeError on a field out of range (register > 15, off not s16,
 * imm not representable in 32 bits).
 */
export function encode(insns: readonly Insn[]): Buffer {
  const buf = Buffer.alloc(insns.length * INSN_SIZE);
  // Bytes stored one at a time (little-endian, two's complement) rather than with writeInt16LE/writeInt32LE, whose
  // argument checks dominate this loop in the cold code of a tool's start (the ranges are checked here already).
  for (let n = 0; n < insns.length; n++) {
    const i = insns[n]!;
    const at = n * INSN_SIZE;
    if (!Number.isInteger(i.code) || i.code < 0 || i.code > 0xff) throw new RangeError(`insn ${n}: bad code ${i.code}`);
    if (!(i.dst >= 0 && i.dst <= 15 && i.src >= 0 && i.src <= 15)) {
      throw new RangeError(`insn ${n}: register out of range (dst ${i.dst}, src ${i.src}); virtual registers left?`);
    }
    if (!Number.isInteger(i.off) || i.off < -0x8000 || i.off > 0x7fff)
      throw new RangeError(`insn ${n}: off ${i.off} is not s16`);
    if (!Number.isInteger(i.imm) || i.imm < -0x80000000 || i.imm > 0xffffffff) {
      throw new RangeError(`insn ${n}: imm ${i.imm} does not fit in 32 bits`);
    }
    buf[at] = i.code;
    buf[at + 1] = (i.src << 4) | i.dst;
    buf[at + 2] = i.off & 0xff;
    buf[at + 3] = (i.off >> 8) & 0xff;
    const imm = i.imm | 0;
    buf[at + 4] = imm & 0xff;
    buf[at + 5] = (imm >>> 8) & 0xff;
    buf[at + 6] = (imm >>> 16) & 0xff;
    buf[at + 7] = imm >>> 24;
  }
  return buf;
}

/** Decodes a `struct bpf_insn` array (length a multiple of 8) into raw slots; `imm` and `off` come back signed. */
export function decode(buf: Uint8Array): Insn[] {
  if (buf.length % INSN_SIZE !== 0) throw new RangeError(`BPF program length ${buf.length} is not a multiple of 8`);
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const out: Insn[] = [];
  for (let at = 0; at < b.length; at += INSN_SIZE) {
    out.push({
      code: b[at]!,
      dst: b[at + 1]! & 0x0f,
      src: b[at + 1]! >> 4,
      off: b.readInt16LE(at + 2),
      imm: b.readInt32LE(at + 4),
    });
  }
  return out;
}

/** Parses a hex string of encoded instructions (whitespace ignored), as printed by `bpftool ... opcodes`. */
export function decodeHex(hex: string): Insn[] {
  return decode(Buffer.from(hex.replace(/\s+/g, ''), 'hex'));
}

/** The full 64-bit immediate of the ld_imm64 whose first slot is `lo` and second `hi` (unsigned). */
export function imm64Of(lo: Insn, hi: Insn | undefined): bigint {
  return (BigInt(hi ? hi.imm >>> 0 : 0) << 32n) | BigInt(lo.imm >>> 0);
}
