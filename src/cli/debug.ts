/** `-d STAGE` output: the AST, the IR, the final instructions (stderr, like bpftrace's debug output). */

import { disassemble, disassembleIr } from '../bpf/disasm.js';
import type { Insn } from '../codegen/ir.js';
import type { CompiledProgram } from '../codegen/plan.js';
import type { Program } from '../lang/ast.js';
import { printAst } from '../lang/printer.js';

export function printDebugAst(ast: Program): void {
  process.stderr.write(`AST\n---\n${printAst(ast)}\n`);
}

export function printDebugIr(c: CompiledProgram): void {
  for (const p of c.programs) {
    process.stderr.write(`\nIR for ${p.expanded.name} (${p.kernelName}):\n${disassembleIr(p.fn.items).join('\n')}\n`);
  }
}

export function printDebugInsns(name: string, insns: Insn[]): void {
  process.stderr.write(`\nInstructions for ${name}:\n${disassemble(insns).join('\n')}\n`);
}
