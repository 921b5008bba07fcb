/**
 * The UI server's sessions: a bcc tool run through the public `runTool()` API, or a bpftrace program run through
 * `trace()`. A session keeps a bounded tail of what it produced (so a tab that opens later sees recent results),
 * fans its results out to the clients watching it, and is closed (every kernel object released, as `close()` of
 * both APIs promises) when stopped, when the server closes, or when nobody has watched it for `idleMs`.
 *
 * Bounds: a session keeps the last {@link TAIL_ROWS} rows/lines, {@link TAIL_INTERVALS} intervals and one stack
 * capture; `runTool`/`trace` queue at most {@link SOURCE_QUEUE} results for a reader that falls behind (counted as
 * lost). Clients bound their own queues (see server.ts).
 */
import { BpfscopeError } from '../errors.js';
import { CompileError } from '../lang/diagnostics.js';
import { trace, type TraceHandle } from '../api/index.js';
import { runTool, type ToolRun } from '../tools/api.js';
import { toJson } from '../tools/framework/output.js';
import { type OffwakeEntry, offwakeFolded } from '../tools/offwaketime.js';
import { foldedLine, type StackEntry } from '../tools/stacktool.js';
import { type WakeupEntry, wakeupFolded } from '../tools/wakeuptime.js';
import type { ToolView } from './catalog.js';
import { CostMeter, SessionCost } from './cost.js';

export const TAIL_ROWS = 500;
export const TAIL_INTERVALS = 120;
export const SOURCE_QUEUE = 8192;
/** The longest program the UI compiles (characters). */
export const MAX_PROGRAM = 65536;

export type SessionView = ToolView | 'program';

/** What the sessions list shows of a session (JSON). */
export interface SessionInfo {
  id: string;
  kind: 'tool' | 'program';
  /** Tool name, or `one-liner`. */
  name: string;
  /** The tool's arguments, or the program's text. */
  args: string[];
  source?: string;
  view: SessionView;
  /** Start time, ms since the epoch. */
  startedAt: number;
  state: 'running' | 'ended';
  /** How it ended: `exit status N`, `stopped`, `idle timeout`, or an error message. */
  ended?: string;
  /** Results produced (rows, lines, intervals, captures). */
  results: number;
  /** Results not delivered: dropped by the API's queue or lost by the kernel's ring buffer. */
  lost: number;
  watchers: number;
  /** Kernel run time of the session's BPF programs, ms (see cost.ts: measured while the UI runs sessions). */
  bpfMs: number;
  /** User-space CPU time the server spent in the session's handlers (results to JSON, to the tabs), ms. */
  userMs: number;
  /** bpfMs + userMs. */
  cpuMs: number;
}

/** A message for the clients watching a session (see server.ts for the protocol). */
export type SessionOutput =
  | { type: 'rows'; session: string; rows: unknown[] }
  | { type: 'interval'; session: string; interval: unknown }
  | { type: 'stacks'; session: string; folded: string[]; unit: string }
  | { type: 'maps'; session: string; maps: { name: string; entries: unknown[]; total: number }[] };

/** A clear start failure: `message` for the page, `diagnostics` with positions for compile errors. */
export interface StartError {
  message: string;
  diagnostics?: {
    severity: string;
    message: string;
    hint?: string;
    line?: number;
    col?: number;
    offset?: number;
    end?: number;
  }[];
}

export interface Watcher {
  deliver(out: SessionOutput): void;
}

let nextId = 1;

export class Session {
  readonly id: string;
  readonly info: SessionInfo;
  readonly tail: unknown[] = [];
  readonly intervals: unknown[] = [];
  folded: string[] | null = null;
  unit = 'samples';
  readonly watchers = new Set<Watcher>();
  idleSince = Date.now();
  private closing: Promise<void> | undefined;
  readonly cost = new SessionCost();
  private mapTimer: NodeJS.Timeout | undefined;
  private closeReason: string | undefined;

  constructor(
    init: Omit<
      SessionInfo,
      'id' | 'startedAt' | 'state' | 'results' | 'lost' | 'watchers' | 'bpfMs' | 'userMs' | 'cpuMs'
    >,
    private readonly closeRun: () => Promise<void>,
    private readonly onChange: () => void,
  ) {
    this.id = `s${nextId++}-${Math.random().toString(36).slice(2, 8)}`;
    this.info = {
      ...init,
      id: this.id,
      startedAt: Date.now(),
      state: 'running',
      results: 0,
      lost: 0,
      watchers: 0,
      bpfMs: 0,
      userMs: 0,
      cpuMs: 0,
    };
  }

  snapshot(): SessionInfo {
    return { ...this.info, ...this.cost.view(), watchers: this.watchers.size };
  }

  emit(out: SessionOutput): void {
    for (const w of this.watchers) w.deliver(out);
  }

  pushRows(rows: unknown[]): void {
    this.info.results += rows.length;
    this.tail.push(...rows.slice(-TAIL_ROWS));
    if (this.tail.length > TAIL_ROWS) this.tail.splice(0, this.tail.length - TAIL_ROWS);
    this.emit({ type: 'rows', session: this.id, rows });
  }

  pushInterval(interval: unknown): void {
    this.info.results++;
    this.intervals.push(interval);
    if (this.intervals.length > TAIL_INTERVALS) this.intervals.shift();
    this.emit({ type: 'interval', session: this.id, interval });
  }

  pushStacks(folded: string[], unit: string): void {
    this.info.results++;
    this.folded = folded;
    this.unit = unit;
    this.emit({ type: 'stacks', session: this.id, folded, unit });
  }

  setMapTimer(t: NodeJS.Timeout): void {
    this.mapTimer = t;
  }

  /** The run has ended (by itself or by close()); `how` says how, unless it was already said. */
  ended(how: string): void {
    if (this.info.state === 'ended') return;
    if (this.closeReason) how = this.closeReason;
    this.info.state = 'ended';
    this.info.ended = how;
    if (this.mapTimer) clearInterval(this.mapTimer);
    this.onChange();
  }

  /** Stop the run and release every kernel object; idempotent. */
  close(how = 'stopped'): Promise<void> {
    this.closeReason ??= this.info.state === 'running' ? how : undefined;
    this.closing ??= (async () => {
      if (this.mapTimer) clearInterval(this.mapTimer);
      try {
        await this.closeRun();
      } catch {
        // both APIs' close() never throw; a failure of the run itself was reported when it ended
      }
      this.ended(how);
    })();
    return this.closing;
  }
}

/** Unit of a stack tool's values (flame graph counts, downloads). */
export function stackUnit(tool: string): string {
  return tool === 'profile' ? 'samples' : tool === 'stackcount' ? 'calls' : 'microseconds';
}

/**
 * A stack tool's result (`{stacks: [...]}`) as folded lines (`frame;frame;... N`, outermost first), each in its
 * tool's own folded format: offwaketime's `target frames;--;waker frames;waker N` (bcc's `-f`), wakeuptime's
 * `waker;frames;target N`, profile's/offcputime's `comm;user;kernel N` with `_[k]` on kernel frames (profile -a).
 */
export function foldedStacks(result: unknown): string[] {
  const stacks = (result as { stacks?: unknown[] }).stacks ?? [];
  return stacks.map((e) => {
    const x = e as Record<string, unknown>;
    if ('target' in x && 'wakers' in x) return offwakeFolded(x as unknown as OffwakeEntry, { delimiter: false });
    if (typeof x.waker === 'string') return wakeupFolded(x as unknown as WakeupEntry);
    return foldedLine(x as unknown as StackEntry, { delimiter: false, annotate: true });
  });
}

/** A start failure as the page shows it. */
export function startError(e: unknown): StartError {
  if (e instanceof CompileError) {
    return {
      message:
        e.diagnostics
          .filter((d) => d.severity === 'error')
          .map((d) => d.message)
          .join('\n') || e.message,
      diagnostics: e.diagnostics.map((d) => ({
        severity: d.severity,
        message: d.message,
        ...(d.hint ? { hint: d.hint } : {}),
        ...(d.pos ? { line: d.pos.line, col: d.pos.col, offset: d.pos.offset, end: d.pos.end } : {}),
      })),
    };
  }
  if (e instanceof BpfscopeError) return { message: e.hint ? `${e.message}\n${e.hint}` : e.message };
  if (e instanceof Error) return { message: `internal error: ${e.message}` };
  return { message: `internal error: ${String(e)}` };
}

export interface SessionManagerOptions {
  /** Allow `system()`, `signal()`, ... in programs (`ui --unsafe`). */
  unsafe: boolean;
  /** A session nobody watches is closed after this many ms. */
  idleMs: number;
  /** Called when the list of sessions or a session's state changes. */
  onChange: () => void;
}

export class SessionManager {
  readonly sessions = new Map<string, Session>();
  private readonly idleTimer: NodeJS.Timeout;
  readonly meter = new CostMeter(() =>
    [...this.sessions.values()].filter((s) => s.info.state === 'running').map((s) => s.cost),
  );
  /** Starts run one at a time, so the programs a start loads are known to be that session's (cost.ts). */
  private starting: Promise<unknown> = Promise.resolve();

  constructor(private readonly o: SessionManagerOptions) {
    this.idleTimer = setInterval(() => this.reap(), Math.max(250, Math.min(5000, o.idleMs / 4)));
    this.idleTimer.unref();
  }

  /** Run `start` after the previous start, then give the new session the programs it loaded. */
  private serialised(start: () => Promise<Session>): Promise<Session> {
    const p = this.starting.then(async () => {
      const s = await start();
      await this.meter.assign(s.cost);
      return s;
    });
    this.starting = p.catch(() => {});
    return p;
  }

  list(): SessionInfo[] {
    return [...this.sessions.values()].map((s) => s.snapshot());
  }

  get(id: unknown): Session {
    const s = typeof id === 'string' ? this.sessions.get(id) : undefined;
    if (!s) throw new BpfscopeError(`no session ${JSON.stringify(id)} (it ended and was removed, or never existed)`);
    return s;
  }

  private reap(): void {
    const now = Date.now();
    for (const s of this.sessions.values()) {
      if (s.watchers.size > 0 || now - s.idleSince < this.o.idleMs) continue;
      if (s.info.state === 'running') void s.close('idle timeout');
      else this.remove(s.id);
    }
  }

  /** Forget a session (closing it first). */
  async remove(id: string): Promise<void> {
    const s = this.sessions.get(id);
    if (!s) return;
    await s.close();
    this.sessions.delete(id);
    this.o.onChange();
  }

  /** Start bcc tool `name` with `argv` (its command-line flags). */
  startTool(name: string, argv: string[], view: SessionView): Promise<Session> {
    return this.serialised(() => this.startToolNow(name, argv, view));
  }

  private async startToolNow(name: string, argv: string[], view: SessionView): Promise<Session> {
    const run: ToolRun<unknown> = await runTool(name, argv, { maxQueued: SOURCE_QUEUE });
    const s = new Session({ kind: 'tool', name, args: argv, view }, () => run.close().then(() => {}), this.o.onChange);
    this.sessions.set(s.id, s);
    const stackTool = view === 'flame';
    if (stackTool) s.unit = stackUnit(name);
    void (async () => {
      try {
        if (run.results === 'rows') {
          // one await per row; rows are gathered for up to one tick so a busy tool sends batches
          let batch: unknown[] = [];
          let scheduled = false;
          const flush = (): void => {
            const b = batch;
            batch = [];
            s.cost.measure(() => s.pushRows(b.map(toJson)));
            s.info.lost = run.dropped;
          };
          for await (const r of run.rows()) {
            batch.push(r);
            if (!scheduled) {
              scheduled = true;
              setImmediate(() => {
                scheduled = false;
                flush();
              });
            }
          }
          if (batch.length) flush();
        } else {
          for await (const r of run.intervals()) {
            s.cost.measure(() => {
              if (stackTool) s.pushStacks(foldedStacks(r), s.unit);
              else s.pushInterval(toJson(r));
            });
            s.info.lost = run.dropped;
          }
        }
        const status = await run.done;
        s.ended(`exit status ${status}`);
      } catch (e) {
        s.ended(startError(e).message);
      }
    })();
    this.o.onChange();
    return s;
  }

  /** Compile and start bpftrace program `source`. */
  startProgram(source: string): Promise<Session> {
    if (source.length > MAX_PROGRAM) {
      return Promise.reject(
        new BpfscopeError(
          `the program is ${source.length} characters long; the UI compiles programs of at most ${MAX_PROGRAM}`,
        ),
      );
    }
    return this.serialised(() => this.startProgramNow(source));
  }

  private async startProgramNow(source: string): Promise<Session> {
    const handle: TraceHandle = await trace(source, { unsafe: this.o.unsafe, bufferEvents: SOURCE_QUEUE });
    const s = new Session(
      { kind: 'program', name: 'one-liner', args: [], source, view: 'program' },
      () => handle.close(),
      this.o.onChange,
    );
    this.sessions.set(s.id, s);
    let lost = 0;
    let reading = false;
    s.setMapTimer(
      setInterval(() => {
        if (s.watchers.size === 0 || reading || s.info.state !== 'running') return;
        reading = true;
        handle
          .maps()
          .then((maps) => {
            const out = s.cost.measure(() =>
              [...maps].map(([name, m]) => {
                const entries: unknown[] = [];
                for (const [k, v] of m) {
                  if (entries.length >= 200) break;
                  entries.push([toJson(k), toJson(v)]);
                }
                return { name, entries, total: m.size };
              }),
            );
            if (out.length) s.cost.measure(() => s.emit({ type: 'maps', session: s.id, maps: out }));
          })
          .catch(() => {})
          .finally(() => (reading = false));
      }, 1000),
    );
    void (async () => {
      try {
        for await (const batch of handle.batches()) {
          s.cost.measure(() => {
            const lines: string[] = [];
            for (const ev of batch) {
              if (ev.kind === 'lost') lost += ev.count;
              else if (ev.kind === 'exit') continue;
              else if (ev.kind === 'printf' || ev.kind === 'print' || ev.kind === 'value') lines.push(ev.text());
              else lines.push(ev.text);
            }
            s.info.lost = lost;
            if (lines.length) s.pushRows(lines);
          });
        }
        const exit = await handle.exited;
        // a program that ended by itself keeps its maps readable for a last look, then releases them
        if (s.watchers.size > 0) {
          const maps = await handle.maps().catch(() => new Map());
          const out = [...maps].map(([name, m]) => ({
            name,
            entries: [...m].slice(0, 200).map(([k, v]) => [toJson(k), toJson(v)]),
            total: m.size,
          }));
          if (out.length) s.emit({ type: 'maps', session: s.id, maps: out });
        }
        await handle.close();
        s.ended(exit.reason === 'stopped' ? 'stopped' : `exit status ${exit.code}`);
      } catch (e) {
        await handle.close();
        s.ended(startError(e).message);
      }
    })();
    this.o.onChange();
    return s;
  }

  /** Close every session (server shutdown). */
  async closeAll(): Promise<void> {
    clearInterval(this.idleTimer);
    this.meter.close();
    await Promise.all([...this.sessions.values()].map((s) => s.close()));
  }
}
