/**
 * The page's link to the server: the token (from the page's URL), fetch() with it, and the WebSocket with
 * request/reply matching (see src/ui/server.ts for the protocol). Reconnects after a lost connection.
 */
export const TOKEN = new URLSearchParams(location.search).get('token') ?? '';

export async function getJson<T>(path: string): Promise<T> {
  const r = await fetch(path, { headers: { 'X-Bpfscope-Token': TOKEN } });
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return (await r.json()) as T;
}

/** A URL of the server with the token (downloads, links). */
export function withToken(path: string): string {
  return `${path}${path.includes('?') ? '&' : '?'}token=${encodeURIComponent(TOKEN)}`;
}

export interface Diag {
  severity: string;
  message: string;
  hint?: string;
  line?: number;
  col?: number;
  offset?: number;
  end?: number;
}

export interface ReplyError {
  message: string;
  diagnostics?: Diag[];
}

export class RequestFailed extends Error {
  constructor(readonly error: ReplyError) {
    super(error.message);
  }
}

type Msg = Record<string, unknown> & { type: string };

export class Conn {
  private ws: WebSocket | null = null;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (v: Msg) => void; reject: (e: Error) => void }>();
  private readonly listeners = new Set<(m: Msg) => void>();
  status: 'connecting' | 'open' | 'closed' = 'connecting';
  closeReason = '';
  onStatus: () => void = () => {};

  connect(): void {
    const ws = new WebSocket(
      `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws?token=${encodeURIComponent(TOKEN)}`,
    );
    this.ws = ws;
    this.status = 'connecting';
    ws.onopen = () => {
      this.status = 'open';
      this.onStatus();
    };
    ws.onmessage = (ev) => {
      let m: Msg;
      try {
        m = JSON.parse(String(ev.data)) as Msg;
      } catch {
        return;
      }
      if (m.type === 'reply' && typeof m.id === 'number') {
        const w = this.waiting.get(m.id);
        this.waiting.delete(m.id);
        if (w) {
          if (m.ok) w.resolve(m);
          else w.reject(new RequestFailed(m.error as ReplyError));
        }
        return;
      }
      for (const l of this.listeners) l(m);
    };
    ws.onclose = (ev) => {
      this.status = 'closed';
      this.closeReason =
        ev.code === 1009
          ? 'the last message was too large for the server (over 16 MiB)'
          : ev.reason || `code ${ev.code}`;
      for (const w of this.waiting.values())
        w.reject(new RequestFailed({ message: `connection closed: ${this.closeReason}` }));
      this.waiting.clear();
      this.onStatus();
      setTimeout(() => this.connect(), 1000);
    };
  }

  on(l: (m: Msg) => void): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  /** Send a raw text message (no reply expected). */
  sendRaw(text: string): void {
    this.ws?.send(text);
  }

  request(msg: Msg): Promise<Msg> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (!this.ws || this.ws.readyState !== WebSocket.OPEN) {
        reject(new RequestFailed({ message: 'not connected to the server' }));
        return;
      }
      this.waiting.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ ...msg, id }));
    });
  }
}

export const conn = new Conn();
