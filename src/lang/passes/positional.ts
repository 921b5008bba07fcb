/**
 * Positional parameters used as text, substituted before analysis as bpftrace does (its runtime tests
 * `other:positional attachpoint*`, `positional number as string`, `positional as string literal`,
 * `positional pointer arithmetic`):
 * - `$N` inside an attach point is replaced by the parameter's text (`i:ms:$1`, `BEG$1`), and the attach point is
 *   split again;
 * - `str($N)` becomes the string literal of the parameter's text, a number included (`str($1)` with `1` is "1"),
 *   and `str($N + k)` of a non-numeric parameter its text from byte k, so functions that need a literal (`kaddr(str($1))`) accept it.
 * A missing parameter is the empty string, as in bpftrace.
 */
import type { CallExpr, Expr, Program, StrLit } from '../ast.js';
import { positionalInt } from '../lexer.js';
import { splitAttachPoint } from '../parser.js';
import { AstMutator } from '../visitor.js';

/** Substitute positional parameters `params` (`$1` is params[0]) in place (see the module comment). */
export function substitutePositionals(program: Program, params: readonly string[]): void {
  const param = (n: number) => params[n - 1] ?? '';
  for (const probe of program.probes) {
    for (const ap of probe.attachPoints) {
      if (!/\$\d/.test(ap.raw)) continue;
      ap.raw = ap.raw.replace(/\$(\d+)/g, (_, n: string) => param(Number(n)));
      Object.assign(ap, splitAttachPoint(ap.raw));
    }
    new PositionalStrings(param).probe(probe);
  }
}

/** `str($N)` / `str($N + k)` as a string literal; undefined for any other node. */
function strOfPositional(e: Expr, param: (n: number) => string): StrLit | undefined {
  if (e.kind !== 'CallExpr' || (e as CallExpr).name !== 'str' || (e as CallExpr).args.length !== 1) return undefined;
  const a = (e as CallExpr).args[0]!;
  let text: string | undefined;
  if (a.kind === 'PositionalExpr' && !a.count) text = param(a.index);
  else if (
    a.kind === 'BinaryExpr' &&
    a.op === '+' &&
    a.left.kind === 'PositionalExpr' &&
    !a.left.count &&
    a.right.kind === 'IntLit' &&
    positionalInt(param(a.left.index)) === undefined
  ) {
    text = Buffer.from(param(a.left.index)).subarray(Number(a.right.value)).toString();
  }
  if (text === undefined) return undefined;
  return { kind: 'StrLit', pos: e.pos, value: text, bytes: Buffer.from(text) };
}

/** Replaces, bottom-up, every `str($N)`-style call with its string literal. */
class PositionalStrings extends AstMutator {
  constructor(private readonly param: (n: number) => string) {
    super();
  }

  override expr(e: Expr): Expr {
    super.expr(e);
    return strOfPositional(e, this.param) ?? e;
  }
}
