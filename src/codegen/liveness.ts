/**
 * Register definitions/uses of BPF instructions, basic blocks of an IR item list, and liveness by iterative
 * backward dataflow (jumps may go backwards: loops converge to the fixed point).
 *
 * Implicit operands follow the BPF calling convention and instruction set
 * (`Documentation/bpf/standardization/instruction-set.rst`): `call` reads r1..r{callArgs} and writes r0 and
 * clobbers r1-r5 (reported here as definitions of r0-r5), `exit` reads r0, BPF_CMPXCHG reads and writes r0, the
 * FETCH/XCHG atomics write their source register, legacy LD_ABS/LD_IND read r6 and clobber r0-r5.
 * r10 (frame pointer, read-only, never allocated) is left out of every set.
 */
import { helperById } from '../bpf/helpers.js';
import { insnMode, isExit, isJump, isUncondJump } from '../bpf/insn.js';
import {
  BPF_ABS,
  BPF_ALU,
  BPF_ALU64,
  BPF_ATOMIC,
  BPF_CALL,
  BPF_CMPXCHG,
  BPF_END,
  BPF_EXIT,
  BPF_FETCH,
  BPF_IND,
  BPF_JA,
  BPF_JMP,
  BPF_JMP32,
  BPF_LD,
  BPF_LDX,
  BPF_MOV,
  BPF_NEG,
  BPF_ST,
  BPF_STX,
  BPF_X,
  BPF_XCHG,
  FP,
  LD_IMM64,
} from '../bpf/opcodes.js';
import { type IrInsn, type IrItem, isLabel } from './ir.js';

/** Registers an instruction writes (`defs`) and reads (`uses`); r10 excluded. */
export interface DefUse {
  defs: number[];
  uses: number[];
}

const CALL_CLOBBERS = [0, 1, 2, 3, 4, 5];

function noFp(regs: number[]): number[] {
  return regs.filter((r) => r !== FP);
}

/** Number of argument registers a call reads: `callArgs`, else the helper table's count, else all five. */
export function callArgCount(insn: IrInsn): number {
  if (insn.callArgs !== undefined) return insn.callArgs;
  if (insn.src === 0) {
    const h = helperById(insn.imm);
    if (h) return h.args;
  }
  return 5;
}

/** The empty register list (shared: callers only read `defs`/`uses`). */
const NONE: number[] = [];

/** `[a]`, or none for r10. */
function one(a: number): number[] {
  return a === FP ? NONE : [a];
}

/** `[a, b]` without r10 (a repeated register stays repeated, as the instruction names it twice). */
function two(a: number, b: number): number[] {
  if (a === FP) return one(b);
  return b === FP ? [a] : [a, b];
}

/**
 * Registers defined and used by one instruction, from its opcode (see the module comment for implicit ones). The
 * arrays may be shared between calls: read them, never change them.
 */
export function defUse(insn: IrInsn): DefUse {
  const code = insn.code;
  const cls = code & 0x07;
  const op = code & 0xf0;
  const x = (code & BPF_X) !== 0;
  switch (cls) {
    case BPF_ALU:
    case BPF_ALU64:
      if (op === BPF_MOV) return { defs: one(insn.dst), uses: x ? one(insn.src) : NONE };
      if (op === BPF_NEG || op === BPF_END) {
        const d = one(insn.dst);
        return { defs: d, uses: d };
      }
      return { defs: one(insn.dst), uses: x ? two(insn.dst, insn.src) : one(insn.dst) };
    case BPF_LDX:
      return { defs: one(insn.dst), uses: one(insn.src) };
    case BPF_ST:
      return { defs: NONE, uses: one(insn.dst) };
    case BPF_STX:
      if (insnMode(code) === BPF_ATOMIC) {
        if (insn.imm === BPF_CMPXCHG) return { defs: [0], uses: noFp([insn.dst, insn.src, 0]) };
        if (insn.imm === BPF_XCHG || insn.imm & BPF_FETCH) {
          return { defs: one(insn.src), uses: two(insn.dst, insn.src) };
        }
      }
      return { defs: NONE, uses: two(insn.dst, insn.src) };
    case BPF_LD:
      if (code === LD_IMM64) return { defs: one(insn.dst), uses: NONE };
      if (insnMode(code) === BPF_ABS) return { defs: CALL_CLOBBERS, uses: [6] };
      if (insnMode(code) === BPF_IND) return { defs: CALL_CLOBBERS, uses: noFp([6, insn.src]) };
      return { defs: NONE, uses: NONE };
    case BPF_JMP:
    case BPF_JMP32:
      if (op === BPF_CALL && cls === BPF_JMP) {
        const n = callArgCount(insn);
        return { defs: CALL_CLOBBERS, uses: CALL_ARGS[n] ?? [1, 2, 3, 4, 5].slice(0, n) };
      }
      if (op === BPF_EXIT && cls === BPF_JMP) return { defs: NONE, uses: R0 };
      if (op === BPF_JA) return { defs: NONE, uses: NONE };
      return { defs: NONE, uses: x ? two(insn.dst, insn.src) : one(insn.dst) };
    default:
      return { defs: NONE, uses: NONE };
  }
}

const R0 = [0];
/** The argument registers a call with n arguments reads (r1..rn), n = 0..5. */
const CALL_ARGS: readonly number[][] = [0, 1, 2, 3, 4, 5].map((n) => [1, 2, 3, 4, 5].slice(0, n));

/** A basic block: items `[start, end)` of the item list (a label, if any, is its first item). */
export interface BasicBlock {
  readonly index: number;
  readonly start: number;
  readonly end: number;
  /** Successor block indexes (jump target first for a conditional jump, then the fall-through). */
  readonly succs: number[];
  readonly preds: number[];
}

/** Item index of every label. Throws Error on a duplicate label (a code generator bug). */
export function labelIndex(items: readonly IrItem[]): Map<string, number> {
  const m = new Map<string, number>();
  items.forEach((it, i) => {
    if (isLabel(it)) {
      if (m.has(it.label)) throw new Error(`internal: label ${it.label} defined twice`);
      m.set(it.label, i);
    }
  });
  return m;
}

/**
 * Splits items into basic blocks: a block starts at a label or after a jump or `exit`. A jump without a target or
 * to an undefined label throws Error (a code generator bug).
 */
export function buildBlocks(items: readonly IrItem[]): BasicBlock[] {
  const labels = labelIndex(items);
  const starts: number[] = [];
  let open = false;
  for (let i = 0; i < items.length; i++) {
    const it = items[i]!;
    const label = isLabel(it);
    if (label || !open) {
      starts.push(i);
      open = true;
    }
    if (!label && (isJump(it) || isExit(it))) open = false;
  }
  // block index of each item that starts a block (-1 elsewhere)
  const blockAt = new Int32Array(items.length).fill(-1);
  for (let b = 0; b < starts.length; b++) blockAt[starts[b]!] = b;
  const blocks: BasicBlock[] = starts.map((start, b) => ({
    index: b,
    start,
    end: b + 1 < starts.length ? starts[b + 1]! : items.length,
    succs: [],
    preds: [],
  }));
  for (const b of blocks) {
    const last = b.end > b.start ? items[b.end - 1]! : undefined;
    const lastIsLabel = !last || isLabel(last);
    const fallsThrough = lastIsLabel || !(isExit(last) || isUncondJump(last));
    if (!lastIsLabel && isJump(last)) {
      const t = last.target;
      if (t === undefined) throw new Error('internal: IR jump without a target label');
      const ti = labels.get(t);
      if (ti === undefined) throw new Error(`internal: jump to undefined label ${t}`);
      b.succs.push(blockAt[ti]!);
    }
    if (fallsThrough && b.index + 1 < blocks.length && !b.succs.includes(b.index + 1)) b.succs.push(b.index + 1);
  }
  for (const b of blocks) for (const s of b.succs) blocks[s]!.preds.push(b.index);
  return blocks;
}

/** Result of {@link computeLiveness}. */
export interface Liveness {
  blocks: BasicBlock[];
  /** Registers live on entry to each block. */
  liveIn: Set<number>[];
  /** Registers live on exit from each block. */
  liveOut: Set<number>[];
  /** Per item index: the instruction's defs and uses (undefined for labels). */
  defUse: (DefUse | undefined)[];
  /** Per item index: registers live right after that instruction (undefined for labels). Computed on first use. */
  readonly insnLiveOut: (Set<number> | undefined)[];
}

/**
 * Liveness of physical (r0-r9) and virtual registers over an IR item list, by iterating
 * `in[b] = use[b] ∪ (out[b] − def[b])`, `out[b] = ∪ in[succ]` to the fixed point. Per-instruction live-out sets
 * come from one backward pass per block ({@link forEachLiveOut}, or `insnLiveOut` materialised lazily).
 */
export function computeLiveness(items: readonly IrItem[]): Liveness {
  const blocks = buildBlocks(items);
  const du: (DefUse | undefined)[] = new Array(items.length);
  for (let i = 0; i < items.length; i++) {
    const it = items[i]!;
    du[i] = isLabel(it) ? undefined : defUse(it);
  }
  const gen: Set<number>[] = [];
  const kill: Set<number>[] = [];
  for (const b of blocks) {
    const g = new Set<number>();
    const k = new Set<number>();
    for (let i = b.start; i < b.end; i++) {
      const d = du[i];
      if (!d) continue;
      for (const u of d.uses) if (!k.has(u)) g.add(u);
      for (const x of d.defs) k.add(x);
    }
    gen.push(g);
    kill.push(k);
  }
  const liveIn = blocks.map(() => new Set<number>());
  const liveOut = blocks.map(() => new Set<number>());
  // Round-robin passes to the fixed point. A block whose successors' live-in sets did not grow since the block was
  // last computed would only re-add what its sets already hold (no change, not even in their order), so it is
  // skipped: `grewAt[b]` is the step at which live-in of b last grew, `doneAt[b]` the step b was last computed at.
  const grewAt = new Int32Array(blocks.length).fill(-1);
  const doneAt = new Int32Array(blocks.length).fill(-1);
  let step = 0;
  let changed = true;
  while (changed) {
    changed = false;
    for (let bi = blocks.length - 1; bi >= 0; bi--) {
      const b = blocks[bi]!;
      const first = doneAt[bi] < 0;
      if (!first && !b.succs.some((s) => grewAt[s]! >= doneAt[bi]!)) continue;
      doneAt[bi] = step++;
      const out = liveOut[bi]!;
      for (const s of b.succs) for (const r of liveIn[s]!) out.add(r);
      const inn = liveIn[bi]!;
      const before = inn.size;
      if (first) for (const r of gen[bi]!) inn.add(r);
      const k = kill[bi]!;
      for (const r of out) if (!k.has(r)) inn.add(r);
      if (inn.size !== before) {
        changed = true;
        grewAt[bi] = step++;
      }
    }
  }
  let perInsn: (Set<number> | undefined)[] | undefined;
  const lv: Liveness = {
    blocks,
    liveIn,
    liveOut,
    defUse: du,
    get insnLiveOut() {
      if (!perInsn) {
        const arr: (Set<number> | undefined)[] = new Array(items.length).fill(undefined);
        forEachLiveOut(lv, (i, live) => {
          arr[i] = new Set(live);
        });
        perInsn = arr;
      }
      return perInsn;
    },
  };
  return lv;
}

/**
 * Calls `fn(itemIndex, liveOut)` for every instruction, walking each block backwards; `liveOut` is the set of
 * registers live right after the instruction and is only valid during the call (it is mutated afterwards).
 */
export function forEachLiveOut(lv: Liveness, fn: (index: number, liveOut: ReadonlySet<number>) => void): void {
  for (const b of lv.blocks) {
    const live = new Set(lv.liveOut[b.index]);
    for (let i = b.end - 1; i >= b.start; i--) {
      const d = lv.defUse[i];
      if (!d) continue;
      fn(i, live);
      for (const x of d.defs) live.delete(x);
      for (const u of d.uses) live.add(u);
    }
  }
}

/** True for a 64-bit register-to-register move (`mov64 dst, src`), the only copy the allocator may delete. */
export function isMove64(insn: IrInsn): boolean {
  return insn.code === (BPF_ALU64 | BPF_MOV | BPF_X) && insn.off === 0;
}
