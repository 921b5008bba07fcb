/**
 * The kernel maps of one session: the program's own maps (`@name`s, codegen/plan.ts MapPlan), the ring buffer and its
 * wake control, the lost-event and exit flags, the scratch maps (len(), join(), stack scratch, frame spill) and the
 * stored-stack maps, with their layouts from CompiledProgram.
 */
import { BpfMap, MapFlags, type MapSpec } from '../bpf/map.js';
import type { CompiledProgram, MapPlan } from '../codegen/plan.js';
import { JOIN_ARG_SIZE, JOIN_MAX_ARGS, MapKind } from '../codegen/plan.js';
import { possibleCpus } from '../kernel/cpus.js';

/** Distinct stacks kept per stack map unless SessionOptions.stackMapEntries says otherwise. */
const STACK_MAP_ENTRIES = 4096;

/** The maps the session itself reads, besides finding them by name in `maps`. */
export interface SessionMaps {
  ring: BpfMap;
  lost: BpfMap;
  exitFlag: BpfMap;
}

/**
 * Creates the maps of `c` into `maps` (by kernel name) as they are made, so that a caller closing `maps` releases
 * them on every path, also when one fails: the program's own maps and stack maps through `slow` (default: at once,
 * as all others), the rest at once. `planByIndex[i]` is set to the plan of the map of index `i`.
 * `stackMapEntries`: distinct stacks each stack map holds (default 4096). @throws KernelError
 */
export function createSessionMaps(
  c: CompiledProgram,
  maps: Map<string, BpfMap>,
  planByIndex: MapPlan[],
  stackMapEntries: number | undefined,
  slow: (name: string, spec: MapSpec) => void = (name, spec) => maps.set(name, BpfMap.create(spec)),
): SessionMaps {
  for (const m of c.maps) {
    slow(m.kernelName, {
      type: m.mapType,
      keySize: m.keySize,
      valueSize: m.valueSize,
      maxEntries: m.maxEntries,
      name: m.kernelName,
    });
    planByIndex[m.index] = m;
  }
  const ring = BpfMap.create({
    type: MapKind.RINGBUF,
    keySize: 0,
    valueSize: 0,
    maxEntries: c.ringbufSize,
    name: 'ringbuf',
  });
  maps.set(c.ringbufName, ring);
  const wake = BpfMap.create({
    type: MapKind.ARRAY,
    keySize: 4,
    valueSize: 8,
    maxEntries: 1,
    name: 'ringbuf_wake',
    flags: MapFlags.MMAPABLE,
  });
  maps.set(c.wakeName, wake);
  const lost = BpfMap.create({ type: MapKind.ARRAY, keySize: 4, valueSize: 8, maxEntries: 1, name: 'lost_events' });
  maps.set(c.lostName, lost);
  if (c.lenCountName) {
    maps.set(
      c.lenCountName,
      BpfMap.create({ type: MapKind.PERCPU_ARRAY, keySize: 4, valueSize: 8, maxEntries: 1, name: 'len_count' }),
    );
  }
  if (c.joinBufName) {
    maps.set(
      c.joinBufName,
      BpfMap.create({
        type: MapKind.PERCPU_ARRAY,
        keySize: 4,
        valueSize: 8 + JOIN_MAX_ARGS * JOIN_ARG_SIZE,
        maxEntries: 1,
        name: 'join_buf',
      }),
    );
  }
  for (const st of c.stackMaps) {
    slow(st.name, {
      type: MapKind.HASH,
      keySize: 8,
      valueSize: st.frameSize * st.limit,
      maxEntries: stackMapEntries ?? STACK_MAP_ENTRIES,
      name: st.name,
    });
    maps.set(
      st.scratch,
      BpfMap.create({
        type: MapKind.PERCPU_ARRAY,
        keySize: 4,
        valueSize: st.frameSize * st.limit,
        maxEntries: 1,
        name: st.scratch,
      }),
    );
  }
  for (const f of c.frameMaps ?? []) {
    maps.set(
      f.name,
      BpfMap.create({
        type: MapKind.ARRAY,
        keySize: 4,
        valueSize: f.size,
        maxEntries: possibleCpus().length,
        name: f.name,
      }),
    );
  }
  for (const t of c.funcTables ?? []) {
    const table = BpfMap.create({
      type: MapKind.ARRAY,
      keySize: 4,
      valueSize: t.valueSize,
      maxEntries: t.funcs.length,
      name: t.name,
    });
    maps.set(t.name, table);
    const key = Buffer.alloc(4);
    t.funcs.forEach((f, i) => {
      const value = Buffer.alloc(t.valueSize);
      value.write(f, 'latin1');
      key.writeUInt32LE(i);
      table.update(key, value);
    });
  }
  const exitFlag = BpfMap.create({ type: MapKind.ARRAY, keySize: 4, valueSize: 8, maxEntries: 1, name: 'exit_flag' });
  maps.set(c.exitName, exitFlag);
  return { ring, lost, exitFlag };
}
