/**
 * What a builtin module (`lang/builtins/*.ts`) declares, and what the analyser and the code generator offer it;
 * the modules are collected in `registry.ts`.
 */
import type { CallExpr, Expr, Span } from '../ast.js';
import type { Target } from '../target.js';
import type { SType } from '../types.js';

/** What the analyser offers a builtin's check. */
export interface BuiltinChecker {
  /** Type an argument expression (null when it has an error, already reported). */
  expr(e: Expr): SType | null;
  /** Report an error at `pos` (bpftrace's wording). */
  error(pos: Span | undefined, message: string): void;
  /** Check the argument count; false (and the error `NAME() requires N arguments (M provided)`) when it is wrong. */
  argCount(c: CallExpr, min: number, max: number): boolean;
  readonly target: Target;
}

/** What the code generator offers a builtin's code: registers are virtual (bpf/insn.ts VREG_BASE and up). */
export interface BuiltinGen {
  /** The register holding a scalar argument's value. */
  scalar(e: Expr): number;
  /** A register holding the constant `v`. */
  constant(v: bigint | number): number;
  /** Call helper `id` (bpf/helpers.ts HELPER_ID) with registers as its arguments; the register holding r0. */
  callHelper(id: number, args: number[]): number;
  readonly target: Target;
}

/** A builtin function, `name(args...)`. */
export interface BuiltinFunction {
  readonly name: string;
  /** Arguments accepted: `[min, max]`. */
  readonly arity: readonly [number, number];
  /** Check the call's arguments (their count is already checked); the result type, or null after an error. */
  check(c: CallExpr, a: BuiltinChecker): SType | null;
  /** Generate the call; `c` passed {@link check} and its `type` is set. Returns the result's register. */
  generate(c: CallExpr, g: BuiltinGen): number;
}

/** A builtin variable, `name` (a scalar). */
export interface BuiltinVariable {
  readonly name: string;
  readonly type: SType;
  /** Generate the read; returns the register holding the value. */
  generate(g: BuiltinGen): number;
}
