/**
 * The public way to run a bpftrace-language program: compile, load, attach, stream output, read maps, stop and
 * clean up. The CLI (`cli/run.ts`) and the tools (`tools/`) are both users of this class.
 *
 * Lifecycle (bpftrace's): compile → (start `-c` command stopped) → load → print the attach notice → BEGIN →
 * attach → resume the command → events until exit(), `stop()` (signals), the command ending or the `-p` process
 * exiting → detach → END → print maps (unless disabled) → close. `close()` is idempotent and runs on every path.
 */

import { readFileSync, writeSync } from 'node:fs';
import type { BpfMap } from '../bpf/map.js';
import type { LoadedProgram } from '../bpf/program.js';
import type { Insn } from '../codegen/ir.js';
import type { CompiledProgram, MapPlan } from '../codegen/plan.js';
import type { CompileResult } from '../compiler.js';
import { BpfscopeError } from '../errors.js';
import { requireTracingPrivileges } from '../kernel/privileges.js';
import type { Diagnostic, SourceFile } from '../lang/diagnostics.js';
// the options this run shares with compile(), declared once there (compile() itself is imported when a run
// compiles: a run of a precompiled program, the fleet agent's, never loads the compiler's code, see start())
import type { ProgramOptions } from '../compiler.js';
import { hostTarget } from '../target.js';
import { type StoppedChild, spawnStopped } from './child.js';
import type { Output } from './output/index.js';
import type { MapDump } from './output/model.js';
import { processStartTime, registerSession } from './registry.js';
import type { Precompiled } from './precompiled.js';
import { type PrintfHook, Session } from './session.js';

/**
 * A run's options: the program's ({@link ProgramOptions}: positional parameters, getopt() options, --unsafe, -k,
 * --include/-I, `-p PID` (the run also stops when that process exits), BPFTRACE_* config), declared once in
 * compiler.ts, and the runtime's own below.
 */
export interface TracerOptions extends ProgramOptions {
  source: SourceFile;
  output: Output;
  /** --no-warnings: warnf() prints nothing. */
  noWarnings?: boolean;
  /** `-c CMD`: run this shell command, traced from its first instruction; stop when it exits. */
  command?: string;
  /** Don't print the `Attached N probes` notice. */
  quiet?: boolean;
  /** Print every non-empty map when the run ends (bpftrace's default). Default true. */
  printMapsAtExit?: boolean;
  /** Stop on SIGINT/SIGTERM (handlers removed on close). Default true. */
  handleSignals?: boolean;
  /** Verifier log level for loads. */
  logLevel?: number;
  /** Distinct stacks each kstack/ustack map holds (default 4096; bcc's --stack-storage-size). */
  stackMapEntries?: number;
  /** The session's housekeeping period, ms (SessionOptions.tickMs; default 100). */
  tickMs?: number;
  /** Called after compilation, before loading (for -d output). */
  onCompiled?: (r: CompileResult) => void;
  /** Called with each loaded program (for -d / -v output). */
  onLoaded?: (probeName: string, program: LoadedProgram, insns: Insn[]) => void;
  /**
   * `--probe-filter`: only probes whose name this regex finds are loaded and attached; BEGIN/END always are
   * (bpftrace's `BPFtrace::run`). No probe left: `No probes to attach` (stdout, unless quiet) and exit status 1.
   */
  probeFilter?: RegExp;
  /**
   * `--dry-run`: load and attach every probe, then detach at once. Nothing runs (no BEGIN, no END, no events, no
   * map printing); bpftrace's "terminate execution right after attaching all the probes". `start()` then returns a
   * tracer that is already closed.
   */
  dryRun?: boolean;
  /**
   * `--mode bench`: run BEGIN, time every `bench:` probe and print the results, run END; nothing is attached, no
   * attach notice is printed and maps are not printed at exit (bpftrace's BPF_BENCHMARK mode).
   */
  bench?: boolean;
  /**
   * `--mode test`: run BEGIN, run every `test:` probe once and print pass/fail, run END; nothing is attached, maps
   * are not printed at exit, and the exit status is 1 when a test failed.
   */
  test?: boolean;
  /** printf() records go to this hook instead of `output` (the typed API's event stream, `api/`). */
  printfHook?: PrintfHook;
  /**
   * The program compiled and linked by another process (runtime/precompiled.ts): `source` is then only its name
   * and text for `bpfscope ps`, nothing is compiled or linked here, and `onCompiled` is not called.
   */
  precompiled?: Precompiled;
}

/** What a Tracer keeps of its compilation: the program and the warnings (all of CompileResult when compiled here). */
export type TracerResult = Pick<CompileResult, 'compiled' | 'warnings'>;

/** `--probe-filter` left nothing to run; the message is already printed (bpftrace prints it on stdout). */
export class NoProbesToAttach extends BpfscopeError {
  constructor() {
    super('No probes to attach');
    this.name = 'NoProbesToAttach';
  }
}

export class Tracer {
  private child: StoppedChild | undefined;
  private pidWatch: NodeJS.Timeout | undefined;
  private readonly onSignal = (): void => this.stop();
  private finished = false;
  private unregister: () => void = () => {};
  /** Set when the run was stopped because the `-c` command or the `-p` process ended. */
  commandEnded = false;

  private constructor(
    readonly opts: TracerOptions,
    readonly result: TracerResult,
    private readonly session: Session,
  ) {}

  /** Warnings of the compilation (print them with `formatDiagnostic`). */
  get warnings(): Diagnostic[] {
    return this.result.warnings;
  }

  /**
   * Compile, load and attach. Resolves once probes are live (BEGIN has run).
   * @throws BpfscopeError first when this process may not trace (kernel/privileges.ts), the `-p` process does not
   * exist or the `-c` command is not found; then CompileError, ProgramRejected, KernelError, BpfscopeError — with
   * everything already cleaned up
   */
  static async start(opts: TracerOptions): Promise<Tracer> {
    let child: StoppedChild | undefined;
    let session: Session | undefined;
    try {
      // as bpftrace: privileges, then the -p process, then the -c command, all before anything is compiled or runs
      requireTracingPrivileges();
      if (opts.pid !== undefined) checkPid(opts.pid);
      if (opts.command !== undefined) child = await spawnStopped(opts.command);
      const pre = opts.precompiled;
      if (pre && (opts.probeFilter || child)) {
        throw new BpfscopeError('internal: a precompiled program cannot be run with a probe filter or -c');
      }
      let result: TracerResult;
      if (pre) result = { compiled: pre.compiled, warnings: pre.warnings };
      else {
        // imported here, not at the top: the agent's bundle (precompiled programs only) then never runs, and its
        // launcher's code cache never holds, the compiler's modules (bench/results/agent-issue15.md section 14)
        const { compile, programOptions } = await import('../compiler.js');
        result = compile(opts.source, {
          ...programOptions(opts),
          ...(child ? { cpid: child.pid } : {}),
          target: hostTarget(),
        });
      }
      if (!pre) opts.onCompiled?.(result as CompileResult);
      const compiled = opts.probeFilter ? filterProbes(result.compiled, opts.probeFilter) : result.compiled;
      if (compiled.programs.length === 0) {
        if (!opts.quiet) {
          opts.output.flush();
          writeSync(1, 'No probes to attach\n');
        }
        throw new NoProbesToAttach();
      }
      if (!opts.test && compiled.programs.every((p) => p.expanded.special === 'test')) {
        throw new BpfscopeError('No probes attached; use --test to run test probes.');
      }
      if (!opts.bench && compiled.programs.every((p) => p.expanded.special === 'bench')) {
        throw new BpfscopeError('No probes attached; use --bench to run benchmark probes.');
      }
      session = new Session(compiled, {
        output: opts.output,
        source: opts.source,
        ...(opts.noWarnings ? { noWarnings: true } : {}),
        ...(opts.logLevel !== undefined ? { logLevel: opts.logLevel } : {}),
        ...(opts.stackMapEntries !== undefined ? { stackMapEntries: opts.stackMapEntries } : {}),
        ...(opts.tickMs !== undefined ? { tickMs: opts.tickMs } : {}),
        ...(opts.onLoaded ? { onLoaded: opts.onLoaded } : {}),
        // SIGUSR1 prints the maps where the end of the run does (the CLI's runs; the tools print their own reports)
        printMapsOnSignal: opts.printMapsAtExit ?? true,
        ...(opts.printfHook ? { printfHook: opts.printfHook } : {}),
        ...(pre ? { prelinked: { linked: pre.linked, mapOf: pre.mapOf } } : {}),
      });
      // a precompiled program's linked instructions are the session's until it has loaded them, not kept after
      const { precompiled: _linked, ...kept } = opts;
      const tracer = new Tracer(pre ? kept : opts, result, session);
      tracer.child = child;
      if (opts.handleSignals ?? true) {
        process.on('SIGINT', tracer.onSignal);
        process.on('SIGTERM', tracer.onSignal);
      }
      try {
        await session.loadAsync();
        // `bpfscope ps` names this run and shows its program (runtime/registry.ts)
        tracer.unregister = registerSession({
          source: opts.source.name,
          program: opts.source.text,
          progIds: session.programIds(),
        });
        if (opts.dryRun) {
          session.attach(opts.pid !== undefined ? { pid: opts.pid } : {});
          tracer.close();
          return tracer;
        }
        if (opts.test) {
          session.runBegin();
          session.deliverBegin();
          const out = opts.output;
          const ok = session.runTests({
            start: (...a) => out.testStart(...a),
            result: (...a) => out.testResult(...a),
          });
          if (!ok) tracer.benchFailed = true;
          tracer.stop();
          return tracer;
        }
        if (opts.bench) {
          session.runBegin();
          session.deliverBegin();
          if (!session.runBenchmarks((...r) => opts.output.benchmarkResult(...r))) tracer.benchFailed = true;
          tracer.stop();
          return tracer;
        }
        session.listenForSignals();
        const go = session.runBegin();
        if (go) session.attach(opts.pid !== undefined ? { pid: opts.pid } : {});
        // after attaching, as current bpftrace: the notice means every probe is live (tests and scripts wait on it)
        if (!opts.quiet) opts.output.attachedProbes(session.probeCount);
        // bpftrace's hook for its runtime test engine: one stdout line once every probe is live, before the output
        // of BEGIN (bpftrace prints BEGIN's events only then)
        if (process.env.__BPFTRACE_NOTIFY_PROBES_ATTACHED) {
          opts.output.flush();
          writeSync(1, '__BPFTRACE_NOTIFY_PROBES_ATTACHED\n');
        }
        // BEGIN's output comes before anything the -c command prints: it starts only after
        session.deliverBegin();
        if (go) {
          if (child) {
            child.resume();
            child.exited.then(() => {
              tracer.commandEnded = true;
              tracer.stop();
            });
          }
          if (opts.pid !== undefined) tracer.watchPid(opts.pid);
        }
        // current bpftrace: a program with only BEGIN/END probes ends once BEGIN's output is printed; one with an
        // iter probe once the iterator is read to its end (or pinned)
        if (!session.hasEventProbes) tracer.stop();
        else if (go && session.runIterators((text) => opts.output.printf(text))) tracer.stop();
      } catch (e) {
        tracer.close();
        throw e;
      }
      return tracer;
    } catch (e) {
      session?.close();
      child?.kill();
      throw e;
    }
  }

  /**
   * Starts consuming the program's events, and resolves when the run should end (exit(), stop(), the command or -p
   * process ended). Until the first call nothing is read from the ring buffer: printf records, print() and exit()
   * wait in it (up to its size, `perf_rb_pages`), and are delivered from the call on (measured: a 99 Hz printf gave
   * no record in 1.5 s without it, ~45 every 250 ms with it).
   */
  wait(): Promise<void> {
    return this.session.waitForStop();
  }

  /** Ask the run to end (idempotent). */
  stop(): void {
    this.session.stop();
  }

  /** Current contents of map `@name` (name without '@'; '' for `@`). @throws BpfscopeError for an unknown map */
  readMap(name: string): MapDump {
    return this.session.dumpMap(this.plan(name));
  }

  /** Delete every entry of map `@name`. */
  clearMap(name: string): void {
    this.session.clearMap(this.plan(name));
  }

  /**
   * Delete the stored stacks of every `kstack(..., limit)` / `ustack(..., limit)` of the program (every stack map
   * when `limit` is undefined). See Session.clearStackMaps: clear the maps whose keys hold those stacks first.
   */
  clearStacks(limit?: number): void {
    this.session.clearStackMaps(
      (n) => limit === undefined || n === `stack_k${limit}` || n === `stack_u${limit}` || n === `stack_ub${limit}`,
    );
  }

  /**
   * The stored-stack map of `kstack(..., limit)` (`kind` k) or `ustack(..., limit)` (u), undefined when the program
   * has none, for callers that read or remove stacks one by one instead of {@link clearStacks}. Keys: u64 stack
   * id; values: `limit` u64 frames, zero-filled after the last.
   */
  stackStore(kind: 'k' | 'u', limit: number): BpfMap | undefined {
    return this.session.stackStore(`stack_${kind}${limit}`);
  }

  /**
   * Map `@name`'s plan (key types and offsets, value type, per-CPU) and its kernel map, for callers that decode the
   * bytes themselves instead of {@link readMap} (the fleet agent, which reads stack ids, not stacks).
   * @throws BpfscopeError for an unknown map
   */
  rawMap(name: string): { plan: MapPlan; map: BpfMap } {
    const plan = this.plan(name);
    return { plan, map: this.session.bpfMap(plan) };
  }

  /** Names of the program's maps (without '@'). */
  mapNames(): string[] {
    return this.result.compiled.maps.map((m) => m.name);
  }

  /** Detach, run END, drain events and (unless disabled) print the maps. Idempotent. */
  finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.session.finish({
      printMaps: !this.opts.bench && !this.opts.test && (this.opts.printMapsAtExit ?? true),
      notice: !this.opts.quiet,
    });
  }

  /** Set when a benchmark or a test failed (`--mode bench` / `test`): the run's exit status is then 1. */
  private benchFailed = false;

  /** The exit status the program asked for with `exit(code)` (0 otherwise; 1 after a failed benchmark or test). */
  get exitCode(): number {
    return this.benchFailed ? 1 : this.session.exitCode;
  }

  /** Close every kernel object, stop watching signals, kill the `-c` command if it still runs. Idempotent. */
  close(): void {
    process.off('SIGINT', this.onSignal);
    process.off('SIGTERM', this.onSignal);
    if (this.pidWatch) clearInterval(this.pidWatch);
    this.session.close();
    this.unregister();
    // bpftrace kills its child (SIGKILL) when the run ends before the command does
    this.child?.kill();
  }

  private plan(name: string) {
    const p = this.result.compiled.maps.find((m) => m.name === name);
    if (!p) throw new BpfscopeError(`internal: no map @${name}`);
    return p;
  }

  /**
   * -p: bpftrace stops when the traced process is gone (current bpftrace polls a pidfd, readable once the process
   * has exited). Gone means: no /proc/PID, a zombie (exited, not yet reaped by its parent: `kill(pid, 0)` still
   * succeeds on it), or another process under the same pid (a different start time).
   */
  private watchPid(pid: number): void {
    const started = processStartTime(pid);
    this.pidWatch = setInterval(() => {
      if (!processRuns(pid, started)) {
        this.commandEnded = true;
        this.stop();
      }
    }, 200);
    this.pidWatch.unref();
  }
}

/**
 * `-p PID` names a live process. @throws BpfscopeError `Failed to attach to pid: Unable to open pidfd (No such
 * process)`, current bpftrace's message (main.cpp, util/proc.cpp create_proc), when it does not exist.
 */
function checkPid(pid: number): void {
  try {
    process.kill(pid, 0);
  } catch (e) {
    // EPERM: it exists but is not ours to signal (possible without root); only ESRCH means there is no such process
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') {
      throw new BpfscopeError('Failed to attach to pid: Unable to open pidfd (No such process)');
    }
  }
}

/** Whether process `pid`, started at `started` (field 22 of /proc/PID/stat), still runs (is not a zombie). */
function processRuns(pid: number, started: string | undefined): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return false;
  }
  const state = stat[stat.lastIndexOf(')') + 2];
  if (state === 'Z' || state === 'X') return false;
  return started === undefined || processStartTime(pid) === started;
}

/** The program with only the probes `filter` finds by name, and BEGIN/END (`--probe-filter`). */
function filterProbes(compiled: CompiledProgram, filter: RegExp): CompiledProgram {
  return {
    ...compiled,
    programs: compiled.programs.filter(
      (p) => p.expanded.special === 'begin' || p.expanded.special === 'end' || filter.test(p.expanded.name),
    ),
  };
}
