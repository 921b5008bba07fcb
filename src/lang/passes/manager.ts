/**
 * The pass manager: a compilation is a list of passes over one typed context (bpftrace's PassManager has the same
 * shape). Each pass names the context fields it reads and the ones it produces; the manager checks the order once,
 * when the list is built (a pass that reads a field no earlier pass produces is a programming error, reported with
 * both names), and after each pass that the fields it promised are there. Passes that rewrite the AST in place read
 * and produce nothing new: their order is the list's.
 *
 * The context type `C` is the pipeline's own (compiler.ts `CompileContext`); a field is `undefined` until the pass
 * that produces it has run, and {@link need} reads it with that checked.
 */

/** One compiler pass. */
export interface Pass<C extends object> {
  /** Short name, as in bpftrace's pass names (`parse`, `fold_literals`, `semantic`, `codegen`...). */
  readonly name: string;
  /** The context fields it reads (each present in the initial context or produced by an earlier pass). */
  readonly reads: readonly (keyof C & string)[];
  /** The context fields it sets. */
  readonly produces: readonly (keyof C & string)[];
  /** Runs the pass; throws CompileError for errors in the user's program. */
  run(ctx: C): void;
}

/** A checked list of passes (see the module comment). */
export class PassManager<C extends object> {
  /**
   * @param passes the passes, in order
   * @param initial the context fields set before the first pass
   * @throws Error when a pass reads a field that neither `initial` nor an earlier pass provides, or two passes
   *   produce the same field
   */
  constructor(
    readonly passes: readonly Pass<C>[],
    initial: readonly (keyof C & string)[],
  ) {
    const have = new Map<string, string>(initial.map((k) => [k, '(initial)']));
    for (const p of passes) {
      for (const r of p.reads) {
        if (!have.has(r)) throw new Error(`pass ${p.name} reads '${r}', which no earlier pass produces`);
      }
      for (const w of p.produces) {
        const by = have.get(w);
        if (by !== undefined) throw new Error(`pass ${p.name} produces '${w}', already produced by ${by}`);
        have.set(w, p.name);
      }
    }
  }

  /** The pass names, in order. */
  get names(): string[] {
    return this.passes.map((p) => p.name);
  }

  /**
   * Runs the passes in order on `ctx` (mutated), up to and including the pass named `until` if given.
   *
   * @throws whatever a pass throws; Error when a pass did not set a field it declares
   */
  run(ctx: C, until?: string): C {
    for (const p of this.passes) {
      p.run(ctx);
      for (const w of p.produces) {
        if ((ctx as Record<string, unknown>)[w] === undefined) throw new Error(`pass ${p.name} did not produce '${w}'`);
      }
      if (p.name === until) break;
    }
    return ctx;
  }
}

/**
 * Field `key` of `ctx`, which an earlier pass produced.
 *
 * @throws Error when it is not set (a pass list whose declarations do not match what the passes do)
 */
export function need<C extends object, K extends keyof C>(ctx: C, key: K): NonNullable<C[K]> {
  const v = ctx[key];
  if (v === undefined || v === null) throw new Error(`compiler context has no '${String(key)}' yet`);
  return v as NonNullable<C[K]>;
}
