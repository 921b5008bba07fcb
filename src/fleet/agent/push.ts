/**
 * Sending one profile to a backend. Each function resolves on success and rejects with a {@link PushError} that
 * says whether retrying can help (the queue retries those and drops the others, counted).
 *
 * - Pyroscope: `POST /push.v1.PusherService/Push` with the Connect protocol's unary form (connectrpc.com/docs/protocol:
 *   `Content-Type: application/proto`, `Connect-Protocol-Version: 1`, the bare PushRequest message as the body, a
 *   200 answer with a PushResponse, errors as HTTP status + JSON `{code, message}`). A 404 or 415 (a server without
 *   the Connect API) switches to the legacy `POST /ingest?name=APP{labels}&from=S&until=S&format=pprof&sampleRate=HZ`
 *   with the pprof as the body, for this and later pushes.
 * - Parca: `parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw` over gRPC (HTTP/2, `application/grpc`, the
 *   message in a 5-byte length prefix; the status in the `grpc-status` trailer). `http://` URLs use cleartext HTTP/2
 *   (h2c), `https://` TLS.
 * Both send `X-Scope-OrgID` when a tenant is given (Pyroscope's multi-tenancy header); Parca also gets it as
 * WriteRawRequest.tenant.
 */
import { randomUUID } from 'node:crypto';
import { Agent, request, type IncomingMessage } from 'node:http';
import type * as Http2 from 'node:http2';
import type * as Https from 'node:https';
import { createRequire } from 'node:module';
import { grpcFrame, parcaWriteRawRequest, pyroscopePushRequest, type SeriesLabel } from './proto.js';

/** A failed push: `retry` tells whether sending the same profile again may succeed. */
export class PushError extends Error {
  constructor(
    message: string,
    readonly retry: boolean,
  ) {
    super(message);
    this.name = 'PushError';
  }
}

/** One profile ready to send. */
export interface OutgoingProfile {
  /** gzip'ed pprof bytes. */
  pprof: Uint8Array;
  /** Series labels (`__name__`, `service_name`, the user's `--label`s). */
  labels: readonly SeriesLabel[];
  /** Covered time, ns since the epoch. */
  startNs: number;
  durationNs: number;
  /** Sampling frequency (for /ingest's sampleRate). */
  hz: number;
}

/** Something profiles are sent to. */
export interface Backend {
  /** `pyroscope` or `parca` (the metrics' `backend` label). */
  readonly name: string;
  /** Where profiles go (names the backend's on-disk queue). */
  readonly url: string;
  send(p: OutgoingProfile, timeoutMs: number): Promise<void>;
  close(): void;
}

/** HTTP statuses worth retrying: timeouts, throttling, server errors. */
function retryable(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * node:https and node:http2 are loaded when a URL needs them (each costs ~2-5 MB of RSS for the life of the agent),
 * with require: a dynamic import() is not available to the bundle's code as the launcher runs it (vm.Script).
 */
const load = createRequire(import.meta.url);

function joinUrl(base: string, path: string): string {
  return base.replace(/\/+$/, '') + path;
}

/** Pyroscope's Connect push with the /ingest fallback (see the module comment). */
export class PyroscopeBackend implements Backend {
  readonly name = 'pyroscope';
  /** Set after the server answered the Connect push with 404/415: /ingest is used from then on. */
  legacy = false;

  constructor(
    readonly url: string,
    private readonly tenant = '',
  ) {}

  async send(p: OutgoingProfile, timeoutMs: number): Promise<void> {
    if (!this.legacy) {
      const status = await this.post(
        joinUrl(this.url, '/push.v1.PusherService/Push'),
        pyroscopePushRequest(p.labels, p.pprof, randomUUID()),
        { 'Content-Type': 'application/proto', 'Connect-Protocol-Version': '1' },
        timeoutMs,
      );
      if (status.ok) return;
      if (status.code !== 404 && status.code !== 415) throw status.error;
      this.legacy = true;
    }
    const status = await this.post(
      ingestUrl(this.url, p),
      p.pprof,
      { 'Content-Type': 'binary/octet-stream' },
      timeoutMs,
    );
    if (!status.ok) throw status.error;
  }

  /** Keep-alive connections, one agent per scheme (https: loaded when the URL needs it). */
  private agent: Agent | undefined;

  /**
   * One POST with node:http (or node:https), not the global `fetch`: fetch loads undici (its JavaScript and its
   * llhttp WebAssembly), ~11 MB more RSS in a long-running process that sends one request a period.
   */
  private async post(
    url: string,
    body: Uint8Array,
    headers: Record<string, string>,
    timeoutMs: number,
  ): Promise<{ ok: true } | { ok: false; code: number; error: PushError }> {
    let res: { status: number; text: string };
    try {
      res = await this.request(
        new URL(url),
        body,
        {
          ...headers,
          'Content-Length': String(body.length),
          ...(this.tenant ? { 'X-Scope-OrgID': this.tenant } : {}),
        },
        timeoutMs,
      );
    } catch (e) {
      const cause = (e as NodeJS.ErrnoException).code ?? (e as Error).name;
      return { ok: false, code: 0, error: new PushError(`cannot reach ${url}: ${cause}`, true) };
    }
    if (res.status >= 200 && res.status < 300) return { ok: true };
    let detail = res.text.slice(0, 200);
    try {
      const j = JSON.parse(res.text) as { code?: string; message?: string };
      if (j.code || j.message) detail = `${j.code ?? ''}: ${j.message ?? ''}`;
    } catch {
      /* not Connect's JSON error */
    }
    return {
      ok: false,
      code: res.status,
      error: new PushError(`${url} answered ${res.status} ${detail}`.trim(), retryable(res.status)),
    };
  }

  /** The status and body (first 64 KiB) of a POST; rejects on a connection error or after `timeoutMs`. */
  private request(
    url: URL,
    body: Uint8Array,
    headers: Record<string, string>,
    timeoutMs: number,
  ): Promise<{ status: number; text: string }> {
    const tls = url.protocol === 'https:';
    const mod = tls ? (load('node:https') as typeof Https) : { request, Agent };
    if (!this.agent) this.agent = new mod.Agent({ keepAlive: true, maxSockets: 1 });
    return new Promise((resolve, reject) => {
      let settled = false;
      const done = (e: Error | undefined, status = 0, text = ''): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (e) reject(e);
        else resolve({ status, text });
      };
      // the whole exchange within timeoutMs, as AbortSignal.timeout did for fetch (a socket timeout is per silence)
      const timer = setTimeout(() => {
        const e = new Error(`no answer in ${timeoutMs} ms`);
        e.name = 'TimeoutError';
        req.destroy(e);
        done(e);
      }, timeoutMs);
      let answered = false;
      const req = mod.request(url, { method: 'POST', headers, agent: this.agent }, (res: IncomingMessage) => {
        answered = true;
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          if (size < 65536) chunks.push(c);
          size += c.length;
        });
        res.on('end', () => done(undefined, res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8')));
        res.on('error', (e) => done(e));
        // a connection cut before the end of the answer
        res.on('close', () => done(Object.assign(new Error('connection closed'), { code: 'ECONNRESET' })));
      });
      req.on('error', (e) => done(e));
      req.on('close', () => {
        // the answer's own events settle first ('end' comes before 'close'); a request closed without any answer
        if (!answered) done(Object.assign(new Error('connection closed'), { code: 'ECONNRESET' }));
      });
      req.end(body);
    });
  }

  close(): void {
    this.agent?.destroy();
    this.agent = undefined;
  }
}

/** Pyroscope's legacy ingest URL: the app name with the labels in braces, times in seconds. */
export function ingestUrl(base: string, p: OutgoingProfile): string {
  const app = p.labels.find((l) => l.name === 'service_name')?.value ?? 'bpfscope';
  const rest = p.labels.filter((l) => l.name !== 'service_name' && l.name !== '__name__');
  // the profile's kind is the series' __name__: process_cpu -> APP.cpu, off_cpu -> APP.off_cpu
  const kind = p.labels.find((l) => l.name === '__name__')?.value === 'off_cpu' ? 'off_cpu' : 'cpu';
  const name = `${app}.${kind}{${rest.map((l) => `${l.name}=${l.value}`).join(',')}}`;
  const q = new URLSearchParams({
    name,
    from: String(Math.floor(p.startNs / 1e9)),
    until: String(Math.ceil((p.startNs + p.durationNs) / 1e9)),
    format: 'pprof',
    sampleRate: String(p.hz),
    spyName: 'bpfscope',
  });
  return `${joinUrl(base, '/ingest')}?${q.toString()}`;
}

/** Parca's gRPC WriteRaw (see the module comment). One HTTP/2 connection, reopened after a failure. */
export class ParcaBackend implements Backend {
  readonly name = 'parca';
  private session: Http2.ClientHttp2Session | undefined;

  constructor(
    readonly url: string,
    private readonly tenant = '',
  ) {}

  /** The HTTP/2 connection (node:http2 is loaded on the first push: only a Parca backend needs it). */
  private conn(): Http2.ClientHttp2Session {
    if (!this.session || this.session.closed || this.session.destroyed) {
      const { connect } = load('node:http2') as typeof Http2;
      const s = connect(this.url);
      s.on('error', () => {
        /* reported by the request */
      });
      s.unref();
      this.session = s;
    }
    return this.session;
  }

  async send(p: OutgoingProfile, timeoutMs: number): Promise<void> {
    const body = grpcFrame(parcaWriteRawRequest(p.labels, p.pprof, this.tenant));
    const s = this.conn();
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const fail = (msg: string, retry: boolean): void => {
        if (settled) return;
        settled = true;
        this.session?.destroy();
        this.session = undefined;
        reject(new PushError(msg, retry));
      };
      const onSessionError = (e: Error): void =>
        fail(`cannot reach ${this.url}: ${(e as NodeJS.ErrnoException).code ?? e.message}`, true);
      s.on('error', onSessionError);
      const req = s.request({
        ':method': 'POST',
        ':path': '/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw',
        'content-type': 'application/grpc',
        te: 'trailers',
        ...(this.tenant ? { 'x-scope-orgid': this.tenant } : {}),
      });
      req.setTimeout(timeoutMs, () => {
        req.close();
        fail(`${this.url}: no answer in ${timeoutMs} ms`, true);
      });
      let status: string | undefined;
      let message = '';
      let httpStatus = 0;
      req.on('response', (h) => {
        httpStatus = Number(h[':status']);
        // a "trailers-only" answer carries the status in the headers
        if (h['grpc-status'] !== undefined) {
          status = String(h['grpc-status']);
          message = String(h['grpc-message'] ?? '');
        }
      });
      req.on('trailers', (t) => {
        status = String(t['grpc-status']);
        message = String(t['grpc-message'] ?? '');
      });
      req.on('data', () => {});
      req.on('error', (e) => fail(`${this.url}: ${(e as NodeJS.ErrnoException).code ?? e.message}`, true));
      req.on('close', () => {
        s.off('error', onSessionError);
        if (settled) return;
        if (status === '0') {
          settled = true;
          resolve();
          return;
        }
        if (status === undefined) {
          fail(
            `${this.url} answered HTTP ${httpStatus} without a gRPC status`,
            httpStatus === 0 || retryable(httpStatus),
          );
          return;
        }
        // UNAVAILABLE (14), RESOURCE_EXHAUSTED (8), DEADLINE_EXCEEDED (4), ABORTED (10) are worth retrying
        fail(
          `${this.url}: gRPC status ${status} ${decodeURIComponent(message)}`.trim(),
          ['4', '8', '10', '14'].includes(status),
        );
      });
      req.end(body);
    });
  }

  close(): void {
    this.session?.close();
    this.session = undefined;
  }
}
