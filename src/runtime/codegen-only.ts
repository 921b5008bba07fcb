/**
 * `--mode codegen` (bpftrace's mode of that name): compile a program all the way to BPF instructions (parse,
 * analysis, code generation, register allocation, emission) and load nothing: no map, program, link or perf event
 * is created, so it runs without touching the kernel's BPF state (host facts such as BTF, tracefs and ELF files are
 * still read). The fuzzing campaign (issue 19, scripts/fuzz-compile.mjs and test/lang/fuzz-compile.test.ts) drives
 * this function.
 */
import { type CompileOptions, type CompileResult, compile } from '../compiler.js';
import type { SourceFile } from '../lang/diagnostics.js';
import { link } from './loader.js';

/** One generated program of a `--mode codegen` run. */
export interface CodegenProgram {
  /** The probe's name (`begin`, `tracepoint:sched:sched_switch`), as `-v` names loaded programs. */
  probe: string;
  /** Kernel name the program would be loaded under. */
  name: string;
  /** BPF instructions (8-byte slots; `ld_imm64` counts 2). */
  insnSlots: number;
}

/** What `--mode codegen` produced. */
export interface CodegenResult {
  result: CompileResult;
  programs: CodegenProgram[];
}

/** Placeholder fd for map references: the instructions are never loaded. */
const NO_FD = -1;

/**
 * Compile `source` to BPF instructions without loading anything.
 * @throws CompileError for any error in the program (positioned diagnostics); BpfscopeError for a host fact that
 * cannot be read (a missing binary, BTF, tracefs)
 */
export function codegenOnly(source: SourceFile, opts: CompileOptions = {}): CodegenResult {
  const result = compile(source, opts);
  const programs: CodegenProgram[] = [];
  for (const plan of result.compiled.programs) {
    const out = link(plan, () => NO_FD);
    programs.push({ probe: plan.expanded.name, name: plan.kernelName, insnSlots: out.bytes.length / 8 });
  }
  return { result, programs };
}
