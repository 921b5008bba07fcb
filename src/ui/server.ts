/**
 * The HTTP and WebSocket server of `bpfscope ui` (hono on Node's http server, `ws` for the live channel).
 *
 * Security (the process runs as root): every HTTP request and the WebSocket upgrade must carry the token (the
 * `token` query parameter, the `X-Bpfscope-Token` header, or, for the speedscope pages whose relative asset URLs
 * cannot carry a query, the path prefix `/t/TOKEN/`), compared in constant time (crypto.timingSafeEqual on SHA-256
 * digests, so lengths leak nothing either); anything else gets 401. The WebSocket upgrade also requires an Origin
 * of this server (a page elsewhere cannot drive it even with the token). Every response has a Content-Security-Policy
 * allowing this origin only (no third-party origins, no inline or eval'd script), `X-Content-Type-Options: nosniff`,
 * `Referrer-Policy: no-referrer` (the token is in the URL) and `Cache-Control: no-store`.
 *
 * WebSocket protocol (JSON text messages). Requests carry a numeric `id`, echoed by a `reply` message
 * (`{type:'reply', id, ok:true, ...}` or `{type:'reply', id, ok:false, error:{message, diagnostics?}}`):
 * - `{type:'start', tool, args: string[]}` starts a bcc tool with its command-line flags (reply: `session`);
 * - `{type:'program', source}` compiles and starts a bpftrace program (reply: `session`; compile errors carry
 *   `diagnostics` with line/col/offset/end);
 * - `{type:'watch'|'unwatch'|'stop'|'remove', session}`; `{type:'stopAll'}`.
 * The server pushes `{type:'sessions', sessions}` when the list changes (and every 2 s), `{type:'snapshot', ...}`
 * on watch, then the session's `rows` (`{rows, total}`: `rows` are the newest of `total` produced since the
 * previous message: the page shows "showing N of M" when they differ), `interval`, `stacks` and `maps` messages.
 * A malformed message gets `{type:'error', message}` and the connection stays open.
 *
 * Memory bounds per client: at most {@link CLIENT_ROWS} rows per session wait between two flushes (every 100 ms),
 * and nothing is flushed while the socket holds more than {@link MAX_BUFFERED} bytes not yet sent (the rows keep
 * being sampled meanwhile). Messages are limited to {@link MAX_MESSAGE} bytes.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join } from 'node:path';
import type { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { getRequestListener } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import { WebSocket, WebSocketServer } from 'ws';
import { BpfscopeError } from '../errors.js';
import { renderFlameGraph } from '../flame/flamegraph.js';
import { stacksToPprof } from '../flame/export/pprof.js';
import { stacksToSpeedscope } from '../flame/export/speedscope.js';
import { readFoldedStacks } from '../flame/export/stacks.js';
import { OFFWAKE_FLAMEGRAPH } from '../tools/offwaketime.js';
import { toolOptions } from '../tools/api.js';
import { parseArgs } from '../tools/framework/argparse.js';
import { type CatalogGroup, destOf, FILE_OPTIONS, loadCatalog } from './catalog.js';
import { type Session, SessionManager, type SessionOutput, startError, type Watcher } from './sessions.js';

/** Rows per session a client holds between flushes (older ones are counted, not sent). */
export const CLIENT_ROWS = 200;
/** Bytes a client's socket may hold unsent before the server stops flushing rows to it. */
export const MAX_BUFFERED = 4 << 20;
/** Largest WebSocket message accepted (bytes); larger ones close the connection with code 1009. */
export const MAX_MESSAGE = 16 << 20;

export const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  // inline style attributes: the chart and flame graph libraries position their elements with them
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export interface UiServerOptions {
  /** Address and port to listen on (port 0: any free port). */
  host: string;
  port: number;
  /** The access token (printed in the URL). */
  token: string;
  /** Allow the unsafe builtins (`system`, `signal`, ...) in programs. */
  unsafe: boolean;
  /** Close sessions nobody has watched for this many ms. */
  idleMs: number;
  /** The built client (index.html, app.js, ...); default: dist/ui of this package. */
  assetsDir?: string;
}

export interface UiServer {
  /** The page's URL with the token. */
  readonly url: string;
  readonly port: number;
  readonly sessions: SessionManager;
  /** Close every session (releasing their kernel objects), the sockets and the listener. */
  close(): Promise<void>;
}

/** The built client's directory: dist/ui next to dist/src (tsc) or dist/bundle (the CLI bundle). */
export function defaultAssetsDir(): string {
  for (const rel of ['../ui/', '../../ui/']) {
    const dir = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(join(dir, 'index.html'))) return dir;
  }
  throw new BpfscopeError('the UI client is not built (no dist/ui/index.html): run npm run build');
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.svg': 'image/svg+xml',
  '.woff2': 'font/woff2',
  '.wasm': 'application/wasm',
  '.txt': 'text/plain; charset=utf-8',
  '.ttf': 'font/ttf',
};

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/** Bytes that would be sent for `v` (bigints as decimal strings). */
function encode(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x));
}

class Client implements Watcher {
  readonly watching = new Set<Session>();
  private readonly pending = new Map<string, { rows: unknown[]; total: number }>();
  private readonly timer: NodeJS.Timeout;

  constructor(readonly ws: WebSocket) {
    this.timer = setInterval(() => this.flush(), 100);
  }

  send(v: unknown): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(encode(v));
  }

  deliver(out: SessionOutput): void {
    if (out.type !== 'rows') {
      this.send(out);
      return;
    }
    let p = this.pending.get(out.session);
    if (!p) this.pending.set(out.session, (p = { rows: [], total: 0 }));
    p.total += out.rows.length;
    const rows = out.rows.length > CLIENT_ROWS ? out.rows.slice(-CLIENT_ROWS) : out.rows;
    p.rows.push(...rows);
    if (p.rows.length > CLIENT_ROWS) p.rows.splice(0, p.rows.length - CLIENT_ROWS);
  }

  private flush(): void {
    if (this.pending.size === 0 || this.ws.bufferedAmount > MAX_BUFFERED) return;
    for (const [session, p] of this.pending) {
      const msg = { type: 'rows', session, rows: p.rows, total: p.total };
      const s = [...this.watching].find((w) => w.id === session);
      if (s) s.cost.measure(() => this.send(msg));
      else this.send(msg);
    }
    this.pending.clear();
  }

  close(): void {
    clearInterval(this.timer);
    for (const s of this.watching) {
      s.watchers.delete(this);
      if (s.watchers.size === 0) s.idleSince = Date.now();
    }
    this.watching.clear();
  }
}

/** Start the server; resolves once it listens. @throws BpfscopeError when the address cannot be bound */
export async function startUiServer(o: UiServerOptions): Promise<UiServer> {
  const assetsDir = o.assetsDir ?? defaultAssetsDir();
  const tokenDigest = digest(o.token);
  const tokenOk = (t: string | null | undefined): boolean =>
    typeof t === 'string' && timingSafeEqual(digest(t), tokenDigest);
  const clients = new Set<Client>();
  let listTimer: NodeJS.Timeout | undefined;
  const broadcastList = (): void => {
    if (listTimer) return;
    listTimer = setTimeout(() => {
      listTimer = undefined;
      const msg = { type: 'sessions', sessions: manager.list() };
      for (const c of clients) c.send(msg);
    }, 100);
  };
  const manager = new SessionManager({ unsafe: o.unsafe, idleMs: o.idleMs, onChange: broadcastList });
  const tick = setInterval(() => {
    if (manager.sessions.size) broadcastList();
  }, 2000);
  let catalog: CatalogGroup[] | undefined;
  const getCatalog = async (): Promise<CatalogGroup[]> => (catalog ??= await loadCatalog());
  const indexHtml = readFileSync(join(assetsDir, 'index.html'), 'utf8');

  const app = new Hono();
  app.use('*', async (c, next) => {
    await next();
    c.header('Content-Security-Policy', CSP);
    c.header('X-Content-Type-Options', 'nosniff');
    c.header('Referrer-Policy', 'no-referrer');
    c.header('Cache-Control', 'no-store');
    c.header('X-Frame-Options', 'DENY');
  });
  // speedscope's pages: the token is the path's first part (its relative asset URLs keep it)
  app.get('/t/:token/speedscope/:file', (c) => {
    if (!tokenOk(c.req.param('token'))) return c.text('401 Unauthorized: missing or wrong token\n', 401);
    return staticFile(c, join(assetsDir, 'speedscope'), c.req.param('file'));
  });
  app.use('*', async (c, next) => {
    if (c.req.path.startsWith('/t/')) return next();
    if (!tokenOk(c.req.query('token') ?? c.req.header('x-bpfscope-token'))) {
      return c.text('401 Unauthorized: missing or wrong token (open the URL bpfscope ui printed)\n', 401);
    }
    return next();
  });
  app.get('/', (c) => c.html(indexHtml.replaceAll('%TOKEN%', o.token)));
  app.get('/assets/:file', (c) => staticFile(c, assetsDir, c.req.param('file')));
  app.get('/api/catalog', async (c) => c.json(await getCatalog()));
  app.get('/api/sessions', (c) => c.json(manager.list()));
  app.get('/api/sessions/:id/:format', (c) => {
    const s = manager.sessions.get(c.req.param('id'));
    if (!s) return c.json({ error: `no session ${JSON.stringify(c.req.param('id'))}` }, 404);
    if (!s.folded) return c.json({ error: 'this session has no stack capture (yet)' }, 404);
    return download(c, s, c.req.param('format'));
  });
  app.notFound((c) => c.text('404 Not Found\n', 404));
  app.onError((e, c) => c.json({ error: startError(e).message }, 500));

  const listener = getRequestListener(app.fetch);
  const server: Server = createServer((req, res) => void listener(req, res));
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE });

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const host = req.headers.host ?? '';
    const origin = req.headers.origin;
    const refuse = (status: string): void => {
      socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    };
    if (url.pathname !== '/ws') return refuse('404 Not Found');
    if (!tokenOk(url.searchParams.get('token'))) return refuse('401 Unauthorized');
    if (origin !== undefined && origin !== `http://${host}`) return refuse('403 Forbidden');
    wss.handleUpgrade(req, socket, head, (ws) => onConnection(ws));
  });

  function onConnection(ws: WebSocket): void {
    const client = new Client(ws);
    clients.add(client);
    client.send({ type: 'hello', unsafe: o.unsafe, idleMs: o.idleMs });
    client.send({ type: 'sessions', sessions: manager.list() });
    ws.on('message', (data, isBinary) => {
      void handleMessage(client, isBinary ? null : data.toString());
    });
    ws.on('close', () => {
      client.close();
      clients.delete(client);
      broadcastList();
    });
    ws.on('error', () => {
      // e.g. a message over maxPayload: ws closes the socket (1009); 'close' cleans up
    });
  }

  async function handleMessage(client: Client, text: string | null): Promise<void> {
    let msg: Record<string, unknown>;
    try {
      if (text === null) throw new Error('binary messages are not part of the protocol');
      const v: unknown = JSON.parse(text);
      if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('a message is a JSON object');
      msg = v as Record<string, unknown>;
      if (typeof msg.type !== 'string') throw new Error('the message has no "type"');
    } catch (e) {
      client.send({ type: 'error', message: `malformed message: ${(e as Error).message}` });
      return;
    }
    const id = typeof msg.id === 'number' ? msg.id : null;
    const reply = (v: Record<string, unknown>): void => client.send({ type: 'reply', id, ok: true, ...v });
    try {
      switch (msg.type) {
        case 'start': {
          const tool = await findTool(msg.tool);
          const args = msg.args ?? [];
          if (
            !Array.isArray(args) ||
            args.length > 64 ||
            !args.every((a) => typeof a === 'string' && a.length < 4096)
          ) {
            throw new BpfscopeError('"args" must be a list of at most 64 strings (the tool\'s command-line flags)');
          }
          if (!o.unsafe) await refuseFileOptions(tool.name, args as string[]);
          const s = await manager.startTool(tool.name, args as string[], tool.view ?? 'table');
          watch(client, s);
          reply({ session: s.snapshot() });
          break;
        }
        case 'program': {
          if (typeof msg.source !== 'string') throw new BpfscopeError('"source" must be the program\'s text');
          const s = await manager.startProgram(msg.source);
          watch(client, s);
          reply({ session: s.snapshot() });
          break;
        }
        case 'watch':
          watch(client, manager.get(msg.session));
          reply({});
          break;
        case 'unwatch': {
          const s = manager.get(msg.session);
          s.watchers.delete(client);
          client.watching.delete(s);
          if (s.watchers.size === 0) s.idleSince = Date.now();
          reply({});
          broadcastList();
          break;
        }
        case 'stop':
          await manager.get(msg.session).close();
          reply({});
          break;
        case 'remove':
          manager.get(msg.session);
          await manager.remove(msg.session as string);
          reply({});
          break;
        case 'stopAll':
          await Promise.all([...manager.sessions.values()].map((s) => s.close()));
          reply({});
          break;
        default:
          throw new BpfscopeError(`unknown message type ${JSON.stringify(msg.type)}`);
      }
    } catch (e) {
      client.send({ type: 'reply', id, ok: false, error: startError(e) });
    }
  }

  function watch(client: Client, s: Session): void {
    s.watchers.add(client);
    client.watching.add(s);
    client.send({
      type: 'snapshot',
      session: s.snapshot(),
      rows: s.tail,
      intervals: s.intervals,
      folded: s.folded,
      unit: s.unit,
    });
    broadcastList();
  }

  async function findTool(name: unknown) {
    const all = (await getCatalog()).flatMap((g) => g.tools);
    const tool = all.find((t) => t.name === name);
    if (!tool) throw new BpfscopeError(`unknown tool ${JSON.stringify(name)}`);
    if (!tool.available)
      throw new BpfscopeError(`${tool.name} is not yet available in the UI (run it from the command line)`);
    return tool;
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(new BpfscopeError(`cannot listen on ${o.host}:${o.port}: ${e.code ?? e.message}`)),
    );
    server.listen(o.port, o.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const hostPart = o.host.includes(':') ? `[${o.host}]` : o.host;
  return {
    url: `http://${hostPart}:${port}/?token=${o.token}`,
    port,
    sessions: manager,
    async close() {
      clearInterval(tick);
      if (listTimer) clearTimeout(listTimer);
      await manager.closeAll();
      for (const c of clients) {
        c.close();
        c.ws.terminate();
      }
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Refuse the options that make a tool write a file (FILE_OPTIONS) as the argument parser reads `args` (so
 * abbreviations such as `--sv` count too). A usage error is left to runTool, which reports it.
 */
async function refuseFileOptions(tool: string, args: string[]): Promise<void> {
  const { spec } = await toolOptions(tool);
  let parsed: Record<string, unknown>;
  try {
    parsed = parseArgs(spec, args) as Record<string, unknown>;
  } catch {
    return;
  }
  for (const dest of FILE_OPTIONS) {
    if (parsed[dest] === undefined || parsed[dest] === null) continue;
    const flags = spec.options.find((x) => destOf(x) === dest)?.flags.join('/') ?? dest;
    throw new BpfscopeError(
      `${tool}: ${flags} writes a file on the server as root: refused in the UI (start bpfscope ui with --unsafe to allow it)`,
    );
  }
}

function staticFile(c: Context, dir: string, file: string): Response {
  if (!/^[\w][\w.-]*$/.test(file)) return c.text('404 Not Found\n', 404);
  const path = join(dir, file);
  if (!existsSync(path)) return c.text('404 Not Found\n', 404);
  const type = TYPES[extname(file)] ?? 'application/octet-stream';
  return c.body(readFileSync(path), 200, { 'Content-Type': type });
}

function frequency(args: readonly string[]): number {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const m = /^(?:-F|--frequency=?)(\d*)$/.exec(a);
    if (m) {
      const v = Number(m[1] || args[i + 1]);
      if (v > 0) return v;
    }
  }
  return 49; // bcc profile's default
}

function download(c: Context, s: Session, format: string): Response {
  const folded = s.folded!;
  const base = `${s.info.name}-${s.id}`;
  const attach = (name: string) => ({ 'Content-Disposition': `attachment; filename="${name}"` });
  switch (format) {
    case 'flame.svg': {
      const r = renderFlameGraph(folded, {
        title: `${s.info.name} ${s.info.args.join(' ')}`.trim(),
        countname: s.unit === 'microseconds' ? 'us' : s.unit,
        // offwaketime's waker frames (after `--`) in the chain palette, as `offwaketime --svg`
        ...(s.info.name === 'offwaketime' ? { colors: OFFWAKE_FLAMEGRAPH.colors } : {}),
      });
      return c.body(r.svg, 200, { 'Content-Type': 'image/svg+xml', ...attach(`${base}.svg`) });
    }
    case 'stacks.folded':
      return c.body(folded.map((l) => `${l}\n`).join(''), 200, {
        'Content-Type': 'text/plain; charset=utf-8',
        ...attach(`${base}.folded`),
      });
    case 'profile.pb': {
      const stacks = readFoldedStacks(folded);
      const bytes =
        s.unit === 'samples'
          ? stacksToPprof(stacks, { kind: 'cpu', periodNs: Math.round(1e9 / frequency(s.info.args)) })
          : s.unit === 'calls'
            ? stacksToPprof(stacks, { kind: 'count' })
            : stacksToPprof(stacks, { kind: 'offcpu', unitNs: 1000 });
      return c.body(Buffer.from(bytes), 200, { 'Content-Type': 'application/octet-stream', ...attach(`${base}.pb`) });
    }
    case 'speedscope.json': {
      const doc = stacksToSpeedscope(readFoldedStacks(folded), {
        name: `${s.info.name} ${s.info.args.join(' ')}`.trim(),
        unit: s.unit === 'microseconds' ? 'microseconds' : 'none',
        exporter: 'bpfscope',
      });
      return c.body(JSON.stringify(doc), 200, {
        'Content-Type': 'application/json',
        ...(c.req.query('inline') ? {} : attach(`${base}.speedscope.json`)),
      });
    }
    default:
      return c.json(
        { error: `unknown format ${JSON.stringify(format)} (flame.svg, stacks.folded, profile.pb, speedscope.json)` },
        404,
      );
  }
}
