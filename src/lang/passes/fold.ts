/**
 * Literal folding (current bpftrace's `fold_literals` pass): integer arithmetic on literals is computed at compile
 * time with C int64 semantics (so `-7 / 2` is -3 and `-8 >> 60` is -1, unlike the run-time unsigned operations),
 * comparisons of literals become bools, `!`/`~`/`-` of literals fold, and a ternary with a literal condition is
 * replaced by the chosen branch. Overflow is an error, as in bpftrace ("unable to fold literals due to overflow or
 * underflow").
 */
import type { Expr, Program } from '../ast.js';
import { CompileError, type Diagnostic } from '../diagnostics.js';
import { AstMutator } from '../visitor.js';

const I64_MIN = -(1n << 63n);
const U64_MAX = (1n << 64n) - 1n;
const FLOW_ERROR = 'unable to fold literals due to overflow or underflow';

/** Fold literals in place; throws CompileError on overflow. */
export function foldLiterals(program: Program): void {
  const errors: Diagnostic[] = [];
  new Folder(errors).program(program);
  if (errors.length) throw new CompileError(errors);
}

class Folder extends AstMutator {
  constructor(private readonly errors: Diagnostic[]) {
    super();
  }

  /** Bottom-up: the children are folded first, then the node itself if its operands are now literals. */
  override expr(e: Expr): Expr {
    super.expr(e);
    switch (e.kind) {
      case 'UnaryExpr': {
        const o = e.operand;
        if (o.kind === 'IntLit') {
          if (e.op === '-') return this.int(-o.value, e);
          if (e.op === '~') return { kind: 'IntLit', pos: e.pos, value: BigInt.asUintN(64, ~o.value) };
          if (e.op === '!') return { kind: 'BoolLit', pos: e.pos, value: o.value === 0n };
        }
        if (o.kind === 'BoolLit' && e.op === '!') return { kind: 'BoolLit', pos: e.pos, value: !o.value };
        return e;
      }
      case 'BinaryExpr': {
        const l = e.left;
        const r = e.right;
        if (l.kind === 'IntLit' && r.kind === 'IntLit') return this.binary(e.op, l.value, r.value, e);
        return e;
      }
      case 'TernaryExpr': {
        const c = e.cond;
        if (c.kind === 'IntLit') return c.value !== 0n ? e.then : e.else;
        if (c.kind === 'BoolLit') return c.value ? e.then : e.else;
        return e;
      }
      default:
        return e;
    }
  }

  private int(v: bigint, at: Expr): Expr {
    if (v < I64_MIN || v > U64_MAX) {
      this.errors.push({ severity: 'error', message: FLOW_ERROR, pos: at.pos });
      return at;
    }
    return { kind: 'IntLit', pos: at.pos, value: v };
  }

  private binary(op: string, a: bigint, b: bigint, at: Expr): Expr {
    const bool = (value: boolean): Expr => ({ kind: 'BoolLit', pos: at.pos, value });
    switch (op) {
      case '==':
        return bool(a === b);
      case '!=':
        return bool(a !== b);
      case '<':
        return bool(a < b);
      case '<=':
        return bool(a <= b);
      case '>':
        return bool(a > b);
      case '>=':
        return bool(a >= b);
      case '&&':
        return bool(a !== 0n && b !== 0n);
      case '||':
        return bool(a !== 0n || b !== 0n);
      case '+':
        return this.int(a + b, at);
      case '-':
        return this.int(a - b, at);
      case '*':
        return this.int(a * b, at);
      case '/':
      case '%': {
        if (b === 0n) {
          this.errors.push({ severity: 'error', message: FLOW_ERROR, pos: at.pos });
          return at;
        }
        // BigInt division truncates toward zero, like C.
        return this.int(op === '/' ? a / b : a % b, at);
      }
      case '&':
        return this.int(BigInt.asIntN(64, a & b), at);
      case '|':
        return this.int(BigInt.asIntN(64, a | b), at);
      case '^':
        return this.int(BigInt.asIntN(64, a ^ b), at);
      case '<<':
      case '>>':
        // a count outside 0..63 has no 64-bit result (and a huge one would exhaust BigInt): not folded, an error
        if (b < 0n || b > 63n) {
          this.errors.push({ severity: 'error', message: FLOW_ERROR, pos: at.pos });
          return at;
        }
        return this.int(op === '<<' ? BigInt.asIntN(64, a << b) : a >> b, at);
      default:
        return at;
    }
  }
}
