/**
 * Code of `@m[k] = tseries(n, interval, count[, agg])` (lang/builtins/tseries.ts has the check and the layout):
 *
 *   now = bpf_ktime_get_tai_ns()            (or the value of the BPFTRACE_DUMMY_TS_MAP map, a test hook)
 *   epoch = now / interval; key.bucket = epoch % count
 *   v = lookup(key)
 *   v exists:  if agg && v.epoch != epoch { v.value = 0; v.meta = 0 }; update v in place; v.epoch = epoch
 *   v missing: build {0, 0, epoch} on the stack, update it, insert it
 *
 * where "update" is bpftrace's (codegen_llvm.cpp `tseries`): none: value = n, meta = now; sum: value += n;
 * avg: value += n, meta += 1; min/max: value = n when meta is 0 or n is smaller/larger, meta = 1. The map is
 * per-CPU, so the read-modify-write needs no atomics; user space combines the CPUs (runtime/output/tseries.ts).
 */
import { HELPER_ID as H } from '../bpf/helpers.js';
import * as I from '../bpf/insn.js';
import type { Expr, MapExpr } from '../lang/ast.js';
import type { SType } from '../lang/types.js';
import { type Frame, zeroStack } from './frame.js';
import type { HelperArg, IrFunction } from './ir.js';
import { bucketOffset } from './maps.js';
import type { MapPlan } from './plan.js';

/** What the tseries code needs from the generator (ProbeGen provides it; see aggregate.ts AggregationGen). */
export interface TseriesGen {
  readonly fn: IrFunction;
  readonly frame: Frame;
  readonly tables: { readonly maps: ReadonlyMap<string, MapPlan>; readonly dummyTsMap?: string };
  scalar(e: Expr): number;
  mapKey(plan: MapPlan, m: MapExpr): number;
  callHelper(id: number, args: HelperArg[]): number;
  warnIfMapFull(rc: number): void;
}

type Tseries = Extract<SType, { kind: 'tseries' }>;

/** The clock: the dummy map's u64 value (0 when unset) when the test hook names a scalar map, else TAI ns. */
function now(gen: TseriesGen): number {
  const fn = gen.fn;
  const dummy = gen.tables.dummyTsMap !== undefined ? gen.tables.maps.get(gen.tables.dummyTsMap) : undefined;
  if (!dummy || dummy.keyTypes.length !== 0 || dummy.valueType.kind !== 'int') {
    return gen.callHelper(H.ktime_get_tai_ns, []);
  }
  const keyOff = gen.frame.temp(dummy.keySize);
  zeroStack(fn, keyOff, dummy.keySize);
  const p = gen.callHelper(H.map_lookup_elem, [{ map: dummy.kernelName }, { stack: keyOff }]);
  const t = fn.vreg();
  const unset = fn.newLabel('ts_unset');
  const done = fn.newLabel('ts_done');
  fn.emit(I.jmpImm('jeq', p, 0, unset));
  fn.emit(I.ldx(8, t, p, 0));
  fn.emit(I.ja(done));
  fn.mark(unset);
  fn.emit(I.mov64Imm(t, 0));
  fn.mark(done);
  return t;
}

/** Update the `{value, meta, epoch}` at `base + off` with value `n` (see the module docstring). */
function update(fn: IrFunction, t: Tseries, base: number, off: number, n: number, ts: number, epoch: number): void {
  const cur = fn.vreg();
  switch (t.agg) {
    case 'none':
      fn.emit(I.stx(8, base, n, off));
      fn.emit(I.stx(8, base, ts, off + 8));
      break;
    case 'avg':
    case 'sum':
      if (t.agg === 'avg') {
        fn.emit(I.ldx(8, cur, base, off + 8));
        fn.emit(I.alu64Imm('add', cur, 1));
        fn.emit(I.stx(8, base, cur, off + 8));
      }
      fn.emit(I.ldx(8, cur, base, off));
      fn.emit(I.alu64('add', cur, n));
      fn.emit(I.stx(8, base, cur, off));
      break;
    case 'min':
    case 'max': {
      const store = fn.newLabel('ts_store');
      const kept = fn.newLabel('ts_kept');
      fn.emit(I.ldx(8, cur, base, off + 8));
      fn.emit(I.jmpImm('jeq', cur, 0, store));
      fn.emit(I.ldx(8, cur, base, off));
      const keep = t.agg === 'min' ? (t.signed ? 'jsle' : 'jle') : t.signed ? 'jsge' : 'jge';
      fn.emit(I.jmp(keep, cur, n, kept));
      fn.mark(store);
      fn.emit(I.stx(8, base, n, off));
      fn.emit(I.st(8, base, off + 8, 1));
      fn.mark(kept);
      break;
    }
  }
  fn.emit(I.stx(8, base, epoch, off + 16));
}

/** Emit `target = tseries(args...)`; `plan` is the map's (value type tseries). */
export function emitTseries(gen: TseriesGen, plan: MapPlan, target: MapExpr, args: Expr[]): void {
  const fn = gen.fn;
  const t = plan.valueType as Tseries;
  const n = gen.scalar(args[0]!);
  const keyOff = gen.mapKey(plan, target);
  const ts = now(gen);
  const epoch = fn.vreg();
  const div = fn.vreg();
  fn.emit(I.ldImm64(div, BigInt(t.interval)));
  fn.emit(I.mov64(epoch, ts));
  fn.emit(I.alu64('div', epoch, div));
  const bucket = fn.vreg();
  fn.emit(I.mov64(bucket, epoch));
  fn.emit(I.ldImm64(div, BigInt(t.count)));
  fn.emit(I.alu64('mod', bucket, div));
  fn.emit(I.stx(8, fn.frameBase, bucket, keyOff + bucketOffset(plan)));
  const p = gen.callHelper(H.map_lookup_elem, [{ map: plan.kernelName }, { stack: keyOff }]);
  const init = fn.newLabel('ts_init');
  const done = fn.newLabel('ts_done');
  fn.emit(I.jmpImm('jeq', p, 0, init));
  if (t.agg !== 'none') {
    const same = fn.newLabel('ts_same');
    const old = fn.vreg();
    fn.emit(I.ldx(8, old, p, 16));
    fn.emit(I.jmp('jeq', old, epoch, same));
    fn.emit(I.st(8, p, 0, 0));
    fn.emit(I.st(8, p, 8, 0));
    fn.mark(same);
  }
  update(fn, t, p, 0, n, ts, epoch);
  fn.emit(I.ja(done));
  fn.mark(init);
  const valOff = gen.frame.temp(plan.valueSize);
  zeroStack(fn, valOff, plan.valueSize);
  update(fn, t, fn.frameBase, valOff, n, ts, epoch);
  gen.warnIfMapFull(
    gen.callHelper(H.map_update_elem, [{ map: plan.kernelName }, { stack: keyOff }, { stack: valOff }, { imm: 0 }]),
  );
  fn.mark(done);
}
