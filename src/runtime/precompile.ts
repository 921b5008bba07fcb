/**
 * The compiling process's side of runtime/precompiled.ts: a program compiled and linked here, serialized for a
 * process that loads it without ever running the compiler (the fleet agent's compile child,
 * fleet/agent/compile-child.ts). Kept apart from precompiled.ts so that the loading side's import graph never
 * reaches src/compiler.ts (the agent's bundle then holds none of the compiler's code: bench/results/agent-issue15.md
 * section 14).
 */
import { serialize } from 'node:v8';
import { IrFunction } from '../codegen/ir.js';
import { compile, type ProgramOptions, programOptions } from '../compiler.js';
import { BpfscopeError } from '../errors.js';
import type { SourceFile } from '../lang/diagnostics.js';
import { hostTarget } from '../target.js';
import { link } from './loader.js';
import { PLACEHOLDER_BASE, REVIVABLE } from './precompiled.js';

/**
 * Compile `source` and link its programs (the compiling process's side).
 * @returns the serialized `Precompiled` (node:v8 serialization: read it with runtime/precompiled.ts
 *   `revivePrecompiled` in a node of the same version)
 * @throws CompileError; BpfscopeError when a probe's provider cannot be carried over
 */
export function precompile(source: SourceFile, opts: ProgramOptions = {}): Buffer {
  const result = compile(source, { ...programOptions(opts), target: hostTarget() });
  const compiled = result.compiled;
  for (const p of compiled.programs) {
    if (!(p.expanded.provider in REVIVABLE)) {
      throw new BpfscopeError(`a ${p.expanded.provider} probe cannot be compiled in another process`);
    }
  }
  const placeholders = new Map<string, number>();
  const fdOf = (name: string): number => {
    let ph = placeholders.get(name);
    if (ph === undefined) placeholders.set(name, (ph = PLACEHOLDER_BASE + placeholders.size));
    return ph;
  };
  const linked = compiled.programs.map((plan) => link(plan, fdOf));
  const programs = compiled.programs.map((p) => ({
    ...p,
    fn: new IrFunction(p.fn.name),
    ...(p.subprogs ? { subprogs: p.subprogs.map((s) => ({ ...s, fn: new IrFunction(s.fn.name) })) } : {}),
  }));
  const mapOf = new Map([...placeholders].map(([name, ph]) => [ph, name]));
  return serialize({ compiled: { ...compiled, programs }, warnings: result.warnings, linked, mapOf });
}
