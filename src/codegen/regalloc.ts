/**
 * Register allocation: maps the IR's virtual registers onto r0-r9 by graph colouring (Chaitin/Briggs: simplify with
 * optimistic push, then select), with the physical registers the code generator uses for the calling convention as
 * pre-coloured nodes. A call defines r0-r5, so every value live across it interferes with r0-r5 and ends up in a
 * callee-saved register (r6-r9) or on the stack. r10 is never allocated.
 *
 * When colours run out, the uncoloured virtual registers are spilled everywhere: each gets an 8-byte, 8-aligned
 * stack slot (`IrFunction.allocStack(8)`, below the code generator's own slots; non-interfering spills share a
 * slot); every use is preceded by a reload into a fresh short-lived register and every definition followed by a
 * store, and allocation runs again. 8-byte stack spills keep pointers (ctx, map values, stack pointers) valid for
 * the verifier, which tracks spilled registers precisely. A value whose only definition is a constant (`mov imm`,
 * `ld_imm64`, also a map fd) is rematerialised before each use instead of being stored.
 *
 * Afterwards `mov rX, rX` (64-bit) copies are removed; the 32-bit `wX = wX` is kept (it zero-extends).
 */
import { ldx, stx } from '../bpf/insn.js';
import { BPF_ALU, BPF_ALU64, BPF_K, BPF_MOV, FP, LD_IMM64, MAX_STACK } from '../bpf/opcodes.js';
import { BpfscopeError } from '../errors.js';
import { type IrFunction, type IrInsn, type IrItem, isLabel, VREG_BASE } from './ir.js';
import { computeLiveness, defUse, isMove64, labelIndex } from './liveness.js';

/** Registers handed out by default, in order of preference (caller-saved first, keeping r6-r9 for values live across calls). */
export const ALLOCATABLE: readonly number[] = [1, 2, 3, 4, 5, 0, 6, 7, 8, 9];

/** Options for {@link allocateRegisters}. */
export interface RegallocOptions {
  /**
   * Physical registers virtual registers may be given, in order of preference (default {@link ALLOCATABLE}).
   * A subset is for testing the spill paths; r10 is never allowed.
   */
  registers?: readonly number[];
}

/** What allocation did (for `-v` output and tests). */
export interface RegallocResult {
  /** Colouring rounds run (1 when nothing was spilled). */
  rounds: number;
  /** Virtual registers stored to stack slots. */
  spilled: number[];
  /** Virtual registers recomputed (constant reloaded) before each use instead of spilled. */
  rematerialized: number[];
  /** Bytes of stack added for spill slots. */
  spillBytes: number;
  /** Final assignment of every virtual register of the last round to its physical register. */
  assignment: Map<number, number>;
}

const MAX_ROUNDS = 32;

function isVreg(r: number): boolean {
  return r >= VREG_BASE;
}

/**
 * Interference graph over virtual registers. Per-vreg tables are indexed by `v - VREG_BASE` (a hole for a vreg
 * the items do not mention). `adj` holds the interfering vregs, in the order the edges were found (which decides
 * the order of simplification, and so the colours); `phys` the interfering physical registers as a bit mask
 * (bit r for rN: they are pre-coloured, so only which ones matters).
 */
interface Graph {
  /** The vregs of the graph, ascending. */
  vregs: number[];
  adj: Set<number>[];
  phys: number[];
  moves: Set<number>[];
  cost: number[];
}

/** Execution-frequency weight of every item: 10 per enclosing backward-jump range (loop), capped at 10^4. */
function loopWeights(items: readonly IrItem[]): number[] {
  const depth = new Array<number>(items.length).fill(0);
  let labels: Map<string, number> | undefined;
  for (let j = 0; j < items.length; j++) {
    const it = items[j]!;
    if (isLabel(it) || it.target === undefined) continue;
    labels ??= labelIndex(items);
    const t = labels.get(it.target);
    if (t !== undefined && t <= j) for (let k = t; k <= j; k++) depth[k]!++;
  }
  return depth.map((d) => (d === 0 ? 1 : 10 ** Math.min(d, 4)));
}

function buildGraph(items: readonly IrItem[]): Graph {
  const live = computeLiveness(items);
  const weights = loopWeights(items);
  const adj: Set<number>[] = [];
  const phys: number[] = [];
  const moves: Set<number>[] = [];
  const cost: number[] = [];
  const node = (v: number): Set<number> => {
    const i = v - VREG_BASE;
    let s = adj[i];
    if (!s) {
      s = new Set();
      adj[i] = s;
      phys[i] = 0;
      moves[i] = new Set();
      cost[i] = 0;
    }
    return s;
  };
  /** Edge a-b, unless a = b or both are physical. */
  const edge = (a: number, b: number): void => {
    if (a === b) return;
    if (a >= VREG_BASE) {
      if (b >= VREG_BASE) {
        node(a).add(b);
        node(b).add(a);
      } else {
        node(a);
        phys[a - VREG_BASE]! |= 1 << b;
      }
    } else if (b >= VREG_BASE) {
      node(b);
      phys[b - VREG_BASE]! |= 1 << a;
    }
  };
  const du = live.defUse;
  for (const b of live.blocks) {
    // registers live right after the instruction at i, walking the block backwards (as forEachLiveOut)
    const out = new Set(live.liveOut[b.index]);
    for (let i = b.end - 1; i >= b.start; i--) {
      const d = du[i];
      if (!d) continue;
      const it = items[i] as IrInsn;
      const { defs, uses } = d;
      const move = isMove64(it) ? it.src : undefined;
      const w = weights[i]!;
      for (const r of defs) {
        if (r >= VREG_BASE) {
          node(r);
          cost[r - VREG_BASE]! += w;
        }
      }
      for (const r of uses) {
        if (r >= VREG_BASE) {
          node(r);
          cost[r - VREG_BASE]! += w;
        }
      }
      // physical definitions (a call's r0-r5) interfere with every vreg live after the instruction
      let physDefs = 0;
      for (const x of defs) {
        if (x >= VREG_BASE) {
          for (const l of out) if (l !== move) edge(x, l);
          for (const x2 of defs) edge(x, x2);
        } else physDefs |= 1 << x;
      }
      if (physDefs !== 0) {
        for (const l of out) {
          if (l >= VREG_BASE && l !== move) {
            node(l);
            phys[l - VREG_BASE]! |= physDefs;
          }
        }
      }
      if (move !== undefined && move !== it.dst) {
        if (it.dst >= VREG_BASE) moves[it.dst - VREG_BASE]!.add(move);
        if (move >= VREG_BASE) moves[move - VREG_BASE]!.add(it.dst);
      }
      for (const x of defs) out.delete(x);
      for (const u of uses) out.add(u);
    }
  }
  // Registers live on entry other than the context in r1 (only possible for values read before being written on
  // some path) interfere with each other too.
  const entry = [...(live.liveIn[0] ?? [])];
  for (const a of entry) for (const b of entry) edge(a, b);
  const vregs: number[] = [];
  for (let i = 0; i < adj.length; i++) if (adj[i]) vregs.push(i + VREG_BASE);
  return { vregs, adj, phys, moves, cost };
}

/** Number of bits set in a 32-bit mask. */
function popcount(m: number): number {
  let n = 0;
  for (let x = m; x !== 0; x &= x - 1) n++;
  return n;
}

/** Colours the graph; returns the assignment and the virtual registers that got no colour. */
function colour(
  g: Graph,
  order: readonly number[],
  unspillable: Set<number>,
): { colours: Map<number, number>; spills: number[] } {
  const K = order.length;
  const allowed = new Set(order);
  let allowedMask = 0;
  for (const r of order) allowedMask |= 1 << r;
  const degree = new Int32Array(g.adj.length);
  for (const v of g.vregs)
    degree[v - VREG_BASE] = g.adj[v - VREG_BASE]!.size + popcount(g.phys[v - VREG_BASE]! & allowedMask);
  // the vregs not yet simplified: `removed` flags over g.vregs, which stay in ascending order
  const removed = new Uint8Array(g.adj.length);
  let remaining = g.vregs.length;
  const low: number[] = g.vregs.filter((v) => degree[v - VREG_BASE]! < K);
  const stack: number[] = [];
  const remove = (v: number) => {
    removed[v - VREG_BASE] = 1;
    remaining--;
    stack.push(v);
    for (const n of g.adj[v - VREG_BASE]!) {
      if (removed[n - VREG_BASE]) continue;
      const d = --degree[n - VREG_BASE]!;
      if (d === K - 1) low.push(n);
    }
  };
  while (remaining > 0) {
    let v: number | undefined;
    while (low.length > 0) {
      const c = low.pop()!;
      if (!removed[c - VREG_BASE]) {
        v = c;
        break;
      }
    }
    if (v === undefined) {
      // Potential spill: cheapest cost per interference; short-lived spill temporaries last.
      let best = Number.POSITIVE_INFINITY;
      for (const c of g.vregs) {
        if (removed[c - VREG_BASE]) continue;
        const score = (unspillable.has(c) ? 1e12 : g.cost[c - VREG_BASE]!) / Math.max(degree[c - VREG_BASE]!, 1);
        if (v === undefined || score < best) {
          best = score;
          v = c;
        }
      }
    }
    remove(v!);
  }
  const colours = new Map<number, number>();
  const spills: number[] = [];
  while (stack.length > 0) {
    const v = stack.pop()!;
    const taken = new Set<number>();
    const pm = g.phys[v - VREG_BASE]!;
    for (let r = 0; r <= 9; r++) if (pm & (1 << r)) taken.add(r);
    for (const n of g.adj[v - VREG_BASE]!) {
      const c = colours.get(n);
      if (c !== undefined) taken.add(c);
    }
    let pick: number | undefined;
    for (const p of g.moves[v - VREG_BASE]!) {
      const c = p >= VREG_BASE ? colours.get(p) : p;
      if (c !== undefined && allowed.has(c) && !taken.has(c)) {
        pick = c;
        break;
      }
    }
    if (pick === undefined) pick = order.find((c) => !taken.has(c));
    if (pick === undefined) spills.push(v);
    else colours.set(v, pick);
  }
  return { colours, spills };
}

/** A definition that can be re-executed before each use instead of spilling: a constant. */
function rematerializable(insn: IrInsn): boolean {
  return (
    insn.code === LD_IMM64 || insn.code === (BPF_ALU64 | BPF_MOV | BPF_K) || insn.code === (BPF_ALU | BPF_MOV | BPF_K)
  );
}

function frameError(fn: IrFunction): BpfscopeError {
  return new BpfscopeError(
    `program '${fn.name}' needs ${fn.frameSize} bytes of BPF stack after spilling registers (limit ${MAX_STACK})`,
    { hint: 'use fewer values at once in this probe (for example, split it or store values in maps)' },
  );
}

/** Rewrites `fn.items` so that each spilled vreg lives in a stack slot (or is rematerialised) between uses. */
function spillEverywhere(
  fn: IrFunction,
  g: Graph,
  spills: readonly number[],
  unspillable: Set<number>,
  result: RegallocResult,
): void {
  const spillSet = new Set(spills);
  const defsOf = new Map<number, IrInsn[]>();
  for (const it of fn.items) {
    if (isLabel(it)) continue;
    for (const d of defUse(it).defs) if (spillSet.has(d)) (defsOf.get(d) ?? defsOf.set(d, []).get(d)!).push(it);
  }
  const remat = new Map<number, IrInsn>();
  const slot = new Map<number, number>();
  const slots: { off: number; members: number[] }[] = [];
  for (const v of spills) {
    const defs = defsOf.get(v) ?? [];
    if (defs.length === 1 && rematerializable(defs[0]!)) {
      remat.set(v, defs[0]!);
      result.rematerialized.push(v);
      continue;
    }
    result.spilled.push(v);
    const adj = g.adj[v - VREG_BASE]!;
    let s = slots.find((x) => x.members.every((m) => !adj.has(m)));
    if (!s) {
      const before = fn.frameSize;
      s = { off: fn.allocStack(8), members: [] };
      result.spillBytes += fn.frameSize - before;
      if (fn.frameSize > MAX_STACK) throw frameError(fn);
      slots.push(s);
    }
    s.members.push(v);
    slot.set(v, s.off);
  }
  const rematDefs = new Set(remat.values());
  const out: IrItem[] = [];
  const tag = (i: IrInsn, pos: IrInsn['pos']): IrInsn => {
    if (pos) i.pos = pos;
    return i;
  };
  for (const it of fn.items) {
    if (isLabel(it)) {
      out.push(it);
      continue;
    }
    if (rematDefs.has(it)) continue;
    const { defs, uses } = defUse(it);
    const touched = [...new Set([...defs, ...uses])].filter((r) => spillSet.has(r));
    if (touched.length === 0) {
      out.push(it);
      continue;
    }
    // A copy into or out of a stack-resident register becomes the store or load itself.
    if (isMove64(it)) {
      const ds = slot.get(it.dst);
      const ss = slot.get(it.src);
      if (ds !== undefined && ss !== undefined && ds === ss) continue;
      if (ds !== undefined && !spillSet.has(it.src)) {
        out.push(tag(stx(8, FP, it.src, ds), it.pos));
        continue;
      }
      if (ss !== undefined && !spillSet.has(it.dst)) {
        out.push(tag(ldx(8, it.dst, FP, ss), it.pos));
        continue;
      }
      const r = remat.get(it.src);
      if (r && !spillSet.has(it.dst)) {
        out.push(tag({ ...r, dst: it.dst }, it.pos ?? r.pos));
        continue;
      }
    }
    const copy: IrInsn = { ...it };
    const after: IrInsn[] = [];
    for (const v of touched) {
      const t = fn.vreg();
      unspillable.add(t);
      if (uses.includes(v)) {
        const r = remat.get(v);
        out.push(r ? tag({ ...r, dst: t }, it.pos ?? r.pos) : tag(ldx(8, t, FP, slot.get(v)!), it.pos));
      }
      if (copy.dst === v) copy.dst = t;
      if (copy.src === v) copy.src = t;
      if (defs.includes(v) && !remat.has(v)) after.push(tag(stx(8, FP, t, slot.get(v)!), it.pos));
    }
    out.push(copy, ...after);
  }
  fn.items.length = 0;
  for (const it of out) fn.items.push(it);
}

/**
 * Rewrites `fn.items` in place so that only physical registers r0-r10 remain (see the module comment), spilling to
 * the stack when needed. Returns what it did. Throws BpfscopeError when the spill slots would take the frame past
 * the 512-byte BPF stack, and Error on malformed IR (jump to an unknown label, allocation not converging).
 */
export function allocateRegisters(fn: IrFunction, opts: RegallocOptions = {}): RegallocResult {
  const order = (opts.registers ?? ALLOCATABLE).filter((r) => r >= 0 && r <= 9);
  if (order.length < 3) throw new Error('internal: register allocation needs at least 3 registers');
  const unspillable = new Set<number>();
  const result: RegallocResult = { rounds: 0, spilled: [], rematerialized: [], spillBytes: 0, assignment: new Map() };
  for (;;) {
    result.rounds++;
    if (result.rounds > MAX_ROUNDS) throw new Error(`internal: register allocation of '${fn.name}' did not converge`);
    const g = buildGraph(fn.items);
    const { colours, spills } = colour(g, order, unspillable);
    if (spills.length === 0) {
      rewrite(fn, colours);
      result.assignment = colours;
      return result;
    }
    if (spills.every((v) => unspillable.has(v))) {
      throw new Error(
        `internal: register allocation of '${fn.name}' failed: too many values needed by one instruction`,
      );
    }
    spillEverywhere(
      fn,
      g,
      spills.filter((v) => !unspillable.has(v)),
      unspillable,
      result,
    );
  }
}

function rewrite(fn: IrFunction, colours: Map<number, number>): void {
  const out: IrItem[] = [];
  for (const it of fn.items) {
    if (isLabel(it)) {
      out.push(it);
      continue;
    }
    const du = isVreg(it.dst) || isVreg(it.src) ? defUse(it) : undefined;
    const phys = (r: number): number => {
      if (!isVreg(r)) return r;
      const c = colours.get(r);
      if (c !== undefined) return c;
      // A register field the opcode neither reads nor writes (e.g. src of an immediate form): clear it.
      if (!du!.defs.includes(r) && !du!.uses.includes(r)) return 0;
      throw new Error(`internal: virtual register ${r} left unallocated`);
    };
    it.dst = phys(it.dst);
    it.src = phys(it.src);
    if (isMove64(it) && it.dst === it.src) continue;
    out.push(it);
  }
  fn.items.length = 0;
  for (const it of out) fn.items.push(it);
}
