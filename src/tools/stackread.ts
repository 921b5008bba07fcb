/**
 * Reading a stack tool's aggregation map (`@[kstack(raw), ustack(raw), comm, id] = count()` and its variants) for
 * the report, straight from the map's bytes: each distinct stored stack is read from its stack map once and
 * symbolized once (kernel stacks once, user stacks once per process), and no stack is turned into text and parsed
 * back. The general path ({@link Tracer.readMap}) formats every key's stacks as text, one stack-map lookup and one
 * symbolization per key; a full 40,960-key profile map then took about a minute to report (issue 19).
 *
 * The other key elements (comm, pid/tid, ...) and the value (count()/sum(), summed over the CPUs) are decoded by the
 * runtime's decoder, as {@link Tracer.readMap} decodes them.
 */
import type { SType } from '../lang/types.js';
import { buildMapDump, type DecodeContext, type RawEntry } from '../runtime/decode.js';
import type { MapDump, Value } from '../runtime/output/model.js';
import type { Tracer } from '../runtime/tracer.js';
import type { Frame, SymbolResolver } from '../symbols/resolver.js';
import type { BpfMap } from '../bpf/map.js';
import { BpfscopeError } from '../errors.js';

/** A thread of a stack entry: its name, IDs and stacks (frames innermost first). */
export interface StackThread {
  comm: string;
  /** The number printed in `comm (N)`: the process ID for profile, the thread ID for offcputime/offwaketime. */
  id: number;
  /** offwaketime: the thread's process ID (`id` is its thread ID). */
  tgid?: number;
  /** Kernel frames, innermost first; undefined when kernel stacks were not collected (-U). */
  kernel?: Frame[];
  /** User frames, innermost first; undefined when user stacks were not collected (-K). */
  user?: Frame[];
}

/** One aggregated stack of a stack tool, symbolized. */
export interface StackEntry extends StackThread {
  /** Samples (profile), microseconds (offcputime, offwaketime) or events (stackcount). */
  value: bigint;
  /**
   * offwaketime: the threads that woke this one, nearest first (`wakers[0]` woke it, `wakers[1]` woke
   * `wakers[0]` before that, ... with `--chain`); their stacks are the waker's at the wake-up.
   */
  wakers?: StackThread[];
}

/** Which parts of a map key hold what: indexes into the key tuple (undefined: not collected). */
export interface StackKeyLayout {
  kernel?: number;
  user?: number;
  comm: number;
  id: number;
}

/** A map key's string part; an internal error when the key has another shape. Shared with stacktool.ts. */
export function stringOf(v: Value | undefined): string {
  if (v?.kind === 'string') return v.value;
  throw new BpfscopeError('internal: a stack tool map key is not a string where one was expected');
}

/** A map key's integer part as a number; an internal error when the key has another shape. */
export function numberOf(v: Value | undefined): number {
  if (v?.kind === 'int') return Number(v.value);
  throw new BpfscopeError('internal: a stack tool map key is not an integer where one was expected');
}

type StackType = Extract<SType, { kind: 'kstack' | 'ustack' }>;

/** What {@link readStackMap} did: for tests and benchmarks. */
export interface StackReadStats {
  /** Entries of the aggregation map. */
  entries: number;
  /** Stack-map lookups (one per distinct stored stack). */
  stackLookups: number;
  /** Stacks symbolized: distinct kernel stacks, plus distinct (process, user stack) pairs. */
  symbolized: number;
}

/**
 * The stack map's handle for a stack of type `t`: the tool's {@link Tracer.stackStore} (`stack_k127`,
 * `stack_u127`, ...), given as a function so tests can pass fakes.
 */
export type StackStore = (kind: 'k' | 'u', limit: number) => BpfMap | undefined;

/** A key element holding a stack, as the decoder hands it back: a reference into {@link StackRefs}. */
const REF = '\u0000stack:';

/** The stacks referred to by the decoded keys, each once. */
export class StackRefs {
  readonly refs: { t: StackType; id: bigint }[] = [];
  private readonly index = new Map<string, number>();

  /** DecodeContext.stack: a token naming (type, id); the user stack's pid is taken from the key (userPid). */
  ref(t: StackType, id: bigint): string {
    const k = `${t.kind === 'ustack' ? 'u' : 'k'}${Math.max(1, t.limit)}:${id}`;
    let i = this.index.get(k);
    if (i === undefined) {
      i = this.refs.length;
      this.refs.push({ t, id });
      this.index.set(k, i);
    }
    return `${REF}${i}`;
  }
}

/**
 * The entries of map `@name` with every kstack/ustack key element replaced by a token (see {@link stackFrames}),
 * the other elements and the value decoded as {@link Tracer.readMap} decodes them.
 */
export interface TokenDump {
  dump: MapDump;
  refs: StackRefs;
}

/** Read map `@name` of `tracer` (batch lookups), with stacks as tokens. */
export function readTokenDump(tracer: Pick<Tracer, 'rawMap'>, name: string): TokenDump {
  const { plan, map } = tracer.rawMap(name);
  const refs = new StackRefs();
  const raw: RawEntry[] = [];
  for (const [key, value] of map.entries()) raw.push({ key, slots: map.perCpu ? map.perCpuValues(value) : [value] });
  const ctx: DecodeContext = { stack: (t, id) => refs.ref(t, id) };
  return { dump: buildMapDump(plan, raw, ctx), refs };
}

/**
 * Symbolizes the stacks of a {@link TokenDump}: each distinct kernel stack once, each distinct user stack once per
 * process. Frames are shared between entries: read-only.
 */
export class StackFrames {
  private readonly kernel = new Map<number, Frame[]>();
  private readonly user = new Map<number, Map<number, Frame[]>>();
  private readonly bytes = new Map<number, Buffer | null>();
  readonly stats: StackReadStats = { entries: 0, stackLookups: 0, symbolized: 0 };
  private readonly key = Buffer.alloc(8);

  constructor(
    private readonly refs: StackRefs,
    private readonly store: StackStore,
    private readonly resolver: SymbolResolver,
    private readonly kernelFilter: (frames: Frame[]) => Frame[] = (f) => f,
  ) {}

  /** The stack a key element names: `[]` when the kernel recorded none or the element is no token. */
  private refOf(v: Value | undefined): number {
    if (v?.kind !== 'string' || !v.value.startsWith(REF)) return -1;
    return Number(v.value.slice(REF.length));
  }

  /** The stored frames of reference `i` (u64 little-endian), read once; null when not stored. */
  private framesBytes(i: number): Buffer | null {
    let b = this.bytes.get(i);
    if (b !== undefined) return b;
    const { t, id } = this.refs.refs[i]!;
    b = null;
    if (id >= 0n) {
      const m = this.store(t.kind === 'ustack' ? 'u' : 'k', Math.max(1, t.limit));
      if (m) {
        this.key.writeBigInt64LE(id, 0);
        this.stats.stackLookups++;
        b = m.lookup(this.key) ?? null;
      }
    }
    this.bytes.set(i, b);
    return b;
  }

  /** Kernel frames of the stack element `v` (innermost first), after the kernel filter. */
  kernelOf(v: Value | undefined): Frame[] {
    const i = this.refOf(v);
    if (i < 0) return this.kernelFilter([]);
    let f = this.kernel.get(i);
    if (f === undefined) {
      const b = this.framesBytes(i);
      const limit = this.refs.refs[i]!.t.limit;
      f = this.kernelFilter(b ? this.resolver.kernelStackFromBytes(b, limit) : []);
      this.kernel.set(i, f);
      this.stats.symbolized++;
    }
    return f;
  }

  /** User frames of the stack element `v` in process `pid` (innermost first). */
  userOf(v: Value | undefined, pid: number): Frame[] {
    const i = this.refOf(v);
    if (i < 0) return [];
    let byPid = this.user.get(i);
    if (byPid === undefined) this.user.set(i, (byPid = new Map()));
    let f = byPid.get(pid);
    if (f === undefined) {
      const b = this.framesBytes(i);
      const limit = this.refs.refs[i]!.t.limit;
      f = b ? this.resolver.userStackFromBytes(pid, b, limit) : [];
      byPid.set(pid, f);
      this.stats.symbolized++;
    }
    return f;
  }
}

/**
 * The entries of map `@name` of `tracer` (keys laid out as `layout`, values count()/sum()), symbolized as
 * `symbolizeEntries` (stacktool.ts) symbolizes a {@link Tracer.readMap} dump: user stacks in the process
 * `userPid(key)`, kernel frames through `kernelFilter`. Each distinct stored stack is read and symbolized once (see
 * the module comment); `stats` (when given) receives the counts.
 */
export function readStackEntries(
  tracer: Pick<Tracer, 'rawMap' | 'stackStore'>,
  name: string,
  layout: StackKeyLayout,
  resolver: SymbolResolver,
  userPid: (key: Value[]) => number,
  kernelFilter?: (frames: Frame[]) => Frame[],
  stats?: StackReadStats,
): { dump: MapDump; entries: StackEntry[] } {
  const { dump, refs } = readTokenDump(tracer, name);
  const frames = new StackFrames(refs, (k, l) => tracer.stackStore(k, l), resolver, kernelFilter);
  const entries: StackEntry[] = [];
  const users: { entry: StackEntry; v: Value | undefined; pid: number }[] = [];
  for (const e of dump.entries) {
    const v = e.value;
    const value = 'value' in v && typeof v.value === 'bigint' ? v.value : 0n;
    const entry: StackEntry = { comm: stringOf(e.key[layout.comm]), id: numberOf(e.key[layout.id]), value };
    if (layout.kernel !== undefined) entry.kernel = frames.kernelOf(e.key[layout.kernel]);
    if (layout.user !== undefined) users.push({ entry, v: e.key[layout.user], pid: userPid(e.key) });
    entries.push(entry);
  }
  // one process at a time: the resolver re-checks a process's mappings at most once a second (mapsTtlMs), so
  // visiting processes in hash order over a long report would re-read each one's /proc files many times
  users.sort((a, b) => a.pid - b.pid);
  for (const u of users) u.entry.user = frames.userOf(u.v, u.pid);
  frames.stats.entries = entries.length;
  if (stats) Object.assign(stats, frames.stats);
  return { dump, entries };
}

/**
 * Every number a key of map `@name` could name a process by: each integer element (pid, tid, tgid) and each user
 * stack's process (the pid stored with a `ustack` element). One batch read of the keys, nothing decoded
 * else: for {@link ProcessPreparer}'s sweep of exited processes no entry refers to (an over-approximation is safe).
 */
export function pidsInMap(tracer: Pick<Tracer, 'rawMap'>, name: string): Set<number> {
  const { plan, map } = tracer.rawMap(name);
  const at: { off: number; size: number }[] = [];
  plan.keyTypes.forEach((t, i) => {
    const off = plan.keyOffsets[i]!;
    if (t.kind === 'ustack') at.push({ off: off + 8, size: 4 });
    else if (t.kind === 'int' && (t.size === 4 || t.size === 8)) at.push({ off, size: t.size });
  });
  const out = new Set<number>();
  if (at.length === 0) return out;
  const d = map.dump();
  const ks = map.keySize;
  for (let i = 0; i < d.count; i++) {
    for (const a of at) {
      const o = i * ks + a.off;
      // pids fit in 32 bits (pid_max <= 2^22); a wider integer's low half is enough to keep the process
      out.add(d.keys.readUInt32LE(o));
    }
  }
  return out;
}
