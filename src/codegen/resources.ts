/**
 * The resource pass's frame sizing (compiler.ts `resources`, before `codegen`): for each unit, from its typed AST,
 * an upper bound of the bytes the code generator's frame (codegen/frame.ts) will need, and from it whether the
 * frame lives on the 512-byte BPF stack or in a frame map. The generator is told up front; it never retries.
 *
 * The bound mirrors how the generator uses its frame: scratch variables and loop-callback contexts are permanent
 * for the whole program, every other slot is a temporary that lives until the end of its statement (or condition),
 * and nested statements reuse the space after the enclosing statement's own temporaries. So
 * `bound = permanent + max over statements (temporaries of its expressions + the most any nested statement needs)`.
 * A statement's temporaries are bounded per expression node: 8 bytes (a scalar copied to memory, a helper's key
 * or out-parameter) plus the node's value when it is memory (a string, tuple, record, buffer), plus what the node's
 * kind builds beside its value (a map's key and value, a call's record and argument block, str()'s read buffer).
 * Every term rounds up to 8 bytes as the frame does. A bound that is too low is a bug (the generator then reports
 * an internal error, see compiler.ts); one that is too high only moves a probe's frame to a frame map needlessly,
 * which test/codegen/resources.test.ts checks against the golden programs and the differential cases.
 */

import type { Block, CallExpr, Expr, FieldExpr, MapExpr, Stmt } from '../lang/ast.js';
import type { ProbeUnit } from '../lang/units.js';
import type { TypeTable } from '../lang/type-table.js';
import { type SType, sizeOf } from '../lang/types.js';
import { MAX_STACK } from '../bpf/opcodes.js';
import { align8 } from './frame.js';
import type { MapPlan } from './plan.js';

/** The frame decision of one unit: its bound in bytes and whether it needs a frame map. */
export interface FramePlan {
  /** Upper bound of the bytes the generator's frame of the unit's main program will use. */
  bound: number;
  /** The bound exceeds the 512-byte BPF stack: the frame lives in a per-CPU frame map. */
  inMap: boolean;
}

/** A run-time warning's ring buffer record (8-byte header) with the flag and lost-event keys (ProbeGen asyncRecord). */
const WARNING_RECORD = 24;

/** Calls that send their format to user space as an id in an asynchronous record (codegen/gen-calls.ts). */
const RECORD_FORMAT_CALLS: ReadonlySet<string> = new Set(['printf', 'system', 'errorf', 'warnf', 'cat']);

/** Types whose values the generator keeps in a register (no frame memory of their own). */
function isScalar(t: SType | undefined): boolean {
  return t === undefined || t.kind === 'int' || t.kind === 'bool' || t.kind === 'pointer' || t.kind === 'none';
}

/** Bytes of frame a value of type `t` takes when it is memory (0 for a scalar). */
function memBytes(t: SType | undefined): number {
  return isScalar(t) ? 0 : align8(sizeOf(t!));
}

/**
 * The frame plan of unit `u` from its type table `types` (lang/type-table.ts: its expressions' and variables'
 * types, and which expressions are compile-time integers). `maps` are the planned kernel maps by program name
 * (codegen/maps.ts); `helperWarnings` is `-k` (a warning record beside map reads).
 */
export function planFrame(
  u: ProbeUnit,
  types: TypeTable,
  maps: ReadonlyMap<string, MapPlan>,
  helperWarnings = false,
): FramePlan {
  const sizer = new FrameSizer(types, maps, helperWarnings, u.expanded.provider === 'iter');
  let permanent = 0;
  // scratch variables: a stack copy of an address-taken scalar, or the buffer of a string/tuple/record variable
  for (const [name, t] of types.variables) {
    if (isScalar(t)) permanent += types.addressTaken.has(name) ? 8 : 0;
    else permanent += align8(sizeOf(t));
  }
  sizer.varBytes = permanent + 8 * types.variables.size;
  // interval probes keep an 8-byte key for the exit flag check for the whole program
  const base = u.expanded.provider === 'interval' ? 8 : 0;
  const temps = Math.max(u.probe.predicate ? sizer.expr(u.probe.predicate) : 0, sizer.block(u.probe.body));
  const bound = permanent + sizer.callbackContexts + base + temps;
  return { bound, inMap: bound > MAX_STACK };
}

class FrameSizer {
  /** Bytes of every scratch variable (as a loop callback's context copies them: 8 a scalar, its size a buffer). */
  varBytes = 0;
  /** Permanent bytes of the loop-callback contexts (`for` over a map or a non-constant range). */
  callbackContexts = 0;

  constructor(
    private readonly types: TypeTable,
    private readonly maps: ReadonlyMap<string, MapPlan>,
    private readonly helperWarnings: boolean,
    /** The unit is an iter probe: its printf formats in the kernel from the format's bytes in the frame. */
    private readonly iter: boolean,
  ) {}

  block(b: Block): number {
    let most = 0;
    for (const s of b.stmts) most = Math.max(most, this.stmt(s));
    return most;
  }

  /** Temporaries of statement `s` at its most: its own expressions' plus its nested statements' at their most. */
  stmt(s: Stmt): number {
    switch (s.kind) {
      case 'ExprStmt':
        return this.expr(s.expr);
      case 'AssignStmt': {
        // `/=`, `%=`: the division by zero run-time warning
        const own = this.expr(s.target) + this.expr(s.value) + (s.op === '/=' || s.op === '%=' ? WARNING_RECORD : 0);
        if (s.target.kind !== 'MapExpr') return own;
        // a map store: the key and the value (the target's cost: {@link node} of a MapExpr), the "map full"
        // warning, an updated value's copy; an aggregation's initial value (tseries: its clock map's key and value)
        return (
          own +
          WARNING_RECORD +
          8 +
          (s.value.kind === 'CallExpr' ? 16 + (s.value.name === 'tseries' ? this.mapBytes(s.target) : 0) : 0)
        );
      }
      case 'VarDeclStmt':
        return s.value ? this.expr(s.variable) + this.expr(s.value) : 0;
      case 'IfStmt':
        return Math.max(this.expr(s.cond), this.block(s.then), s.else ? this.stmt(s.else) : 0);
      case 'Block':
        return this.block(s);
      case 'JumpStmt':
        return s.value ? this.expr(s.value) : 0;
      case 'WhileStmt':
        return Math.max(this.expr(s.cond), this.block(s.body));
      case 'UnrollStmt':
        return this.expr(s.count) + this.block(s.body);
      case 'ForStmt': {
        const it = s.iterable;
        const callback =
          it.kind === 'MapExpr' ||
          this.types.constInt(it.start) === undefined ||
          this.types.constInt(it.end) === undefined;
        if (!callback) return this.expr(it) + this.block(s.body);
        // the body runs as a callback subprogram with its own frame; this frame keeps the callback's context
        this.callbackContexts += 24 + this.varBytes;
        return this.expr(it) + 8;
      }
    }
  }

  /** Temporaries of evaluating `e`: the sum over its nodes (temporaries are not released within a statement). */
  expr(e: Expr): number {
    let total = 0;
    const visit = (node: unknown, path = false): void => {
      if (Array.isArray(node)) {
        for (const x of node) visit(x);
        return;
      }
      if (!node || typeof node !== 'object' || ArrayBuffer.isView(node)) return;
      const n = node as { kind?: string };
      if (n.kind === 'Block' || n.kind === 'ExprStmt' || n.kind === 'AssignStmt' || n.kind === 'VarDeclStmt') {
        // a block expression's statements: counted whole, as if their temporaries all stayed
        total += n.kind === 'Block' ? this.blockSum(node as Block) : this.stmt(node as Stmt);
        return;
      }
      if (n.kind !== undefined && 'pos' in n) total += this.node(node as Expr, path);
      if (n.kind === 'CallExpr' && this.recordFormat((node as CallExpr).name)) {
        // the format of a record-building printf is a printf id, never bytes in the frame
        visit((node as CallExpr).args.slice(1));
        return;
      }
      for (const [k, v] of Object.entries(node)) {
        if (k === 'type' || k === 'pos') continue;
        // `a.b.c`, `a->b[i]`: the struct or array on the way to a field or element is an address, not a value
        visit(v, k === 'object' && (n.kind === 'IndexExpr' || (n.kind === 'FieldExpr' && !(node as FieldExpr).arrow)));
      }
    };
    visit(e);
    return total;
  }

  /** `name` is a call whose format goes to user space by id (codegen/gen-calls.ts PRINTF_ACTIONS; not in iter probes). */
  private recordFormat(name: string): boolean {
    return !this.iter && RECORD_FORMAT_CALLS.has(name);
  }

  private blockSum(b: Block): number {
    let sum = 0;
    for (const s of b.stmts) sum += this.stmt(s);
    return sum;
  }

  /** Temporaries one node's own code allocates (its children are counted by {@link expr}). */
  private node(e: Expr, path: boolean): number {
    // a struct or array only addressed on the way to one of its fields or elements (see {@link expr})
    const addressOnly =
      path &&
      (e.kind === 'FieldExpr' || e.kind === 'BuiltinExpr') &&
      (this.types.find(e)?.kind === 'record' || this.types.find(e)?.kind === 'array');
    const value = addressOnly ? 0 : memBytes(this.types.find(e));
    switch (e.kind) {
      // a variable is read where it lives; literals and constants are immediates (a string literal is bytes)
      case 'VarExpr':
      case 'IntLit':
      case 'BoolLit':
      case 'PositionalExpr':
      case 'SizeofExpr':
      case 'OffsetofExpr':
      case 'RangeExpr':
        return memBytes(this.types.find(e));
      case 'StrLit':
        return align8(Math.max(memBytes(this.types.find(e)), Buffer.byteLength(e.value) + 1));
      case 'MapExpr':
        // the key, the looked-up or stored value, a copy of a memory value, `-k`'s run-time warning's record
        return 8 + this.mapBytes(e) + value + (this.helperWarnings ? WARNING_RECORD : 0);
      case 'CallExpr':
        return this.call(e);
      case 'BuiltinExpr':
        // a scalar's scratch (a PID namespace's info, a probe read's destination); beside a memory value a stack's
        // key, a name table's key; nothing for `args` on the way to a field (the context's address)
        if (addressOnly) return 0;
        return isScalar(this.types.find(e)) ? 8 : 16 + value;
      case 'BinaryExpr':
        // arithmetic and comparisons of scalars are registers; a comparison of memory values copies a scalar side
        // (`/` and `%` warn of a division by zero at run time)
        return (
          (isScalar(this.types.find(e.left)) && isScalar(this.types.find(e.right)) ? 0 : 8 + value) +
          (e.op === '/' || e.op === '%' ? WARNING_RECORD : 0)
        );
      case 'IncDecExpr':
        // `@m++`: the updated value's copy and the "map full" warning
        return 8 + 8 + WARNING_RECORD;
      case 'IndexExpr':
        // an element read into memory (a probe read's destination, a copy off the frame), and an array's
        // out-of-bounds run-time warning's record
        return 8 + (this.types.find(e.object)?.kind === 'array' ? WARNING_RECORD : 0) + memBytes(this.types.find(e));
      default:
        // a scalar read into memory (a probe read's destination, a cast through memory), or the node's memory value
        return 8 + value;
    }
  }

  /** A map's key and value buffers (0 for a map the planner does not know, e.g. an argument that is not a map). */
  private mapBytes(m: MapExpr): number {
    const plan = this.maps.get(m.name);
    return plan ? align8(plan.keySize) + align8(Math.max(8, plan.valueSize)) : 0;
  }

  /**
   * What a call builds: a call returning memory (str, ntop, buf, strftime...) builds its value and nothing else
   * (str() may read more than it returns: `strRead`); a scalar call (strncmp, has_key...) a key or scratch per
   * argument and 24 bytes; a void call (printf, print, system, exit...) may copy every argument into an
   * asynchronous record or kernel argument block (8 bytes a scalar, its size a memory value) with an 8-byte
   * header, the ring buffer's flag key, the lost-event counter's key and a key of its own (40 bytes). A map
   * argument (print, clear, delete, has_key) adds its key and value.
   */
  private call(c: CallExpr): number {
    let bytes = 0;
    for (const a of c.args) if (a.kind === 'MapExpr') bytes += this.mapBytes(a);
    if (!isScalar(this.types.find(c))) {
      // a scalar argument may be copied to memory first (ntop, macaddr...; str and buf read through a pointer)
      if (c.name !== 'str' && c.name !== 'buf') for (const a of c.args) if (isScalar(this.types.find(a))) bytes += 8;
      return bytes + align8(Math.max(sizeOf(this.types.find(c)!), c.strRead ?? 0));
    }
    if (this.types.find(c)?.kind !== 'none' && this.types.find(c) !== undefined) return bytes + 24 + 8 * c.args.length;
    bytes += 40;
    for (const a of c.args) bytes += Math.max(8, memBytes(this.types.find(a)));
    return bytes;
  }
}
