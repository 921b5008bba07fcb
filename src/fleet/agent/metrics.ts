/**
 * The agent's own metrics, served as Prometheus text exposition format 0.0.4 (prometheus.io/docs/instrumenting/
 * exposition_formats) on `GET /metrics`. A dozen counters and gauges do not need a metrics library: each scrape
 * renders them from the agent's state. The server listens on loopback (127.0.0.1:9436) unless told otherwise;
 * it serves only GET /metrics (anything else: 404) and reads nothing from the request.
 */
import { createServer, type Server } from 'node:http';

/** One metric: `type` and `help` as the format's `# TYPE`/`# HELP` lines; samples with their labels. */
export interface Metric {
  name: string;
  help: string;
  type: 'counter' | 'gauge';
  samples: { labels?: Readonly<Record<string, string>>; value: number }[];
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function escapeHelp(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** The metrics as text format 0.0.4. */
export function renderMetrics(metrics: readonly Metric[]): string {
  let s = '';
  for (const m of metrics) {
    s += `# HELP ${m.name} ${escapeHelp(m.help)}\n# TYPE ${m.name} ${m.type}\n`;
    for (const x of m.samples) {
      const l = Object.entries(x.labels ?? {});
      const ls = l.length ? `{${l.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}` : '';
      s += `${m.name}${ls} ${Number.isFinite(x.value) ? x.value : 0}\n`;
    }
  }
  return s;
}

/** Parse `HOST:PORT` (`[::1]:9436` for IPv6). @throws Error with one sentence for a bad address */
export function parseListenAddress(a: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(a);
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port >= 0 && port <= 65535)) {
    throw new Error(`--metrics-address must be HOST:PORT (e.g. 127.0.0.1:9436), not ${JSON.stringify(a)}`);
  }
  return { host: m[1] ?? (m[2] || '127.0.0.1'), port };
}

/** Serve `collect()` on GET /metrics at `host:port`; resolves with the server once it listens. */
export function serveMetrics(host: string, port: number, collect: () => readonly Metric[]): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found: the agent serves GET /metrics\n');
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' }).end(renderMetrics(collect()));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}
