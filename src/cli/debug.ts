/** `-d STAGE` output: the AST, the IR, the final instructions (stderr, like bpftrace's debug output). */

import { disassemble, disassembleIr } from '../bpf/disasm.js';
import type { Insn } from '../codegen/ir.js';
import type { CompiledProgram } from '../codegen/plan.js';
import type { Program } from '../lang/ast.js';
import { lastTypeOf, printAst } from '../lang/printer.js';
import type { TypeTable } from '../lang/type-table.js';

/** The AST with the types of the semantic pass (one table per unit, compiler.ts CompileResult `types`). */
export function printDebugAst(ast: Program, types: ReadonlyMap<unknown, TypeTable>): void {
  process.stderr.write(`AST\n---\n${printAst(ast, lastTypeOf(types.values()))}\n`);
}

export function printDebugIr(c: CompiledProgram): void {
  for (const p of c.programs) {
    process.stderr.write(`\nIR for ${p.expanded.name} (${p.kernelName}):\n${disassembleIr(p.fn.items).join('\n')}\n`);
  }
}

export function printDebugInsns(name: string, insns: Insn[]): void {
  process.stderr.write(`\nInstructions for ${name}:\n${disassemble(insns).join('\n')}\n`);
}
