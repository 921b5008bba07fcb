/**
 * A tracing session: owns every kernel object of one run (maps, ring buffer, programs, attachments) and drives
 * bpftrace's lifecycle: print "Attaching N probes...", run BEGIN (BPF_PROG_TEST_RUN), attach the other probes,
 * consume async events (printf, print, exit, time, clear, zero) until exit()/a signal/the -c child ends, detach,
 * run END, print the maps, close everything. `close()` is idempotent and safe from any exit path.
 */
import { readFileSync, writeSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { childProcess } from '../builtins.js';
import { possibleCpus } from '../kernel/cpus.js';
import { strerror as cStrerror } from '../kernel/ffi.js';
import { cgroupPath, signalName, syscallName } from './names.js';
import { BpfMap, MapFlags, type MapSpec } from '../bpf/map.js';
import type { LoadedProgram } from '../bpf/program.js';
import type { CompiledProgram, MapPlan } from '../codegen/plan.js';
import { AsyncAction, JOIN_ARG_SIZE, JOIN_MAX_ARGS, MapKind } from '../codegen/plan.js';
import { isRefusedProbe } from '../probes/errors.js';
import { hasWildcard } from '../probes/glob.js';
import { isIterAttachment } from '../probes/iter.js';
import type { AttachedProbe } from '../probes/types.js';
import { formatDiagnostic, type SourceFile } from '../lang/diagnostics.js';
import { SymbolResolver } from '../symbols/resolver.js';
import { buildMapDump, type DecodeContext, decodeValue } from './decode.js';
import { StackReader } from './stacks.js';

/** system(): run the command through /bin/sh and return what it printed (bpftrace prints it in order). */
function runCommand(cmd: string): string {
  try {
    return childProcess().execSync(cmd, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  } catch (e) {
    return String((e as { stdout?: string }).stdout ?? '');
  }
}

/**
 * cat(): at most `maxBytes` of a file's contents, or bpftrace's error text
 * (`ERROR: failed to open file 'PATH' (No such file or directory)`, tests/runtime/builtin "cat \"no such file\"").
 */
function readForCat(path: string, maxBytes: number): string {
  try {
    return readFileSync(path, 'latin1').slice(0, maxBytes);
  } catch (e) {
    const errno = (e as NodeJS.ErrnoException).errno;
    const why = errno !== undefined ? cStrerror(Math.abs(errno)) : (e as Error).message;
    return `ERROR: failed to open file '${path}' (${why})\n`;
  }
}

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

/** Providers whose programs run newest-attached first on a shared probe point (uprobe consumers). */
const UPROBE_PROVIDERS = new Set(['uprobe', 'uretprobe', 'usdt']);
/** Probes above which detaching announces itself (`Detaching N probes...`, Session.finish). */
const DETACH_NOTICE_MIN = 100;
/** Providers whose wildcards match functions, one of which the kernel may refuse (skipped: Session.attach). */
const FUNCTION_PROBE_PROVIDERS = new Set(['uprobe', 'uretprobe', 'kprobe', 'kretprobe']);

/** Distinct stacks kept per stack map unless SessionOptions.stackMapEntries says otherwise. */
const STACK_MAP_ENTRIES = 4096;
/** Map fds stand-ins while maps are created in the background (loadAsync): far above any fd (RLIMIT_NOFILE). */
const FD_PLACEHOLDER = 0x7f000000;

import { type Linked, link, loadLinked, loadPlan, resolveMapFds } from './loader.js';
import type { Output } from './output/index.js';
import type { MapDump, Value } from './output/model.js';
import { compileIntPrintf, compilePrintf, renderPrintf } from './output/printf.js';
import { formatTimeBuiltin } from './output/strftime.js';
import { RingBufConsumer } from './ringbuf.js';

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
}

/**
 * Receives printf() records undecoded or decoded, instead of the text output (the typed API's event stream).
 * `raw` is tried first with the record's arguments at `buf[off..]` (laid out per `compiled.printfs[id]`); when it
 * returns false the arguments are decoded into the output model and passed to `values`.
 */
export interface PrintfHook {
  raw(id: number, buf: Buffer, off: number): boolean;
  values(id: number, args: Value[]): void;
  /** Records the next background read of the ring buffer may deliver at most (RingBufOptions.batchLimit). */
  batchLimit?(): number;
}

export class Session {
  private maps = new Map<string, BpfMap>();
  private planByIndex: MapPlan[] = [];
  private programs: { plan: CompiledProgram['programs'][number]; prog: LoadedProgram }[] = [];
  private attachments: AttachedProbe[] = [];
  private ring: RingBufConsumer | null = null;
  private lost: BpfMap | null = null;
  private exitFlag: BpfMap | null = null;
  private lostReported = 0n;
  private closed = false;
  /** First error raised while consuming events in the background; rethrown by `finish()`. */
  private error: unknown = null;
  private exitRequested = false;
  /** An exit() record was read: later event records are dropped until END runs (bpftrace stops reading then). */
  private afterExit = false;
  private stopResolve: (() => void) | null = null;
  private readonly printfs: ReturnType<typeof compilePrintf>[];
  /** Per printf id: the integer-only fast renderer (see compileIntPrintf), or null. */
  private readonly intPrintfs: ReturnType<typeof compileIntPrintf>[];
  private readonly stacks: StackReader;
  /** Decoding for printf/print values and for map keys and values. */
  private readonly valueCtx: DecodeContext;
  private readonly mapCtx: DecodeContext;

  constructor(
    readonly compiled: CompiledProgram,
    readonly opts: SessionOptions,
  ) {
    this.printfs = compiled.printfs.map((p) => compilePrintf(p.format));
    this.intPrintfs = compiled.printfs.map((p, i) => compileIntPrintf(this.printfs[i]!, p.argTypes, p.offsets));
    let resolver = opts.symbolizer;
    this.stacks = new StackReader(
      (name) => this.maps.get(name),
      () => {
        resolver ??= new SymbolResolver(compiled.showDebugInfo ? { debugInfo: true } : {});
        return resolver;
      },
    );
    // current bpftrace indents stack frames by 8 spaces in printf and in map keys alike (0.17 used 4 in map keys)
    const sym = (): SymbolResolver => {
      resolver ??= new SymbolResolver(compiled.showDebugInfo ? { debugInfo: true } : {});
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
        pending.push(BpfMap.createAsync(spec).then((m) => void this.maps.set(name, m)));
      });
    } catch (e) {
      await Promise.allSettled(pending); // so that close() finds every map created
      throw e;
    }
    const fdOf = (name: string): number => {
      const fd = this.maps.get(name)?.fd ?? placeholders.get(name);
      if (fd === undefined) throw new Error(`internal: unknown map ${name}`);
      return fd;
    };
    let linked: Linked[] = [];
    let linkError: unknown;
    try {
      linked = this.compiled.programs.map((plan) => link(plan, fdOf));
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

  /**
   * Creates the session's maps, the program's own maps and stack maps through `slow` (default: at once, as all
   * others), and returns the ring buffer map.
   */
  private createMaps(
    slow: (name: string, spec: MapSpec) => void = (name, spec) => this.maps.set(name, BpfMap.create(spec)),
  ): BpfMap {
    const c = this.compiled;
    for (const m of c.maps) {
      slow(m.kernelName, {
        type: m.mapType,
        keySize: m.keySize,
        valueSize: m.valueSize,
        maxEntries: m.maxEntries,
        name: m.kernelName,
      });
      this.planByIndex[m.index] = m;
    }
    const ring = BpfMap.create({
      type: MapKind.RINGBUF,
      keySize: 0,
      valueSize: 0,
      maxEntries: c.ringbufSize,
      name: 'ringbuf',
    });
    this.maps.set(c.ringbufName, ring);
    const wake = BpfMap.create({
      type: MapKind.ARRAY,
      keySize: 4,
      valueSize: 8,
      maxEntries: 1,
      name: 'ringbuf_wake',
      flags: MapFlags.MMAPABLE,
    });
    this.maps.set(c.wakeName, wake);
    this.lost = BpfMap.create({ type: MapKind.ARRAY, keySize: 4, valueSize: 8, maxEntries: 1, name: 'lost_events' });
    this.maps.set(c.lostName, this.lost);
    if (c.lenCountName) {
      this.maps.set(
        c.lenCountName,
        BpfMap.create({ type: MapKind.PERCPU_ARRAY, keySize: 4, valueSize: 8, maxEntries: 1, name: 'len_count' }),
      );
    }
    if (c.joinBufName) {
      this.maps.set(
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
        valueSize: 8 * st.limit,
        maxEntries: this.opts.stackMapEntries ?? STACK_MAP_ENTRIES,
        name: st.name,
      });
      this.maps.set(
        st.scratch,
        BpfMap.create({
          type: MapKind.PERCPU_ARRAY,
          keySize: 4,
          valueSize: 8 * st.limit,
          maxEntries: 1,
          name: st.scratch,
        }),
      );
    }
    for (const f of c.frameMaps ?? []) {
      this.maps.set(
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
      this.maps.set(t.name, table);
      const key = Buffer.alloc(4);
      t.funcs.forEach((f, i) => {
        const value = Buffer.alloc(t.valueSize);
        value.write(f, 'latin1');
        key.writeUInt32LE(i);
        table.update(key, value);
      });
    }
    this.exitFlag = BpfMap.create({ type: MapKind.ARRAY, keySize: 4, valueSize: 8, maxEntries: 1, name: 'exit_flag' });
    this.maps.set(c.exitName, this.exitFlag);
    return ring;
  }

  private startRing(ring: BpfMap): void {
    const wake = this.maps.get(this.compiled.wakeName)!;
    this.ring = new RingBufConsumer(ring, (data) => this.onRecord(data), {
      // records are read in place: the integer-only printf fast path needs no Buffer view per event
      rawRecord: (buf, off, len) => this.onRawRecord(buf, off, len),
      wakeControl: wake,
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
    for (const p of this.programs) if (p.plan.expanded.special === 'begin') p.prog.testRun({});
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
    const benches = this.programs.filter((p) => p.plan.expanded.special === 'bench');
    const names = benches.map((p) => p.plan.expanded.name.slice('bench:'.length));
    const data = Buffer.alloc(14);
    let ok = true;
    const zero = Buffer.alloc(4);
    benches.forEach((b, index) => {
      let iters = 1;
      for (;;) {
        const r = b.prog.testRun({ dataIn: data, repeat: iters });
        this.discarding = true;
        try {
          this.ring?.drain();
        } finally {
          this.discarding = false;
        }
        const exited = this.exitFlag?.lookup(zero)?.readBigUInt64LE(0) ?? 0n;
        if (exited === 0n && r.retval !== 0) break;
        const total = r.durationNs * iters;
        if (exited === 0n) {
          const factor = total < 1e3 ? 1000 : total < 1e4 ? 100 : total < 1e5 ? 10 : total < 1e6 ? 2 : 1;
          // (a repeat count past 2^31 would not fit the kernel's u32: report what we have)
          if (factor > 1 && iters * factor < 2 ** 31) {
            iters *= factor;
            continue;
          }
        }
        if (exited !== 0n) {
          process.stderr.write(`ERROR: Benchmark '${names[index]}' failed.\n`);
          this.exitFlag?.update(zero, Buffer.alloc(8));
          ok = false;
        } else report(names, index, r.durationNs, iters);
        break;
      }
    });
    // events the timed runs could not fit in the ring buffer are not the program's to report
    const lost = this.lost?.lookup(zero);
    if (lost) this.lostReported = lost.readBigUInt64LE(0);
    return ok;
  }

  /** Set while bench runs' records are read: they are dropped. */
  private discarding = false;
  /** Set while a test probe's records are read: they are kept here (copies), to be shown if the test fails. */
  private collected: Buffer[] | null = null;

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
    const tests = this.programs.filter((p) => p.plan.expanded.special === 'test');
    const names = tests.map((p) => p.plan.expanded.name.slice('test:'.length));
    const passed: boolean[] = [];
    const zero = Buffer.alloc(4);
    tests.forEach((t, index) => {
      this.collected = [];
      let r: ReturnType<LoadedProgram['testRun']>;
      let records: Buffer[];
      try {
        r = t.prog.testRun({ dataIn: Buffer.alloc(14), repeat: 1 });
        this.ring?.drain();
      } finally {
        records = this.collected ?? [];
        this.collected = null;
      }
      const flag = this.exitFlag?.lookup(zero)?.readBigUInt64LE(0) ?? 0n;
      const errors = records.filter((d) => d.readUInt32LE(0) === AsyncAction.ERRORF).length;
      passed.push(r.retval === 0 && ((flag >> 8n) & 0xffn) === 0n && errors === 0);
      this.exitFlag?.update(zero, Buffer.alloc(8));
      report.start(names, index);
      // a failing test shows what it printed; a passing one only has its map operations (clear, zero) applied. An
      // exit() ends the test, not the run.
      for (const d of records) {
        const action = d.readUInt32LE(0);
        if (action === AsyncAction.EXIT) continue;
        if (passed[index] && action !== AsyncAction.CLEAR && action !== AsyncAction.ZERO) continue;
        this.onRecord(d);
      }
      this.opts.output.flush();
      report.result(names, index, r.durationNs, passed);
    });
    const lost = this.lost?.lookup(zero);
    if (lost) this.lostReported = lost.readBigUInt64LE(0);
    return passed.every((p) => p);
  }

  /**
   * Attach every non-special probe, so that probes on the same event run in the order the program declares them
   * (bpftrace's runtime tests probe:uprobe_order, uretprobe_order). The kernel runs the programs of one tracepoint,
   * kprobe or perf event in attach order, but the consumers of one uprobe newest first, so uprobe-based probes
   * (uprobe, uretprobe, usdt) are attached last, in reverse.
   */
  attach(opts: { pid?: number } = {}): void {
    const events = this.programs.filter((p) => !p.plan.expanded.special);
    const lifo = (p: (typeof events)[number]) => UPROBE_PROVIDERS.has(p.plan.expanded.provider);
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
    for (const p of this.programs) if (p.plan.expanded.special === 'signal') p.prog.testRun({});
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
  /** Run-time warnings printed at most once (PrintfPlan.once) that were printed. */
  private readonly warnedOnce = new Set<number>();

  private startWaiting(): Promise<void> {
    return new Promise((resolve) => {
      // This timer also keeps the event loop (and so the process) alive while we wait: the ring buffer consumer's
      // handles are unref'd. It checks the exit flag and nudges the consumer every 100 ms, lost events every second.
      let ticks = 0;
      const timer = setInterval(() => {
        if (++ticks % 10 === 0) this.checkLost();
        this.checkExitFlag();
        // safety net of the wake control: records left behind a missed wakeup are read within 100 ms
        this.ring?.nudge();
      }, 100);
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
    this.afterExit = false;
    for (const p of this.programs) if (p.plan.expanded.special === 'end') p.prog.testRun({});
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

  /** A ring buffer record at `buf[off..off+len)`: integer-only printfs directly, the rest through onRecord. */
  private onRawRecord(buf: Buffer, off: number, len: number): void {
    if (this.afterExit || this.discarding) return;
    if (this.collected) {
      this.collected.push(Buffer.from(buf.subarray(off, off + len)));
      return;
    }
    if (len >= 8 && buf.readUInt32LE(off) === AsyncAction.PRINTF) {
      if (this.opts.printfHook?.raw(buf.readUInt32LE(off + 4), buf, off + 8)) return;
      const text = this.intPrintfs[buf.readUInt32LE(off + 4)]?.(buf, off + 8);
      if (text !== undefined && text !== null) {
        this.opts.output.printf(text);
        return;
      }
    }
    this.onRecord(buf.subarray(off, off + len));
  }

  private onRecord(data: Buffer): void {
    if (data.length < 8 || this.discarding) return;
    if (this.collected) {
      this.collected.push(Buffer.from(data));
      return;
    }
    const action = data.readUInt32LE(0);
    const id = data.readUInt32LE(4);
    const out = this.opts.output;
    switch (action) {
      case AsyncAction.PRINTF: {
        const p = this.compiled.printfs[id]!;
        const args: Value[] = p.argTypes.map((t, i) => decodeValue(data, 8 + p.offsets[i]!, t, this.valueCtx));
        if (this.opts.printfHook) this.opts.printfHook.values(id, args);
        else out.printf(renderPrintf(this.printfs[id]!, args));
        return;
      }
      case AsyncAction.ERRORF:
      case AsyncAction.WARNF: {
        const p = this.compiled.printfs[id]!;
        const args: Value[] = p.argTypes.map((t, i) => decodeValue(data, 8 + p.offsets[i]!, t, this.valueCtx));
        const severity = action === AsyncAction.ERRORF ? 'error' : 'warning';
        if (severity === 'warning' && this.opts.noWarnings) return;
        if (p.once) {
          if (this.warnedOnce.has(id)) return;
          this.warnedOnce.add(id);
        }
        const message = renderPrintf(this.printfs[id]!, args);
        const source = this.opts.source ?? { name: 'stdin', text: '' };
        out.flush();
        writeSync(2, `${formatDiagnostic({ severity, message, ...(p.pos ? { pos: p.pos } : {}) }, source)}\n`);
        return;
      }
      case AsyncAction.SYSTEM:
      case AsyncAction.CAT: {
        const p = this.compiled.printfs[id]!;
        const args: Value[] = p.argTypes.map((t, i) => decodeValue(data, 8 + p.offsets[i]!, t, this.valueCtx));
        const text = renderPrintf(this.printfs[id]!, args);
        out.flush();
        if (action === AsyncAction.SYSTEM) out.syscall(runCommand(text));
        else out.cat(readForCat(text, this.compiled.maxCatBytes ?? 10240));
        return;
      }
      case AsyncAction.EXIT:
        // as bpftrace: what other probes sent after the exit() is not printed (END's output still is)
        this.afterExit = true;
        this.stop();
        return;
      case AsyncAction.PRINT_MAP: {
        const plan = this.planByIndex[id]!;
        const top = Number(data.readBigUInt64LE(8));
        const div = Number(data.readBigUInt64LE(16));
        out.printMap(this.dumpMap(plan, { zeroScalar: true }), { ...(top ? { top } : {}), ...(div ? { div } : {}) });
        return;
      }
      case AsyncAction.CLEAR:
        this.clearMap(this.planByIndex[id]!);
        return;
      case AsyncAction.ZERO: {
        const m = this.mapFor(this.planByIndex[id]!);
        const zero = Buffer.alloc(m.valueBytes);
        for (const key of [...m.keys()]) m.update(key, zero);
        return;
      }
      case AsyncAction.TIME:
        out.time(formatTimeBuiltin(this.compiled.timeFormats[id]!));
        return;
      case AsyncAction.JOIN: {
        const parts: string[] = [];
        for (let i = 0; i < JOIN_MAX_ARGS; i++) {
          const off = 8 + i * JOIN_ARG_SIZE;
          if (off >= data.length || data[off] === 0) break;
          const end = data.indexOf(0, off);
          parts.push(data.toString('latin1', off, end < 0 || end > off + JOIN_ARG_SIZE ? off + JOIN_ARG_SIZE : end));
        }
        out.join(parts.join(this.compiled.joinSeparators[id] ?? ' '));
        return;
      }
      case AsyncAction.PRINT_VALUE: {
        const pv = this.compiled.printValues[id]!;
        out.printValue(decodeValue(data, 8, pv.type, this.valueCtx));
        return;
      }
    }
  }
}
