/**
 * Aggregation updates: `@m[k] = count()`, `sum(v)`, `min(v)`, `max(v)`, `avg(v)`, `stats(v)`, `hist(v)`,
 * `lhist(v, min, max, step)`. Values live in PERCPU_HASH maps (see `maps.ts` for layouts), so an update is a
 * lookup followed by a plain read-modify-write of this CPU's slot, or an insert of the initial value when the key is
 * new — bpftrace's scheme, exact without atomics.
 *
 * Histogram bucket indexes are the ones `runtime/output/hist.ts` decodes (bpftrace's layout):
 * - log2 (`hist`, 0 extra bits): 0 for n < 0, 1 for n == 0, 2 + floor(log2 n) for n >= 1;
 *   with k extra bits each power of two [2^e, 2^(e+1)) for e >= k is split into 2^k linear sub-buckets;
 * - linear (`lhist`): 0 below min, 1 + (n - min) / step inside, 1 + (max - min) / step at or above max.
 */

import { HELPER_ID as H } from '../bpf/helpers.js';
import * as I from '../bpf/insn.js';
import type { CallExpr, Expr, MapExpr } from '../lang/ast.js';
import { type Frame, zeroStack } from './frame.js';
import type { HelperArg, IrFunction } from './ir.js';
import { bucketOffset } from './maps.js';
import type { MapPlan } from './plan.js';
import { emitTseries, type TseriesGen } from './tseries.js';

/**
 * What an aggregation update needs from the code generator (`gen.ts` ProbeGen provides it): the function and
 * frame being generated, a scalar expression's register, a map key's frame slot, a helper call and the `-k`
 * map-full warning. Declared here so that this module does not import gen.ts, which imports it.
 */
export interface AggregationGen extends TseriesGen {
  readonly fn: IrFunction;
  readonly frame: Frame;
  scalar(e: Expr): number;
  mapKey(plan: MapPlan, m: MapExpr): number;
  callHelper(id: number, args: HelperArg[]): number;
  warnIfMapFull(rc: number): void;
}

export function emitAggregation(
  gen: AggregationGen,
  plan: MapPlan,
  target: MapExpr,
  call: CallExpr,
  args: Expr[],
): void {
  const fn = gen.fn;
  const vt = plan.valueType;
  if (vt.kind === 'tseries') {
    emitTseries(gen, plan, target, args);
    return;
  }
  const value = args.length > 0 && call.name !== 'count' ? gen.scalar(args[0]!) : null;
  const keyOff = gen.mapKey(plan, target);
  if (vt.kind === 'hist' || vt.kind === 'lhist') {
    const idx =
      vt.kind === 'hist' ? log2Index(gen, value!, vt.bits) : linearIndex(gen, value!, vt.min, vt.max, vt.step);
    fn.emit(I.stx(8, fn.frameBase, idx, keyOff + bucketOffset(plan)));
  }
  const p = gen.callHelper(H.map_lookup_elem, [{ map: plan.kernelName }, { stack: keyOff }]);
  const init = fn.newLabel('agg_init');
  const done = fn.newLabel('agg_done');
  fn.emit(I.jmpImm('jeq', p, 0, init));
  const signed = 'signed' in vt ? vt.signed : false;
  const cur = fn.vreg();
  switch (vt.kind) {
    case 'count':
    case 'hist':
    case 'lhist':
      fn.emit(I.ldx(8, cur, p, 0));
      fn.emit(I.alu64Imm('add', cur, 1));
      fn.emit(I.stx(8, p, cur, 0));
      break;
    case 'sum':
      fn.emit(I.ldx(8, cur, p, 0));
      fn.emit(I.alu64('add', cur, value!));
      fn.emit(I.stx(8, p, cur, 0));
      break;
    case 'avg':
    case 'stats':
      fn.emit(I.ldx(8, cur, p, 0));
      fn.emit(I.alu64('add', cur, value!));
      fn.emit(I.stx(8, p, cur, 0));
      fn.emit(I.ldx(8, cur, p, 8));
      fn.emit(I.alu64Imm('add', cur, 1));
      fn.emit(I.stx(8, p, cur, 8));
      break;
    case 'min':
    case 'max': {
      const set = fn.vreg();
      const store = fn.newLabel('mm_store');
      fn.emit(I.ldx(8, set, p, 8));
      fn.emit(I.jmpImm('jeq', set, 0, store));
      fn.emit(I.ldx(8, cur, p, 0));
      // keep the current value unless the new one is smaller (min) / larger (max)
      const keep = vt.kind === 'min' ? (signed ? 'jsle' : 'jle') : signed ? 'jsge' : 'jge';
      fn.emit(I.jmp(keep, cur, value!, done));
      fn.mark(store);
      fn.emit(I.stx(8, p, value!, 0));
      fn.emit(I.st(8, p, 8, 1));
      break;
    }
    default:
      break;
  }
  fn.emit(I.ja(done));
  fn.mark(init);
  const valOff = gen.frame.temp(plan.valueSize);
  zeroStack(fn, valOff, plan.valueSize);
  switch (vt.kind) {
    case 'count':
    case 'hist':
    case 'lhist':
      fn.emit(I.st(8, fn.frameBase, valOff, 1));
      break;
    case 'sum':
      fn.emit(I.stx(8, fn.frameBase, value!, valOff));
      break;
    case 'avg':
    case 'stats':
    case 'min':
    case 'max':
      fn.emit(I.stx(8, fn.frameBase, value!, valOff));
      fn.emit(I.st(8, fn.frameBase, valOff + 8, 1));
      break;
    default:
      break;
  }
  gen.warnIfMapFull(
    gen.callHelper(H.map_update_elem, [{ map: plan.kernelName }, { stack: keyOff }, { stack: valOff }, { imm: 0 }]),
  );
  fn.mark(done);
}

/** Bucket index of a log2 histogram with `bits` sub-bucket bits (see the module docstring). */
function log2Index(gen: AggregationGen, value: number, bits: number): number {
  const fn = gen.fn;
  const n = fn.vreg();
  const idx = fn.vreg();
  const done = fn.newLabel('l2_done');
  fn.emit(I.mov64(n, value));
  fn.emit(I.mov64Imm(idx, 0));
  fn.emit(I.jmpImm('jslt', n, 0, done));
  fn.emit(I.mov64Imm(idx, 1));
  fn.emit(I.jmpImm('jeq', n, 0, done));
  // e = floor(log2 n) by binary search over shifts
  const e = fn.vreg();
  const t = fn.vreg();
  fn.emit(I.mov64Imm(e, 0));
  fn.emit(I.mov64(t, n));
  const hi = fn.vreg();
  for (const s of [32, 16, 8, 4, 2, 1]) {
    // if (t >> s) != 0 { t >>= s; e += s }
    const skip = fn.newLabel('l2_s');
    fn.emit(I.mov64(hi, t));
    fn.emit(I.alu64Imm('rsh', hi, s));
    fn.emit(I.jmpImm('jeq', hi, 0, skip));
    fn.emit(I.mov64(t, hi));
    fn.emit(I.alu64Imm('add', e, s));
    fn.mark(skip);
  }
  if (bits === 0) {
    fn.emit(I.mov64(idx, e));
    fn.emit(I.alu64Imm('add', idx, 2));
    fn.mark(done);
    return idx;
  }
  // With k sub-bucket bits: values below 2^k map one-to-one (index 1 + n); above, index =
  // 1 + 2^k + (e - k) * 2^k + ((n >> (e - k)) & (2^k - 1)).
  const k = bits;
  const small = fn.newLabel('l2_small');
  fn.emit(I.jmpImm('jlt', e, k, small));
  const sh = fn.vreg();
  fn.emit(I.mov64(sh, e));
  fn.emit(I.alu64Imm('sub', sh, k));
  const sub = fn.vreg();
  fn.emit(I.mov64(sub, n));
  fn.emit(I.alu64('rsh', sub, sh));
  fn.emit(I.alu64Imm('and', sub, (1 << k) - 1));
  fn.emit(I.mov64(idx, sh));
  fn.emit(I.alu64Imm('lsh', idx, k));
  fn.emit(I.alu64('add', idx, sub));
  fn.emit(I.alu64Imm('add', idx, 1 + (1 << k)));
  fn.emit(I.ja(done));
  fn.mark(small);
  fn.emit(I.mov64(idx, n));
  fn.emit(I.alu64Imm('add', idx, 1));
  fn.mark(done);
  return idx;
}

/** Bucket index of a linear histogram (see the module docstring). */
function linearIndex(gen: AggregationGen, value: number, min: number, max: number, step: number): number {
  const fn = gen.fn;
  const idx = fn.vreg();
  const done = fn.newLabel('lin_done');
  fn.emit(I.mov64Imm(idx, 0));
  fn.emit(I.jmpImm('jslt', value, min, done));
  fn.emit(I.mov64Imm(idx, 1 + Math.floor((max - min) / step)));
  fn.emit(I.jmpImm('jsge', value, max, done));
  fn.emit(I.mov64(idx, value));
  fn.emit(I.alu64Imm('sub', idx, min));
  fn.emit(I.alu64Imm('div', idx, step));
  fn.emit(I.alu64Imm('add', idx, 1));
  fn.mark(done);
  return idx;
}
