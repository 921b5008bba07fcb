/**
 * `trace()`: run a bpftrace-language program from JavaScript and read what it produces as typed values, with no
 * text formatting and parsing in between. A thin layer over `runtime/tracer.ts` (compile, load, attach, END,
 * cleanup): the run's printf records are decoded straight from the ring buffer into {@link TraceEvent}s, maps are
 * read on demand into {@link TraceMap}s.
 *
 * ```ts
 * import { trace } from 'bpfscope';
 * await using t = await trace('tracepoint:syscalls:sys_enter_openat { @opens[comm] = count(); }');
 * for await (const ev of t.events()) { ... }
 * const opens = await t.map<string, bigint>('@opens');
 * ```
 */
import { BpfscopeError } from '../errors.js';
import type { Diagnostic } from '../lang/diagnostics.js';
import { Tracer } from '../runtime/tracer.js';
import { EventQueue, type ExitEvent, eventOutput, PrintfSink, type TraceEvent } from './events.js';
import { dumpToMap, type MapValue, type TraceKey, type TraceMap } from './values.js';

/** Events `events()` holds for a reader that falls behind, unless {@link TraceOptions.bufferEvents} says otherwise. */
export const DEFAULT_EVENT_BUFFER = 65536;

/** Options of {@link trace}; the CLI's flags of the same meaning are given in brackets. */
export interface TraceOptions {
  /** `-p PID`: probes fire only for this process (uprobes attach to it); the run ends when it exits. */
  pid?: number;
  /**
   * `-c CMD`: run this shell command (`/bin/sh -c`), traced from its first instruction; the run ends when it
   * exits. Its stdout and stderr are this process's.
   */
  command?: string;
  /** The program's positional parameters `$1`, `$2`, ... (the CLI's arguments after the program). */
  positional?: readonly string[];
  /** `--unsafe`: allow builtins with side effects on the system (`signal()`, `system()`, ...). */
  unsafe?: boolean;
  /** `--probe-filter`: only probes whose name this regex finds are attached (BEGIN/END always are). */
  probeFilter?: RegExp;
  /**
   * Runtime configuration, as bpftrace's `BPFTRACE_*` environment variables give it (these override the process
   * environment; a `config = { ... }` block in the program still wins): `max_strlen`, `max_map_keys`,
   * `perf_rb_pages`, `max_cat_bytes`, `print_maps_on_exit`, `max_probes` (keys with or without `BPFTRACE_`, any case).
   * @throws BpfscopeError from trace() for another key
   */
  config?: Readonly<Record<string, number | bigint | string>>;
  /** `--include FILE` / `-I DIR`: headers whose integer `#define`s the program may use. */
  includeFiles?: readonly string[];
  includeDirs?: readonly string[];
  /**
   * Events `events()` buffers for a reader that falls behind (default {@link DEFAULT_EVENT_BUFFER}); past that,
   * events are dropped and reported by a `lost` event with `source: 'consumer'`.
   */
  bufferEvents?: number;
  /** Aborting stops the run and closes it, as {@link TraceHandle.close} (an abort during `trace()` rejects it). */
  signal?: AbortSignal;
  /** Name used for the program in diagnostics (default `stdin`, as bpftrace's `-e`). */
  sourceName?: string;
}

/** Config keys settable through TraceOptions.config (those `lang/passes/config.ts` reads from the environment). */
const CONFIG_KEYS = new Set([
  'max_map_keys',
  'perf_rb_pages',
  'max_strlen',
  'print_maps_on_exit',
  'max_cat_bytes',
  'max_probes',
]);

/** How a run ended (also the payload of the last event). */
export type TraceExit = ExitEvent;

/** A map's name as the program writes it: `@name`, or `@` for the anonymous map. */
export type MapName = `@${string}`;

/** The run was aborted through {@link TraceOptions.signal} before it was started. */
export class TraceAbortedError extends BpfscopeError {
  constructor() {
    super('the trace was aborted');
    this.name = 'TraceAbortedError';
  }
}

/** A running (or finished) program. Close it on every path: `await using`, or `try { ... } finally { close() }`. */
export interface TraceHandle extends AsyncDisposable {
  /** Compilation warnings (print them with `formatDiagnostic`). */
  readonly warnings: readonly Diagnostic[];
  /** Number of probes attached (bpftrace's `Attached N probes`). */
  readonly probes: number;
  /** Resolves when the run has ended (END has run): with the exit event. Rejects if reading events failed. */
  readonly exited: Promise<TraceExit>;
  /**
   * The run's events, from its start (BEGIN's output included), in order, ending with the `exit` event. One
   * stream per run: calling `events()` again continues where the previous loop stopped. Leaving a `for await`
   * loop (break, return, throw) ends that loop only; the run goes on until it ends by itself or is closed, and
   * meanwhile events are buffered up to {@link TraceOptions.bufferEvents} and then counted as lost.
   */
  events(): AsyncIterableIterator<TraceEvent>;
  /**
   * The same stream as {@link events}, as arrays: each step gives every event queued at that moment (at least one),
   * in order. For high event rates: one `await` per ring buffer batch (at most 4,096 events) instead of one per event. Shares the stream
   * (and the one-reader rule) with `events()`.
   */
  batches(): AsyncIterableIterator<readonly TraceEvent[]>;
  /**
   * A snapshot of map `name` (`'@opens'`, `'@'`). Type parameters narrow the key and value types, e.g.
   * `map<string, bigint>('@opens')` for `@opens[comm] = count()`. Readable until `close()`.
   * @throws BpfscopeError for a map the program does not have, or after close()
   */
  map<K extends TraceKey = TraceKey, V extends MapValue = MapValue>(name: MapName): Promise<TraceMap<K, V>>;
  /** Every map of the program, by name (`@opens`). */
  maps(): Promise<Map<MapName, TraceMap>>;
  /** Delete every entry of map `name` (as the program's `clear(@name)`). */
  clear(name: MapName): Promise<void>;
  /** Call `listener` when the run ends (at once if it has ended). */
  onExit(listener: (exit: TraceExit) => void): void;
  /** End the run as `exit()` would: detach, run END; resolves with the exit event. Maps stay readable. */
  stop(): Promise<TraceExit>;
  /**
   * Detach every probe and close every program, map, link and perf event of the run (END runs first if the run
   * was still going). Idempotent, never throws; events not yet read are discarded.
   */
  close(): Promise<void>;
}

class Handle implements TraceHandle {
  readonly exited: Promise<TraceExit>;
  private closed = false;
  private closing: Promise<void> | undefined;
  private stopRequested = false;
  private exitEvent: TraceExit | undefined;
  private reading = false;

  constructor(
    private readonly tracer: Tracer,
    private readonly queue: EventQueue,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.exited = tracer.wait().then(() => this.finishRun());
    // a failure is reported through exited and events(); nobody need be listening to exited
    this.exited.catch(() => {});
    signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  private readonly onAbort = (): void => {
    void this.close();
  };

  get warnings(): readonly Diagnostic[] {
    return this.tracer.warnings;
  }

  get probes(): number {
    return this.tracer.result.compiled.programs.filter((p) => !p.expanded.special).length;
  }

  private finishRun(): TraceExit {
    let failure: unknown;
    try {
      this.tracer.finish();
    } catch (e) {
      failure = e;
    }
    const code = this.tracer.exitCode;
    const ev: TraceExit = {
      kind: 'exit',
      code,
      reason: this.stopRequested ? 'stopped' : this.tracer.commandEnded ? 'command' : 'exit',
    };
    this.exitEvent = ev;
    this.queue.end(ev, failure);
    if (failure !== undefined) throw failure;
    return ev;
  }

  events(): AsyncIterableIterator<TraceEvent> {
    return this.reader(() => this.queue.next());
  }

  batches(): AsyncIterableIterator<readonly TraceEvent[]> {
    return this.reader(() => this.queue.nextBatch());
  }

  /** An async iterator over `next` that holds the one-reader slot until it is returned or the stream is over. */
  private reader<T>(next: () => Promise<IteratorResult<T>>): AsyncIterableIterator<T> {
    if (this.reading && !this.queue.over) throw new BpfscopeError('the events are already being read by another loop');
    this.reading = true;
    let done = false;
    const it: AsyncIterableIterator<T> = {
      // no wrapping of the queue's promise: one promise per event is the cost of a for-await step already
      next: () => (done ? Promise.resolve({ value: undefined, done: true }) : next()),
      return: () => {
        if (!done) {
          done = true;
          this.reading = false;
          this.queue.release();
        }
        return Promise.resolve({ value: undefined, done: true });
      },
      [Symbol.asyncIterator]() {
        return it;
      },
    };
    return it;
  }

  async map<K extends TraceKey = TraceKey, V extends MapValue = MapValue>(name: MapName): Promise<TraceMap<K, V>> {
    return dumpToMap(this.tracer.readMap(this.mapName(name))) as TraceMap<K, V>;
  }

  async maps(): Promise<Map<MapName, TraceMap>> {
    const out = new Map<MapName, TraceMap>();
    this.assertOpen();
    for (const n of this.tracer.mapNames()) out.set(`@${n}`, dumpToMap(this.tracer.readMap(n)));
    return out;
  }

  async clear(name: MapName): Promise<void> {
    this.tracer.clearMap(this.mapName(name));
  }

  onExit(listener: (exit: TraceExit) => void): void {
    this.exited.then(listener, () => {});
  }

  async stop(): Promise<TraceExit> {
    if (!this.exitEvent) this.stopRequested = true;
    this.tracer.stop();
    return this.exited;
  }

  close(): Promise<void> {
    this.closing ??= this.closeOnce();
    return this.closing;
  }

  private async closeOnce(): Promise<void> {
    this.closed = true;
    this.signal?.removeEventListener('abort', this.onAbort);
    if (!this.exitEvent) this.stopRequested = true;
    this.tracer.stop();
    try {
      await this.exited;
    } catch {
      /* reported through exited */
    }
    this.tracer.close();
    this.queue.discard();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new BpfscopeError('the trace is closed: its maps are gone');
  }

  private mapName(name: MapName): string {
    this.assertOpen();
    if (typeof name !== 'string' || !name.startsWith('@')) {
      throw new BpfscopeError(`map names start with '@' (got ${JSON.stringify(name)})`);
    }
    const bare = name.slice(1);
    const names = this.tracer.mapNames();
    if (!names.includes(bare)) {
      const have = names.map((n) => `@${n}`).join(', ');
      throw new BpfscopeError(`the program has no map ${name}`, have ? { hint: `its maps: ${have}` } : {});
    }
    return bare;
  }
}

/**
 * Compile `source` (a bpftrace program), load and attach it; resolves once every probe is live and BEGIN has run.
 * The run goes on until the program calls exit(), the `command`/`pid` process ends, `stop()`/`close()` is called
 * or `signal` aborts. Nothing is printed: errorf()/warnf() messages alone go to stderr, as the CLI prints them.
 *
 * @throws CompileError the program has errors (`diagnostics`, with source spans)
 * @throws PermissionError not allowed to load BPF programs or open perf events (not root)
 * @throws KernelError another failed system call (`errno`); `ProgramRejected` (a KernelError) carries the
 *   verifier log
 * @throws TraceAbortedError `signal` was aborted before the run started
 * @throws BpfscopeError anything else the user can act on (one sentence)
 * Whatever it throws, nothing is left attached.
 */
export async function trace(source: string, options: TraceOptions = {}): Promise<TraceHandle> {
  if (options.signal?.aborted) throw new TraceAbortedError();
  const capacity = options.bufferEvents ?? DEFAULT_EVENT_BUFFER;
  if (!Number.isInteger(capacity) || capacity < 1) {
    throw new BpfscopeError(`bufferEvents must be a positive integer (got ${String(options.bufferEvents)})`);
  }
  const queue = new EventQueue(capacity);
  const configEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries(options.config ?? {})) {
    const key = k.replace(/^BPFTRACE_/i, '').toLowerCase();
    if (!CONFIG_KEYS.has(key)) {
      throw new BpfscopeError(`unknown config key ${JSON.stringify(k)}`, {
        hint: `known: ${[...CONFIG_KEYS].join(', ')}; others go in the program's config block`,
      });
    }
    configEnv[`BPFTRACE_${key.toUpperCase()}`] = String(v);
  }
  const sink = new PrintfSink(queue);
  const tracer = await Tracer.start({
    source: { name: options.sourceName ?? 'stdin', text: source },
    output: eventOutput(queue),
    printfHook: sink,
    onCompiled: (r) => sink.bind(r.compiled),
    configEnv,
    quiet: true,
    printMapsAtExit: false,
    handleSignals: false,
    ...(options.pid !== undefined ? { pid: options.pid } : {}),
    ...(options.command !== undefined ? { command: options.command } : {}),
    ...(options.positional ? { positional: [...options.positional] } : {}),
    ...(options.unsafe ? { unsafe: true } : {}),
    ...(options.probeFilter ? { probeFilter: options.probeFilter } : {}),
    ...(options.includeFiles ? { includeFiles: options.includeFiles } : {}),
    ...(options.includeDirs ? { includeDirs: options.includeDirs } : {}),
  });
  const handle = new Handle(tracer, queue, options.signal);
  if (options.signal?.aborted) {
    await handle.close();
    throw new TraceAbortedError();
  }
  return handle;
}
