/**
 * A tracing session: owns every kernel object of one run (maps, ring buffer, programs, attachments) and drives
 * bpftrace's lifecycle: print "Attaching N probes...", run BEGIN (BPF_PROG_TEST_RUN), attach the other probes,
 * consume async events (printf, print, exit, time, clear, zero) until exit()/a signal/the -c child ends, detach,
 * run END, print the maps, close everything. `close()` is idempotent and safe from any exit path.
 */
import { readFileSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { strerror as cStrerror } from '../kernel/ffi.js';
import { cgroupPath, signalName, syscallName } from './names.js';
import { BpfMap } from '../bpf/map.js';
import type { LoadedProgram } from '../bpf/program.js';
import type { CompiledProgram, MapPlan } from '../codegen/plan.js';
import { isRefusedProbe } from '../probes/errors.js';
import { hasWildcard } from '../probes/glob.js';
import { isIterAttachment } from '../probes/iter.js';
import type { AttachedProbe } from '../probes/types.js';
import type { SourceFile } from '../lang/diagnostics.js';
import { SymbolResolver, type SymbolResolverOptions } from '../symbols/resolver.js';
import { buildMapDump, type DecodeContext } from './decode.js';
import { StackReader } from './stacks.js';

let passwd: Map<number, string> | undefined;

/** User name of `uid` from /etc/passwd (bpftrace's `username`), or the number when unknown. */
function userName(uid: number): string {
  if (!passwd) {
    passwd = new Map();
    try {
      for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
        const f = line.split(':');
        if (f.length > 2 && !passwd.has(Number(f[2]))) passwd.set(Number(f[2]), f[0]!);
      }
    } catch {
      /* no passwd file: numbers */
    }
  }
  return passwd.get(uid) ?? String(uid);
}

/**
 * Providers whose programs run newest-attached first on a shared probe point: uprobe consumers, the kprobes of one
 * address (an aggregate kprobe's handler list and the ftrace ops of kprobe_multi take the newest at the head) and the
 * fentry/fexit links of one BPF trampoline (its program lists likewise). Not kretprobe: the return handlers of one
 * function ran in attach order in the 6.12 guest (bpftrace's probe:kretprobe_order passed attached forward and
 * failed attached in reverse).
 */
const LIFO_PROVIDERS = new Set(['uprobe', 'uretprobe', 'usdt', 'kprobe', 'fentry', 'fexit']);
/** Probes above which detaching announces itself (`Detaching N probes...`, Session.finish). */
const DETACH_NOTICE_MIN = 100;
/** Providers whose wildcards match functions, one of which the kernel may refuse (skipped: Session.attach). */
const FUNCTION_PROBE_PROVIDERS = new Set(['uprobe', 'uretprobe', 'kprobe', 'kretprobe']);

/** Map fds stand-ins while maps are created in the background (loadAsync): far above any fd (RLIMIT_NOFILE). */
const FD_PLACEHOLDER = 0x7f000000;

import { type Linked, link, loadLinked, loadPlan, resolveMapFds } from './loader.js';
import type { Output } from './output/index.js';
import type { MapDump } from './output/model.js';
import { type PrintfHook, RecordDispatcher } from './records.js';
import { RingBufConsumer } from './ringbuf.js';
import { releaseEarlyMaps, takeEarlyMap } from './early-maps.js';
import { createSessionMaps } from './session-maps.js';
import {
  type LoadedProbe,
  runBenchmarks,
  runSpecialProbes,
  runTests,
  type SpecialProbeSession,
} from './special-probes.js';

export type { PrintfHook } from './records.js';

export interface SessionOptions {
  output: Output;
  /** Resolves stack addresses (default: a SymbolResolver over kallsyms, ELF files and perf maps). */
  symbolizer?: SymbolResolver;
  /** Verifier log level for loads (-v: stats). */
  logLevel?: number;
  /** The program's source, for errorf()/warnf() messages with their location. */
  source?: SourceFile;
  /** `--no-warnings`: warnf() prints nothing. */
  noWarnings?: boolean;
  /** Attach-time warnings (a wildcard's function the kernel refuses, skipped); default: `WARNING: ...` on stderr. */
  warn?: (message: string) => void;
  /** Distinct stacks each kstack/ustack map can hold (default 4096); later new stacks print empty. */
  stackMapEntries?: number;
  /**
   * SIGUSR1 prints every map (see {@link Session.listenForSignals}) when the program has no `self:signal:SIGUSR1`
   * probe. Default false (the tools print their own reports).
   */
  printMapsOnSignal?: boolean;
  /** Called with each program's load result (for -d / -v output). */
  onLoaded?: (name: string, program: LoadedProgram, insns: import('../codegen/ir.js').Insn[]) => void;
  /** printf() records go here instead of being rendered to `output` (the typed API, `api/`). */
  printfHook?: PrintfHook;
  /**
   * Period of the run's housekeeping, ms (default 100): the exit flag check, the ring buffer's nudge and the
   * longest wait of its reader; lost events are checked every 10 periods. A long-running program with no `exit()`
   * and few events (the profiling agent: 1000) wakes the process less often; records then wait up to this long.
   */
  tickMs?: number;
  /**
   * The programs linked already, by another process (runtime/precompiled.ts): `linked[i]` is program `i` with the
   * placeholder immediates of `mapOf` in place of map fds. Loading then links nothing (no register allocation or
   * emission here). Used by {@link Session.loadAsync}.
   */
  prelinked?: { linked: readonly Linked[]; mapOf: ReadonlyMap<number, string> };
}

export class Session {
  private maps = new Map<string, BpfMap>();
  private planByIndex: MapPlan[] = [];
  private programs: LoadedProbe[] = [];
  private attachments: AttachedProbe[] = [];
  private ring: RingBufConsumer | null = null;
  private lost: BpfMap | null = null;
  private exitFlag: BpfMap | null = null;
  private lostReported = 0n;
  private closed = false;
  /** First error raised while consuming events in the background; rethrown by `finish()`. */
  private error: unknown = null;
  private exitRequested = false;
  private stopResolve: (() => void) | null = null;
  /** What each ring buffer record does (printf, print, exit, ...). */
  private readonly records: RecordDispatcher;
  private readonly stacks: StackReader;
  /** Decoding for printf/print values and for map keys and values. */
  private readonly valueCtx: DecodeContext;
  private readonly mapCtx: DecodeContext;

  constructor(
    readonly compiled: CompiledProgram,
    readonly opts: SessionOptions,
  ) {
    let resolver = opts.symbolizer;
    this.stacks = new StackReader(
      (name) => this.maps.get(name),
      () => {
        resolver ??= new SymbolResolver(resolverOptions(compiled));
        return resolver;
      },
    );
    // current bpftrace indents stack frames by 8 spaces in printf and in map keys alike (0.17 used 4 in map keys)
    const sym = (): SymbolResolver => {
      resolver ??= new SymbolResolver(resolverOptions(compiled));
      return resolver;
    };
    // an address without a symbol in hex, the null address as `0` (bpftrace prints a C++ void*)
    const name = (f: { name?: string | undefined; addr: bigint }): string =>
      f.name ?? (f.addr === 0n ? '0' : `0x${f.addr.toString(16)}`);
    this.valueCtx = {
      stack: (t, id, pid) => this.stacks.text(t, id, pid, 8),
      ksym: (addr) => name(sym().kernel(addr)),
      usym: (pid, addr) => name(sym().user(pid, addr)),
      monotonicToRealtimeNs: BigInt(Date.now()) * 1_000_000n - process.hrtime.bigint(),
      username: (uid) => userName(uid),
      strerror: (n) => cStrerror(Math.abs(n)),
      syscall_name: syscallName,
      signal_name: signalName,
      cgroupPath,
      strTruncTrailer: compiled.strTruncTrailer ?? '',
    };
    this.mapCtx = this.valueCtx;
    const session = {
      mapPlan: (index: number) => this.planByIndex[index]!,
      mapFor: (plan: MapPlan) => this.mapFor(plan),
      dumpMap: (plan: MapPlan, o: { zeroScalar?: boolean }) => this.dumpMap(plan, o),
      clearMap: (plan: MapPlan) => this.clearMap(plan),
      stop: () => this.stop(),
    };
    this.records = new RecordDispatcher(compiled, session, opts, this.valueCtx);
  }

  /** Create maps and load every program. @throws ProgramRejected, KernelError */
  load(): void {
    const ring = this.createMaps();
    const fdOf = (name: string): number => {
      const m = this.maps.get(name);
      if (!m) throw new Error(`internal: unknown map ${name}`);
      return m.fd;
    };
    for (const plan of this.compiled.programs) {
      const r = loadPlan(plan, fdOf, this.opts.logLevel);
      this.programs.push({ plan, prog: r.program });
      this.opts.onLoaded?.(plan.expanded.name, r.program, r.insns);
    }
    this.startRing(ring);
  }

  /**
   * {@link load} with the kernel's map preallocation overlapped with register allocation and emission: the maps of
   * the program's `@maps` and stacks (hash maps of thousands of entries: 5-140 ms each in the kernel, see
   * bench/results/startup-issue13.md) are created on worker threads while the programs are linked with placeholder
   * fds, which are replaced once the maps exist. The same maps, flags and instructions as load(); only the order
   * of the map fds differs. Every creation has settled before this returns or throws, and each created map is in
   * `maps`, so close() releases it on every path. @throws as load()
   */
  async loadAsync(): Promise<void> {
    const pending: Promise<void>[] = [];
    const placeholders = new Map<string, number>();
    let ring: BpfMap;
    try {
      ring = this.createMaps((name, spec) => {
        placeholders.set(name, FD_PLACEHOLDER + placeholders.size);
        // a map a tool started creating before compiling (runtime/early-maps.ts), when its spec is this one
        const made = takeEarlyMap(spec) ?? BpfMap.createAsync(spec);
        pending.push(made.then((m) => void this.maps.set(name, m)));
      });
    } catch (e) {
      await Promise.allSettled(pending); // so that close() finds every map created
      throw e;
    } finally {
      void releaseEarlyMaps(); // early maps of another spec: closed once created, not waited for
    }
    const fdOf = (name: string): number => {
      const fd = this.maps.get(name)?.fd ?? placeholders.get(name);
      if (fd === undefined) throw new Error(`internal: unknown map ${name}`);
      return fd;
    };
    let linked: Linked[] = [];
    let linkError: unknown;
    try {
      const pre = this.opts.prelinked;
      // loaded once: the instructions are not kept for the session's life (the fleet agent runs for days)
      delete this.opts.prelinked;
      linked = pre
        ? pre.linked.map((l) => resolveMapFds(l, (imm) => fdOf(pre.mapOf.get(imm) ?? '')))
        : this.compiled.programs.map((plan) => link(plan, fdOf));
    } catch (e) {
      linkError = e;
    }
    const settled = await Promise.allSettled(pending);
    if (linkError !== undefined) throw linkError;
    for (const r of settled) if (r.status === 'rejected') throw r.reason;
    const byPlaceholder = new Map([...placeholders].map(([name, ph]) => [ph, name]));
    const realFd = (imm: number): number => {
      const name = byPlaceholder.get(imm);
      return name === undefined ? imm : fdOf(name);
    };
    this.compiled.programs.forEach((plan, i) => {
      const r = loadLinked(plan, resolveMapFds(linked[i]!, realFd), this.opts.logLevel);
      this.programs.push({ plan, prog: r.program });
      this.opts.onLoaded?.(plan.expanded.name, r.program, r.insns);
    });
    this.startRing(ring);
  }

  /** {@link createSessionMaps} into this session's `maps`; returns the ring buffer map. */
  private createMaps(slow?: Parameters<typeof createSessionMaps>[4]): BpfMap {
    const m = createSessionMaps(this.compiled, this.maps, this.planByIndex, this.opts.stackMapEntries, slow);
    this.lost = m.lost;
    this.exitFlag = m.exitFlag;
    return m.ring;
  }

  private startRing(ring: BpfMap): void {
    const wake = this.maps.get(this.compiled.wakeName)!;
    this.ring = new RingBufConsumer(ring, (data) => this.records.onRecord(data), {
      // records are read in place: the integer-only printf fast path needs no Buffer view per event
      rawRecord: (buf, off, len) => this.records.onRawRecord(buf, off, len),
      wakeControl: wake,
      ...(this.opts.tickMs !== undefined ? { waitTimeoutMs: this.opts.tickMs } : {}),
      ...(this.opts.printfHook?.batchLimit ? { batchLimit: () => this.opts.printfHook!.batchLimit!() } : {}),
      // bpftrace writes each line as it is printed (line buffered): flush after every batch of events
      onBatch: () => this.opts.output.flush(),
      onError: (err) => {
        this.error ??= err;
        this.stop();
      },
    });
  }

  /** Ids of the loaded programs (for the session registry, runtime/registry.ts). */
  programIds(): number[] {
    return this.programs.map((p) => p.prog.info().id);
  }

  /** Number of probes bpftrace would report in "Attaching N probes...". */
  /**
   * The `Attached N probes` count: before attach(), one per program; after it, as current bpftrace counts (src/
   * bpftrace.cpp run()): the special probes (BEGIN, END, ...) plus each attachment's probes (every function on a
   * multi-attach link; a function skipped because the kernel refused it is not counted).
   */
  get probeCount(): number {
    if (!this.attached) return this.compiled.programs.length;
    const special = this.programs.filter((p) => p.plan.expanded.special).length;
    return this.attachments.reduce((n, a) => n + (a.count ?? 1), special);
  }

  /** Whether attach() has run. */
  private attached = false;

  /**
   * Run BEGIN probes; returns false if one of them called exit(). What they print stays in the ring buffer until
   * {@link deliverBegin} (bpftrace prints it once every probe is attached).
   */
  runBegin(): boolean {
    runSpecialProbes(this.programs, 'begin');
    const v = this.exitFlag?.lookup(Buffer.alloc(4));
    return !(v && v.readBigUInt64LE(0) !== 0n);
  }

  /** Print what BEGIN probes produced and honour their exit(). */
  deliverBegin(): void {
    this.drain();
    this.checkExitFlag();
  }

  /** Whether the program has probes besides BEGIN/END (a program of only those ends after BEGIN, as bpftrace). */
  get hasEventProbes(): boolean {
    return this.programs.some((p) => !p.plan.expanded.special || p.plan.expanded.special === 'signal');
  }

  /**
   * `--mode bench`: time every bench probe as current bpftrace does (`bpftrace.cpp` run): BPF_PROG_TEST_RUN with a
   * 14-byte packet (an XDP program's input must be at least an Ethernet header) and a repeat count that grows until
   * the runs take at least 1 ms, then `report` the kernel's average time per run and the repeat count. What the
   * probes print while being timed is dropped; a probe that returns non-zero is skipped; one that calls exit() fails
   * (`Benchmark 'NAME' failed.` on stderr, and the result is false).
   */
  runBenchmarks(report: (names: string[], index: number, averageNs: number, iters: number) => void): boolean {
    return runBenchmarks(this.specialProbeSession(), report);
  }

  /**
   * `--mode test`: run every test probe once (BPF_PROG_TEST_RUN with a 14-byte packet) as current bpftrace does
   * (`bpftrace.cpp` run): a test passes when it returns 0, exits with status 0 (`exit()` alone is fine) and calls no
   * errorf(). `start` is called before each test, then (for a failing test only) what it printed is printed, then
   * `result`. Returns whether every test passed. (bpftrace captures a test's output as text; here its records are
   * held back and replayed.)
   */
  runTests(report: {
    start: (names: string[], index: number) => void;
    result: (names: string[], index: number, durationNs: number, passed: boolean[]) => void;
  }): boolean {
    return runTests(this.specialProbeSession(), report);
  }

  /** What the bench and test runs need of this session. */
  private specialProbeSession(): SpecialProbeSession {
    const zero = Buffer.alloc(4);
    return {
      programs: this.programs,
      records: this.records,
      readRing: () => this.ring?.drain(),
      exitFlag: () => this.exitFlag?.lookup(zero)?.readBigUInt64LE(0) ?? 0n,
      clearExitFlag: () => this.exitFlag?.update(zero, Buffer.alloc(8)),
      forgetLost: () => {
        const lost = this.lost?.lookup(zero);
        if (lost) this.lostReported = lost.readBigUInt64LE(0);
      },
      flush: () => this.opts.output.flush(),
    };
  }

  /**
   * Attach every non-special probe, so that probes on the same event run in the order the program declares them
   * (bpftrace's runtime tests probe:uprobe_order, uretprobe_order, kprobe_order, fentry_order, fexit_order). The
   * kernel runs the programs of one tracepoint or perf event in attach order, but those of one uprobe, kprobe or
   * BPF trampoline newest first, so uprobe, usdt, kprobe (not kretprobe) and fentry/fexit probes are attached last, in
   * reverse.
   */
  attach(opts: { pid?: number } = {}): void {
    const events = this.programs.filter((p) => !p.plan.expanded.special);
    const lifo = (p: (typeof events)[number]) => LIFO_PROVIDERS.has(p.plan.expanded.provider);
    const warn = this.opts.warn ?? ((m: string) => process.stderr.write(`WARNING: ${m}\n`));
    for (const p of [...events.filter((p) => !lifo(p)), ...events.filter(lifo).reverse()]) {
      const e = p.plan.expanded;
      try {
        this.attachments.push(e.attach(p.prog.fd, { ...(opts.pid !== undefined ? { pid: opts.pid } : {}), warn }));
      } catch (err) {
        // one function of a uprobe wildcard the kernel cannot probe is skipped with a warning (as bpftrace's
        // missing_probes = warn), not the whole run; a probe named without a wildcard still fails
        if (!(FUNCTION_PROBE_PROVIDERS.has(e.provider) && hasWildcard(e.attachPoint.raw) && isRefusedProbe(err))) {
          throw err;
        }
        warn(
          `${e.name}: the kernel cannot probe this function (${(err as Error).message.replace(/^.*: /, '')}), skipped`,
        );
      }
    }
    this.attached = true;
    // SIGUSR1: from now on it is handled when it arrives (one that came earlier is handled now)
    this.signalProbesArmed = true;
    for (; this.pendingSignals > 0; this.pendingSignals--) this.signalAction?.();
  }

  /**
   * iter probes (probes/iter.ts): read each iterator to its end, giving what its program printed to `write` as it is
   * read (or pin it: `iter:NAME:PIN`). Returns whether there was one; the run then ends, as in bpftrace.
   */
  runIterators(write: (text: string) => void): boolean {
    const iters = this.attachments.filter(isIterAttachment);
    for (const a of iters) {
      const dec = new StringDecoder('utf8');
      a.run((chunk) => write(dec.write(chunk)));
      const rest = dec.end();
      if (rest) write(rest);
    }
    return iters.length > 0;
  }

  /** Signals (SIGUSR1) received before attach(): handled once everything is attached. */
  private pendingSignals = 0;
  private signalProbesArmed = false;
  /** What SIGUSR1 does in this run (set by listenForSignals). */
  private signalAction: (() => void) | undefined;

  /**
   * Listen for SIGUSR1. A program with `self:signal:SIGUSR1` probes runs them (current bpftrace, which since 0.22
   * prints no map on the signal); otherwise, with `printMapsOnSignal`, every map is printed and the run goes on
   * (bpftrace 0.17-0.21, whose users send SIGUSR1 for that). Called before the attach notice is printed, so a signal
   * sent as soon as it appears is held until attach(); one that arrives once the run is ending (exit(), Ctrl-C) is
   * ignored. The listener goes away in close(). (The launcher's own listener, cli/launch.ts, keeps Node's inspector
   * away from the signal before and after.)
   */
  listenForSignals(): void {
    if (this.programs.some((p) => p.plan.expanded.special === 'signal'))
      this.signalAction = () => this.runSignalProbes();
    else if (this.opts.printMapsOnSignal) this.signalAction = () => this.printMapsOnSignal();
    else return;
    const handler = () => {
      if (this.closed || this.exitRequested) return;
      if (this.signalProbesArmed) this.signalAction?.();
      else this.pendingSignals++;
    };
    process.on('SIGUSR1', handler);
    this.signalListener = () => process.off('SIGUSR1', handler);
  }

  /** SIGUSR1 without signal probes: print what the probes sent so far, then every map, and go on. */
  private printMapsOnSignal(): void {
    this.drain();
    this.opts.output.signalMaps(this.planByIndex.map((plan) => this.dumpMap(plan)));
    this.opts.output.flush();
  }

  private signalListener: (() => void) | undefined;

  /** Run the self:signal:SIGUSR1 probes in program order, then print what they sent and honour their exit(). */
  private runSignalProbes(): void {
    runSpecialProbes(this.programs, 'signal');
    this.drain();
    this.checkExitFlag();
  }

  /** Consume events until exit() is called or `stop()` is; resolves then. Calling it again gives the same wait. */
  waitForStop(): Promise<void> {
    if (this.exitRequested || this.closed) return Promise.resolve();
    this.stopped ??= this.startWaiting();
    return this.stopped;
  }

  private stopped: Promise<void> | undefined;

  private startWaiting(): Promise<void> {
    return new Promise((resolve) => {
      // This timer also keeps the event loop (and so the process) alive while we wait: the ring buffer consumer's
      // handles are unref'd. It checks the exit flag and nudges the consumer every tick (100 ms unless
      // opts.tickMs), lost events every 10 ticks.
      let ticks = 0;
      const timer = setInterval(() => {
        if (++ticks % 10 === 0) this.checkLost();
        this.checkExitFlag();
        // safety net of the wake control: records left behind a missed wakeup are read within a tick
        this.ring?.nudge();
      }, this.opts.tickMs ?? 100);
      this.stopResolve = () => {
        clearInterval(timer);
        resolve();
      };
      // start() drains what is already there: an exit() record can stop us right away
      this.ring!.start();
    });
  }

  /** Ask a running session to stop (Ctrl-C, SIGTERM, -c child ended). */
  stop(): void {
    this.exitRequested = true;
    const r = this.stopResolve;
    this.stopResolve = null;
    r?.();
  }

  /**
   * Detach probes, run END, drain events and print every map (bpftrace's end of run). With `notice`, detaching more
   * than DETACH_NOTICE_MIN probes first prints `Detaching N probes...` (text output): the kernel synchronizes once per
   * perf event or uprobe it removes, tens of ms each, so 700 syscall tracepoints take half a minute to detach.
   */
  finish(opts: { printMaps?: boolean; notice?: boolean } = {}): void {
    if (this.error) throw this.error;
    if (opts.notice && this.attached) {
      const n = this.attachments.reduce((k, a) => k + (a.count ?? 1), 0);
      if (n > DETACH_NOTICE_MIN) {
        this.opts.output.detachingProbes?.(n);
        this.opts.output.flush();
      }
    }
    for (const a of this.attachments) a.close();
    this.attachments = [];
    this.drain();
    this.records.afterExit = false;
    runSpecialProbes(this.programs, 'end');
    this.drain();
    this.checkLost();
    this.reportRecursionMisses();
    if ((opts.printMaps ?? true) && this.compiled.printMapsOnExit !== false) {
      this.opts.output.exitMaps(this.planByIndex.map((plan) => this.dumpMap(plan)));
    } else {
      this.opts.output.end();
    }
    this.opts.output.flush();
  }

  /** Delete every entry of a map. */
  clearMap(plan: MapPlan): void {
    this.mapFor(plan).clear();
  }

  /**
   * Delete every stored stack of the kstack/ustack maps whose name `which` accepts (`stack_k127`, `stack_u127`:
   * `k`/`u` and the frame limit). Entries of other maps that still refer to those stacks then decode as empty
   * stacks: clear those maps first (the fleet agent clears one buffer's counts and its stacks together).
   */
  clearStackMaps(which: (name: string) => boolean): void {
    for (const st of this.compiled.stackMaps) if (which(st.name)) this.maps.get(st.name)?.clear();
  }

  /**
   * The stored-stack map `name` (`stack_k127`, `stack_u127`, ...: an 8-byte FNV-1a id -> `limit` u64 frames, see
   * codegen's stack()), for callers that remove stacks one by one (the fleet agent); undefined when the program
   * has no such map.
   */
  stackStore(name: string): BpfMap | undefined {
    return this.compiled.stackMaps.some((s) => s.name === name) ? this.maps.get(name) : undefined;
  }

  /** The kernel map of `@name`'s plan, for callers that read its bytes themselves (the fleet agent). */
  bpfMap(plan: MapPlan): BpfMap {
    return this.mapFor(plan);
  }

  /** Close every kernel object. Idempotent; safe at any point. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.signalListener?.();
    for (const a of this.attachments) {
      try {
        a.close();
      } catch {
        /* closing is best effort on the way out */
      }
    }
    this.attachments = [];
    this.ring?.close();
    for (const p of this.programs) p.prog.close();
    for (const m of this.maps.values()) m.close();
    this.maps.clear();
  }

  private drain(): void {
    this.ring?.drain();
    this.opts.output.flush();
  }

  /**
   * The process exit status an `exit(code)` asked for (bits 8-15 of the exit flag; 0 without a code or an exit()).
   * Read it before close().
   */
  get exitCode(): number {
    if (!this.exitFlag || this.closed) return 0;
    const v = this.exitFlag.lookup(Buffer.alloc(4));
    return v ? Number((v.readBigUInt64LE(0) >> 8n) & 0xffn) : 0;
  }

  /** exit() sets the flag even when its ring buffer record is lost. */
  private checkExitFlag(): void {
    if (!this.exitFlag || this.closed || this.exitRequested) return;
    const v = this.exitFlag.lookup(Buffer.alloc(4));
    if (v && v.readBigUInt64LE(0) !== 0n) {
      this.drain();
      this.stop();
    }
  }

  /**
   * Probe firings the kernel skipped because a BPF program was already running on that CPU (e.g. a block completion
   * in a softirq interrupting a program): `recursion_misses` of `struct bpf_prog_info` (uapi bpf.h, kernel >= 5.12),
   * summed over the session's event programs. Such events never reach the ring buffer, so the lost-event count
   * cannot include them; one warning at the end says how many there were.
   */
  private reportRecursionMisses(): void {
    let missed = 0n;
    for (const p of this.programs) {
      if (p.plan.expanded.special) continue;
      try {
        missed += p.prog.info().recursionMisses;
      } catch {
        // info unavailable (closed program): nothing to report for it
      }
    }
    if (missed === 0n) return;
    const warn = this.opts.warn ?? ((m: string) => process.stderr.write(`WARNING: ${m}\n`));
    warn(
      `${missed} probe firing${missed === 1n ? ' was' : 's were'} skipped by the kernel: a BPF program was already running on that CPU (recursion_misses)`,
    );
  }

  private checkLost(): void {
    if (!this.lost || this.closed) return;
    const v = this.lost.lookup(Buffer.alloc(4));
    const n = v ? v.readBigUInt64LE(0) : 0n;
    if (n > this.lostReported) {
      this.opts.output.lostEvents(Number(n - this.lostReported));
      this.lostReported = n;
    }
  }

  private mapFor(plan: MapPlan): BpfMap {
    return this.maps.get(plan.kernelName)!;
  }

  /** Read a whole map into the output model. */
  dumpMap(plan: MapPlan, opts: { zeroScalar?: boolean } = {}): MapDump {
    const m = this.mapFor(plan);
    const raw = [];
    for (const [key, value] of m.entries()) {
      const slots: Buffer[] = m.perCpu ? m.perCpuValues(value) : [value];
      raw.push({ key, slots });
    }
    if (opts.zeroScalar && raw.length === 0 && plan.keyTypes.length === 0) {
      // print(@) of a scalar map never assigned prints its zero value (bpftrace: `@: 0`, call:print_empty_scalar_map)
      raw.push({
        key: Buffer.alloc(m.keySize),
        slots: Array.from({ length: m.nSlots }, () => Buffer.alloc(m.slotSize)),
      });
    }
    return buildMapDump(plan, raw, this.mapCtx);
  }
}

/** The symbol resolver options a program's config asks for (`show_debug_info`, `cpp_demangle`). */
/**
 * `BPFTRACE_CACHE_USER_SYMBOLS=PER_PROGRAM` (bpftrace's environment variable): user symbols are those of the
 * program's uprobe/USDT binaries, so a stack of a process that exited before it was printed still resolves in a
 * non-PIE binary (symbols/resolver.ts `programBinaries`). Otherwise (bpftrace's PER_PID) none.
 */
function programBinaries(compiled: CompiledProgram): string[] {
  if (process.env.BPFTRACE_CACHE_USER_SYMBOLS !== 'PER_PROGRAM') return [];
  const paths = compiled.programs.map((p) => (p.expanded as { path?: unknown }).path);
  return [...new Set(paths.filter((p): p is string => typeof p === 'string' && p.startsWith('/')))];
}

function resolverOptions(compiled: CompiledProgram): SymbolResolverOptions {
  const programs = programBinaries(compiled);
  return {
    ...(programs.length > 0 ? { programBinaries: programs } : {}),
    ...(compiled.showDebugInfo ? { debugInfo: true } : {}),
    ...(compiled.cppDemangle === false ? { demangle: false } : {}),
  };
}
