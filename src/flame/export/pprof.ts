/**
 * Folded stacks to pprof's profile.proto (github.com/google/pprof, proto/profile.proto), encoded with the
 * pprof-format package (DataDog), and back.
 *
 * Layout: one Function per distinct frame name (name and system_name = the frame text; no file or line: folded
 * stacks carry none), one Location per distinct frame (one Line naming its function), one unnamed Mapping
 * (has_functions) that every location belongs to, one Sample per distinct stack with its location ids leaf first.
 * Sample types:
 * - `cpu`: samples/count and cpu/nanoseconds, the values count and count * period (period_type cpu/nanoseconds,
 *   period = 1e9 / hz, or the period given); default sample type cpu.
 * - `offcpu`: offcpu/nanoseconds, the value count * `unitNs` (bcc's offcputime -f writes microseconds: 1000).
 * - `count`: events/count, the value the count (stackcount: how often the traced event happened with this stack).
 * - `space`: space/bytes, the value the count in bytes (memleak: bytes allocated and not yet freed by this stack).
 * Values are int64: a count that is not a whole number of nanoseconds is an ExportError.
 */
import {
  Function as PprofFunction,
  Line,
  Location,
  Mapping,
  Profile,
  Sample,
  StringTable,
  ValueType,
} from 'pprof-format';
import { ExportError, type FoldedStacks } from './stacks.js';

export interface PprofOptions {
  /** What the counts are: CPU samples, off-CPU time, events counted (stackcount), or bytes (memleak). */
  kind: 'cpu' | 'offcpu' | 'count' | 'space';
  /** cpu: nanoseconds between samples (1e9 / the sampling frequency). Required for cpu. */
  periodNs?: number;
  /** offcpu: nanoseconds per unit of the counts (default 1000: microseconds). */
  unitNs?: number;
  /** Collection start, nanoseconds since the epoch (optional). */
  timeNanos?: number;
  /** Collection length in nanoseconds (optional). */
  durationNanos?: number;
}

/** The profile as profile.proto bytes (uncompressed; `pprof` also reads gzip, which the caller may add). */
export function stacksToPprof(folded: FoldedStacks, opts: PprofOptions): Uint8Array {
  const strings = new StringTable();
  const str = (s: string) => strings.dedup(s);
  const ns = str('nanoseconds');
  let sampleType: ValueType[];
  let values: (count: number) => number[];
  let periodType: ValueType | undefined;
  let period = 0;
  if (opts.kind === 'cpu') {
    const p = opts.periodNs;
    if (p === undefined || !(p > 0) || !Number.isInteger(p)) {
      throw new ExportError(
        'a CPU profile needs its sampling period: give the frequency (--hz) or the period (--period)',
      );
    }
    const cpu = str('cpu');
    sampleType = [new ValueType({ type: str('samples'), unit: str('count') }), new ValueType({ type: cpu, unit: ns })];
    periodType = new ValueType({ type: cpu, unit: ns });
    period = p;
    values = (count) => [whole(count, 1), whole(count, p)];
  } else if (opts.kind === 'count') {
    sampleType = [new ValueType({ type: str('events'), unit: str('count') })];
    values = (count) => [whole(count, 1)];
  } else if (opts.kind === 'space') {
    sampleType = [new ValueType({ type: str('space'), unit: str('bytes') })];
    values = (count) => [whole(count, 1)];
  } else {
    const unit = opts.unitNs ?? 1000;
    sampleType = [new ValueType({ type: str('offcpu'), unit: ns })];
    values = (count) => [whole(count, unit)];
  }
  const functions: PprofFunction[] = [];
  const locations: Location[] = [];
  const locationOf = new Map<string, number>();
  const samples: Sample[] = [];
  for (const s of folded.stacks) {
    const ids: number[] = [];
    for (let i = s.frames.length - 1; i >= 0; i--) {
      const name = s.frames[i]!;
      let id = locationOf.get(name);
      if (id === undefined) {
        id = locations.length + 1;
        const nameIdx = str(name);
        functions.push(new PprofFunction({ id, name: nameIdx, systemName: nameIdx }));
        locations.push(new Location({ id, mappingId: 1, line: [new Line({ functionId: id })] }));
        locationOf.set(name, id);
      }
      ids.push(id);
    }
    samples.push(new Sample({ locationId: ids, value: values(s.count) }));
  }
  const profile = new Profile({
    sampleType,
    sample: samples,
    mapping: [new Mapping({ id: 1, hasFunctions: true })],
    location: locations,
    function: functions,
    stringTable: strings,
    timeNanos: opts.timeNanos ?? 0,
    durationNanos: opts.durationNanos ?? 0,
    ...(periodType ? { periodType, period } : {}),
    defaultSampleType: opts.kind === 'cpu' ? str('cpu') : 0,
  });
  return profile.encode();
}

function whole(count: number, scale: number): number {
  const v = count * scale;
  const r = Math.round(v);
  if (Math.abs(v - r) > 1e-6 * Math.max(1, Math.abs(v))) {
    throw new ExportError(`a count of ${count} is not a whole number of ${scale === 1 ? 'samples' : 'nanoseconds'}`);
  }
  return r;
}

/**
 * A profile.proto back to folded lines ("root;...;leaf value", one per sample, in sample order): frames are the
 * location lines' function names (inlined lines of one location become several frames, outermost first), the value
 * is sample value `valueIndex` divided by `divisor`. Throws ExportError when the bytes are not a profile.
 */
export function pprofToFolded(bytes: Uint8Array, valueIndex = 0, divisor = 1): string[] {
  let p: Profile;
  try {
    p = Profile.decode(bytes);
  } catch (err) {
    throw new ExportError(`not a pprof profile: ${(err as Error).message}`);
  }
  const strings = p.stringTable.strings;
  const fnName = new Map<number, string>();
  for (const f of p.function) fnName.set(Number(f.id), strings[Number(f.name)] ?? '');
  const locFrames = new Map<number, string[]>();
  for (const l of p.location) {
    // A location's lines are innermost first; a stack is written root first.
    locFrames.set(Number(l.id), l.line.map((ln) => fnName.get(Number(ln.functionId)) ?? '').reverse());
  }
  const out: string[] = [];
  for (const s of p.sample) {
    const frames: string[] = [];
    for (let i = s.locationId.length - 1; i >= 0; i--) frames.push(...(locFrames.get(Number(s.locationId[i])) ?? []));
    out.push(`${frames.join(';')} ${Number(s.value[valueIndex] ?? 0) / divisor}`);
  }
  return out;
}
