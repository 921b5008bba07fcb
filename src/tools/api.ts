/**
 * `runTool(name, argv)`: a bcc tool of bpfscope run from a program, with its results as data instead of text. The
 * tool takes the same flags as on the command line (`bpfscope TOOL ARGS`), and yields the same objects that
 * `bpfscope TOOL --json` prints one per line (the shapes are documented per tool in docs/tools/TOOL.md):
 * - event tools (execsnoop, opensnoop, tcplife, ...): `rows()`, one object per event bcc prints a line for;
 * - interval tools (biolatency, syscount, biotop, profile, ...): `intervals()`, one object per interval and one
 *   when the run ends (profile, bitesize, llcstat: one, at the end).
 *
 * The returned run is attached (its probes fire) when the promise resolves. It ends when `close()` is called,
 * when the tool ends by itself (a count of intervals, a duration, an `--exec` command that exited), or when the
 * consumer leaves a `for await` loop early. `close()` is idempotent and resolves once every kernel object is
 * released; the process's signal handlers are not touched.
 *
 * Errors: usage errors (argparse's message), a refused option and load/attach failures reject the promise
 * with a BpfscopeError (or the runtime's CompileError/ProgramRejected/KernelError).
 */
import { BpfscopeError } from '../errors.js';
import { OutputSink } from '../runtime/output/sink.js';
import type { ArgdistInterval } from './argdist.js';
import type { BashLineRow } from './bashreadline.js';
import type { BiolatencyInterval } from './biolatency.js';
import type { BiopatternInterval } from './biopattern.js';
import type { BiosnoopRow } from './biosnoop.js';
import type { BiotopInterval } from './biotop.js';
import type { BitesizeInterval } from './bitesize.js';
import type { CachestatInterval } from './cachestat.js';
import type { CapCheckRow } from './capable.js';
import type { CpudistInterval } from './cpudist.js';
import type { ExecRow } from './execsnoop.js';
import type { ExitRow } from './exitsnoop.js';
import type { Ext4Row } from './ext4slower.js';
import type { FiletopInterval } from './filetop.js';
import type { ParserSpec } from './framework/argparse.js';
import type { FunccountInterval } from './funccount.js';
import type { LlcstatInterval } from './llcstat.js';
import type { MemleakInterval } from './memleak.js';
import type { OffwakeResult } from './offwaketime.js';
import type { StackcountInterval } from './stackcount.js';
import type { WakeupResult } from './wakeuptime.js';
import { type ApiSink, ToolWriter } from './framework/output.js';
import type { IrqInterval } from './framework/histmaps.js';
import { type AnyToolDef, runToolDef } from './framework/runner.js';
import type { FunclatencyInterval } from './funclatency.js';
import type { LookupRow } from './gethostlatency.js';
import type { KillRow } from './killsnoop.js';
import type { OomKillRow } from './oomkill.js';
import type { OpenRow } from './opensnoop.js';
import type { PidpersecInterval } from './pidpersec.js';
import type { RunqlatInterval } from './runqlat.js';
import type { RunqlenInterval } from './runqlen.js';
import type { WaitRow } from './runqslower.js';
import type { SlabratetopInterval } from './slabratetop.js';
import type { SyscountInterval } from './syscount.js';
import type { StackResult } from './stacktool.js';
import type { StatRow } from './statsnoop.js';
import type { SyncRow } from './syncsnoop.js';
import type { AcceptRow } from './tcpaccept.js';
import type { ConnectCountRow, ConnectRow } from './tcpconnect.js';
import type { TcpSessionRow } from './tcplife.js';
import type { DropRow } from './tcpdrop.js';
import type { RetransCountRow, RetransRow } from './tcpretrans.js';
import type { ThreadRow } from './threadsnoop.js';
import type { TraceRow } from './trace.js';
import type { VfsstatInterval } from './vfsstat.js';

/** The tools runTool runs, with their modules (loaded on use). */
const TOOLS: Readonly<Record<string, () => Promise<{ TOOL: AnyToolDef }>>> = {
  argdist: () => import('./argdist.js'),
  bashreadline: () => import('./bashreadline.js'),
  biolatency: () => import('./biolatency.js'),
  biopattern: () => import('./biopattern.js'),
  biosnoop: () => import('./biosnoop.js'),
  biotop: () => import('./biotop.js'),
  bitesize: () => import('./bitesize.js'),
  cachestat: () => import('./cachestat.js'),
  capable: () => import('./capable.js'),
  cpudist: () => import('./cpudist.js'),
  execsnoop: () => import('./execsnoop.js'),
  exitsnoop: () => import('./exitsnoop.js'),
  ext4slower: () => import('./ext4slower.js'),
  filetop: () => import('./filetop.js'),
  funccount: () => import('./funccount.js'),
  funclatency: () => import('./funclatency.js'),
  gethostlatency: () => import('./gethostlatency.js'),
  hardirqs: () => import('./hardirqs.js'),
  killsnoop: () => import('./killsnoop.js'),
  llcstat: () => import('./llcstat.js'),
  memleak: () => import('./memleak.js'),
  offcputime: () => import('./offcputime.js'),
  offwaketime: () => import('./offwaketime.js'),
  oomkill: () => import('./oomkill.js'),
  opensnoop: () => import('./opensnoop.js'),
  pidpersec: () => import('./pidpersec.js'),
  profile: () => import('./profile.js'),
  runqlat: () => import('./runqlat.js'),
  runqlen: () => import('./runqlen.js'),
  runqslower: () => import('./runqslower.js'),
  slabratetop: () => import('./slabratetop.js'),
  softirqs: () => import('./softirqs.js'),
  stackcount: () => import('./stackcount.js'),
  statsnoop: () => import('./statsnoop.js'),
  syncsnoop: () => import('./syncsnoop.js'),
  syscount: () => import('./syscount.js'),
  tcpaccept: () => import('./tcpaccept.js'),
  tcpconnect: () => import('./tcpconnect.js'),
  tcpdrop: () => import('./tcpdrop.js'),
  tcplife: () => import('./tcplife.js'),
  tcpretrans: () => import('./tcpretrans.js'),
  threadsnoop: () => import('./threadsnoop.js'),
  trace: () => import('./trace.js'),
  vfsstat: () => import('./vfsstat.js'),
  wakeuptime: () => import('./wakeuptime.js'),
};

/** The result type of each tool (rows or intervals). */
export interface ToolResults {
  argdist: ArgdistInterval;
  bashreadline: BashLineRow;
  biolatency: BiolatencyInterval;
  biopattern: BiopatternInterval;
  biosnoop: BiosnoopRow;
  biotop: BiotopInterval;
  bitesize: BitesizeInterval;
  cachestat: CachestatInterval;
  capable: CapCheckRow;
  cpudist: CpudistInterval;
  execsnoop: ExecRow;
  exitsnoop: ExitRow;
  ext4slower: Ext4Row;
  filetop: FiletopInterval;
  funccount: FunccountInterval;
  funclatency: FunclatencyInterval;
  gethostlatency: LookupRow;
  hardirqs: IrqInterval;
  killsnoop: KillRow;
  llcstat: LlcstatInterval;
  memleak: MemleakInterval;
  offcputime: StackResult;
  offwaketime: OffwakeResult;
  oomkill: OomKillRow;
  opensnoop: OpenRow;
  pidpersec: PidpersecInterval;
  profile: StackResult;
  runqlat: RunqlatInterval;
  runqlen: RunqlenInterval;
  runqslower: WaitRow;
  slabratetop: SlabratetopInterval;
  softirqs: IrqInterval;
  stackcount: StackcountInterval;
  statsnoop: StatRow;
  syncsnoop: SyncRow;
  syscount: SyscountInterval;
  tcpaccept: AcceptRow;
  tcpconnect: ConnectRow | ConnectCountRow;
  tcpdrop: DropRow;
  tcplife: TcpSessionRow;
  tcpretrans: RetransRow | RetransCountRow;
  threadsnoop: ThreadRow;
  trace: TraceRow;
  vfsstat: VfsstatInterval;
  wakeuptime: WakeupResult;
}

/** Names of the tools runTool runs. */
export function apiTools(): string[] {
  return Object.keys(TOOLS);
}

/**
 * What tool `name` accepts and yields, without running it: its option declarations (the argparse-style `SPEC` its
 * `-h` is made from: flags, kinds, defaults, help; hidden options have `help: null`) and whether runTool gives
 * `rows` or `intervals`. For front ends that build a form from the options (`bpfscope ui`).
 * @throws BpfscopeError for a tool runTool does not run
 */
export async function toolOptions(name: string): Promise<{ spec: ParserSpec; results: 'rows' | 'intervals' }> {
  const load = Object.hasOwn(TOOLS, name) ? TOOLS[name] : undefined;
  if (!load) {
    throw new BpfscopeError(`runTool: unknown tool '${name}' (runTool runs: ${apiTools().join(', ')})`);
  }
  const def = (await load()).TOOL;
  return { spec: def.spec, results: def.results };
}

export interface RunToolOptions {
  /** Results held while the consumer is not reading; older ones beyond this are dropped and counted (default 65536). */
  maxQueued?: number;
}

/** A running tool (see the module comment). */
export interface ToolRun<T> {
  readonly tool: string;
  /** `rows` or `intervals`: which of the two iterators yields the tool's results. */
  readonly results: 'rows' | 'intervals';
  /** Event tools: one object per event. @throws BpfscopeError when the tool yields intervals */
  rows(): AsyncIterableIterator<T>;
  /** Interval tools: one object per interval and one at the end. @throws BpfscopeError when the tool yields rows */
  intervals(): AsyncIterableIterator<T>;
  /** Results dropped because the consumer did not keep up (see maxQueued). */
  readonly dropped: number;
  /** Resolves with the tool's exit status once the run has ended by itself or by close(). */
  readonly done: Promise<number>;
  /** End the run and release everything; idempotent. Resolves with the exit status. */
  close(): Promise<number>;
}

class Run<T> implements ToolRun<T> {
  dropped = 0;
  private queue: T[] = [];
  private waiters: ((r: IteratorResult<T>) => void)[] = [];
  private ended = false;
  private stop: (() => void) | null = null;
  private stopAsked = false;
  private iterating = false;
  done!: Promise<number>;

  constructor(
    readonly tool: string,
    readonly results: 'rows' | 'intervals',
    private readonly maxQueued: number,
  ) {}

  readonly sink: ApiSink = {
    result: (v) => this.push(v as T),
    started: () => {},
    onStop: (stop) => {
      this.stop = stop;
      if (this.stopAsked) stop();
    },
  };

  private push(v: T): void {
    const w = this.waiters.shift();
    if (w) {
      w({ value: v, done: false });
      return;
    }
    if (this.queue.length >= this.maxQueued) {
      this.queue.shift();
      this.dropped++;
    }
    this.queue.push(v);
  }

  end(): void {
    this.ended = true;
    for (const w of this.waiters.splice(0)) w({ value: undefined, done: true });
  }

  private iterate(kind: 'rows' | 'intervals'): AsyncIterableIterator<T> {
    if (kind !== this.results) {
      throw new BpfscopeError(`${this.tool} yields ${this.results}, not ${kind}: use ${this.results}()`);
    }
    if (this.iterating) throw new BpfscopeError(`${this.tool}: ${kind}() can be iterated once`);
    this.iterating = true;
    const it: AsyncIterableIterator<T> = {
      next: () => {
        const v = this.queue.shift();
        if (v !== undefined) return Promise.resolve({ value: v, done: false });
        if (this.ended) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => this.waiters.push(resolve));
      },
      return: async () => {
        await this.close();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]: () => it,
    };
    return it;
  }

  rows(): AsyncIterableIterator<T> {
    return this.iterate('rows');
  }

  intervals(): AsyncIterableIterator<T> {
    return this.iterate('intervals');
  }

  close(): Promise<number> {
    this.stopAsked = true;
    this.stop?.();
    return this.done;
  }
}

/**
 * Start tool `name` with command-line arguments `argv` (as `bpfscope NAME ARGV...`); resolves once it is attached.
 * @throws BpfscopeError for an unknown tool, a usage error or an option the tool refuses; the runtime's errors
 * when the program does not compile, load or attach
 */
export async function runTool<N extends keyof ToolResults>(
  name: N,
  argv?: readonly string[],
  options?: RunToolOptions,
): Promise<ToolRun<ToolResults[N]>>;
export async function runTool(
  name: string,
  argv?: readonly string[],
  options?: RunToolOptions,
): Promise<ToolRun<unknown>>;
export async function runTool(
  name: string,
  argv: readonly string[] = [],
  options: RunToolOptions = {},
): Promise<ToolRun<unknown>> {
  const load = Object.hasOwn(TOOLS, name) ? TOOLS[name] : undefined;
  if (!load) {
    throw new BpfscopeError(`runTool: unknown tool '${name}' (runTool runs: ${apiTools().join(', ')})`);
  }
  const def = (await load()).TOOL;
  const run = new Run<unknown>(name, def.results, options.maxQueued ?? 65536);
  const writer = new ToolWriter(new OutputSink(-1), new OutputSink(-1));
  writer.mode = 'api';
  writer.api = run.sink;
  let started = false;
  const attached = new Promise<void>((resolve) => {
    run.sink.started = () => {
      started = true;
      resolve();
    };
  });
  const body = runToolDef(def, [...argv], writer).then(
    (status) => {
      run.end();
      if (!started && status !== 0) {
        throw new BpfscopeError(writer.kept.trim() || `${name} ended with status ${status} before it started`);
      }
      return status;
    },
    (e: unknown) => {
      run.end();
      throw e;
    },
  );
  run.done = body;
  await Promise.race([attached, body]);
  if (!started) {
    // The tool ended before attaching (e.g. --ebpf is not an API mode, or a count of 0).
    await body;
  }
  return run;
}
