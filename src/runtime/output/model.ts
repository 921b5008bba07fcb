/**
 * The decoded data model the output formatters print. The runtime decodes map keys/values and async event
 * arguments from BPF memory into these shapes (per-CPU values already summed) and hands them to `text.ts` /
 * `json.ts`. Nothing here knows about BPF byte layouts.
 */
import type { SType } from '../../lang/types.js';
import type { TseriesValue } from './tseries.js';

/** A decoded scalar value. */
export type Value =
  | {
      kind: 'int';
      value: bigint;
      signed: boolean;
      size: 1 | 2 | 4 | 8;
      /**
       * Optional symbolic form (added field): an enum constant's name or a pointer's `0x…` text. Text output and
       * printf `%s` print the symbol; JSON output and numeric conversions (`%d`, `%x`, ...) use `value`, as
       * bpftrace's `Primitive::Symbolic` does.
       */
      symbol?: string;
    }
  | { kind: 'bool'; value: boolean }
  /**
   * A string. `raw` is set for `buf()` values: the bytes themselves, while `value` is their `%r` text (printable
   * ASCII as is, other bytes as `\xNN`), which map printing and `%s` use.
   */
  | { kind: 'string'; value: string; raw?: Buffer }
  | { kind: 'tuple'; elems: Value[] }
  /** A record (named tuple) or a C struct/union: fields in declaration order (bpftrace's `{ .a = 1 }`). */
  | { kind: 'record'; fields: { name: string; value: Value }[] }
  /** A C array of non-char elements (bpftrace prints `[1,2,3]`). */
  | { kind: 'array'; elems: Value[] }
  | { kind: 'none' };

/** A decoded aggregation (already summed over CPUs). */
export type AggValue =
  | { kind: 'count' | 'sum' | 'min' | 'max'; value: bigint; signed: boolean }
  | { kind: 'avg' | 'stats'; count: bigint; total: bigint; signed: boolean }
  /** log2 histogram; `buckets` maps bpftrace's internal bucket index to its count (only non-zero buckets). */
  | { kind: 'hist'; bits: number; buckets: Map<number, bigint> }
  | { kind: 'lhist'; min: number; max: number; step: number; buckets: Map<number, bigint> }
  /** tseries(): points by epoch (output/tseries.ts). */
  | TseriesValue;

export interface MapEntry {
  /** [] for a scalar map `@x` */
  key: Value[];
  value: Value | AggValue;
}

export interface MapDump {
  /** '@x', or '@' */
  name: string;
  keyTypes: SType[];
  valueType: SType;
  entries: MapEntry[];
}
