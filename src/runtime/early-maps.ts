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
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BpfMap, type MapSpec } from '../bpf/map.js';
import { readTrustedFile, trustedDir, writeTrustedFile } from '../kernel/cache-file.js';
import { hash64 } from './link-cache.js';

/** Pending creations by {@link specKey}, oldest first. */
const pool = new Map<string, Promise<BpfMap>[]>();

function specKey(s: MapSpec): string {
  return [s.type, s.keySize, s.valueSize, s.maxEntries, s.flags ?? 0, s.mapExtra ?? 0, s.innerMapFd ?? 0, s.name].join(
    '/',
  );
}

/**
 * Starts BPF_MAP_CREATE of `spec` on a worker thread for the next session to take (see the module comment); nothing
 * when a creation of the same spec is already pending (one program never has two maps of one spec: the name is in it).
 */
export function createMapEarly(spec: MapSpec): void {
  const k = specKey(spec);
  if (pool.has(k)) return;
  const p = BpfMap.createAsync(spec);
  p.catch(() => undefined); // an unclaimed failure is not an unhandled rejection; a claimer still sees it
  pool.set(k, [p]);
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

/**
 * Maps worth creating early: at least this many bytes of keys and values preallocated (a 16,384-entry stack map of
 * 127 frames is 16.6 MB, 40-60 ms of kernel time; the small maps of every program are not worth a worker).
 */
export const PLANNED_MIN_BYTES = 1 << 20;

/** The tool run whose big maps are being recorded (see {@link startPlannedMaps}). */
let recording: { dir: string; file: string; key: string; stored: string | null; specs: MapSpec[] } | null = null;

/**
 * The directory of planned map specs: `cache/early-maps/` beside the CLI or tools bundle (as the link cache's
 * `cache/link*`), null outside the two bundles (the library and the tests from dist/src plan nothing).
 */
function planDir(): string | null {
  try {
    const file = fileURLToPath(import.meta.url);
    const name = basename(file);
    if (name !== 'cli.cjs' && name !== 'tools.cjs') return null;
    return join(dirname(file), 'cache', name === 'cli.cjs' ? 'early-maps' : 'early-maps-tools');
  } catch {
    return null;
  }
}

/**
 * Starts, before anything is compiled, the creation of the big maps that the last run with the same `key` (a tool's
 * name and its argv) created, and records this run's big maps for the next one ({@link noteSessionMap},
 * {@link savePlannedMaps}). Generalises what memleak does with its one known spec to every tool: a hash or stack map
 * of thousands of entries is preallocated by the kernel in 5-140 ms (bench/results/startup-issue13.md), which this
 * overlaps with the compilation. Only a map of exactly the recorded spec is taken by the session
 * ({@link takeEarlyMap}); a stale record costs one unused creation, closed by {@link releaseEarlyMaps}, never a
 * different map. The record is read only from a trusted file (kernel/cache-file.ts) whose first line is the key
 * itself; any failure to read or write is no plan, never an error. `dir` (tests) replaces the bundle's directory.
 */
export function startPlannedMaps(key: string, dir: string | null = planDir()): void {
  if (dir === null || key.includes('\n')) return;
  const file = join(dir, hash64(key));
  let stored: string | null = null;
  const bytes = readTrustedFile(dir, file);
  if (bytes !== null) {
    const text = bytes.toString('utf8');
    const nl = text.indexOf('\n');
    if (nl >= 0 && text.slice(0, nl) === key) {
      stored = text.slice(nl + 1);
      try {
        for (const s of JSON.parse(stored) as MapSpec[]) {
          if (isPlannable(s)) createMapEarly(s);
        }
      } catch {
        stored = null;
      }
    }
  }
  recording = { dir, file, key, stored, specs: [] };
}

/** Whether `spec` is a big map without references to other fds: the only kind planned. */
function isPlannable(s: MapSpec): boolean {
  return (
    typeof s === 'object' &&
    s !== null &&
    Number.isSafeInteger(s.type) &&
    Number.isSafeInteger(s.keySize) &&
    Number.isSafeInteger(s.valueSize) &&
    Number.isSafeInteger(s.maxEntries) &&
    (s.flags === undefined || Number.isSafeInteger(s.flags)) &&
    typeof s.name === 'string' &&
    s.innerMapFd === undefined &&
    s.mapExtra === undefined &&
    s.maxEntries * (s.keySize + s.valueSize) >= PLANNED_MIN_BYTES
  );
}

/** A map the session of the recorded run created (runtime/session.ts loadAsync); big ones are kept for the plan. */
export function noteSessionMap(spec: MapSpec): void {
  if (recording && isPlannable(spec)) {
    const { type, keySize, valueSize, maxEntries, flags, name } = spec;
    recording.specs.push({ type, keySize, valueSize, maxEntries, ...(flags !== undefined ? { flags } : {}), name });
  }
}

/** Writes the recorded run's big maps for its next start (when they differ from the plan read); once per run. */
export function savePlannedMaps(): void {
  const r = recording;
  recording = null;
  if (!r) return;
  const text = JSON.stringify(r.specs);
  if (text === r.stored || (r.stored === null && r.specs.length === 0)) return;
  if (trustedDir(r.dir)) writeTrustedFile(r.file, `${r.key}\n${text}`);
}

/** Ends the recording without writing (the run failed before its session loaded) and closes what nobody took. */
export async function endPlannedMaps(): Promise<void> {
  recording = null;
  await releaseEarlyMaps();
}
