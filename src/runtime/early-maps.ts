/**
 * Maps created before the program that uses them is compiled: a tool that knows one of its maps' exact spec before
 * compiling (memleak's 1,000,000-entry `@__allocs`, whose preallocation takes the kernel 150-330 ms: bench/results/
 * startup-issue13.md Parts 7 and 15) starts its BPF_MAP_CREATE on a worker thread with {@link createMapEarly}, and
 * the next session's {@link Session.loadAsync} takes it instead of creating that map itself, so the preallocation
 * overlaps the compilation as well as the linking.
 *
 * A map is taken only for an identical spec (type, key and value size, entries, flags, name); a spec that does not
 * match (the tool's guess drifted from codegen) is not an error: the session creates its own map as before, and the
 * early one is closed by {@link releaseEarlyMaps}, which the session calls once its maps are requested and the
 * tool calls when it ends (so that an error before the session started leaves nothing open). A creation that
 * failed rejects the session's load with the same KernelError as its own creation would have.
 */
import { BpfMap, type MapSpec } from '../bpf/map.js';

/** Pending creations by {@link specKey}, oldest first. */
const pool = new Map<string, Promise<BpfMap>[]>();

function specKey(s: MapSpec): string {
  return [s.type, s.keySize, s.valueSize, s.maxEntries, s.flags ?? 0, s.mapExtra ?? 0, s.innerMapFd ?? 0, s.name].join(
    '/',
  );
}

/** Starts BPF_MAP_CREATE of `spec` on a worker thread for the next session to take (see the module comment). */
export function createMapEarly(spec: MapSpec): void {
  const p = BpfMap.createAsync(spec);
  p.catch(() => undefined); // an unclaimed failure is not an unhandled rejection; a claimer still sees it
  const k = specKey(spec);
  const list = pool.get(k);
  if (list) list.push(p);
  else pool.set(k, [p]);
}

/** The oldest pending early creation of exactly `spec`, removed from the pool; undefined when there is none. */
export function takeEarlyMap(spec: MapSpec): Promise<BpfMap> | undefined {
  const k = specKey(spec);
  const list = pool.get(k);
  const p = list?.shift();
  if (list?.length === 0) pool.delete(k);
  return p;
}

/** Closes every early map nobody took (once its creation settles); resolves when all are closed. */
export async function releaseEarlyMaps(): Promise<void> {
  const left = [...pool.values()].flat();
  pool.clear();
  await Promise.allSettled(left.map((p) => p.then((m) => m.close())));
}
