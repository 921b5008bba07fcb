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
 *       if (@__seen[pid, comm] == 0) { @__seen[pid, comm] = 1; printf("%d\x1f%s\n", pid, comm); }
 *       if ((nsecs / 15000000000) % 2 == 0) { @a[kstack(raw, 127), ustack(raw, 127), comm, pid] = count(); }
 *       else { @b[kstack(raw, 126), ustack(raw, 126), comm, pid] = count(); }
 *     }
 *
 * Memory is bounded whatever the number of processes: each map holds at most `maxStacks` distinct (stack, process)
 * keys per period (a full map drops further new keys: counted in `mapFull`), the stack maps `stackStorage` stacks,
 * and processes not sampled for two periods are dropped from the symbol and label caches. Symbols are cached across
 * periods: a process is prepared (its ELF symbol tables loaded) once when first seen, again only after an exec.
 */
import { SymbolResolver } from '../../symbols/resolver.js';
import type { MapDump, Value } from '../../runtime/output/model.js';
import { Tracer } from '../../runtime/tracer.js';
import { ToolOutput, ToolWriter } from '../../tools/framework/output.js';
import { configBlock } from '../../tools/framework/program.js';
import { parseRawStack } from '../../tools/stacktool.js';
import { OutputSink } from '../../runtime/output/sink.js';
import type { AgentSample } from './pprof.js';
import { ProcCache } from './procinfo.js';

/** Frame limits of the two buffers' stacks (they name the stack maps, see the module comment). */
const LIMIT = { a: 127, b: 126 } as const;
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
}

/** The profiler's program for `o` (see the module comment). */
export function buildAgentProgram(o: ProfilerOptions): string {
  const periodNs = BigInt(o.periodMs) * 1_000_000n;
  const conds = ['tid != 0'];
  if (o.pids?.length) conds.push(`(${o.pids.map((p) => `pid == ${p}`).join(' || ')})`);
  let p = configBlock({ maxMapKeys: o.maxStacks });
  p += `profile:hz:${o.hz} /${conds.join(' && ')}/ {\n`;
  p += '  if (@__seen[pid, comm] == 0) {\n    @__seen[pid, comm] = 1;\n    printf("%d\\x1f%s\\n", pid, comm);\n  }\n';
  p += `  if ((nsecs / ${periodNs}) % 2 == 0) {\n`;
  p += `    @a[kstack(raw, ${LIMIT.a}), ustack(raw, ${LIMIT.a}), comm, pid] = count();\n  } else {\n`;
  p += `    @b[kstack(raw, ${LIMIT.b}), ustack(raw, ${LIMIT.b}), comm, pid] = count();\n  }\n}\n`;
  return p;
}

function str(v: Value | undefined): string {
  return v?.kind === 'string' ? v.value : '';
}

function int(v: Value | undefined): number {
  return v?.kind === 'int' ? Number(v.value) : 0;
}

/** A running profiler (see the module comment). */
export class Profiler {
  private timer: NodeJS.Timeout | undefined;
  private nextBoundary: bigint;
  private startedMono: bigint;
  private periodNo = 0;
  private readonly comms = new Map<number, string>();
  private readonly prepareQueue: number[] = [];
  private preparing = false;
  private stopped = false;
  private readonly periodNs: bigint;
  readonly procs = new ProcCache();
  /** Periods whose read came more than a period late (their samples went into the next profile). */
  latePeriods = 0;

  private constructor(
    private readonly tracer: Tracer,
    private readonly resolver: SymbolResolver,
    private readonly o: ProfilerOptions,
    private readonly onPeriod: (p: PeriodData) => void,
  ) {
    this.periodNs = BigInt(o.periodMs) * 1_000_000n;
    this.startedMono = process.hrtime.bigint();
    this.nextBoundary = (this.startedMono / this.periodNs + 1n) * this.periodNs;
  }

  /**
   * Compile, load and attach the profiler; resolves once sampling runs. Each period's data goes to `onPeriod`
   * (synchronously, from a timer). @throws CompileError, KernelError, PermissionError (not root), BpfscopeError
   */
  static async start(o: ProfilerOptions, onPeriod: (p: PeriodData) => void): Promise<Profiler> {
    const resolver = await SymbolResolver.create();
    // The program's only printf output is the new-process event; nothing is printed.
    const writer = new ToolWriter(new OutputSink(1), new OutputSink(2, { bufferSize: 0 }));
    const output = new ToolOutput(writer);
    let self: Profiler | undefined;
    output.onEvent((fields) => self?.onProcess(fields), 2);
    const tracer = await Tracer.start({
      source: { name: 'agent', text: buildAgentProgram(o) },
      output,
      quiet: true,
      printMapsAtExit: false,
      handleSignals: false,
      stackMapEntries: o.stackStorage,
    });
    self = new Profiler(tracer, resolver, o, onPeriod);
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
    const comm = fields[1] ?? '';
    if (this.stopped || !Number.isInteger(pid) || pid <= 0) return;
    const known = this.comms.get(pid);
    if (known === comm) return;
    // A new comm of a known process is an exec: its old mappings are gone.
    if (known !== undefined) this.resolver.forget(pid);
    this.comms.set(pid, comm);
    // labels and the executable's build-id while the process is alive (an exec gives new ones)
    if (known !== undefined) this.procs.forget(pid);
    this.procs.get(pid, this.periodNo);
    this.prepareQueue.push(pid);
    if (!this.preparing) {
      this.preparing = true;
      setImmediate(this.drain);
    }
  }

  /** Load queued processes' symbols in slices of at most 10 ms, newest first (see ProcessPreparer). */
  private readonly drain = (): void => {
    const start = performance.now();
    while (!this.stopped && this.prepareQueue.length > 0 && performance.now() - start < 10) {
      const pid = this.prepareQueue.pop()!;
      try {
        this.resolver.prepare(pid);
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
    this.collectEnded();
    this.schedule();
  }

  /** Read every buffer whose period has ended (normally one). */
  private collectEnded(): void {
    const now = process.hrtime.bigint();
    if (now < this.nextBoundary) return;
    const ended = this.nextBoundary / this.periodNs - 1n; // the period that ended at nextBoundary
    // Late by a period or more: the later buffer already holds the next period's samples too; report them as one.
    const behind = (now - this.nextBoundary) / this.periodNs;
    if (behind > 0n) this.latePeriods += Number(behind);
    this.nextBoundary += (behind + 1n) * this.periodNs;
    this.emit(ended % 2n === 0n ? 'a' : 'b', ended * this.periodNs, this.nextBoundary - this.periodNs, now);
  }

  private emit(buf: 'a' | 'b', fromMono: bigint, toMono: bigint, nowMono: bigint): void {
    const t0 = performance.now();
    const from = fromMono < this.startedMono ? this.startedMono : fromMono;
    const dump = this.tracer.readMap(buf);
    this.tracer.clearMap(buf);
    this.tracer.clearStacks(LIMIT[buf]);
    this.tracer.clearMap('__seen');
    this.periodNo++;
    const samples = this.symbolize(dump);
    const total = samples.reduce((s, x) => s + x.count, 0);
    // Drop what is known about processes not sampled in the last two periods (bounded caches).
    for (const pid of this.procs.expire(this.periodNo - 1)) {
      this.resolver.forget(pid);
      this.comms.delete(pid);
    }
    const wallNowNs = Date.now() * 1e6;
    this.onPeriod({
      startNs: Math.round(wallNowNs - Number(nowMono - from)),
      durationNs: Number(toMono - from),
      samples,
      total,
      mapFull: dump.entries.length >= this.o.maxStacks,
      processes: new Set(samples.map((s) => s.labels.pid)).size,
      readMs: performance.now() - t0,
    });
  }

  private symbolize(dump: MapDump): AgentSample[] {
    const out: AgentSample[] = [];
    for (const e of dump.entries) {
      const pid = int(e.key[3]);
      const v = e.value;
      const count = 'value' in v && typeof v.value === 'bigint' ? Number(v.value) : 0;
      const info = this.procs.get(pid, this.periodNo);
      out.push({
        kernel: this.resolver.kernelStack(parseRawStack(str(e.key[0]))),
        user: this.resolver.userStack(pid, parseRawStack(str(e.key[1]))),
        labels: {
          comm: str(e.key[2]),
          pid: String(pid),
          container_id: info.containerId,
          cgroup: info.cgroup,
          build_id: info.buildId,
        },
        count,
      });
    }
    return out;
  }

  /**
   * Stop sampling: the periods that ended are reported, then the current, partial one; then every kernel object
   * is released. Idempotent.
   */
  stop(): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    try {
      this.collectEnded();
      this.tracer.stop();
      const now = process.hrtime.bigint();
      const cur = now / this.periodNs;
      this.emit(cur % 2n === 0n ? 'a' : 'b', cur * this.periodNs, now, now);
    } finally {
      this.stopped = true;
      this.tracer.finish();
      this.tracer.close();
    }
  }
}
