/**
 * Emission: turns an allocated IrFunction (physical registers only) into the raw instruction array loaded by
 * BPF_PROG_LOAD. Labels become jump offsets (`off = target - pc - 1`, counted in 8-byte slots, so an ld_imm64
 * counts two), ld_imm64 is expanded into its two slots (lower 32 bits in the first slot's imm, upper in the
 * second's; a map reference gets `src = BPF_PSEUDO_MAP_FD / BPF_PSEUDO_MAP_VALUE`, the map's fd in the first imm
 * and the value offset in the second, as `include/uapi/linux/bpf.h` describes), and every slot keeps the source
 * span of the IR instruction it came from so verifier messages (which count slots) map back to the program.
 */
import { encode, isJump, isUncondJump } from '../bpf/insn.js';
import { BPF_JA, BPF_JMP32, BPF_PSEUDO_MAP_FD, BPF_PSEUDO_MAP_VALUE, LD_IMM64 } from '../bpf/opcodes.js';
import { BpfscopeError } from '../errors.js';
import type { Span } from '../lang/ast.js';
import { type Insn, type IrFunction, type IrInsn, isLabel, VREG_BASE } from './ir.js';

/** Emitted program: instructions (one per slot), their encoding, and the source span of every slot. */
export interface EmitResult {
  insns: Insn[];
  /** `insns` encoded, `8 * insns.length` bytes. */
  bytes: Buffer;
  /** Per slot (same indexes as `insns`, both slots of an ld_imm64): the span of the construct it implements. */
  positions: (Span | undefined)[];
  /** ld_imm64 slots loading a subprogram's address (BPF_PSEUDO_FUNC), whose imm the linker fills in. */
  funcRefs: { slot: number; name: string }[];
}

const S16_MIN = -0x8000;
const S16_MAX = 0x7fff;

/**
 * Emits `fn`, asking `mapFds` for the fd of every map an ld_imm64 names. Throws Error when a virtual register is
 * left (allocation not run) or a jump names an unknown label, and BpfscopeError when a conditional jump's offset
 * does not fit in 16 bits (the program is too large); an unconditional `ja` that far becomes JMP32 `gotol` (32-bit
 * offset in imm, Linux 6.4+).
 */
export function emit(fn: IrFunction, mapFds: (name: string) => number): EmitResult {
  // Pass 1: slot index of every instruction and label.
  const labelPc = new Map<string, number>();
  let pc = 0;
  for (const it of fn.items) {
    if (isLabel(it)) labelPc.set(it.label, pc);
    else pc += it.code === LD_IMM64 ? 2 : 1;
  }
  const total = pc;
  const insns: Insn[] = [];
  const positions: (Span | undefined)[] = [];
  const funcRefs: { slot: number; name: string }[] = [];
  pc = 0;
  for (const it of fn.items) {
    if (isLabel(it)) continue;
    if (it.dst >= VREG_BASE || it.src >= VREG_BASE) {
      throw new Error(
        `internal: virtual register left in '${fn.name}' at instruction ${pc}; run allocateRegisters first`,
      );
    }
    if (it.code === LD_IMM64) {
      if (it.funcRef !== undefined) funcRefs.push({ slot: pc, name: it.funcRef });
      const [lo, hi] = ldImm64Slots(it, mapFds);
      insns.push(lo, hi);
      positions.push(it.pos, it.pos);
      pc += 2;
      continue;
    }
    const out: Insn = { code: it.code, dst: it.dst, src: it.src, off: it.off, imm: it.imm };
    if (isJump(it) && it.target !== undefined) {
      const t = labelPc.get(it.target);
      if (t === undefined) throw new Error(`internal: jump to undefined label ${it.target} in '${fn.name}'`);
      if (t >= total) throw new Error(`internal: label ${it.target} in '${fn.name}' is not followed by an instruction`);
      const off = t - pc - 1;
      if (out.code === (BPF_JMP32 | BPF_JA)) {
        out.imm = off;
        out.off = 0;
      } else if (off >= S16_MIN && off <= S16_MAX) {
        out.off = off;
      } else if (isUncondJump(it)) {
        out.code = BPF_JMP32 | BPF_JA;
        out.off = 0;
        out.imm = off;
      } else {
        throw new BpfscopeError(
          `program '${fn.name}' is too large: a conditional jump spans ${off} instructions (limit ${S16_MAX})`,
          { hint: 'split the work across several probes' },
        );
      }
    }
    insns.push(out);
    positions.push(it.pos);
    pc++;
  }
  return { insns, bytes: encode(insns), positions, funcRefs };
}

function ldImm64Slots(it: IrInsn, mapFds: (name: string) => number): [Insn, Insn] {
  const value = it.imm64 ?? BigInt(it.imm);
  const hi = Number(BigInt.asIntN(32, value >> 32n));
  if (it.mapRef !== undefined) {
    if (it.src !== BPF_PSEUDO_MAP_FD && it.src !== BPF_PSEUDO_MAP_VALUE) {
      throw new Error(`internal: map reference ${it.mapRef} on an ld_imm64 with src ${it.src}`);
    }
    const fd = mapFds(it.mapRef);
    return [
      { code: LD_IMM64, dst: it.dst, src: it.src, off: 0, imm: fd },
      { code: 0, dst: 0, src: 0, off: 0, imm: it.src === BPF_PSEUDO_MAP_VALUE ? hi : 0 },
    ];
  }
  return [
    { code: LD_IMM64, dst: it.dst, src: it.src, off: 0, imm: Number(BigInt.asIntN(32, value)) },
    { code: 0, dst: 0, src: 0, off: 0, imm: hi },
  ];
}

/** {@link emit} without real maps (every map fd 0), for `-d` listings before anything is loaded. */
export function emitForDisplay(fn: IrFunction): EmitResult {
  return emit(fn, () => 0);
}
