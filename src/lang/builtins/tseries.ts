/**
 * `tseries(n, interval_ns, num_intervals[, agg])` (bpftrace v0.26 `docs/stdlib.md` "tseries"): a time series,
 * assigned to a map (`@m[k] = tseries(...)`). Each call records integer `n` in the interval the current time falls
 * in; the map keeps the last `num_intervals` intervals of `interval_ns` nanoseconds. `agg` (`avg`, `max`, `min`,
 * `sum`) says how the values recorded in one interval combine; without it the last value wins.
 *
 * Kernel layout (bpftrace's): a PERCPU_HASH keyed by the user key followed by a u64 bucket (epoch % num_intervals,
 * epoch = now / interval_ns, now from `bpf_ktime_get_tai_ns`), value `{u64 value, u64 meta, u64 epoch}` (meta: the
 * timestamp of the last write without `agg`, the value count for `avg`, "is set" for `min`/`max`); code in
 * codegen/tseries.ts, printing in runtime/output/tseries.ts.
 *
 * Checks and their wording follow bpftrace's `pre_type_check.cpp`: `interval_ns` and `num_intervals` are integer
 * literals (duration suffixes allowed, `100ms`) or positional parameters, interval >= 1, 1 <= num_intervals <
 * 1000000, `agg` one of the four names.
 */
import type { CallExpr } from '../ast.js';
import { type SType, type TseriesAgg, typeName } from '../types.js';
import type { BuiltinChecker, BuiltinFunction } from './types.js';

const AGGS: readonly TseriesAgg[] = ['avg', 'max', 'min', 'sum'];

/** Type a `tseries(...)` call assigned to a map; null after an error (reported through `a`). */
export function checkTseries(c: CallExpr, a: BuiltinChecker): SType | null {
  const n = c.args[0] ? a.expr(c.args[0]) : null;
  for (const arg of c.args.slice(1)) a.expr(arg);
  if (!a.argCount(c, 3, 4)) return null;
  if (n && n.kind !== 'int' && n.kind !== 'bool') {
    a.error(c.args[0]!.pos, `tseries() only supports integer arguments (${typeName(n)} provided)`);
    return null;
  }
  const interval = a.constValue(c.args[1]!);
  if (interval === null) {
    a.error(c.args[1]!.pos, 'tseries: invalid interval_ns value (must be non-negative literal)');
    return null;
  }
  const count = a.constValue(c.args[2]!);
  if (count === null) {
    a.error(c.args[2]!.pos, 'tseries: invalid num_intervals value (must be non-negative literal)');
    return null;
  }
  if (interval <= 0n) {
    a.error(c.args[1]!.pos, `tseries() interval_ns must be >= 1 (${interval} provided)`);
    return null;
  }
  if (count <= 0n) {
    a.error(c.args[2]!.pos, `tseries() num_intervals must be >= 1 (${count} provided)`);
    return null;
  }
  if (interval > BigInt(Number.MAX_SAFE_INTEGER)) {
    a.error(c.args[1]!.pos, `tseries() interval_ns must be < 2^53 (${interval} provided)`);
    return null;
  }
  if (count > 1000000n) {
    a.error(c.args[2]!.pos, `tseries() num_intervals must be < 1000000 (${count} provided)`);
    return null;
  }
  let agg: TseriesAgg = 'none';
  const aggArg = c.args[3];
  if (aggArg) {
    if (aggArg.kind !== 'StrLit' || !(AGGS as readonly string[]).includes(aggArg.value)) {
      const given = aggArg.kind === 'StrLit' ? aggArg.value : '';
      a.error(
        aggArg.pos,
        `tseries() expects one of the following aggregation functions: ${AGGS.join(', ')} ("${given}" provided)`,
      );
      return null;
    }
    agg = aggArg.value as TseriesAgg;
  }
  const signed = !!n && n.kind === 'int' && n.signed;
  return { kind: 'tseries', interval: Number(interval), count: Number(count), agg, signed };
}

export const TSERIES_FUNCTIONS: readonly BuiltinFunction[] = [
  {
    name: 'tseries',
    role: 'aggregation',
    check: checkTseries,
    doc: {
      usage: '`tseries(n, interval, count[, agg])`',
      note: 'the last `count` intervals of `interval` ns; `agg`: `avg`, `max`, `min`, `sum` (default: last value); TAI clock',
    },
  },
];
