/**
 * One period's samples as a pprof profile (github.com/google/pprof proto/profile.proto, encoded with the
 * pprof-format package), with what src/flame/export/pprof.ts (folded stacks, no labels) cannot carry: per-sample
 * labels and one Mapping per mapped file with its build-id.
 *
 * Layout:
 * - sample types `samples/count` and `cpu/nanoseconds` (values n and n * period), period type cpu/nanoseconds,
 *   period 1e9 / Hz, default sample type `cpu` — the same as `bpfscope profile --format pprof`;
 * - one Sample per distinct (stack, process), location ids leaf first: kernel frames, then user frames;
 * - sample labels (string labels): `comm`, `pid`, and when known `container_id`, `cgroup`, `build_id` (of the
 *   executable) — Pyroscope turns sample labels into series labels, Parca keeps them as pprof labels;
 * - one Location per distinct (mapping, function name), with one Line naming its Function; no addresses (one
 *   profile holds many processes, whose addresses differ), so mappings only name the file and its build-id;
 *   `[kernel.kallsyms]` holds kernel frames (module frames: `[MODULE]`);
 * - unknown frames are named `[unknown]`, as bcc's folded output names them.
 *
 * Across periods, a {@link PprofDictionary} keeps the string table (each string encoded once), the Mapping, Function
 * and Location objects and the ids of stacks, frames and label sets: a period builds only what it sees for the first
 * time. Each profile stays self-contained: it holds the Mappings, Locations and Functions its samples use and the
 * dictionary's whole string table (unused strings are allowed by profile.proto), so the dictionary is started again
 * when it passes its bounds.
 */
import {
  Function as PprofFunction,
  Label,
  Line,
  Location,
  Mapping,
  Profile,
  Sample,
  StringTable,
  ValueType,
} from 'pprof-format';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { Frame } from '../../symbols/resolver.js';
import { Slicer } from './slice.js';

const gzipAsync = promisify(gzip);

/** One distinct stack of one process in a period. */
export interface AgentSample {
  /** Kernel frames, innermost first (may be empty). */
  kernel: readonly Frame[];
  /** User frames, innermost first (may be empty). */
  user: readonly Frame[];
  /** String labels of the sample (`comm`, `pid`, ...); empty values are left out. */
  labels: Readonly<Record<string, string>>;
  /** Samples counted. */
  count: number;
}

export interface AgentProfileOptions {
  /**
   * `cpu` (default): sampled CPU time, sample types `samples/count` and `cpu/nanoseconds` (n, n x periodNs);
   * `offcpu`: measured off-CPU time, one sample type `offcpu/nanoseconds` (the sample's count is nanoseconds),
   * period type `offcpu/nanoseconds`, period 1.
   */
  kind?: 'cpu' | 'offcpu';
  /** Nanoseconds between samples (1e9 / Hz); ignored for `offcpu`. */
  periodNs: number;
  /** Start of the period, ns since the epoch. */
  timeNanos: number;
  /** Length of the period, ns. */
  durationNanos: number;
  /**
   * Build-id of a mapped file (user frames' `module`), '' when none; called once per file and process. It must
   * depend only on the file and the sample's `pid` label.
   */
  buildIdOf?: (file: string, sample: AgentSample) => string;
  /**
   * Strings, functions, locations and mappings kept from earlier profiles of the same kind (default: a new one per
   * profile). With a shared dictionary, `buildIdOf` is asked once per frame object, not once per period: a frame
   * must not change owner or file (the profiler makes new frames when a process execs or its pid is reused).
   */
  dictionary?: PprofDictionary;
}

/**
 * What profiles built one after the other share (see the module comment). Bounded: when the string table passes
 * `maxStrings` or the locations pass `maxLocations`, the next profile starts a new dictionary (counted in
 * {@link resets}). Frames, stacks and label sets are held weakly: what the profiler forgets is not kept alive here.
 */
export class PprofDictionary {
  strings = new StringTable();
  readonly mappings: Mapping[] = [];
  readonly mappingOf = new Map<string, number>();
  readonly functions: PprofFunction[] = [];
  readonly functionOf = new Map<string, number>();
  readonly locations: Location[] = [];
  readonly locationOf = new Map<string, number>();
  /** Function id of each location (index: location id - 1). */
  readonly locationFunction: number[] = [];
  kernelStackIds = new WeakMap<readonly Frame[], number[]>();
  userStackIds = new WeakMap<readonly Frame[], { pid: string; ids: number[] }>();
  kernelFrameIds = new WeakMap<Frame, number>();
  userFrameIds = new WeakMap<Frame, { pid: string; id: number }>();
  labelsOf = new WeakMap<Readonly<Record<string, string>>, Label[]>();
  /** Times the dictionary was started again after passing a bound. */
  resets = 0;

  /**
   * @param maxStrings strings kept before starting again (default 16,384)
   * @param maxLocations locations kept before starting again (default 16,384)
   */
  constructor(
    readonly maxStrings = 16384,
    readonly maxLocations = 16384,
  ) {}

  /** Start again if past a bound (called before a profile is built, so a profile never mixes two dictionaries). */
  checkBounds(): void {
    if (this.strings.strings.length <= this.maxStrings && this.locations.length <= this.maxLocations) return;
    this.resets++;
    this.strings = new StringTable();
    this.mappings.length = 0;
    this.mappingOf.clear();
    this.functions.length = 0;
    this.functionOf.clear();
    this.locations.length = 0;
    this.locationOf.clear();
    this.locationFunction.length = 0;
    this.kernelStackIds = new WeakMap();
    this.userStackIds = new WeakMap();
    this.kernelFrameIds = new WeakMap();
    this.userFrameIds = new WeakMap();
    this.labelsOf = new WeakMap();
  }
}

/**
 * The profile as pprof bytes, gzip-compressed (what Pyroscope and Parca take, and `go tool pprof` reads). Built in
 * slices of `slicer` (the event loop runs between them), compressed on libuv's thread pool.
 */
export async function buildAgentProfile(
  samples: readonly AgentSample[],
  o: AgentProfileOptions,
  slicer = new Slicer(),
): Promise<Uint8Array> {
  const d = o.dictionary ?? new PprofDictionary();
  d.checkBounds();
  const strings = d.strings;
  const str = (s: string): number => strings.dedup(s);
  const off = o.kind === 'offcpu';
  const cpu = str(off ? 'offcpu' : 'cpu');
  const ns = str('nanoseconds');
  const { mappings, mappingOf, functions, functionOf, locations, locationOf, locationFunction } = d;
  const out: Sample[] = [];

  const mappingId = (file: string, buildId: string): number => {
    const key = `${file}\0${buildId}`;
    let id = mappingOf.get(key);
    if (id === undefined) {
      id = mappings.length + 1;
      mappings.push(new Mapping({ id, filename: str(file), buildId: buildId ? str(buildId) : 0, hasFunctions: true }));
      mappingOf.set(key, id);
    }
    return id;
  };
  const locationId = (mapping: number, name: string): number => {
    const key = `${mapping}\0${name}`;
    let id = locationOf.get(key);
    if (id === undefined) {
      let fid = functionOf.get(name);
      if (fid === undefined) {
        fid = functions.length + 1;
        const n = str(name);
        functions.push(new PprofFunction({ id: fid, name: n, systemName: n }));
        functionOf.set(name, fid);
      }
      id = locations.length + 1;
      locations.push(new Location({ id, mappingId: mapping, line: [new Line({ functionId: fid })] }));
      locationFunction.push(fid);
      locationOf.set(key, id);
    }
    return id;
  };

  // Location ids per stack (the frames array: the profiler shares one array per cached stack between samples and
  // periods) and per frame (frames are shared between stacks), and the label list per labels object: a stack costs
  // one lookup once it has been seen, whatever its depth. User frames and stacks belong to one process (the
  // resolver caches them per process); the pid is checked so that a caller sharing them cannot mix build-ids.
  const { kernelStackIds, userStackIds, kernelFrameIds, userFrameIds, labelsOf } = d;
  const kernelIds = (frames: readonly Frame[]): number[] => {
    let ids = kernelStackIds.get(frames);
    if (ids !== undefined) return ids;
    ids = [];
    for (const f of frames) {
      let id = kernelFrameIds.get(f);
      if (id === undefined) {
        const file = f.module !== undefined ? `[${f.module}]` : '[kernel.kallsyms]';
        id = locationId(mappingId(file, ''), f.name ?? '[unknown]');
        kernelFrameIds.set(f, id);
      }
      ids.push(id);
    }
    kernelStackIds.set(frames, ids);
    return ids;
  };
  const userIds = (frames: readonly Frame[], s: AgentSample): number[] => {
    const pid = s.labels.pid ?? '';
    const known = userStackIds.get(frames);
    if (known !== undefined && known.pid === pid) return known.ids;
    const ids: number[] = [];
    let seen: Map<string, number> | undefined;
    for (const f of frames) {
      const k = userFrameIds.get(f);
      if (k !== undefined && k.pid === pid) {
        ids.push(k.id);
        continue;
      }
      const file = f.module ?? '[unknown]';
      seen ??= new Map();
      let m = seen.get(file);
      if (m === undefined) {
        m = mappingId(file, f.module !== undefined ? (o.buildIdOf?.(f.module, s) ?? '') : '');
        seen.set(file, m);
      }
      const id = locationId(m, f.name ?? '[unknown]');
      userFrameIds.set(f, { pid, id });
      ids.push(id);
    }
    userStackIds.set(frames, { pid, ids });
    return ids;
  };

  // Locations this profile uses (by id): only those, their functions and mappings go into it.
  let usedBits = new Uint8Array(locations.length + 1024);
  const mark = (ids: readonly number[]): void => {
    for (const id of ids) {
      if (id >= usedBits.length) {
        const grown = new Uint8Array(Math.max(id + 1, usedBits.length * 2));
        grown.set(usedBits);
        usedBits = grown;
      }
      usedBits[id] = 1;
    }
  };
  for (const s of samples) {
    const pause = slicer.pause();
    if (pause) await pause;
    const k = kernelIds(s.kernel);
    const u = userIds(s.user, s);
    mark(k);
    mark(u);
    let label = labelsOf.get(s.labels);
    if (label === undefined) {
      label = [];
      for (const key in s.labels) {
        const v = s.labels[key]!;
        if (v !== '') label.push(new Label({ key: str(key), str: str(v) }));
      }
      labelsOf.set(s.labels, label);
    }
    const ids = k.length === 0 ? u : u.length === 0 ? k : k.concat(u);
    out.push(new Sample({ locationId: ids, value: off ? [s.count] : [s.count, s.count * o.periodNs], label }));
  }
  const usedLocations: Location[] = [];
  const fnUsed = new Uint8Array(functions.length + 1);
  const mapUsed = new Uint8Array(mappings.length + 1);
  for (let id = 1; id < usedBits.length && id <= locations.length; id++) {
    if (usedBits[id] !== 1) continue;
    const loc = locations[id - 1]!;
    usedLocations.push(loc);
    fnUsed[locationFunction[id - 1]!] = 1;
    mapUsed[Number(loc.mappingId)] = 1;
  }
  const profile = new Profile({
    sampleType: off
      ? [new ValueType({ type: cpu, unit: ns })]
      : [new ValueType({ type: str('samples'), unit: str('count') }), new ValueType({ type: cpu, unit: ns })],
    periodType: new ValueType({ type: cpu, unit: ns }),
    period: off ? 1 : o.periodNs,
    sample: out,
    mapping: mappings.filter((m) => mapUsed[Number(m.id)] === 1),
    location: usedLocations,
    function: functions.filter((f) => fnUsed[Number(f.id)] === 1),
    stringTable: strings,
    timeNanos: o.timeNanos,
    durationNanos: o.durationNanos,
    defaultSampleType: cpu,
  });
  return gzipAsync(profile.encode());
}
