/** Map dumps built by hand, for testing a tool's interval output without the kernel. */
import { log2BucketIndex } from '../../src/runtime/output/hist.js';
import type { MapDump } from '../../src/runtime/output/model.js';

/** A MapDump of `hist()` values per key (values in usecs). */
export function histDump(name: string, byKey: Map<bigint | null, number[]>): MapDump {
  return {
    name: `@${name}`,
    keyTypes: [],
    valueType: { kind: 'int', size: 8, signed: false } as never,
    entries: [...byKey].map(([k, values]) => {
      const buckets = new Map<number, bigint>();
      for (const v of values) {
        const i = log2BucketIndex(BigInt(v));
        buckets.set(i, (buckets.get(i) ?? 0n) + 1n);
      }
      return {
        key: k === null ? [] : [{ kind: 'int' as const, value: k, signed: false, size: 4 as const }],
        value: { kind: 'hist' as const, bits: 0, buckets },
      };
    }),
  };
}

/** A MapDump of one `sum()` or `count()` value. */
export function scalarDump(name: string, value: bigint, kind: 'sum' | 'count'): MapDump {
  return {
    name: `@${name}`,
    keyTypes: [],
    valueType: { kind: 'int', size: 8, signed: false } as never,
    entries: [{ key: [], value: { kind, value, signed: false } }],
  };
}
