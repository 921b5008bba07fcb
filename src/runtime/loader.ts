/**
 * Turning IR programs into loaded kernel programs: register allocation, emission with the session's map fds, and
 * BPF_PROG_LOAD. A verifier rejection is mapped back to the source construct whose code the verifier stopped at
 * (the last instruction index the log mentions), shown with the verifier's last lines.
 */

import { type LoadedProgram, loadProgram, VerifierError } from '../bpf/program.js';
import { encode, type Insn } from '../bpf/insn.js';
import { BPF_PSEUDO_MAP_FD, BPF_PSEUDO_MAP_VALUE, LD_IMM64 } from '../bpf/opcodes.js';
import { BTF_FUNC_STATIC, type BtfFunc } from '../bpf/btf-writer.js';
import { type EmitResult, emit } from '../codegen/emit.js';
import { peephole } from '../codegen/peephole.js';
import type { ProgramPlan } from '../codegen/plan.js';
import { ALLOCATABLE, allocateRegisters } from '../codegen/regalloc.js';
import { KernelError } from '../errors.js';
import type { Span } from '../lang/ast.js';
import { cachedLink, defaultLinkCache, type LinkCache } from './link-cache.js';

/**
 * A program rejected by the verifier (BPF_PROG_LOAD), pointing at the source: `pos` is the span of the statement
 * the log's last instruction came from, `verifierTail` the log's last lines, `fullLog` (= `verifierLog`) all of it.
 */
export class ProgramRejected extends KernelError {
  constructor(
    message: string,
    readonly pos: Span | undefined,
    readonly verifierTail: string[],
    readonly fullLog: string,
    errno = 13,
  ) {
    super('bpf(BPF_PROG_LOAD)', errno, message, { verifierLog: fullLog });
    this.name = 'ProgramRejected';
  }
}

export interface LoadResult {
  program: LoadedProgram;
  insns: Insn[];
  positions: (Span | undefined)[];
}

/** Allocate registers, emit and load one program. `mapFd` resolves IR map names. */
export function loadPlan(plan: ProgramPlan, mapFd: (name: string) => number, logLevel?: number): LoadResult {
  return loadLinked(plan, link(plan, mapFd), logLevel);
}

/** A program after {@link link}: its instructions, their bytes and source positions, its functions. */
export type Linked = ReturnType<typeof link>;

/**
 * Rewrites the map fds of a linked program: every ld_imm64 with src BPF_PSEUDO_MAP_FD or BPF_PSEUDO_MAP_VALUE gets
 * `fdOf(imm)` in place of its `imm` (the fd or placeholder `link`'s resolver returned), and the bytes are encoded
 * again. Lets a caller link programs while their maps are still being created (runtime/session.ts loadAsync).
 */
export function resolveMapFds(out: Linked, fdOf: (imm: number) => number): Linked {
  const insns = out.insns.map((i) =>
    i.code === LD_IMM64 && (i.src === BPF_PSEUDO_MAP_FD || i.src === BPF_PSEUDO_MAP_VALUE)
      ? { ...i, imm: fdOf(i.imm) }
      : i,
  );
  return { ...out, insns, bytes: encode(insns) };
}

/** BPF_PROG_LOAD of a linked program. @throws ProgramRejected, KernelError */
export function loadLinked(plan: ProgramPlan, out: Linked, logLevel?: number): LoadResult {
  try {
    const program = loadProgram({
      type: plan.expanded.progType,
      insns: out.bytes,
      name: plan.kernelName,
      ...(plan.expanded.expectedAttachType !== undefined
        ? { expectedAttachType: plan.expanded.expectedAttachType }
        : {}),
      ...(plan.expanded.attachBtfId !== undefined ? { attachBtfId: plan.expanded.attachBtfId } : {}),
      ...(plan.expanded.attachBtfObjFd !== undefined ? { attachBtfObjFd: plan.expanded.attachBtfObjFd } : {}),
      ...(logLevel !== undefined ? { logLevel } : {}),
      // always BTF with func_info: the main function named as bpftrace names it, so fentry:bpf:ID:NAME finds it
      funcs: plan.btfName ? out.funcs.map((f, i) => (i === 0 ? { ...f, name: plan.btfName! } : f)) : out.funcs,
    });
    return { program, insns: out.insns, positions: out.positions };
  } catch (e) {
    if (e instanceof VerifierError) throw rejection(e, plan, out.positions);
    throw e;
  }
}

/**
 * Allocate, emit and concatenate the program's functions (the main one first, then its callbacks), filling in each
 * `ld_imm64` BPF_PSEUDO_FUNC with the callback's offset (its first slot minus the slot after the ld_imm64, as the
 * verifier resolves it), and list the functions for func_info. Through `cache` (default: the CLI bundle's, see
 * runtime/link-cache.ts; none in dist/src) when the same IR was linked before: the same result, without the work.
 * On a miss the functions' IR is rewritten in place (peephole, registers), on a hit it is left as it was.
 */
export function link(
  plan: ProgramPlan,
  mapFd: (name: string) => number,
  cache: LinkCache | null = defaultLinkCache(),
): EmitResult & { funcs: (BtfFunc & { insnOff: number })[] } {
  const fns = [{ fn: plan.fn, params: 1 }, ...(plan.subprogs ?? [])];
  return cachedLink(cache, fns, mapFd, (fd) => linkUncached(fns, fd));
}

function linkUncached(
  fns: { fn: ProgramPlan['fn']; params: number }[],
  mapFd: (name: string) => number,
): EmitResult & { funcs: (BtfFunc & { insnOff: number })[] } {
  const all = fns.map((f) => {
    peephole(f.fn); // also removes unreachable code, which the verifier rejects
    // a frame map's base register (r9) is reserved for the whole function
    allocateRegisters(f.fn, { registers: ALLOCATABLE.filter((r) => r !== f.fn.frameBase) });
    return { ...f, out: emit(f.fn, mapFd) };
  });
  // only the callbacks still referenced: one whose only use was unreachable code (after `return`) is gone from the
  // main function, and the kernel counts subprograms by their references ("number of funcs in func_info doesn't
  // match number of subprogs")
  const byName = new Map(all.map((p) => [p.fn.name, p]));
  const used = new Set<string>([all[0]!.fn.name]);
  for (let i = 0, order = [all[0]!]; i < order.length; i++) {
    for (const r of order[i]!.out.funcRefs) {
      const callee = byName.get(r.name);
      if (callee && !used.has(r.name)) {
        used.add(r.name);
        order.push(callee);
      }
    }
  }
  const parts = all.filter((p) => used.has(p.fn.name));
  const starts = new Map<string, number>();
  const funcs: (BtfFunc & { insnOff: number })[] = [];
  let at = 0;
  for (const p of parts) {
    starts.set(p.fn.name, at);
    funcs.push({ name: p.fn.name, params: p.params, linkage: BTF_FUNC_STATIC, insnOff: at });
    at += p.out.insns.length;
  }
  const insns: Insn[] = [];
  const positions: (Span | undefined)[] = [];
  for (const p of parts) {
    const base = insns.length;
    const own = p.out.insns.map((i) => ({ ...i }));
    for (const r of p.out.funcRefs) {
      const target = starts.get(r.name);
      if (target === undefined) throw new Error(`internal: callback ${r.name} was not generated`);
      own[r.slot]!.imm = target - (base + r.slot) - 1;
    }
    // one by one: a spread of a long program overflows the call stack
    for (const i of own) insns.push(i);
    for (const pos of p.out.positions) positions.push(pos);
  }
  return { insns, bytes: encode(insns), positions, funcRefs: [], funcs };
}

/** Index of the last instruction the verifier log mentions (`123: (85) call ...`). */
export function lastInsnIndex(lines: string[]): number | undefined {
  for (let i = lines.length - 1; i >= 0; i--) {
    const m = /^(\d+): \([0-9a-f]{2}\)/.exec(lines[i]!);
    if (m) return Number(m[1]);
  }
  return undefined;
}

/**
 * The helper the verifier refused for this kind of program (`46: (85) call bpf_d_path#147` followed by `helper call is
 * not allowed in probe` or `program of this type cannot use helper ...`), as bpftrace names it (bpfbytecode.cpp):
 * `helper bpf_d_path not allowed in probe`; undefined for any other rejection.
 */
export function refusedHelperMessage(lines: string[]): string | undefined {
  const at = lines.findIndex(
    (l) => l.includes('helper call is not allowed in probe') || l.includes('program of this type cannot use helper'),
  );
  for (let i = at - 1; at >= 0 && i >= 0; i--) {
    const m = /^\d+: \([0-9a-f]{2}\) call ([A-Za-z_][A-Za-z0-9_]*)#\d+/.exec(lines[i]!);
    if (m) return `helper ${m[1]} not allowed in probe`;
  }
  return undefined;
}

function rejection(e: VerifierError, plan: ProgramPlan, positions: (Span | undefined)[]): ProgramRejected {
  const idx = lastInsnIndex(e.lines);
  const pos = idx !== undefined ? positions[idx] : undefined;
  const tail = e.lines.filter((l) => l.trim() !== '').slice(-6);
  return new ProgramRejected(
    refusedHelperMessage(e.lines) ??
      `The BPF verifier rejected the program for ${plan.expanded.name}${idx !== undefined ? ` (at instruction ${idx})` : ''}`,
    pos,
    tail,
    e.log,
    e.errno,
  );
}
