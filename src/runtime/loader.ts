/**
 * Turning IR programs into loaded kernel programs: register allocation, emission with the session's map fds, and
 * BPF_PROG_LOAD. A verifier rejection is mapped back to the source construct whose code the verifier stopped at
 * (the last instruction index the log mentions), shown with the verifier's last lines.
 */

import { type LoadedProgram, loadProgram, VerifierError } from '../bpf/program.js';
import { emit } from '../codegen/emit.js';
import type { Insn } from '../codegen/ir.js';
import { peephole } from '../codegen/peephole.js';
import type { ProgramPlan } from '../codegen/plan.js';
import { allocateRegisters } from '../codegen/regalloc.js';
import { BpfscopeError } from '../errors.js';
import type { Span } from '../lang/ast.js';

/** A program rejected by the verifier, pointing at the source. */
export class ProgramRejected extends BpfscopeError {
  constructor(
    message: string,
    readonly pos: Span | undefined,
    readonly verifierTail: string[],
    readonly fullLog: string,
  ) {
    super(message);
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
  peephole(plan.fn); // also removes unreachable code, which the verifier rejects
  allocateRegisters(plan.fn);
  const out = emit(plan.fn, mapFd);
  try {
    const program = loadProgram({
      type: plan.expanded.progType,
      insns: out.bytes,
      name: plan.kernelName,
      ...(plan.expanded.expectedAttachType !== undefined
        ? { expectedAttachType: plan.expanded.expectedAttachType }
        : {}),
      ...(plan.expanded.attachBtfId !== undefined ? { attachBtfId: plan.expanded.attachBtfId } : {}),
      ...(logLevel !== undefined ? { logLevel } : {}),
    });
    return { program, insns: out.insns, positions: out.positions };
  } catch (e) {
    if (e instanceof VerifierError) throw rejection(e, plan, out.positions);
    throw e;
  }
}

/** Index of the last instruction the verifier log mentions (`123: (85) call ...`). */
export function lastInsnIndex(lines: string[]): number | undefined {
  for (let i = lines.length - 1; i >= 0; i--) {
    const m = /^(\d+): \([0-9a-f]{2}\)/.exec(lines[i]!);
    if (m) return Number(m[1]);
  }
  return undefined;
}

function rejection(e: VerifierError, plan: ProgramPlan, positions: (Span | undefined)[]): ProgramRejected {
  const idx = lastInsnIndex(e.lines);
  const pos = idx !== undefined ? positions[idx] : undefined;
  const tail = e.lines.filter((l) => l.trim() !== '').slice(-6);
  return new ProgramRejected(
    `The BPF verifier rejected the program for ${plan.expanded.name}${idx !== undefined ? ` (at instruction ${idx})` : ''}`,
    pos,
    tail,
    e.log,
  );
}
