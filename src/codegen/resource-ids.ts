/**
 * The resource pass's ids (compiler.ts `resources`, before `codegen`): every call that sends user space a record
 * with an id — `printf`, `system`, `errorf`, `warnf`, `cat` (a format: {@link PrintfPlan}), `time` (a strftime
 * format), `join` (a separator), `print` of a value (its type) — gets its id here, and every `kstack`/`ustack` its
 * stack map ({@link StackMapPlan}). The code generator looks them up by node ({@link ResourceIds.id}); it assigns
 * no id of these itself.
 *
 * Ids are numbered per kind from 0 in the order the generator emits the calls: units in order, in a unit the
 * predicate then the body, statements and expressions in source order (lang/visitor.ts's children), a loop
 * callback's body where its `for` is (the generator emits it there). A node has one id per unit (its type table):
 * an `unroll` body emitted N times uses its calls' ids N times, as bpftrace's codegen does (it resets its async ids
 * for each unrolled copy), and an unroll of 0 emits nothing, so gets no id. Units expanded from one probe share
 * its AST but each has its own types, so its own ids.
 *
 * The run-time warnings (division by zero, map full, out-of-bounds index, `-k` lookup misses) share the printf
 * table (a WARNF record's id indexes it too): their ids follow the calls' formats, assigned by codegen/warning-ids.ts
 * (keyed by the span the generator positions each at, {@link ResourceIds.warnings}).
 */

import type { Block, CallExpr, Expr, Probe, Stmt } from '../lang/ast.js';
import { compilePrintf } from '../lang/printf.js';
import type { TypeTable } from '../lang/type-table.js';
import { storageType } from '../lang/typeops.js';
import { type SType, tupleLayout } from '../lang/types.js';
import type { ProbeUnit } from '../lang/units.js';
import { type ChildMapper, mapExprChildren, mapStmtChildren } from '../lang/visitor.js';
import { BpfscopeError } from '../errors.js';
import type { PrintfPlan, PrintValuePlan, StackMapPlan } from './plan.js';
import { assignWarningIds, type WarningIds, type WarningInputs } from './warning-ids.js';

/** Calls whose format goes to user space as a printf id (codegen/gen-calls.ts `printf`, PRINTF_ACTIONS). */
const FORMAT_CALLS: ReadonlySet<string> = new Set(['printf', 'system', 'errorf', 'warnf', 'cat']);

/** What the resource pass assigned: the tables user space reads by id, and each call's id per unit. */
export interface ResourceIds {
  /** Formats of the printf-family calls, by id, then the run-time warnings (codegen/warning-ids.ts). */
  printfs: PrintfPlan[];
  /** Types of `print(value)`, by id. */
  printValues: PrintValuePlan[];
  /** `time()` formats, by id. */
  timeFormats: string[];
  /** `join()` separators, by id. */
  joinSeparators: string[];
  /** Stack trace maps, by IR map name (`stack_k127`), in order of first use. */
  stackMaps: Map<string, StackMapPlan>;
  /** Per unit (its type table): the id of each call above, in its kind's table. */
  readonly byUnit: Map<TypeTable, Map<CallExpr, number>>;
  /** Per unit: the printf-table id of each run-time warning, by the span it is emitted at and its message. */
  warnings: WarningIds;
}

/** The stack map a `kstack`/`ustack` value of type `t` is stored in (codegen/gen-expr.ts `stack`). */
export function stackMapPlan(t: Extract<SType, { kind: 'kstack' | 'ustack' }>): StackMapPlan {
  const user = t.kind === 'ustack';
  const limit = Math.max(1, t.limit);
  const buildId = t.kind === 'ustack' && t.mode === 'build_id';
  const name = `stack_${user ? 'u' : 'k'}${buildId ? 'b' : ''}${limit}`;
  return { name, scratch: `${name}_buf`, user, limit, frameSize: buildId ? 32 : 8 };
}

/**
 * The id the resource pass gave call `c` of the unit typed by `types`.
 *
 * @throws BpfscopeError (internal) when it gave none: the walk below and the generator disagree, a bug
 */
export function resourceId(ids: ResourceIds, types: TypeTable, c: CallExpr): number {
  const id = ids.byUnit.get(types)?.get(c);
  if (id === undefined) {
    throw new BpfscopeError(
      `internal: the resource pass assigned no id to ${c.name}() at ${c.pos.line}:${c.pos.col} ` +
        '(codegen/resource-ids.ts); please report this program',
    );
  }
  return id;
}

/** A table with no ids yet (what {@link assignResourceIds} starts from). */
export function emptyResourceIds(): ResourceIds {
  return {
    printfs: [],
    printValues: [],
    timeFormats: [],
    joinSeparators: [],
    stackMaps: new Map(),
    byUnit: new Map(),
    warnings: new Map(),
  };
}

/**
 * Assign the ids of every unit's calls and collect the stack maps, in emission order (see the file comment), then
 * the run-time warnings' ids after the formats (codegen/warning-ids.ts; `inputs`: what decides where the generator
 * warns). Without `inputs` (tests of the call ids alone), no warnings.
 */
export function assignResourceIds(
  units: readonly ProbeUnit[],
  types: ReadonlyMap<ProbeUnit, TypeTable>,
  inputs?: WarningInputs,
): ResourceIds {
  const ids = emptyResourceIds();
  for (const u of units) {
    const table = types.get(u)!;
    if (ids.byUnit.has(table)) continue;
    new IdWalker(ids, table, u).probe(u.probe);
  }
  if (inputs) ids.warnings = assignWarningIds(units, types, inputs, ids.printfs);
  return ids;
}

/** A read-only walk of one unit in the generator's order, assigning ids as it meets the calls. */
class IdWalker {
  private readonly own = new Map<CallExpr, number>();
  /** iter probes print into the seq_file (bpf_seq_printf): their printf() has no record and no id. */
  private readonly seqPrintf: boolean;

  constructor(
    private readonly ids: ResourceIds,
    private readonly types: TypeTable,
    u: ProbeUnit,
  ) {
    ids.byUnit.set(types, this.own);
    this.seqPrintf = u.expanded.provider === 'iter';
  }

  probe(p: Probe): void {
    if (p.predicate) this.expr(p.predicate);
    for (const s of p.body.stmts) this.stmt(s);
  }

  /** The visitor's child functions as a read-only walk (each returns its input). */
  private readonly mapper: ChildMapper = {
    expr: (e: Expr): Expr => {
      this.expr(e);
      return e;
    },
    stmt: (s: Stmt): Stmt => {
      this.stmt(s);
      return s;
    },
    block: (b: Block): Block => {
      for (const s of b.stmts) this.stmt(s);
      return b;
    },
  };

  private stmt(s: Stmt): void {
    // an unroll of 0 (or a count the generator cannot read) emits no body
    if (s.kind === 'UnrollStmt' && (this.types.constInt(s.count) ?? 0n) <= 0n) return;
    mapStmtChildren(s, this.mapper);
  }

  private expr(e: Expr): void {
    if (e.kind === 'CallExpr') this.call(e);
    if ((e.kind === 'BuiltinExpr' || e.kind === 'CallExpr') && (e.name === 'kstack' || e.name === 'ustack')) {
      const t = this.types.find(e);
      if (t?.kind === 'kstack' || t?.kind === 'ustack') {
        const plan = stackMapPlan(t);
        if (!this.ids.stackMaps.has(plan.name)) this.ids.stackMaps.set(plan.name, plan);
      }
    }
    mapExprChildren(e, this.mapper);
  }

  /** The id of call `c`, when it sends one (codegen/gen-calls.ts's statement calls). */
  private call(c: CallExpr): void {
    const ids = this.ids;
    // a node met twice (a subtree a rewrite shared between two places) keeps its first id, as an unroll copy does
    if (this.own.has(c)) return;
    if (FORMAT_CALLS.has(c.name) && !(c.name === 'printf' && this.seqPrintf)) {
      const fmt = (c.args[0] as { value: string }).value;
      compilePrintf(fmt);
      const argTypes = c.args.slice(1).map((a) => storageType(this.types.get(a)));
      const layout = tupleLayout(argTypes);
      const id = ids.printfs.length;
      ids.printfs.push({ id, format: fmt, argTypes, offsets: layout.offsets, payloadSize: layout.size, pos: c.pos });
      this.own.set(c, id);
    } else if (c.name === 'time') {
      this.own.set(c, ids.timeFormats.push(c.args[0]?.kind === 'StrLit' ? c.args[0].value : '%H:%M:%S\n') - 1);
    } else if (c.name === 'join') {
      this.own.set(c, ids.joinSeparators.push(c.args[1]?.kind === 'StrLit' ? c.args[1].value : ' ') - 1);
    } else if (c.name === 'print' && c.args[0] && !(c.args[0].kind === 'MapExpr' && c.args[0].keys.length === 0)) {
      const id = ids.printValues.length;
      ids.printValues.push({ id, type: storageType(this.types.get(c.args[0])) });
      this.own.set(c, id);
    }
  }
}
