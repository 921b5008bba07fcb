/**
 * Map declarations (`let @name = TYPE(MAX_ENTRIES);`, bpftrace v0.24+ `language.md` "Map declarations"): checks each
 * declaration against the types semantic analysis gave the map and yields the kernel map type and size to use.
 *
 * Types (uapi `enum bpf_map_type`): `hash` (HASH), `lruhash` (LRU_HASH), `percpuhash` (PERCPU_HASH),
 * `percpulruhash` (LRU_PERCPU_HASH), `percpuarray` (PERCPU_ARRAY, one entry: a map without keys). Aggregations
 * (count, sum, hist, ...) are counted per CPU and need a per-CPU type; other values a shared one. Undeclared maps
 * keep the defaults (`max_map_keys` entries, HASH or PERCPU_HASH).
 */
import type { MapDecl } from '../ast.js';
import type { Diagnostic } from '../diagnostics.js';
import type { SType } from '../types.js';

/** uapi `enum bpf_map_type` numbers of the declarable types. */
export const DECLARABLE_MAP_TYPES: Readonly<Record<string, number>> = {
  hash: 1,
  percpuhash: 5,
  percpuarray: 6,
  lruhash: 9,
  percpulruhash: 10,
};

/** What a declaration sets for one map. */
export interface DeclaredMap {
  /** uapi map type number. */
  mapType: number;
  maxEntries: number;
}

const PER_CPU_VALUES = new Set(['count', 'sum', 'min', 'max', 'avg', 'stats', 'hist', 'lhist', 'tseries']);

/** The declaration type name bpftrace would infer for a map of these key and value types. */
function inferredType(keyTypes: SType[], valueType: SType): string {
  if (!PER_CPU_VALUES.has(valueType.kind)) return 'hash';
  const keyless =
    keyTypes.length === 0 && valueType.kind !== 'hist' && valueType.kind !== 'lhist' && valueType.kind !== 'tseries';
  return keyless ? 'percpuarray' : 'percpuhash';
}

function compatible(declared: string, keyTypes: SType[], valueType: SType): boolean {
  const perCpu = PER_CPU_VALUES.has(valueType.kind);
  if (declared === 'hash' || declared === 'lruhash') return !perCpu;
  if (declared === 'percpuhash' || declared === 'percpulruhash') return perCpu;
  return inferredType(keyTypes, valueType) === 'percpuarray';
}

/**
 * Check `decls` against the analysed maps (`maps`: name -> key and value types). Returns the diagnostics (bpftrace's
 * wording where it has one) and the declared type and size of each declared map that is used.
 */
export function checkMapDecls(
  decls: readonly MapDecl[],
  maps: ReadonlyMap<string, { keyTypes: SType[]; valueType: SType }>,
): { diagnostics: Diagnostic[]; declared: Map<string, DeclaredMap> } {
  const diagnostics: Diagnostic[] = [];
  const declared = new Map<string, DeclaredMap>();
  const seen = new Set<string>();
  for (const d of decls) {
    const label = d.name === '' ? '@' : `@${d.name}`;
    if (seen.has(d.name)) {
      diagnostics.push({ severity: 'error', message: `Map ${label} is already declared`, pos: d.pos });
      continue;
    }
    seen.add(d.name);
    const type = DECLARABLE_MAP_TYPES[d.mapType];
    if (type === undefined) {
      diagnostics.push({
        severity: 'error',
        message: `Invalid bpf map type: ${d.mapType}`,
        pos: d.typePos,
        hint: `HINT: Valid map types: ${Object.keys(DECLARABLE_MAP_TYPES).join(', ')}`,
      });
      continue;
    }
    if (d.maxEntries < 1n || d.maxEntries > 0xffffffffn) {
      diagnostics.push({
        severity: 'error',
        message: 'Max entries must be between 1 and 2^32-1',
        pos: d.maxEntriesPos,
      });
      continue;
    }
    if (d.mapType === 'percpuarray' && d.maxEntries !== 1n) {
      diagnostics.push({
        severity: 'error',
        message: 'percpuarray maps hold one entry: a map without keys, e.g. let @a = percpuarray(1);',
        pos: d.maxEntriesPos,
      });
      continue;
    }
    const m = maps.get(d.name);
    if (!m) {
      // declared and never used: nothing is created, and bpftrace warns
      diagnostics.push({ severity: 'warning', message: `Unused map: ${label}`, pos: d.pos });
      continue;
    }
    if (!compatible(d.mapType, m.keyTypes, m.valueType)) {
      diagnostics.push({
        severity: 'error',
        message: `Incompatible map types. Type from declaration: ${d.mapType}. Type from value/key type: ${inferredType(m.keyTypes, m.valueType)}`,
        pos: d.pos,
      });
      continue;
    }
    declared.set(d.name, { mapType: type, maxEntries: Number(d.maxEntries) });
  }
  return { diagnostics, declared };
}
