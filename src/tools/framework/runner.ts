/**
 * Running a tool's generated bpftrace program through the public runtime API (`runtime/tracer.ts`) with bcc's
 * life cycle:
 * 1. parse the options ({@link toolMain}: `-h` prints argparse's help and exits 0, a usage error prints
 *    argparse's message and exits 2; `--ebpf` prints the generated program instead of running it);
 * 2. compile, load and attach ({@link runProgram}); then the tool prints its header ("Tracing ... Hit Ctrl-C to
 *    end.");
 * 3. events stream to the tool's handler while the run lasts; interval tools get a tick every `interval`
 *    seconds (and a last one at the end) to print and clear their maps;
 * 4. the run ends on Ctrl-C (SIGINT) or SIGTERM, after `count` intervals, after `duration` seconds, when an
 *    `--exec` command exits, or when stdout's reader goes away; the last tick prints what was gathered (as bcc's
 *    tools do on Ctrl-C), every kernel object is released and the exit status is 0.
 */
import { BpfscopeError } from '../../errors.js';
import { requireTracingPrivileges } from '../../kernel/privileges.js';
import { Tracer } from '../../runtime/tracer.js';
import { ArgError, HelpRequested, type OptionsOf, type Parsed, type ParserSpec, parseArgs } from './argparse.js';
import { type EventHandler, ToolOutput, ToolWriter } from './output.js';
import { type HeatMapSpec, HeatMapWriter } from './heatmap.js';
import type { FieldDecls, RecordSet } from './record.js';

/** Longest timer Node supports (ms); longer intervals (bcc's default 99999999 s) mean "only at the end". */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface RunOptions {
  /** Tool name: the program's source name in error messages. */
  tool: string;
  /** The generated bpftrace program. */
  program: string;
  writer: ToolWriter;
  /** Events: `printf` records split into fields (see output.ts); `fieldCount` bounds the split. */
  onEvent?: EventHandler;
  fieldCount?: number;
  /** Typed events (record.ts): the program's records are decoded with `records` and given to `onRecord`. */
  records?: RecordSet<Readonly<Record<string, FieldDecls>>>;
  onRecord?: (record: never) => void;
  /** Called once the probes are attached: print the header here. */
  onStarted?: (tracer: Tracer) => void;
  /** Print every `seconds` (null or absent: only at the end); stop after `count` prints. */
  interval?: { seconds: number | null; count?: number | null };
  /** Called at each interval and once at the end (`last`), while the maps still exist. */
  onTick?: (tracer: Tracer, last: boolean) => void;
  /** Stop after this many seconds (interval tools count it in whole intervals, as bcc's syscount does). */
  durationSec?: number | null;
  /** `--exec`: a shell command started stopped, traced from its first instruction; the run ends when it exits. */
  command?: string;
  /** `-p PID`: every probe but BEGIN/END fires for this process only (uprobes attach to it); the run ends when it exits. */
  pid?: number;
  /** Distinct stacks each kstack/ustack map holds (bcc's --stack-storage-size). */
  stackMapEntries?: number;
}

/**
 * Run `body` while SIGINT and SIGTERM are noted (alongside the runtime's own handling, which ends the run):
 * `interrupted()` tells whether either arrived since `body` started. bcc's argdist and memleak leave out the report
 * of an interval that Ctrl-C cut short; they test this in their last tick. The listeners are removed when `body`
 * settles. Resolves or rejects as `body` does.
 */
export async function withInterruptNote<T>(body: (interrupted: () => boolean) => Promise<T>): Promise<T> {
  let interrupted = false;
  const onSignal = (): void => {
    interrupted = true;
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    return await body(() => interrupted);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/**
 * Compile, load and attach `opts.program`, run until one of the end conditions, and release everything.
 * Resolves with the exit status (0). @throws CompileError, ProgramRejected, KernelError, BpfscopeError
 */
export async function runProgram(opts: RunOptions): Promise<number> {
  const writer = opts.writer;
  if (writer.mode === 'ebpf') {
    writer.write(opts.program);
    return 0;
  }
  const output = new ToolOutput(writer);
  const seconds = opts.interval?.seconds ?? null;
  writer.heatmap?.setInterval(seconds !== null && seconds * 1000 <= MAX_TIMER_MS ? seconds : null);
  if (opts.onEvent) output.onEvent(opts.onEvent, opts.fieldCount ?? 0);
  if (opts.records && opts.onRecord) {
    const { records } = opts;
    const onRecord = opts.onRecord as (r: unknown) => void;
    output.onLine((text) => {
      const r = records.decode(text);
      if (r) onRecord(r);
    });
  }
  let tracer: Tracer | undefined;
  let brokenPipe = false;
  let stopRequested = false;
  opts.writer.onBrokenPipe(() => {
    brokenPipe = true;
    tracer?.stop();
  });
  writer.api?.onStop(() => {
    stopRequested = true;
    tracer?.stop();
  });
  // events drained while attaching come after the header (onStarted)
  output.hold();
  tracer = await Tracer.start({
    source: { name: opts.tool, text: opts.program },
    output,
    quiet: true,
    printMapsAtExit: false,
    // The one place a tool's signal handling is decided: the CLI ends on SIGINT/SIGTERM, a library run does not
    // touch the process's signals (runTool's close() ends it).
    handleSignals: writer.mode !== 'api',
    // bcc's tools print the bytes a string read kept, without bpftrace's `..` after a truncated one
    configEnv: { BPFTRACE_STR_TRUNC_TRAILER: '' },
    ...(opts.command !== undefined ? { command: opts.command } : {}),
    ...(opts.pid !== undefined ? { pid: opts.pid } : {}),
    ...(opts.stackMapEntries !== undefined ? { stackMapEntries: opts.stackMapEntries } : {}),
  });
  try {
    if (stopRequested) tracer.stop();
    opts.onStarted?.(tracer);
    output.release();
    opts.writer.flush();
    writer.api?.started();
    let stopped = false;
    // One reaction on the run's end for the whole run: a Promise.race([end, timer]) per interval would add a
    // reaction to the same unsettled promise every tick, each keeping its race's promise and closures (~300 bytes an
    // interval, found by bench/reliability/heap-watch.mjs in biolatency 1).
    let wake: ((why: 'stop') => void) | null = null;
    void tracer.wait().then(() => {
      stopped = true;
      wake?.('stop');
    });
    const ms = seconds !== null ? seconds * 1000 : Number.POSITIVE_INFINITY;
    const durationMs = opts.durationSec ? opts.durationSec * 1000 : Number.POSITIVE_INFINITY;
    let elapsedMs = 0;
    let ticks = 0;
    for (;;) {
      // Without ticks, the duration is one long interval.
      const wait = Math.min(ms, opts.onTick ? ms : durationMs);
      let timer: NodeJS.Timeout | undefined;
      const why = await new Promise<'stop' | 'tick'>((resolve) => {
        if (stopped) return resolve('stop');
        wake = resolve;
        if (wait <= MAX_TIMER_MS) timer = setTimeout(() => resolve('tick'), wait);
      });
      wake = null;
      if (timer) clearTimeout(timer);
      if (why === 'tick') {
        elapsedMs += wait;
        ticks++;
      }
      const count = opts.interval?.count ?? null;
      const last = stopped || (count !== null && ticks >= count) || elapsedMs >= durationMs;
      if (last) tracer.stop();
      if (opts.onTick && !brokenPipe) opts.onTick(tracer, last);
      opts.writer.flush();
      if (last) break;
    }
    tracer.finish();
    opts.writer.flush();
    return 0;
  } finally {
    // A Ctrl-C or SIGTERM once the run is ending (the report printed, the probes being detached) is ignored, as in
    // cli/run.ts: close() removes the tracer's listeners, and a signal with none would kill the process in the middle
    // of detaching or printing (found by bench/reliability/kills.mjs). The process ends on its own a moment later.
    if (writer.mode !== 'api' && !process.listeners('SIGINT').includes(ignoreSignal)) {
      process.on('SIGINT', ignoreSignal);
      process.on('SIGTERM', ignoreSignal);
    }
    tracer.close();
  }
}

/** The SIGINT/SIGTERM listener of a tool's last steps (see runProgram): one function, so it is added only once. */
function ignoreSignal(): void {}

/**
 * A tool: its bcc argparse declaration, what it yields as data, and its body. The body builds the program and
 * calls {@link runProgram}, giving each result to `writer.emit` (typed rows, intervals); `--ebpf`, `--json` and
 * the API are handled by the framework.
 */
export interface ToolDef<S extends ParserSpec = ParserSpec> {
  spec: S;
  /** `rows`: one object per event; `intervals`: one object per interval and one at the end. */
  results: 'rows' | 'intervals';
  /** The run (`argv`: the arguments as given, for bcc's own checks); resolves with the exit status. */
  run(args: OptionsOf<S>, writer: ToolWriter, argv: readonly string[]): Promise<number>;
  /** What `--heatmap FILE` draws from the results (framework/heatmap.ts); the option exists only with this. */
  heatmap?: HeatMapSpec<never>;
}

/** Any tool's {@link ToolDef}, as the framework and runTool handle them (their options are opaque here). */
export interface AnyToolDef {
  spec: ParserSpec;
  results: 'rows' | 'intervals';
  run(args: never, writer: ToolWriter, argv: readonly string[]): Promise<number>;
  heatmap?: HeatMapSpec<never>;
}

/** Declare a tool (see {@link ToolDef}); the spec's option types give the body's typed options. */
export function defineTool<const S extends ParserSpec>(def: ToolDef<S>): ToolDef<S> {
  return def;
}

/** The hidden `--json` option the framework adds to a {@link ToolDef} tool without its own `--json` (bcc's). */
const JSON_OPTION = { flags: ['--json'], kind: 'flag', help: null } as const;

/** The hidden `--heatmap FILE` option the framework adds to a tool with a {@link ToolDef.heatmap}. */
const HEATMAP_OPTION = { flags: ['--heatmap'], kind: 'value', metavar: 'FILE', help: null } as const;

/**
 * `def`'s parser spec with the framework's hidden options: `--json` when the tool has no `--json` of its own,
 * `--heatmap FILE` when it draws heat maps.
 */
export function toolSpec(def: AnyToolDef): ParserSpec {
  const own = def.spec.options.some((o) => o.flags.includes('--json'));
  const extra = [...(own ? [] : [JSON_OPTION]), ...(def.heatmap ? [HEATMAP_OPTION] : [])];
  return extra.length ? { ...def.spec, options: [...def.spec.options, ...extra] } : def.spec;
}

/**
 * Run tool `def` on `argv` as the CLI does (see {@link toolMain}) with an output `writer`; `api` writers get usage
 * errors and `-h` as a thrown BpfscopeError instead of text.
 */
export async function runToolDef(def: AnyToolDef, argv: string[], writer: ToolWriter): Promise<number> {
  const spec = toolSpec(def);
  let args: Parsed;
  try {
    args = parseArgs(spec, argv);
  } catch (e) {
    if (writer.mode === 'api') {
      if (e instanceof HelpRequested) throw new BpfscopeError(`${spec.prog}: -h/--help asks for the help text`);
      if (e instanceof ArgError) throw new BpfscopeError(`${spec.prog}: ${e.message}`);
    }
    throw e;
  }
  // as bcc: options first (-h and usage errors need no privileges), nor does --ebpf, which only prints the program
  if (args.ebpf !== true) requireTracingPrivileges();
  requireTargetProcess(spec, args);
  if (args.ebpf === true && writer.mode === 'text') writer.mode = 'ebpf';
  else if (args.json === true && writer.mode === 'text' && !def.spec.options.some((o) => o.flags.includes('--json'))) {
    writer.mode = 'json';
  }
  if (!def.heatmap || typeof args.heatmap !== 'string' || writer.mode === 'ebpf') {
    return def.run(args as never, writer, argv);
  }
  const refused = def.heatmap.kind === 'hist' ? def.heatmap.refuse?.(args) : null;
  if (refused) throw new BpfscopeError(`${spec.prog}: ${refused}`);
  const heat = new HeatMapWriter(args.heatmap, def.heatmap as HeatMapSpec<unknown>);
  writer.heatmap = heat;
  try {
    return await def.run(args as never, writer, argv);
  } finally {
    writer.heatmap = null;
    writer.flush();
    const note = heat.finish();
    if (note) writer.err.write(note);
  }
}

/**
 * Parse `argv` with `spec` and run `body` with the parsed options: `-h` prints the help (exit 0), a usage error
 * prints argparse's two lines to stderr (exit 2). With a {@link ToolDef}, `--ebpf` (hidden, as in bcc) prints the
 * program instead of running it and `--json` prints one JSON object per result.
 */
export async function toolMain(def: AnyToolDef, argv: string[]): Promise<number>;
export async function toolMain(
  spec: ParserSpec,
  argv: string[],
  body: (args: Parsed, writer: ToolWriter) => Promise<number>,
): Promise<number>;
export async function toolMain(
  specOrDef: ParserSpec | AnyToolDef,
  argv: string[],
  body?: (args: Parsed, writer: ToolWriter) => Promise<number>,
): Promise<number> {
  const writer = new ToolWriter();
  if (!('spec' in specOrDef)) return legacyMain(specOrDef, argv, body!, writer);
  try {
    return await runToolDef(specOrDef, argv, writer);
  } catch (e) {
    return usageExit(e, writer);
  } finally {
    writer.flush();
  }
}

/** `-h` prints the help (exit status 0), a usage error argparse's two lines on stderr (2); anything else rethrows. */
function usageExit(e: unknown, writer: ToolWriter): number {
  if (e instanceof HelpRequested) {
    writer.write(e.help);
    writer.flush();
    return 0;
  }
  if (e instanceof ArgError) {
    writer.err.write(e.text());
    return 2;
  }
  throw e;
}

async function legacyMain(
  spec: ParserSpec,
  argv: string[],
  body: (args: Parsed, writer: ToolWriter) => Promise<number>,
  writer: ToolWriter,
): Promise<number> {
  let args: Parsed;
  try {
    args = parseArgs(spec, argv);
  } catch (e) {
    return usageExit(e, writer);
  }
  // as bcc: options first (-h and usage errors need no privileges), nor does --ebpf, which only prints the program
  if (!args.ebpf) requireTracingPrivileges();
  requireTargetProcess(spec, args);
  if (args.ebpf === true) writer.mode = 'ebpf';
  try {
    return await body(args, writer);
  } finally {
    writer.flush();
  }
}

/**
 * `-p/--pid PID` must name a live process: bcc's tools only filter on it (a PID that does not exist traces nothing,
 * silently, until Ctrl-C); here it is refused before anything is loaded. @throws BpfscopeError `-p PID: No such
 * process`
 */
function requireTargetProcess(spec: ParserSpec, args: Parsed): void {
  const opt = spec.options.find((o) => o.flags.includes('--pid'));
  const pid = opt ? args[opt.dest ?? 'pid'] : undefined;
  if (typeof pid !== 'number' || pid <= 0) return;
  try {
    process.kill(pid, 0);
  } catch (e) {
    // EPERM: it exists but is not ours to signal; only ESRCH means there is no such process
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') throw new BpfscopeError(`-p ${pid}: No such process`);
  }
}

/** A flag or value this implementation cannot honour: one sentence saying why. */
export function unsupported(message: string): BpfscopeError {
  return new BpfscopeError(message);
}
