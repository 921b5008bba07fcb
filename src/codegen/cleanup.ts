/**
 * IR clean-up before register allocation: removes instructions no path from the entry reaches (code after
 * `exit()`/`return`, an `else` of a constant condition...). The verifier rejects unreachable instructions
 * ("unreachable insn N"), so this is required, not an optimisation. Jumps to the very next instruction are dropped
 * too.
 */
import { BPF_CALL, BPF_EXIT, BPF_JA, BPF_JMP, BPF_JMP32 } from '../bpf/opcodes.js';
import { type IrFunction, type IrInsn, type IrItem, isLabel } from './ir.js';

function isJumpInsn(i: IrInsn): boolean {
  const cls = i.code & 0x07;
  if (cls !== BPF_JMP && cls !== BPF_JMP32) return false;
  const op = i.code & 0xf0;
  return op !== BPF_CALL && op !== BPF_EXIT;
}

function endsFlow(i: IrInsn): boolean {
  const cls = i.code & 0x07;
  const op = i.code & 0xf0;
  return (cls === BPF_JMP || cls === BPF_JMP32) && (op === BPF_EXIT || (op === BPF_JA && cls === BPF_JMP));
}

/** Remove unreachable IR instructions (and labels only they jumped to) in place. */
export function removeUnreachable(fn: IrFunction): void {
  const items = fn.items;
  const labelAt = new Map<string, number>();
  items.forEach((it, idx) => {
    if (isLabel(it)) labelAt.set(it.label, idx);
  });
  const reached = new Uint8Array(items.length);
  const work: number[] = [0];
  while (work.length) {
    let idx = work.pop()!;
    while (idx < items.length && !reached[idx]) {
      reached[idx] = 1;
      const it = items[idx]!;
      if (!isLabel(it) && isJumpInsn(it) && it.target !== undefined) {
        const t = labelAt.get(it.target);
        if (t !== undefined) work.push(t);
      }
      if (!isLabel(it) && endsFlow(it)) break;
      idx++;
    }
  }
  const kept: IrItem[] = items.filter((_, idx) => reached[idx]);
  // drop `ja L` immediately followed by `L:`
  const out: IrItem[] = [];
  for (let i = 0; i < kept.length; i++) {
    const it = kept[i]!;
    const next = kept[i + 1];
    if (
      !isLabel(it) &&
      (it.code & 0x07) === BPF_JMP &&
      (it.code & 0xf0) === BPF_JA &&
      next &&
      isLabel(next) &&
      next.label === it.target
    ) {
      continue;
    }
    out.push(it);
  }
  items.length = 0;
  items.push(...out);
}
