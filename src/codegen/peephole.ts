/**
 * Small, always-safe clean-ups of an IR item list (before or after register allocation):
 * - unreachable code is removed (the verifier rejects programs containing instructions no path reaches,
 *   "unreachable insn"), with the labels only it used;
 * - jumps to a jump are threaded to the final target (`goto L1` ... `L1: goto L2` becomes `goto L2`);
 * - jumps (conditional or not) to the instruction right after them are removed;
 * - in straight-line code, `mov64 A, B` directly followed by `mov64 B, A` loses the second copy, and a `mov64 A, x`
 *   (or `mov64 A, imm`) whose A is overwritten by the next instruction (not a call) without being read is removed.
 * - labels no jump names are dropped.
 * Instructions with side effects (stores, calls, atomics) are never removed unless unreachable.
 */
import { isCall, isExit, isJump, isUncondJump } from '../bpf/insn.js';
import { BPF_ALU64, BPF_K, BPF_MOV } from '../bpf/opcodes.js';
import { type IrFunction, type IrInsn, type IrItem, isLabel } from './ir.js';
import { buildBlocks, defUse, isMove64 } from './liveness.js';

/** Counts of what {@link peephole} changed. */
export interface PeepholeStats {
  unreachable: number;
  threaded: number;
  jumpsToNext: number;
  moves: number;
  labels: number;
}

function removeUnreachable(items: IrItem[]): { items: IrItem[]; removed: number } {
  if (items.length === 0) return { items, removed: 0 };
  const blocks = buildBlocks(items);
  const seen = new Set<number>([0]);
  const work = [0];
  while (work.length > 0) {
    for (const s of blocks[work.pop()!]!.succs) {
      if (!seen.has(s)) {
        seen.add(s);
        work.push(s);
      }
    }
  }
  const out: IrItem[] = [];
  let removed = 0;
  for (const b of blocks) {
    // (element by element: a spread of a long program overflows the call stack)
    if (seen.has(b.index)) for (let i = b.start; i < b.end; i++) out.push(items[i]!);
    else for (let i = b.start; i < b.end; i++) if (!isLabel(items[i]!)) removed++;
  }
  return { items: out, removed };
}

/** Label → the first instruction after it (skipping other labels), or undefined at the end. */
function firstInsnAfterLabels(items: readonly IrItem[]): Map<string, IrInsn | undefined> {
  const m = new Map<string, IrInsn | undefined>();
  const pending: string[] = [];
  for (const it of items) {
    if (isLabel(it)) pending.push(it.label);
    else {
      for (const l of pending) m.set(l, it);
      pending.length = 0;
    }
  }
  for (const l of pending) m.set(l, undefined);
  return m;
}

function threadJumps(items: IrItem[]): number {
  const first = firstInsnAfterLabels(items);
  let n = 0;
  for (const it of items) {
    if (isLabel(it) || !isJump(it) || it.target === undefined) continue;
    const seen = new Set<string>([it.target]);
    let t = it.target;
    for (;;) {
      const next = first.get(t);
      if (!next || !isUncondJump(next) || next.target === undefined || seen.has(next.target)) break;
      t = next.target;
      seen.add(t);
    }
    if (t !== it.target) {
      it.target = t;
      n++;
    }
  }
  return n;
}

function removeJumpsToNext(items: IrItem[]): { items: IrItem[]; removed: number } {
  const out: IrItem[] = [];
  let removed = 0;
  for (let i = 0; i < items.length; i++) {
    const it = items[i]!;
    if (!isLabel(it) && isJump(it) && it.target !== undefined) {
      let j = i + 1;
      let hit = false;
      while (j < items.length && isLabel(items[j]!)) {
        if ((items[j] as { label: string }).label === it.target) hit = true;
        j++;
      }
      if (hit) {
        removed++;
        continue;
      }
    }
    out.push(it);
  }
  return { items: out, removed };
}

function removeUnusedLabels(items: IrItem[]): { items: IrItem[]; removed: number } {
  const used = new Set<string>();
  for (const it of items) if (!isLabel(it) && it.target !== undefined) used.add(it.target);
  const out = items.filter((it) => !isLabel(it) || used.has(it.label));
  return { items: out, removed: items.length - out.length };
}

function simplifyMoves(items: IrItem[]): { items: IrItem[]; removed: number } {
  const out: IrItem[] = [];
  let removed = 0;
  for (let i = 0; i < items.length; i++) {
    const it = items[i]!;
    const next = items[i + 1];
    const prev = out[out.length - 1];
    if (!isLabel(it) && isMove64(it) && prev && !isLabel(prev) && isMove64(prev)) {
      // mov A, B; mov B, A: B already holds A.
      if (prev.dst === it.src && prev.src === it.dst) {
        removed++;
        continue;
      }
    }
    const isCopy = !isLabel(it) && (isMove64(it) || it.code === (BPF_ALU64 | BPF_MOV | BPF_K));
    if (isCopy && next && !isLabel(next) && !isJump(next) && !isExit(next) && !isCall(next)) {
      const du = defUse(next);
      if (du.defs.includes(it.dst) && !du.uses.includes(it.dst)) {
        removed++;
        continue;
      }
    }
    out.push(it);
  }
  return { items: out, removed };
}

function total(s: PeepholeStats): number {
  return s.unreachable + s.threaded + s.jumpsToNext + s.moves + s.labels;
}

/** Applies the clean-ups above to `fn.items` in place until nothing changes. Returns what was done. */
export function peephole(fn: IrFunction): PeepholeStats {
  const stats: PeepholeStats = { unreachable: 0, threaded: 0, jumpsToNext: 0, moves: 0, labels: 0 };
  let items = [...fn.items];
  for (;;) {
    const before = total(stats);
    stats.threaded += threadJumps(items);
    const a = removeJumpsToNext(items);
    stats.jumpsToNext += a.removed;
    const b = removeUnreachable(a.items);
    stats.unreachable += b.removed;
    const c = removeUnusedLabels(b.items);
    stats.labels += c.removed;
    const d = simplifyMoves(c.items);
    stats.moves += d.removed;
    items = d.items;
    if (total(stats) === before) break;
  }
  fn.items.length = 0;
  for (const it of items) fn.items.push(it);
  return stats;
}
