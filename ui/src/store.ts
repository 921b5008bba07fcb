/**
 * The page's state: the sessions list, and for each watched session what it produced (rows bounded by the row
 * limit, intervals, the last two stack captures, maps). Components re-render at most once per animation frame;
 * animation frames that come more than 50 ms late are counted as dropped (shown in the views' status lines).
 */
import { useEffect, useState } from 'preact/hooks';
import { conn } from './conn';

export interface SessionInfo {
  id: string;
  kind: 'tool' | 'program';
  name: string;
  args: string[];
  source?: string;
  view: 'table' | 'histogram' | 'flame' | 'counts' | 'program';
  startedAt: number;
  state: 'running' | 'ended';
  ended?: string;
  results: number;
  lost: number;
  watchers: number;
  /** Kernel run time of its BPF programs, user-space time of the server on its results, and their sum (ms). */
  bpfMs: number;
  userMs: number;
  cpuMs: number;
}

export interface MapSnapshot {
  name: string;
  entries: [unknown, unknown][];
  total: number;
}

export interface SessionData {
  id: string;
  rows: unknown[];
  /** Rows received from the server, and rows the session produced (more when the server sampled). */
  received: number;
  produced: number;
  /** Rows dropped from the page's table because of the row limit. */
  rowLimit: number;
  paused: boolean;
  /** Rows that arrived while paused (not shown). */
  skippedWhilePaused: number;
  intervals: unknown[];
  folded: string[] | null;
  previous: string[] | null;
  unit: string;
  maps: MapSnapshot[];
  /** For a capture: when it started and how long it lasts (s), for the countdown. */
  captureStart: number;
  captureSeconds: number;
}

class Store {
  sessions: SessionInfo[] = [];
  data = new Map<string, SessionData>();
  connStatus: 'connecting' | 'open' | 'closed' = 'connecting';
  serverError = '';
  unsafe = false;
  idleMs = 0;
  framesDropped = 0;
  version = 0;
  private readonly listeners = new Set<() => void>();
  private scheduled = false;
  private watched = new Set<string>();
  private captures = new Map<string, number>();
  /** The last stack capture of each tool in this tab (the base of the differential view). */
  private lastCapture = new Map<string, string[]>();

  start(): void {
    conn.onStatus = () => {
      this.connStatus = conn.status;
      if (conn.status === 'open')
        for (const id of this.watched) void conn.request({ type: 'watch', session: id }).catch(() => {});
      this.changed();
    };
    conn.on((m) => this.onMessage(m));
    conn.connect();
    let last = performance.now();
    const frame = (t: number) => {
      if (t - last > 50 && document.visibilityState === 'visible') this.framesDropped++;
      last = t;
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  }

  /**
   * A capture of `seconds` started by this tab: its countdown. The server's first snapshot of the session may have
   * arrived before the start request's answer, so data already made for it gets the duration too.
   */
  noteStart(id: string, seconds: number): void {
    if (seconds <= 0) return;
    this.captures.set(id, seconds);
    const d = this.data.get(id);
    if (d) d.captureSeconds = seconds;
  }

  dataFor(id: string): SessionData {
    let d = this.data.get(id);
    if (!d) {
      d = {
        id,
        rows: [],
        received: 0,
        produced: 0,
        rowLimit: 1000,
        paused: false,
        skippedWhilePaused: 0,
        intervals: [],
        folded: null,
        previous: null,
        unit: 'samples',
        maps: [],
        captureStart: Date.now(),
        captureSeconds: this.captures.get(id) ?? 0,
      };
      this.data.set(id, d);
    }
    return d;
  }

  watch(id: string): void {
    this.watched.add(id);
    this.dataFor(id);
    void conn.request({ type: 'watch', session: id }).catch(() => {});
  }

  unwatch(id: string): void {
    this.watched.delete(id);
    void conn.request({ type: 'unwatch', session: id }).catch(() => {});
  }

  addRows(d: SessionData, rows: unknown[], total: number): void {
    d.received += rows.length;
    d.produced += total;
    if (d.paused) {
      d.skippedWhilePaused += rows.length;
      return;
    }
    d.rows.push(...rows);
    if (d.rows.length > d.rowLimit) d.rows.splice(0, d.rows.length - d.rowLimit);
  }

  private onMessage(m: Record<string, unknown>): void {
    switch (m.type) {
      case 'hello':
        this.unsafe = m.unsafe === true;
        this.idleMs = Number(m.idleMs);
        break;
      case 'sessions':
        this.sessions = m.sessions as SessionInfo[];
        break;
      case 'error':
        this.serverError = String(m.message);
        break;
      case 'snapshot': {
        const info = m.session as SessionInfo;
        const d = this.dataFor(info.id);
        d.rows = [];
        d.received = 0;
        d.produced = 0;
        this.addRows(d, m.rows as unknown[], (m.rows as unknown[]).length);
        d.intervals = (m.intervals as unknown[]).slice();
        if (m.folded && !d.folded) this.setCapture(d, info.name, m.folded as string[]);
        d.unit = String(m.unit);
        break;
      }
      case 'rows': {
        const d = this.data.get(String(m.session));
        if (d) this.addRows(d, m.rows as unknown[], Number(m.total));
        break;
      }
      case 'interval': {
        const d = this.data.get(String(m.session));
        if (d) {
          d.intervals.push(m.interval);
          if (d.intervals.length > 120) d.intervals.shift();
        }
        break;
      }
      case 'stacks': {
        const d = this.data.get(String(m.session));
        if (d) {
          const info = this.sessions.find((s) => s.id === d.id);
          this.setCapture(d, info?.name ?? '', m.folded as string[]);
          d.unit = String(m.unit);
        }
        break;
      }
      case 'maps': {
        const d = this.data.get(String(m.session));
        if (d) d.maps = m.maps as MapSnapshot[];
        break;
      }
      default:
        return;
    }
    this.changed();
  }

  private setCapture(d: SessionData, tool: string, folded: string[]): void {
    d.previous = this.lastCapture.get(tool) ?? null;
    d.folded = folded;
    this.lastCapture.set(tool, folded);
  }

  changed(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    requestAnimationFrame(() => {
      this.scheduled = false;
      this.version++;
      for (const l of this.listeners) l();
    });
  }

  subscribe(l: () => void): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }
}

export const store = new Store();

/** Re-render the calling component when the store changes. */
export function useStore(): Store {
  const [, setVersion] = useState(0);
  useEffect(() => store.subscribe(() => setVersion(store.version)), []);
  return store;
}
