/**
 * The run-time warnings' ids (compiler.ts `resources`, after {@link assignResourceIds}'s call ids): division by zero,
 * map full, array index out of bounds and, with `-k`, map lookup misses. The generator emits a WARNF record where such
 * a warning can happen; its id indexes the printf table (the message, and the position user space prints it at), so
 * the warnings are entries of that table after the calls' formats. This walk decides, from the typed AST, where the
 * generator will emit each one, in the order it emits them; the generator only looks the ids up
 * ({@link warningId}), and one it asks for that the walk did not foresee is an internal error.
 *
 * A warning is keyed by the span the generator positions it at (its `fn.pos`: the expression being generated, or
 * the statement for a map store and a compound assignment) and its message, per unit: a site emitted twice (both
 * branches of `@m[k] /= v`, an `unroll` body emitted N times) uses one id, as bpftrace's codegen does for an
 * unrolled body's async ids.
 *
 * Each rule below mirrors one place of the generator; a change there changes the rule here:
 * - `/`, `%` (codegen/gen-expr.ts `binary`): unless the divisor is an immediate > 0 (GenCore.immediate);
 * - `$x /= v`, `$x %= v` (gen.ts `compound`), at the statement;
 * - a map store (`=`, compound, aggregation, gen.ts `assign`; aggregate.ts; tseries.ts), at the statement, and
 *   `@m[k]++` (gen-access.ts `incDec`), at the expression: "map full"; `@m[k] /= v` also warns of a division by 0;
 * - `a[i]` on an array with a run-time index (gen-expr.ts `arrayIndex`), except a struct field in memory whose
 *   array has no size (a flexible array member);
 * - `-k`: a map read (gen-access.ts `mapRead`), except a per-CPU aggregation's (count, sum, min, max, avg) and a map
 *   given to `delete`, `clear`, `zero`, `print` (without keys), `has_key`, `len`.
 */

import type { AssignStmt, Expr, MapExpr, Probe, Span, Stmt } from '../lang/ast.js';
import { positionalInt } from '../lang/lexer.js';
import type { TypeTable } from '../lang/type-table.js';
import { isMemoryLocation } from '../lang/typeops.js';
import type { ProbeUnit } from '../lang/units.js';
import { type ChildMapper, mapExprChildren, mapStmtChildren } from '../lang/visitor.js';
import { BpfscopeError } from '../errors.js';
import type { MapPlan, PrintfPlan } from './plan.js';

/** bpftrace's division-by-zero warning (CreateCheckedBinop); the result is 1. */
export const WARN_DIVIDE =
  'Divide or modulo by 0 detected. This can lead to unexpected results. 1 is being used as the result.';
/** bpftrace's warning when a map update finds the map full (-E2BIG); printed once per site and run. */
export const WARN_MAP_FULL =
  "Map full; can't update element. Try increasing max_map_keys config or manually setting the max entries in a map declaration e.g. `let @a = hash(5000)`";
/** bpftrace's warning for an array index past the array's end (required_resources.h ARRAY_ACCESS_OOB_MSG). */
export const WARN_ARRAY_OOB = 'Array access out of bounds. This can lead to unexpected results.';
/** `-k`: bpftrace's HELPER_ERROR for a map read that finds no element (`output/text.cpp` runtime_error). */
export const WARN_LOOKUP_MISS =
  "Can't lookup map element because it does not exist.\nAdditional Info - helper: map_lookup_elem, retcode: 0";

/** Per unit (its type table): per span the generator positions a warning at, each message's id. */
export type WarningIds = Map<TypeTable, Map<Span, Map<string, number>>>;

/** What the walk needs besides the typed units: the maps and the options code generation reads. */
export interface WarningInputs {
  maps: ReadonlyMap<string, MapPlan>;
  /** `-k` */
  helperWarnings: boolean;
  /** Positional parameters (`$1`, `$#`): a divisor that is one is an immediate. */
  positional: readonly string[];
  /** `-c`'s pid (`cpid`): a divisor that is `cpid` is an immediate. */
  cpid: number | undefined;
}

/** Calls whose map argument names the map (or its element) rather than reading its value; `print` with keys reads. */
const MAP_ARG_CALLS: ReadonlySet<string> = new Set(['delete', 'clear', 'zero', 'print', 'has_key', 'len']);

/** Aggregations read as one value summed over CPUs (gen-access.ts mapRead): no lookup-miss warning. */
const CPU_SUMMED = new Set(['count', 'sum', 'min', 'max', 'avg']);

/**
 * Walk every unit and append its warnings to `printfs` (ids from `printfs.length` on, in emission order).
 * @returns the ids by unit, span and message, for {@link warningId}
 */
export function assignWarningIds(
  units: readonly ProbeUnit[],
  types: ReadonlyMap<ProbeUnit, TypeTable>,
  inputs: WarningInputs,
  printfs: PrintfPlan[],
): WarningIds {
  const out: WarningIds = new Map();
  for (const u of units) {
    const table = types.get(u)!;
    if (out.has(table)) continue;
    const own = new Map<Span, Map<string, number>>();
    out.set(table, own);
    new WarningWalker(table, inputs, (pos, message, once) => {
      let byMessage = own.get(pos);
      if (!byMessage) own.set(pos, (byMessage = new Map()));
      if (byMessage.has(message)) return;
      const id = printfs.length;
      byMessage.set(message, id);
      printfs.push({
        id,
        format: message.replaceAll('%', '%%'),
        argTypes: [],
        offsets: [],
        payloadSize: 0,
        pos,
        ...(once ? { once } : {}),
      });
    }).probe(u.probe);
  }
  return out;
}

/**
 * The id of the warning `message` the generator emits at span `pos` of the unit typed by `types`.
 *
 * @throws BpfscopeError (internal) when the walk foresaw none there: it and the generator disagree, a bug
 */
export function warningId(ids: WarningIds, types: TypeTable, pos: Span | undefined, message: string): number {
  const id = pos ? ids.get(types)?.get(pos)?.get(message) : undefined;
  if (id === undefined) {
    const where = pos ? `${pos.line}:${pos.col}` : 'no position';
    throw new BpfscopeError(
      `internal: the resource pass foresaw no run-time warning "${message.split('.')[0]}" at ${where} ` +
        '(codegen/warning-ids.ts); please report this program',
    );
  }
  return id;
}

/** A read-only walk of one unit in the generator's order, reporting each warning site after its operands. */
class WarningWalker {
  constructor(
    private readonly types: TypeTable,
    private readonly inputs: WarningInputs,
    private readonly warn: (pos: Span, message: string, once: boolean) => void,
  ) {}

  probe(p: Probe): void {
    if (p.predicate) this.expr(p.predicate);
    for (const s of p.body.stmts) this.stmt(s);
  }

  private readonly mapper: ChildMapper = {
    expr: (e) => {
      this.expr(e);
      return e;
    },
    stmt: (s) => {
      this.stmt(s);
      return s;
    },
    block: (b) => {
      for (const s of b.stmts) this.stmt(s);
      return b;
    },
  };

  /** The keys of `@m[k...]`, without reading the map (a store's target, `++`'s, a map argument). */
  private keys(m: MapExpr): void {
    for (const k of m.keys) this.expr(k);
  }

  private stmt(s: Stmt): void {
    switch (s.kind) {
      case 'UnrollStmt':
        // an unroll of 0 (or a count the generator cannot read) emits no body
        if ((this.types.constInt(s.count) ?? 0n) <= 0n) return;
        break;
      case 'AssignStmt':
        this.assign(s);
        return;
      case 'ForStmt':
        // `for ($kv : @m)` iterates the map: no read of it
        if (s.iterable.kind === 'MapExpr') {
          this.keys(s.iterable);
          for (const x of s.body.stmts) this.stmt(x);
          return;
        }
        break;
      default:
        break;
    }
    mapStmtChildren(s, this.mapper);
  }

  /** gen.ts `assign`: the value, then a map's key, then the statement's own warnings. */
  private assign(s: AssignStmt): void {
    this.expr(s.value);
    const compoundDivide = s.op === '/=' || s.op === '%=';
    if (s.target.kind === 'VarExpr') {
      if (compoundDivide) this.warn(s.pos, WARN_DIVIDE, false);
      return;
    }
    this.keys(s.target);
    const plan = this.inputs.maps.get(s.target.name);
    const aggregation = s.value.kind === 'CallExpr' && plan?.perCpu;
    if (!aggregation && compoundDivide) this.warn(s.pos, WARN_DIVIDE, false);
    this.warn(s.pos, WARN_MAP_FULL, true);
  }

  private expr(e: Expr): void {
    switch (e.kind) {
      case 'MapExpr': {
        this.keys(e);
        const plan = this.inputs.maps.get(e.name);
        if (this.inputs.helperWarnings && !(plan?.perCpu && CPU_SUMMED.has(plan.valueType.kind))) {
          this.warn(e.pos, WARN_LOOKUP_MISS, false);
        }
        return;
      }
      case 'CallExpr':
        // calls given a map, not its value (`delete(@m[k])`, `clear(@m)`, `print(@m)`): its keys only
        for (const a of e.args) {
          if (a.kind === 'MapExpr' && MAP_ARG_CALLS.has(e.name) && !(e.name === 'print' && a.keys.length > 0)) {
            this.keys(a);
          } else this.expr(a);
        }
        return;
      case 'IncDecExpr':
        if (e.target.kind === 'MapExpr') {
          this.keys(e.target);
          this.warn(e.pos, WARN_MAP_FULL, true);
        }
        return;
      case 'BinaryExpr':
        mapExprChildren(e, this.mapper);
        if ((e.op === '/' || e.op === '%') && !((this.immediate(e.right) ?? 0) > 0)) {
          this.warn(e.pos, WARN_DIVIDE, false);
        }
        return;
      case 'IndexExpr': {
        mapExprChildren(e, this.mapper);
        const t = this.types.find(e.object);
        if (t?.kind !== 'array' || this.types.constInt(e.index) !== undefined) return;
        const field = e.object.kind === 'FieldExpr' && isMemoryLocation(e.object, this.types);
        if (!field || t.count > 0) this.warn(e.pos, WARN_ARRAY_OOB, false);
        return;
      }
      default:
        mapExprChildren(e, this.mapper);
    }
  }

  /** A divisor the generator puts in the instruction's 32-bit immediate (codegen/gen-core.ts `immediate`). */
  private immediate(e: Expr): number | undefined {
    let v: bigint | undefined;
    const { positional, cpid } = this.inputs;
    if (e.kind === 'IntLit') v = e.value;
    else if (e.kind === 'BuiltinExpr' && e.name === 'cpid' && cpid !== undefined) v = BigInt(cpid);
    else if (e.kind === 'PositionalExpr' && this.types.find(e)?.kind === 'int') {
      v = e.count ? BigInt(positional.length) : (positionalInt(positional[e.index - 1] ?? '0') ?? 0n);
    }
    if (v === undefined || v < -0x80000000n || v > 0x7fffffffn) return undefined;
    return Number(v);
  }
}
