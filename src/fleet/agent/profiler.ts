/**
 * The agent's continuous CPU profiler: ONE BPF session for the whole run, sampling every CPU at `hz` with
 * bpftrace's `profile:hz:N` probe, and one profile per period handed to `onPeriod`.
 *
 * Periods are double-buffered in the kernel, so that reading and clearing a period's counts never loses or
 * double-counts a sample: the probe counts into `@a` during even periods and `@b` during odd ones, where the period
 * number is `nsecs / periodNs` (bpf_ktime_get_ns: CLOCK_MONOTONIC, the clock of process.hrtime here). Shortly after
 * each boundary the buffer of the period that ended is read, then cleared with its stacks, a whole period before the
 * kernel writes into it again. Each buffer has its own stack maps (`kstack(raw, 127)` for `@a`, `kstack(raw, 126)`
 * for `@b`: the frame limit names the map), so the stacks are cleared with their counts and the stack maps never
 * fill up however long the agent runs.
 *
 *     profile:hz:49 /tid != 0/ {
 *       if (@__seen[pid, START, EXECS] == 0) { @__seen[pid, START, EXECS] = 1; printf("%d\x1f%llu\x1f%llu\n", ...); }
 *       if ((nsecs / 15000000000) % 2 == 0) { @a[kstack(raw, 127), ustack(raw, 127), comm, pid] = count(); }
 *       else { @b[kstack(raw, 126), ustack(raw, 126), comm, pid] = count(); }
 *     }
 *
 * Memory is bounded whatever the number of processes: each map holds at most `maxStacks` distinct (stack, process)
 * keys per period (a full map drops further new keys: counted in `mapFull`), the stack maps `stackStorage` stacks,
 * and processes not sampled for two periods are dropped from the symbol and label caches (and the ELF symbol tables
 * no remaining process uses). Symbols are cached across periods: a process's maps are read once when first seen
 * (again after an exec or when its pid is reused: START is the group leader's start time, EXECS its exec count), and
 * else only when a sampled address falls outside every known mapping (at most once per period and process) or, for
 * a new address, when they are older than a minute (or 4 periods), a
 * file's symbol table is loaded when a sampled address first needs it (once per file, shared by every process
 * mapping it), and each stack is symbolized once per process while it keeps being sampled.
 */
import { type Frame, SymbolResolver } from '../../symbols/resolver.js';
import { tupleLayout } from '../../lang/types.js';
import type { Precompiled } from '../../runtime/precompiled.js';
import { Tracer } from '../../runtime/tracer.js';
import { ToolOutput, ToolWriter } from '../../tools/framework/output.js';
import { configBlock } from '../../tools/framework/program.js';
import { dropTracingFrames } from '../../tools/stacktool.js';
import { type BpfMap, BPF_NOEXIST } from '../../bpf/map.js';
import { KernelError } from '../../errors.js';
import { Errno } from '../../kernel/ffi.js';
import { mapLookupBatch } from '../../kernel/bpf.js';
import { OutputSink } from '../../runtime/output/sink.js';
import { FrameDemangler } from './demangle-child.js';
import type { AgentSample } from './pprof.js';
import { ProcCache } from './procinfo.js';
import { Slicer } from './slice.js';

/** Frame limits of the two buffers' stacks (they name the stack maps, see the module comment). */
const LIMIT = { a: 127, b: 126 } as const;
/** Frame limit of the off-CPU stacks (one store for both off-CPU buffers, pruned stack by stack: see pruneOffStacks). */
export const OFF_LIMIT = 125;
/** include/linux/sched.h: a task switching out for the last time. */
const TASK_DEAD = 0x80;
/** include/linux/sched.h: task_struct.flags of a kernel thread. */
const PF_KTHREAD = 0x00200000;
/** Least age of a known process's maps before a new address re-reads them, ms (see Profiler.start). */
const MAPS_TTL_MS = 60_000;
/** The BPF session's housekeeping period, ms (runtime/session.ts `tickMs`). */
const AGENT_TICK_MS = 1000;
/**
 * The event ring buffer's size, in pages (bpftrace's `perf_rb_pages`; 256 by default, 1 MiB). The program's only
 * events are new processes (~40 bytes each) and the ring is read as soon as the kernel wakes us
 * (runtime/ringbuf.ts), so 128 KiB holds ~3,000 process starts between two reads. The kernel maps the data area
 * twice into our address space and all of it is resident: 1 MiB cost 2 MiB of RSS, 32 pages cost 256 KiB
 * (bench/results/agent-issue15.md section 14).
 */
const AGENT_RING_PAGES = 32;
/** How long after a period's end its buffer is read (lets probes that started before the boundary finish), ms. */
const GRACE_MS = 50;

export interface ProfilerOptions {
  /** Samples per second per CPU (bpftrace's profile:hz:N). */
  hz: number;
  /** Period length in ms (a whole number of ms, >= 1000). */
  periodMs: number;
  /** Only these processes (undefined: every process). */
  pids?: readonly number[];
  /** Distinct (stack, process) keys each period holds (bpftrace's max_map_keys). */
  maxStacks: number;
  /** Distinct stacks each stack map holds. */
  stackStorage: number;
  /** Also measure off-CPU time per stack (sched_switch; see the module comment). */
  offcpu?: boolean;
  /**
   * Compiles the program elsewhere (the agent: in a child process, compile-child.ts); without it the program is
   * compiled in this process.
   */
  compile?: (text: string) => Promise<Precompiled>;
  /**
   * Demangles C++/Rust names elsewhere, a list at a time, telling `spawned` the pid of a process it starts (the
   * agent: in a child process, demangle-child.ts; the stacks of this process and its children keep their names);
   * without it names are demangled in this process by the resolver.
   */
  demangle?: (names: readonly string[], spawned: (pid: number) => void) => Promise<string[]>;
  /** Told each failure of `demangle` (the batch's names stay mangled). */
  onDemangleError?: (e: Error) => void;
}

/** One period's profile data. */
export interface PeriodData {
  /** Start of the covered time, ns since the epoch (the first period starts when sampling started). */
  startNs: number;
  /** Covered time, ns. */
  durationNs: number;
  samples: AgentSample[];
  /** Sum of the sample counts. */
  total: number;
  /** The buffer held maxStacks keys: some new stacks of the period were not counted. */
  mapFull: boolean;
  /** Distinct processes sampled. */
  processes: number;
  /** Milliseconds spent reading and symbolizing the period. */
  readMs: number;
  /**
   * With `offcpu`: off-CPU time per (stack, process) of the threads that went back on a CPU during the period
   * (`count` is nanoseconds); stacks as they were when the thread left the CPU.
   */
  offcpu?: AgentSample[];
  /** Sum of the off-CPU nanoseconds. */
  offcpuTotal?: number;
}

/**
 * The statement reporting a process the first time the program sees it in a period (`@__seen` is cleared after each
 * period): its pid and what tells a new program in it from the one already known, the group leader's start time (a
 * reused pid: ns since boot) and exec count (`self_exec_id`, incremented by each exec). Thread names (`comm`) are
 * not part of it: threads of one process often have their own names, which says nothing about its mappings.
 */
function seenStatement(indent: string): string {
  const key = 'pid, curtask->group_leader->start_time, curtask->group_leader->self_exec_id';
  return (
    `${indent}if (@__seen[${key}] == 0) {\n${indent}  @__seen[${key}] = 1;\n` +
    `${indent}  printf("%d\\x1f%llu\\x1f%llu\\n", ${key});\n${indent}}\n`
  );
}

/** The profiler's program for `o` (see the module comment). */
export function buildAgentProgram(o: ProfilerOptions): string {
  const periodNs = BigInt(o.periodMs) * 1_000_000n;
  const conds = ['tid != 0'];
  if (o.pids?.length) conds.push(`(${o.pids.map((p) => `pid == ${p}`).join(' || ')})`);
  let p = configBlock({ maxMapKeys: o.maxStacks, ringPages: AGENT_RING_PAGES });
  p += `profile:hz:${o.hz} /${conds.join(' && ')}/ {\n`;
  p += seenStatement('  ');
  p += `  if ((nsecs / ${periodNs}) % 2 == 0) {\n`;
  p += `    @a[kstack(raw, ${LIMIT.a}), ustack(raw, ${LIMIT.a}), comm, pid] = count();\n  } else {\n`;
  p += `    @b[kstack(raw, ${LIMIT.b}), ustack(raw, ${LIMIT.b}), comm, pid] = count();\n  }\n}\n`;
  if (o.offcpu) {
    // switch-out: the thread leaving the CPU is current (its stacks are the blocked ones); switch-in of
    // args.next: its time off the CPU goes to the buffer of the period it comes back in.
    // user threads only: kernel threads sleep waiting for work, which is not what an off-CPU profile is for
    const outConds = ['tid != 0', `args.prev_state != ${TASK_DEAD}`, `(args.prev->flags & ${PF_KTHREAD}) == 0`];
    if (o.pids?.length) outConds.push(`(${o.pids.map((x) => `pid == ${x}`).join(' || ')})`);
    p += 'rawtracepoint:sched_switch {\n';
    p += `  if (${outConds.join(' && ')}) {\n`;
    p += seenStatement('    ');
    p += `    @__off[tid] = (nsecs, kstack(raw, ${OFF_LIMIT}), ustack(raw, ${OFF_LIMIT}));\n  }\n`;
    p += '  $next = args.next->pid;\n  $o = @__off[$next];\n  if ($o.0 != 0) {\n    delete(@__off[$next]);\n';
    p += '    $ns = nsecs - $o.0;\n';
    p += `    if ((nsecs / ${periodNs}) % 2 == 0) {\n`;
    p += '      @oa[$o.1, $o.2, args.next->comm, args.next->tgid] = sum($ns);\n    } else {\n';
    p += '      @ob[$o.1, $o.2, args.next->comm, args.next->tgid] = sum($ns);\n    }\n  }\n}\n';
  }
  return p;
}

/** A u64 (little-endian) below 2^53 at `o` as a number. */
function readU64(b: Buffer, o: number): number {
  return b.readUInt32LE(o) + b.readUInt32LE(o + 4) * 4294967296;
}

/** Elements read per BPF_MAP_LOOKUP_AND_DELETE_BATCH call, at most. */
const BATCH = 512;
/**
 * Bytes of keys and values read per batch call, at most: a stack map's value is 127 frames (1,016 bytes), so a
 * batch of 64 stacks instead of 512 (a 64 KiB buffer kept for the agent's life instead of 520 KiB; a few more
 * system calls a period).
 */
const BATCH_BYTES = 64 * 1024;

/**
 * Read and delete every element of hash map `map`, handing them to `visit` chunk by chunk (`n` keys and values
 * packed back to back, views into reused buffers: copy what is kept). BPF_MAP_LOOKUP_AND_DELETE_BATCH: a few system
 * calls for the whole map, each hash bucket read and emptied in one step (what the kernel adds meanwhile stays for
 * the next read); kernels without batch operations (before 5.6) get one BPF_MAP_LOOKUP_AND_DELETE_ELEM per key.
 * `scratch` holds the batch buffers from call to call (no allocation per element or per period).
 */
function drainMap(
  map: BpfMap,
  scratch: Map<string, Buffer>,
  visit: (keys: Buffer, values: Buffer, n: number) => void,
): void {
  const ks = map.keySize;
  const vs = map.valueBytes;
  const buf = (name: string, size: number): Buffer => {
    let b = scratch.get(name);
    if (b === undefined || b.length < size) scratch.set(name, (b = Buffer.allocUnsafe(size)));
    return b;
  };
  let chunk = Math.max(1, Math.min(BATCH, Math.floor(BATCH_BYTES / (ks + vs))));
  let inBatch: Buffer | null = null;
  let outBatch = buf('out', Math.max(ks, 8));
  let seen = 0;
  for (;;) {
    const keys = buf('keys', chunk * ks);
    const values = buf('values', chunk * vs);
    let step;
    try {
      step = mapLookupBatch(map.fd, inBatch, outBatch, keys, values, chunk, true);
    } catch (e) {
      if (!(e instanceof KernelError)) throw e;
      // a hash bucket with more elements than the chunk: the same position again with a bigger chunk
      if (e.errno === Errno.ENOSPC && chunk < 1 << 20) {
        chunk *= 4;
        continue;
      }
      const unsupported = e.errno === Errno.EINVAL || e.errno === Errno.ENOTSUPP || e.errno === Errno.EOPNOTSUPP;
      if (!unsupported || seen > 0) throw e;
      drainByKey(map, visit);
      return;
    }
    if (step.count > 0) visit(keys, values, step.count);
    seen += step.count;
    if (step.done) return;
    const next: Buffer = inBatch ?? buf('in', outBatch.length);
    inBatch = outBatch;
    outBatch = next;
  }
}

/** {@link drainMap} without batch operations: each key looked up and deleted in one step. */
function drainByKey(map: BpfMap, visit: (keys: Buffer, values: Buffer, n: number) => void): void {
  for (const [k] of map.entries()) {
    const key = Buffer.from(k);
    const value = map.lookupAndDelete(key);
    if (value !== undefined) visit(key, value, 1);
  }
}

/** The buffer of period number `n`. */
function parity(n: bigint): 'a' | 'b' {
  return n % 2n === 0n ? 'a' : 'b';
}

/** One entry of a count buffer, as read from the map's bytes. */
interface RawEntry {
  /** Kernel and user stack ids (negative: no stack). */
  k: bigint;
  u: bigint;
  comm: string;
  pid: number;
  /** Samples (CPU) or nanoseconds (off-CPU). */
  value: number;
}

/** Frames read from the stack maps for stacks not cached yet, by id (undefined: not stored, an empty stack). */
interface Fetched {
  kernel: Map<bigint, Buffer | undefined>;
  user: Map<number, Map<bigint, Buffer | undefined>>;
}

interface CachedStack {
  frames: readonly Frame[];
  /** Last period it was used in. */
  seen: number;
}

/** A running profiler (see the module comment). */
export class Profiler {
  private timer: NodeJS.Timeout | undefined;
  private nextBoundary: bigint;
  private startedMono: bigint;
  private periodNo = 0;
  /** Identity of each known process (`START:EXECS`, see seenStatement): a change is an exec or a reused pid. */
  private readonly idents = new Map<number, string>();
  /** Processes forgotten because their program changed (exec, reused pid). */
  execs = 0;
  private readonly prepareQueue: number[] = [];
  private preparing = false;
  private stopped = false;
  /** A period being processed (symbolized, encoded, handed over): the next read waits for it. */
  private busy: Promise<void> | undefined;
  /** A period boundary passed while busy: read when the work is done. */
  private tickPending = false;
  private readonly periodNs: bigint;
  readonly procs = new ProcCache();
  /** Periods whose read came more than a period late (their samples went into the next profile). */
  latePeriods = 0;
  /** Off-CPU stacks removed from their store because nothing referenced them any more. */
  offStacksPruned = 0;
  /** Stack lookups answered from the cache / read from a stack map and symbolized. */
  stackHits = 0;
  stackMisses = 0;
  /** End of the time the last profile covered (monotonic ns). */
  private coveredTo = 0n;
  private readonly kcache = new Map<bigint, CachedStack>();
  private readonly kcacheOff = new Map<bigint, CachedStack>();
  private readonly ucache = new Map<number, Map<bigint, CachedStack>>();
  /** With ProfilerOptions.demangle: demangles the new user stacks' names, a batch a period (its counts: metrics). */
  demangler: FrameDemangler | undefined;
  /** Batch buffers of drainMap, reused from period to period. */
  private readonly scratch = new Map<string, Buffer>();

  private constructor(
    private readonly tracer: Tracer,
    private readonly resolver: SymbolResolver,
    private readonly o: ProfilerOptions,
    private readonly onPeriod: (p: PeriodData) => void | Promise<void>,
  ) {
    this.periodNs = BigInt(o.periodMs) * 1_000_000n;
    this.startedMono = process.hrtime.bigint();
    this.nextBoundary = (this.startedMono / this.periodNs + 1n) * this.periodNs;
  }

  /**
   * Compile, load and attach the profiler; resolves once sampling runs. Each period's data goes to `onPeriod`,
   * whose promise is awaited before the next period is read (a period that ends meanwhile is read when it resolves,
   * merged into the next profile if that is more than a period late). Symbolizing runs in slices of 10 ms, so the
   * event loop (pushes, the metrics server) keeps running while a period is processed.
   * @throws CompileError, KernelError, PermissionError (not root), BpfscopeError
   */
  static async start(o: ProfilerOptions, onPeriod: (p: PeriodData) => void | Promise<void>): Promise<Profiler> {
    // A known process's maps are re-read after an exec or with a reused pid (reported by the program, see
    // onProcess), when a sampled address lies outside all of them (at most once per period), and on a new address
    // at most once a minute or every 4 periods (a library replaced by another at the same addresses: bounded
    // staleness), not on every period's new addresses as with the resolver's default (1 s).
    const resolver = await SymbolResolver.create({
      mapsTtlMs: Math.max(MAPS_TTL_MS, 4 * o.periodMs),
      missRereadMs: o.periodMs,
      demangle: o.demangle === undefined,
    });
    // The program's only printf output is the new-process event; nothing is printed.
    const writer = new ToolWriter(new OutputSink(1), new OutputSink(2, { bufferSize: 0 }));
    const output = new ToolOutput(writer);
    let self: Profiler | undefined;
    output.onEvent((fields) => self?.onProcess(fields), 3);
    const text = buildAgentProgram(o);
    const precompiled = o.compile ? await o.compile(text) : undefined;
    const tracer = await Tracer.start({
      source: { name: 'agent', text },
      ...(precompiled ? { precompiled } : {}),
      output,
      quiet: true,
      printMapsAtExit: false,
      handleSignals: false,
      stackMapEntries: o.stackStorage,
      // the program has no exit() and reports a process at most once a period: housekeeping once a second, not
      // every 100 ms (the idle agent's CPU was mostly these wake-ups)
      tickMs: AGENT_TICK_MS,
    });
    self = new Profiler(tracer, resolver, o, onPeriod);
    if (o.demangle) self.demangler = new FrameDemangler(o.demangle, o.onDemangleError);
    self.schedule();
    return self;
  }

  /** Resolves if the BPF session ends by itself (it should not: only stop() ends it). */
  wait(): Promise<void> {
    return this.tracer.wait();
  }

  /** Symbol cache counters (hits, misses, ELF loads, maps reads). */
  get resolverStats(): SymbolResolver['stats'] {
    return this.resolver.stats;
  }

  private onProcess(fields: string[]): void {
    const pid = Number(fields[0]);
    const ident = `${fields[1] ?? ''}:${fields[2] ?? ''}`;
    if (this.stopped || !Number.isInteger(pid) || pid <= 0) return;
    const known = this.idents.get(pid);
    if (known === ident) return;
    this.idents.set(pid, ident);
    if (known !== undefined) {
      // An exec, or a new process with a reused pid: its mappings, labels, build-id and stacks are another program's.
      this.resolver.forget(pid);
      this.procs.forget(pid);
      this.ucache.delete(pid);
      this.execs++;
    }
    const info = this.procs.get(pid, this.periodNo);
    this.prepareQueue.push(info.hostRoot ? pid : -pid);
    if (!this.preparing) {
      this.preparing = true;
      setImmediate(this.drain);
    }
  }

  /**
   * Read queued processes' maps in slices of at most 10 ms, newest first. Symbol tables are loaded lazily, when a
   * sampled address needs them: a host process's files are still there by path after it exits (the mapping's inode
   * is checked). A process with its own root (a container: queued as -pid) gets its tables loaded now, while its
   * files can be reached through /proc/PID/root.
   */
  private readonly drain = (): void => {
    const start = performance.now();
    while (!this.stopped && this.prepareQueue.length > 0 && performance.now() - start < 10) {
      const q = this.prepareQueue.pop()!;
      try {
        if (q > 0) this.resolver.track(q);
        else this.resolver.prepare(-q);
      } catch {
        /* gone already */
      }
    }
    if (!this.stopped && this.prepareQueue.length > 0) setImmediate(this.drain);
    else this.preparing = false;
  };

  private schedule(): void {
    const now = process.hrtime.bigint();
    const ms = Number((this.nextBoundary - now) / 1_000_000n) + GRACE_MS;
    this.timer = setTimeout(() => this.tick(), Math.max(0, ms));
  }

  private tick(): void {
    if (this.stopped) return;
    if (this.busy) {
      this.tickPending = true;
      return;
    }
    this.run(this.collectEnded());
    this.schedule();
  }

  /** Track the processing of a period; a tick that came meanwhile reads then. */
  private run(work: Promise<void> | undefined): void {
    if (!work) return;
    const busy = work
      .catch((e: unknown) => {
        process.stderr.write(`bpfscope agent: a period was lost: ${(e as Error).message}\n`);
      })
      .finally(() => {
        if (this.busy === busy) this.busy = undefined;
        if (this.tickPending && !this.stopped) {
          // the tick that found the profiler busy scheduled no timer: read now, then schedule from the new boundary
          this.tickPending = false;
          this.run(this.collectEnded());
          this.schedule();
        }
      });
    this.busy = busy;
  }

  /** Read every buffer whose period has ended (normally one); resolves when the profile is handed over. */
  private collectEnded(): Promise<void> | undefined {
    const now = process.hrtime.bigint();
    if (now < this.nextBoundary) return undefined;
    const ended = this.nextBoundary / this.periodNs - 1n; // the period that ended at nextBoundary
    const behind = (now - this.nextBoundary) / this.periodNs;
    this.nextBoundary += (behind + 1n) * this.periodNs;
    if (behind === 0n) {
      return this.emit([parity(ended)], ended * this.periodNs, this.nextBoundary - this.periodNs, now);
    }
    // Late by a period or more: both buffers hold ended periods, one of them the current period so far too. Both
    // are read into one profile covering up to now; the rest of the current period goes into the next profile.
    this.latePeriods += Number(behind);
    const cur = parity(now / this.periodNs);
    return this.emit([cur === 'a' ? 'b' : 'a', cur], ended * this.periodNs, now, now, cur);
  }

  /**
   * One profile from buffers `bufs`, covering [fromMono, toMono] (from the end of the last profile at the
   * earliest). `current`: the buffer the kernel is writing into (a late read), whose stacks are not cleared. The
   * buffers are read at once; symbolizing and `onPeriod` follow in slices (see {@link Profiler.start}).
   */
  private async emit(
    bufs: ('a' | 'b')[],
    fromMono: bigint,
    toMono: bigint,
    nowMono: bigint,
    current?: 'a' | 'b',
  ): Promise<void> {
    const t0 = performance.now();
    let from = fromMono < this.startedMono ? this.startedMono : fromMono;
    if (from < this.coveredTo) from = this.coveredTo;
    this.coveredTo = toMono;
    this.periodNo++;
    // Each buffer and the frames of its stacks not cached yet are read, then the buffer (and its stacks) cleared
    // at once; symbolizing comes after, when the kernel may write into the buffer again.
    const reads: { raw: RawEntry[]; fetched: Fetched; off: boolean }[] = [];
    for (const buf of bufs) {
      const raw = this.readRaw(buf);
      reads.push({ raw, fetched: this.fetchStacks(raw, LIMIT[buf], this.kcache, buf !== current), off: false });
    }
    if (this.o.offcpu) {
      for (const buf of bufs) {
        const ob = buf === 'a' ? 'oa' : 'ob';
        const raw = this.readRaw(ob);
        reads.push({ raw, fetched: this.fetchStacks(raw, OFF_LIMIT, this.kcacheOff, false), off: true });
      }
      const now = process.hrtime.bigint();
      this.pruneOffStacks(parity(now / this.periodNs) === 'a' ? 'oa' : 'ob');
    }
    this.tracer.clearMap('__seen');
    const wallNowNs = Date.now() * 1e6;
    const slicer = new Slicer();
    const samples: AgentSample[] = [];
    const offcpu: AgentSample[] = [];
    let entries = 0;
    const pids = new Set<number>();
    for (const r of reads) {
      (r.off ? offcpu : samples).push(...(await this.symbolize(r.raw, r.fetched, r.off, slicer)));
      if (!r.off) {
        entries = Math.max(entries, r.raw.length);
        for (const e of r.raw) pids.add(e.pid);
      }
    }
    let total = 0;
    for (const s of samples) total += s.count;
    // Drop what is known about processes not sampled in the last two periods (bounded caches).
    for (const pid of this.procs.expire(this.periodNo - 1)) {
      this.resolver.forget(pid);
      this.idents.delete(pid);
      this.ucache.delete(pid);
    }
    this.expireStacks();
    this.resolver.dropUnusedFiles();
    let offTotal = 0;
    for (const s of offcpu) offTotal += s.count;
    await this.onPeriod({
      startNs: Math.round(wallNowNs - Number(nowMono - from)),
      durationNs: Number(toMono - from),
      samples,
      total,
      mapFull: entries >= this.o.maxStacks,
      processes: pids.size,
      readMs: performance.now() - t0,
      ...(this.o.offcpu ? { offcpu, offcpuTotal: offTotal } : {}),
    });
  }

  /**
   * The entries of a count buffer (`@a`, `@b`, `@oa`, `@ob`: key `[kstack, ustack, comm, pid]`) straight from the
   * map's bytes: the stack ids (not the stacks), comm, pid, and the value summed over the CPUs. Drains the map
   * (nothing is lost between reading and clearing: see drainMap).
   */
  private readRaw(name: string): RawEntry[] {
    const { plan, map } = this.tracer.rawMap(name);
    const [ko, uo, co, po] = plan.keyOffsets as [number, number, number, number];
    const pidType = plan.keyTypes[3]!;
    const pidSize = pidType.kind === 'int' ? pidType.size : 8;
    const ks = map.keySize;
    const vs = map.valueBytes;
    const slots = map.nSlots;
    const slot = map.slotSize;
    const out: RawEntry[] = [];
    drainMap(map, this.scratch, (keys, values, n) => {
      for (let i = 0; i < n; i++) {
        const kb = i * ks;
        // count()/sum() per CPU: s64 slots, non-negative, far below 2^53 (samples, nanoseconds)
        let v = 0;
        for (let c = 0, vo = i * vs; c < slots; c++, vo += slot) v += readU64(values, vo);
        let end = kb + co;
        while (end < kb + co + 16 && keys[end] !== 0) end++;
        out.push({
          k: keys.readBigInt64LE(kb + ko),
          u: keys.readBigInt64LE(kb + uo),
          comm: keys.toString('utf8', kb + co, end),
          pid: pidSize === 4 ? keys.readInt32LE(kb + po) : readU64(keys, kb + po),
          value: v,
        });
      }
    });
    return out;
  }

  /**
   * The stored frames of the stacks of `raw` that are not cached yet (kernel: in `kc`; user: per process). With
   * `drain`, the stack maps are read whole and emptied (the buffer's own stack maps, after its period); else the
   * stacks are looked up one by one and stay (a late read of the buffer the kernel is writing into).
   */
  private fetchStacks(raw: readonly RawEntry[], limit: number, kc: Map<bigint, CachedStack>, drain: boolean): Fetched {
    const out: Fetched = { kernel: new Map(), user: new Map() };
    const km = this.tracer.stackStore('k', limit);
    const um = this.tracer.stackStore('u', limit);
    for (const r of raw) {
      if (!kc.has(r.k) && !out.kernel.has(r.k)) out.kernel.set(r.k, undefined);
      if (this.ucache.get(r.pid)?.has(r.u)) continue;
      let pu = out.user.get(r.pid);
      if (pu === undefined) out.user.set(r.pid, (pu = new Map()));
      if (!pu.has(r.u)) pu.set(r.u, undefined);
    }
    const wantK = out.kernel;
    const wantU = new Set<bigint>();
    for (const pu of out.user.values()) for (const id of pu.keys()) wantU.add(id);
    const gotU = new Map<bigint, Buffer>();
    if (drain) {
      const take =
        (want: { has(id: bigint): boolean }, into: (id: bigint, frames: Buffer) => void, m: BpfMap) =>
        (keys: Buffer, values: Buffer, n: number): void => {
          for (let i = 0; i < n; i++) {
            const id = keys.readBigInt64LE(i * 8);
            if (want.has(id)) into(id, Buffer.from(values.subarray(i * m.valueBytes, (i + 1) * m.valueBytes)));
          }
        };
      if (km)
        drainMap(
          km,
          this.scratch,
          take(wantK, (id, f) => wantK.set(id, f), km),
        );
      if (um)
        drainMap(
          um,
          this.scratch,
          take(wantU, (id, f) => gotU.set(id, f), um),
        );
    } else {
      const key = Buffer.alloc(8);
      const get = (m: BpfMap | undefined, id: bigint): Buffer | undefined => {
        if (!m || id < 0n) return undefined;
        key.writeBigInt64LE(id, 0);
        return m.lookup(key);
      };
      for (const id of wantK.keys()) wantK.set(id, get(km, id));
      for (const id of wantU) {
        const f = get(um, id);
        if (f) gotU.set(id, f);
      }
    }
    for (const pu of out.user.values()) for (const id of pu.keys()) pu.set(id, gotU.get(id));
    return out;
  }

  /**
   * Symbolized samples of `raw`. Stacks are cached by id across periods (an id is a hash of the frames, so the same
   * id is the same stack in every period and stack map): kernel stacks once, user stacks once per process, dropped
   * when unused for two periods; labels once per process and comm.
   */
  private async symbolize(
    raw: readonly RawEntry[],
    fetched: Fetched,
    offcpu: boolean,
    slicer: Slicer,
  ): Promise<AgentSample[]> {
    const out: AgentSample[] = [];
    const kc = offcpu ? this.kcacheOff : this.kcache;
    const labelsOf = new Map<string, Record<string, string>>();
    const fresh: { ue: CachedStack; pc: Map<bigint, CachedStack>; u: bigint }[] = [];
    for (const r of raw) {
      const pause = slicer.pause();
      if (pause) await pause;
      let ke = kc.get(r.k);
      if (ke === undefined) {
        const b = fetched.kernel.get(r.k);
        const f = b ? this.resolver.kernelStackFromBytes(b) : [];
        ke = { frames: offcpu ? dropTracingFrames(f) : f, seen: this.periodNo };
        kc.set(r.k, ke);
        this.stackMisses++;
      } else {
        ke.seen = this.periodNo;
        this.stackHits++;
      }
      let pc = this.ucache.get(r.pid);
      if (pc === undefined) this.ucache.set(r.pid, (pc = new Map()));
      let ue = pc.get(r.u);
      if (ue === undefined) {
        const b = fetched.user.get(r.pid)?.get(r.u);
        ue = { frames: b ? this.resolver.userStackFromBytes(r.pid, b) : [], seen: this.periodNo };
        pc.set(r.u, ue);
        if (this.demangler?.isOwn(r.pid) === false) fresh.push({ ue, pc, u: r.u });
        this.stackMisses++;
      } else {
        ue.seen = this.periodNo;
        this.stackHits++;
      }
      const lk = `${r.pid}\0${r.comm}`;
      let labels = labelsOf.get(lk);
      if (labels === undefined) {
        const info = this.procs.get(r.pid, this.periodNo);
        labels = {
          comm: r.comm,
          pid: String(r.pid),
          container_id: info.containerId,
          cgroup: info.cgroup,
          build_id: info.buildId,
        };
        labelsOf.set(lk, labels);
      }
      out.push({ kernel: ke.frames, user: ue.frames, labels, count: r.value });
    }
    if (this.demangler && fresh.length > 0) {
      // the new user stacks' names demangled in one batch (demangle-child.ts); cached stacks keep the new frames
      const failures = this.demangler.failures;
      const renamed = await this.demangler.rename(fresh.map((e) => e.ue.frames));
      const to = new Map<readonly Frame[], readonly Frame[]>();
      fresh.forEach(({ ue }, i) => {
        if (renamed[i] !== ue.frames) to.set(ue.frames, (ue.frames = renamed[i]!));
      });
      if (to.size > 0) for (const s of out) s.user = to.get(s.user) ?? s.user;
      // a failed batch: its stacks are symbolized again when next sampled, and their names tried again
      if (this.demangler.failures > failures) for (const { pc, u } of fresh) pc.delete(u);
    }
    return out;
  }

  /** Drop cached stacks not used in the last two periods. */
  private expireStacks(): void {
    const old = this.periodNo - 1;
    for (const c of [this.kcache, this.kcacheOff]) for (const [id, e] of c) if (e.seen < old) c.delete(id);
    for (const [pid, c] of this.ucache) {
      for (const [id, e] of c) if (e.seen < old) c.delete(id);
      if (c.size === 0) this.ucache.delete(pid);
    }
  }

  /** Stack ids the off-CPU store must keep: the sleeping threads' (`@__off`), then those of buffer `current`. */
  private offReferences(current: 'oa' | 'ob'): Set<bigint> {
    const refs = new Set<bigint>();
    const off = this.tracer.rawMap('__off');
    const vt = off.plan.valueType;
    const vo = vt.kind === 'tuple' ? tupleLayout(vt.elems).offsets : [0, 8, 24];
    for (const [, v] of off.map.entries()) {
      refs.add(v.readBigInt64LE(vo[1]!));
      refs.add(v.readBigInt64LE(vo[2]!));
    }
    const cur = this.tracer.rawMap(current);
    const [ko, uo] = cur.plan.keyOffsets as [number, number];
    for (const [k] of cur.map.entries()) {
      refs.add(k.readBigInt64LE(ko));
      refs.add(k.readBigInt64LE(uo));
    }
    return refs;
  }

  /**
   * Remove from the off-CPU stack store the stacks no longer referenced: the buffer just read is cleared, so the
   * references left are the sleeping threads' (`@__off`) and the current period's buffer (`current`). Race-free
   * with the program: a thread that leaves the CPU while this runs with a stack about to be deleted (stored
   * already, so not stored again) is seen in the second look at the references, and its stack is put back.
   */
  private pruneOffStacks(current: 'oa' | 'ob'): void {
    const before = this.offReferences(current);
    const deleted: [BpfMap, Buffer, Buffer, bigint][] = [];
    for (const kind of ['k', 'u'] as const) {
      const m = this.tracer.stackStore(kind, OFF_LIMIT);
      if (!m) continue;
      for (const [k, v] of m.entries()) {
        const id = k.readBigInt64LE(0);
        if (before.has(id)) continue;
        const key = Buffer.from(k);
        if (m.delete(key)) deleted.push([m, key, Buffer.from(v), id]);
      }
    }
    if (deleted.length === 0) return;
    const after = this.offReferences(current);
    for (const [m, k, v, id] of deleted) {
      if (!after.has(id)) continue;
      try {
        m.update(k, v, BPF_NOEXIST);
      } catch {
        /* stored again by the program meanwhile */
      }
    }
    this.offStacksPruned += deleted.length;
  }

  /**
   * Stop sampling: the period being processed is finished, the periods that ended are reported, then the current,
   * partial one; then every kernel object is released. Idempotent (a second call resolves at once).
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    try {
      await this.busy;
      await this.collectEnded();
      this.tracer.stop();
      const now = process.hrtime.bigint();
      const cur = now / this.periodNs;
      await this.emit([parity(cur)], cur * this.periodNs, now, now);
    } finally {
      this.tracer.finish();
      this.tracer.close();
    }
  }
}
