/**
 * The HTTP side (hono on @hono/node-server): GET `--web.telemetry-path` (default /metrics) serves the exposition,
 * OpenMetrics when the Accept header asks for `application/openmetrics-text`, else text format 0.0.4; GET / a
 * short page linking to it; GET /maps (only with --debug) the metric maps, decoded. Nothing else is served.
 */
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import type { Exporter } from './exporter.js';

export interface ServerOptions {
  host: string;
  port: number;
  telemetryPath: string;
  debug: boolean;
}

/** Whether an Accept header asks for OpenMetrics (any q > 0). */
export function wantsOpenMetrics(accept: string | undefined): boolean {
  if (!accept) return false;
  return accept.split(',').some((part) => {
    const [type, ...params] = part
      .trim()
      .split(';')
      .map((s) => s.trim());
    if (type !== 'application/openmetrics-text') return false;
    const q = params.find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

/** Listen; resolves with the server and its address once listening (rejects if the address cannot be bound). */
export function startServer(
  exporter: Exporter,
  o: ServerOptions,
  log: (s: string) => void,
): Promise<{ server: ServerType; address: AddressInfo }> {
  const app = new Hono();
  app.get(o.telemetryPath, async (c) => {
    try {
      const { body, contentType } = await exporter.scrape(wantsOpenMetrics(c.req.header('accept')));
      return c.body(body, 200, { 'Content-Type': contentType });
    } catch (e) {
      log(`scrape failed: ${(e as Error).message}`);
      return c.text(`scrape failed: ${(e as Error).message}\n`, 500);
    }
  });
  if (o.debug) {
    app.get('/maps', async (c) => c.text(await exporter.mapsText()));
  }
  if (o.telemetryPath !== '/') {
    app.get('/', (c) =>
      c.html(
        `<html><head><title>bpfscope exporter</title></head><body><h1>bpfscope exporter</h1>` +
          `<p><a href="${o.telemetryPath}">Metrics</a></p></body></html>\n`,
      ),
    );
  }
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, hostname: o.host, port: o.port }, (address) =>
      resolve({ server, address }),
    );
    server.once('error', reject);
  });
}
