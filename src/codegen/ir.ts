/**
 * The IR: BPF instructions on *virtual* registers plus symbolic labels and map references (ply's design).
 * Codegen produces an IrFunction; `regalloc.ts` maps virtual registers to r0-r9 (spilling to the stack when they
 * run out); `emit.ts` resolves labels to jump offsets, expands ld_imm64 to two slots and records, for every emitted
 * instruction, the source span it came from (so verifier errors point at the user's program).
 *
 * Register numbers 0-10 are the physical BPF registers (r10 = frame pointer); numbers >= VREG_BASE are virtual.
 * Codegen only uses physical registers for the calling convention: r1 on entry (ctx), r1-r5 moved in right before
 * a `call`, r0 read right after it, r0 before `exit`, and r10 for stack addresses.
 */
import { type InsnLabel, type SymInsn, VREG_BASE } from '../bpf/insn.js';
import { FP } from '../bpf/opcodes.js';
import type { Span } from '../lang/ast.js';

// The instruction shapes are the bpf layer's (bpf/insn.ts); re-exported for the IR's users.
export { type Insn, isLabel, VREG_BASE } from '../bpf/insn.js';

/** An IR instruction: a symbolic instruction (bpf/insn.ts) whose source position is the program's span. */
export interface IrInsn extends SymInsn {
  /** Source construct this instruction was generated for. */
  pos?: Span;
}

export type IrLabel = InsnLabel;

export type IrItem = IrInsn | IrLabel;

/**
 * A helper argument as code generation supplies it: a register, a frame slot's address (`stack`: from the frame
 * base, which may be a frame map), a real BPF stack slot's address (`fp`: for helpers that insist on the stack,
 * the bpf_loop/for_each callback context), a map, or an immediate.
 */
export type HelperArg = number | { stack: number } | { fp: number } | { map: string } | { imm: number };

/** One BPF program under construction. */
export class IrFunction {
  readonly items: IrItem[] = [];
  /** Bytes of stack used below r10 so far (multiple of 8). Slots are at negative offsets from r10. */
  frameSize = 0;
  /**
   * The register the code generator's frame slots are addressed from: r10 (the BPF stack), or, for a frame too
   * large for the 512-byte stack, a callee-saved register pointing just past this CPU's slot of a frame map (see
   * codegen/frame.ts). It is then never given to a virtual register.
   */
  frameBase: number = FP;
  private nextVreg = VREG_BASE;
  private nextLabel = 0;
  /** Current source position, stamped onto every instruction added. */
  pos: Span | undefined;

  constructor(readonly name: string) {}

  /** A fresh virtual register. */
  vreg(): number {
    return this.nextVreg++;
  }

  get vregCount(): number {
    return this.nextVreg - VREG_BASE;
  }

  /** A fresh unique label name (`prefix` + counter). */
  newLabel(prefix = 'L'): string {
    return `${prefix}${this.nextLabel++}`;
  }

  /** Reserve `size` bytes of stack aligned to `align` (<= 8); returns the (negative) offset from r10. */
  allocStack(size: number, align = 8): number {
    const a = Math.max(align, 1);
    this.frameSize = Math.ceil((this.frameSize + size) / a) * a;
    this.frameSize = Math.ceil(this.frameSize / 8) * 8;
    return -this.frameSize;
  }

  emit(insn: IrInsn): void {
    if (this.pos && !insn.pos) insn.pos = this.pos;
    this.items.push(insn);
  }

  mark(label: string): void {
    this.items.push({ label });
  }
}
