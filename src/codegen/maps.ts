/**
 * Map planning: kernel map type, key layout and value layout for each `@map` from its analysed types.
 *
 * - aggregations (count/sum/min/max/avg/stats/hist/lhist) live in PERCPU_HASH maps and are summed (or min/max
 *   merged) in user space, as DESIGN.md asks (exact, no atomics);
 * - hist/lhist/tseries keys are the user key followed by a u64 bucket index (bpftrace's layout);
 * - tseries values are `{u64 value, u64 meta, u64 epoch}` (lang/builtins/tseries.ts);
 * - scalar maps (`@x`) use a u64 key of 0;
 * - min/max values are `{u64 value, u64 is_set}` so CPUs that never saw a value do not contribute;
 * - avg/stats values are `{u64 total, u64 count}`.
 *
 * Every hash map is preallocated (map_flags 0, as bpftrace and bcc create theirs), although the kernel takes 5-140
 * ms to preallocate a PERCPU_HASH of 10,240-40,960 entries (runtime/session.ts loadAsync overlaps that with the
 * linking of the programs instead). BPF_F_NO_PREALLOC is not safe for a map a BPF program inserts into, in any
 * attach context, on 6.1-6.18: such a map takes each new element from bpf_mem_alloc (kernel/bpf/memalloc.c), whose
 * per-CPU free list starts with 4 elements (`prefill_mem_cache`: "1st run of bpf prog won't be doing more than 4
 * map_update_elem from irq disabled region") and is refilled only later, from irq_work, with GFP_NOWAIT
 * allocations (per-CPU values: `__alloc_percpu_gfp`, which then can only use already populated chunks). When the
 * list is empty, or the CPU is already inside the allocator (a program nested in another), `unit_alloc` returns
 * NULL and the update fails with ENOMEM (kernel/bpf/hashtab.c `alloc_htab_elem`): a lost count with room left in
 * the map. Seen here: offcputime's sum() in sched_switch (interrupts off, the irq_work cannot run between
 * switches) printed "Map full" with BPF_F_NO_PREALLOC (bench/results/startup-issue13.md). A preallocated map fails
 * an insert only when it holds max_entries elements. (perf_event programs may not use run-time allocated hash
 * maps at all before 6.1: kernel/bpf/verifier.c `check_map_prog_compatibility`.)
 */
import type { DeclaredMap } from '../lang/passes/mapdecl.js';
import type { MapSymbol } from '../lang/units.js';
import { type SType, sizeOf, tupleLayout } from '../lang/types.js';
import { MapKind, type MapPlan } from './plan.js';

/** bpftrace's default `max_map_keys`. */
export const DEFAULT_MAX_MAP_KEYS = 4096;

/** Byte size of a map value of type `t` (per CPU for aggregations). */
export function mapValueSize(t: SType): number {
  switch (t.kind) {
    case 'min':
    case 'max':
    case 'avg':
    case 'stats':
      return 16;
    case 'tseries':
      return 24;
    case 'count':
    case 'sum':
    case 'hist':
    case 'lhist':
      return 8;
    default:
      return Math.max(1, sizeOf(t));
  }
}

export function isPerCpuAggregation(t: SType): boolean {
  return ['count', 'sum', 'min', 'max', 'avg', 'stats', 'hist', 'lhist', 'tseries'].includes(t.kind);
}

/** hist, lhist and tseries maps: their key ends in a u64 bucket index. */
export function isHistogram(t: SType): boolean {
  return t.kind === 'hist' || t.kind === 'lhist' || t.kind === 'tseries';
}

/**
 * Plan the kernel layout of every map, in name order. `declared` gives the type and size of maps declared with
 * `let @m = TYPE(N);` (see lang/passes/mapdecl.ts); the others get HASH or PERCPU_HASH with `maxEntries`.
 */
export function planMaps(
  symbols: Iterable<MapSymbol>,
  maxEntries = DEFAULT_MAX_MAP_KEYS,
  declared: ReadonlyMap<string, DeclaredMap> = new Map(),
): MapPlan[] {
  const sorted = [...symbols].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return sorted.map((m, index) => {
    const perCpu = isPerCpuAggregation(m.valueType);
    let keyOffsets: number[];
    let keySize: number;
    const decl = declared.get(m.name);
    if (m.keyTypes.length === 0) {
      keyOffsets = [];
      // array maps have u32 keys; the key of a map without keys is 0 either way
      keySize = decl?.mapType === MapKind.PERCPU_ARRAY ? 4 : 8;
    } else {
      // the keys laid out as the tuple of them (`for ($kv : @m)` reads $kv.0 so), the size kept a multiple of 8
      const l = tupleLayout(m.keyTypes);
      keyOffsets = l.offsets;
      keySize = Math.ceil(l.size / 8) * 8;
    }
    if (isHistogram(m.valueType)) {
      // the bucket index follows the user key (8-aligned); a scalar histogram has only the bucket index.
      keySize = m.keyTypes.length === 0 ? 8 : keySize + 8;
    }
    const label = m.name === '' ? 'AT_' : `AT_${m.name}`;
    return {
      index,
      name: m.name,
      kernelName: label.slice(0, 15),
      mapType: decl?.mapType ?? (perCpu ? MapKind.PERCPU_HASH : MapKind.HASH),
      keyTypes: m.keyTypes,
      keyOffsets,
      keySize,
      valueType: m.valueType,
      valueSize: mapValueSize(m.valueType),
      maxEntries: decl?.maxEntries ?? maxEntries,
      perCpu,
      pos: m.pos,
    };
  });
}

/** Offset of the hist/lhist/tseries bucket index within the key. */
export function bucketOffset(plan: MapPlan): number {
  return plan.keySize - 8;
}
