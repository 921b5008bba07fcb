/**
 * The builtin registry: one module per builtin or family (`cgroup.ts` is the first) declares its names, arity,
 * argument checks, result type and code generation; the parser, the analyser (`lang/passes/semantic.ts`) and the
 * code generator (`codegen/gen.ts`) ask this registry before their own tables. A builtin's printed form follows
 * its result type (`lang/types.ts` kind → `runtime/decode.ts`), since printing may read the host (cgroupfs, /proc)
 * and lang/ must not.
 *
 * The registry sits in lang/, below codegen/: a builtin generates code through the small `BuiltinGen` interface
 * (types.ts; ProbeGen provides it) and instruction constructors from bpf/, and reads host facts only through the
 * Target it is given.
 */
import { CGROUP_FUNCTIONS, CGROUP_VARIABLES } from './cgroup.js';
import type { BuiltinFunction, BuiltinVariable } from './types.js';

export type { BuiltinChecker, BuiltinFunction, BuiltinGen, BuiltinVariable } from './types.js';

/** Builtin functions by name. */
export const BUILTIN_FUNCTIONS: ReadonlyMap<string, BuiltinFunction> = new Map(
  [...CGROUP_FUNCTIONS].map((f) => [f.name, f]),
);

/** Builtin variables by name. */
export const BUILTIN_VARIABLES: ReadonlyMap<string, BuiltinVariable> = new Map(
  [...CGROUP_VARIABLES].map((v) => [v.name, v]),
);
