/**
 * Types beside the AST: what the semantic pass (`lang/passes/semantic.ts`) found for one typed unit (a probe body
 * compiled for one expanded attach point, `ProbeUnit`), keyed by node. The AST carries no types: one probe's AST is
 * shared by all the units its attach points expand to, and a node may have a different type in each (`args` of two
 * tracepoints, `func` of two functions), so each unit has its own table. The `semantic` pass produces one table per
 * unit (compiler.ts `CompileContext.types`); code generation reads types only from the table of the unit it
 * generates, and `-d ast` prints them from there (`lang/printer.ts`).
 */
import type { Expr } from './ast.js';
import type { SType } from './types.js';

/**
 * The types of one unit's expressions and scratch variables, the compile-time values of its sizeof/offsetof, and
 * its compile-time integers.
 */
export class TypeTable {
  private readonly types = new WeakMap<Expr, SType>();
  private readonly sizes = new WeakMap<Expr, number>();
  private readonly consts = new WeakMap<Expr, bigint>();
  /** The unit's scratch variables (renamed apart by lang/passes/varscope.ts) and their storage types. */
  readonly variables = new Map<string, SType>();
  /** The unit's scratch variables whose address is taken (`&$x`): they live on the stack. */
  readonly addressTaken = new Set<string>();

  /**
   * The type of `e`.
   *
   * @throws Error (an internal error: a bug in the semantic pass or in its caller) when `e` was not typed in this unit
   */
  get(e: Expr): SType {
    const t = this.types.get(e);
    if (t === undefined) {
      const at = `${e.pos.line}:${e.pos.col}`;
      throw new Error(`no type for the ${e.kind} at ${at}: the semantic pass did not type it for this probe`);
    }
    return t;
  }

  /** The type of `e`, or undefined when this unit's typing did not give it one (a node after an error). */
  find(e: Expr): SType | undefined {
    return this.types.get(e);
  }

  /** Records (or replaces) the type of `e`. */
  set(e: Expr, t: SType): void {
    this.types.set(e, t);
  }

  /**
   * The value of a `sizeof(...)` / `offsetof(T, f)` expression in bytes, as the semantic pass computed it for this
   * unit (a type may come from the probed binary's DWARF, so the value is per unit).
   *
   * @throws Error (an internal error) when `e` has no value recorded
   */
  size(e: Expr): number {
    const v = this.sizes.get(e);
    if (v === undefined) throw new Error(`no value for the ${e.kind} at ${e.pos.line}:${e.pos.col}`);
    return v;
  }

  /** Records the value of a `sizeof`/`offsetof` expression, in bytes. */
  setSize(e: Expr, bytes: number): void {
    this.sizes.set(e, bytes);
  }

  /**
   * The value of `e` when it is a compile-time integer (an integer literal, a positional parameter holding one, `$#`,
   * or a negation of one), as the semantic pass found it; undefined when `e` is not one. Code generation reads array
   * indexes, `print` top/div, `strncmp` lengths, `unroll` counts and constant loop ranges from here.
   */
  constInt(e: Expr): bigint | undefined {
    return this.consts.get(e);
  }

  /** Records that `e` is the compile-time integer `v`. */
  setConst(e: Expr, v: bigint): void {
    this.consts.set(e, v);
  }
}
