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
import { foldedLine, type StackResult } from '../tools/stacktool.js';
import type { ToolView } from './catalog.js';

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
  /** CPU time (user+system, ms) the server process spent while the session ran, shared by concurrent sessions. */
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
  private cpuStart = process.cpuUsage();
  private mapTimer: NodeJS.Timeout | undefined;
  private closeReason: string | undefined;

  constructor(
    init: Omit<SessionInfo, 'id' | 'startedAt' | 'state' | 'results' | 'lost' | 'watchers' | 'cpuMs'>,
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
      cpuMs: 0,
    };
  }

  snapshot(): SessionInfo {
    if (this.info.state === 'running') {
      const u = process.cpuUsage(this.cpuStart);
      this.info.cpuMs = Math.round((u.user + u.system) / 1000);
    }
    return { ...this.info, watchers: this.watchers.size };
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
    const u = process.cpuUsage(this.cpuStart);
    this.info.cpuMs = Math.round((u.user + u.system) / 1000);
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

  constructor(private readonly o: SessionManagerOptions) {
    this.idleTimer = setInterval(() => this.reap(), Math.max(250, Math.min(5000, o.idleMs / 4)));
    this.idleTimer.unref();
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
  async startTool(name: string, argv: string[], view: SessionView): Promise<Session> {
    const run: ToolRun<unknown> = await runTool(name, argv, { maxQueued: SOURCE_QUEUE });
    const s = new Session({ kind: 'tool', name, args: argv, view }, () => run.close().then(() => {}), this.o.onChange);
    this.sessions.set(s.id, s);
    const stackTool = view === 'flame';
    if (stackTool) s.unit = name === 'offcputime' ? 'microseconds' : 'samples';
    void (async () => {
      try {
        if (run.results === 'rows') {
          // one await per row; rows are gathered for up to one tick so a busy tool sends batches
          let batch: unknown[] = [];
          let scheduled = false;
          for await (const r of run.rows()) {
            batch.push(toJson(r));
            if (!scheduled) {
              scheduled = true;
              setImmediate(() => {
                scheduled = false;
                const b = batch;
                batch = [];
                s.pushRows(b);
                s.info.lost = run.dropped;
              });
            }
          }
          if (batch.length) s.pushRows(batch);
        } else {
          for await (const r of run.intervals()) {
            if (stackTool) {
              const fmt = { delimiter: false, annotate: true };
              s.pushStacks(
                (r as StackResult).stacks.map((e) => foldedLine(e, fmt)),
                s.unit,
              );
            } else {
              s.pushInterval(toJson(r));
            }
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
  async startProgram(source: string): Promise<Session> {
    if (source.length > MAX_PROGRAM) {
      throw new BpfscopeError(
        `the program is ${source.length} characters long; the UI compiles programs of at most ${MAX_PROGRAM}`,
      );
    }
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
            const out = [...maps].map(([name, m]) => {
              const entries: unknown[] = [];
              for (const [k, v] of m) {
                if (entries.length >= 200) break;
                entries.push([toJson(k), toJson(v)]);
              }
              return { name, entries, total: m.size };
            });
            if (out.length) s.emit({ type: 'maps', session: s.id, maps: out });
          })
          .catch(() => {})
          .finally(() => (reading = false));
      }, 1000),
    );
    void (async () => {
      try {
        for await (const batch of handle.batches()) {
          const lines: string[] = [];
          for (const ev of batch) {
            if (ev.kind === 'lost') lost += ev.count;
            else if (ev.kind === 'exit') continue;
            else if (ev.kind === 'printf' || ev.kind === 'print' || ev.kind === 'value') lines.push(ev.text());
            else lines.push(ev.text);
          }
          s.info.lost = lost;
          if (lines.length) s.pushRows(lines);
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
    await Promise.all([...this.sessions.values()].map((s) => s.close()));
  }
}
