/**
 * The fake Pyroscope (HTTP/1.1, Connect unary) and fake Parca (HTTP/2, gRPC) the agent tests push to, written from
 * the published .proto definitions (grafana/pyroscope api/push/v1/push.proto and types/v1/types.proto;
 * parca-dev/parca proto/parca/profilestore/v1alpha1/profilestore.proto) with the test's own wire decoder
 * (test/helpers/protowire.ts), the pprof-format package for the profiles, and helpers to build the test workloads
 * (test/fixtures/burn.c, sleepy.c) and read the agent's metrics.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createH2Server, type Http2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Profile } from 'pprof-format';
import { repoRoot, type RunningTool } from '../helpers/cli.js';
import { fields, messages, stringField } from '../helpers/protowire.js';

/** One profile as a fake receiver got it. */
export interface Received {
  labels: Map<string, string>;
  profile: Profile;
  /** Bytes of the pprof as sent (gzip). */
  size: number;
  /** When it arrived, ns since the epoch (Date.now()). */
  at: number;
}

/** test/fixtures/NAME.c built (cached by the source's hash) as bpfs_NAME. */
export function fixtureBinary(name: string): string {
  const src = join(repoRoot(), 'test', 'fixtures', `${name}.c`);
  // cached by the source's hash, as test/helpers/workload.ts caches the workload
  const hash = createHash('sha256').update(readFileSync(src)).digest('hex').slice(0, 12);
  const dir = join(tmpdir(), `bpfscope-test-${name}-${hash}`);
  const bin = join(dir, `bpfs_${name}`);
  if (!existsSync(bin)) {
    mkdirSync(dir, { recursive: true });
    execFileSync('cc', ['-O1', '-fno-omit-frame-pointer', '-Wall', '-o', `${bin}.${process.pid}.tmp`, src]);
    renameSync(`${bin}.${process.pid}.tmp`, bin);
  }
  return bin;
}

/** The GNU build-id of `file` as binutils' readelf prints it. */
export function readelfBuildId(file: string): string {
  const out = execFileSync('readelf', ['-n', file], { encoding: 'utf8' });
  const m = /Build ID:\s*([0-9a-f]+)/.exec(out);
  assert.ok(m, `readelf found no build-id in ${file}`);
  return m[1]!;
}

function body(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Decode a pprof as sent (gzip'ed). */
export function decodePprof(raw: Uint8Array): Profile {
  assert.equal(raw[0], 0x1f, 'raw_profile is gzip');
  assert.equal(raw[1], 0x8b, 'raw_profile is gzip');
  return Profile.decode(gunzipSync(raw));
}

/** A fake Pyroscope: Connect unary `push.v1.PusherService/Push` (protobuf), decoding every PushRequest. */
export class FakePyroscope {
  readonly got: Received[] = [];
  readonly errors: string[] = [];
  server: Server;
  port = 0;
  private waiters: (() => void)[] = [];

  constructor() {
    this.server = createServer((req, res) => {
      void body(req).then((buf) => {
        try {
          assert.equal(req.method, 'POST');
          assert.equal(req.url, '/push.v1.PusherService/Push');
          assert.equal(req.headers['content-type'], 'application/proto');
          assert.equal(req.headers['connect-protocol-version'], '1');
          // PushRequest { repeated RawProfileSeries series = 1 }
          const series = messages(buf, 1);
          assert.equal(series.length, 1, 'one series per push');
          for (const s of series) {
            // RawProfileSeries { repeated LabelPair labels = 1; repeated RawSample samples = 2 }
            const labels = new Map(messages(s, 1).map((l) => [stringField(l, 1), stringField(l, 2)]));
            for (const raw of messages(s, 2)) {
              // RawSample { bytes raw_profile = 1; string ID = 2 }
              const profileBytes = messages(raw, 1)[0]!;
              assert.match(stringField(raw, 2), /^[0-9a-f-]{36}$/, 'RawSample.ID is a UUID');
              this.got.push({
                labels,
                profile: decodePprof(profileBytes),
                size: profileBytes.length,
                at: Date.now() * 1e6,
              });
            }
          }
          res.writeHead(200, { 'Content-Type': 'application/proto' }).end(); // an empty PushResponse
        } catch (e) {
          this.errors.push((e as Error).message);
          res
            .writeHead(400, { 'Content-Type': 'application/json' })
            .end(JSON.stringify({ code: 'invalid_argument', message: (e as Error).message }));
        }
        this.notify();
      });
    });
  }

  private notify(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves once `pred()` holds, checked after each request. */
  async until(pred: () => boolean): Promise<void> {
    while (!pred()) await new Promise<void>((r) => this.waiters.push(r));
  }

  listen(port = 0): Promise<void> {
    return new Promise((resolve) =>
      this.server.listen(port, '127.0.0.1', () => {
        this.port = (this.server.address() as AddressInfo).port;
        resolve();
      }),
    );
  }

  /** Stop listening and cut every open connection: the server is down. */
  down(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

/** A fake Parca: gRPC `ProfileStoreService/WriteRaw` over cleartext HTTP/2, decoding framing and message. */
export class FakeParca {
  readonly got: Received[] = [];
  readonly errors: string[] = [];
  server: Http2Server;
  port = 0;

  constructor() {
    this.server = createH2Server();
    this.server.on('stream', (stream, headers) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        let status = 0;
        let message = '';
        try {
          assert.equal(headers[':method'], 'POST');
          assert.equal(headers[':path'], '/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw');
          assert.equal(headers['content-type'], 'application/grpc');
          assert.equal(headers.te, 'trailers');
          const buf = Buffer.concat(chunks);
          // gRPC Length-Prefixed-Message: compressed flag (0), u32 big-endian length, the message
          assert.ok(buf.length >= 5, 'a gRPC frame');
          assert.equal(buf[0], 0, 'uncompressed');
          const len = buf.readUInt32BE(1);
          assert.equal(buf.length, 5 + len, 'one frame, its length as prefixed');
          const msg = buf.subarray(5);
          // WriteRawRequest { string tenant = 1; repeated RawProfileSeries series = 2; bool normalized = 3 }
          const series = messages(msg, 2);
          assert.equal(series.length, 1);
          assert.ok(!fields(msg).some((f) => f.field === 3 && f.int === 1n), 'normalized is false');
          for (const s of series) {
            // RawProfileSeries { LabelSet labels = 1; repeated RawSample samples = 2 }; LabelSet { repeated Label labels = 1 }
            const set = messages(s, 1)[0]!;
            const labels = new Map(messages(set, 1).map((l) => [stringField(l, 1), stringField(l, 2)]));
            for (const raw of messages(s, 2)) {
              const profileBytes = messages(raw, 1)[0]!; // RawSample { bytes raw_profile = 1 }
              this.got.push({
                labels,
                profile: decodePprof(profileBytes),
                size: profileBytes.length,
                at: Date.now() * 1e6,
              });
            }
          }
        } catch (e) {
          this.errors.push((e as Error).message);
          status = 3; // INVALID_ARGUMENT
          message = (e as Error).message;
        }
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.on('wantTrailers', () =>
          stream.sendTrailers({ 'grpc-status': String(status), 'grpc-message': encodeURIComponent(message) }),
        );
        // WriteRawResponse {} : an empty message, framed
        stream.end(status === 0 ? Buffer.from([0, 0, 0, 0, 0]) : undefined);
      });
    });
  }

  listen(): Promise<void> {
    return new Promise((resolve) =>
      this.server.listen(0, '127.0.0.1', () => {
        this.port = (this.server.address() as AddressInfo).port;
        resolve();
      }),
    );
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** The string labels of a pprof sample. */
export function sampleLabels(p: Profile, s: Profile['sample'][number]): Map<string, string> {
  const str = p.stringTable.strings;
  return new Map(s.label.map((l) => [str[Number(l.key)]!, str[Number(l.str)]!]));
}

/** Function names and mapping file names of a sample's locations, leaf first. */
export function sampleFrames(p: Profile, s: Profile['sample'][number]): { name: string; file: string }[] {
  const str = p.stringTable.strings;
  const fn = new Map(p.function.map((f) => [Number(f.id), str[Number(f.name)]!]));
  const file = new Map(p.mapping.map((m) => [Number(m.id), str[Number(m.filename)]!]));
  const loc = new Map(p.location.map((l) => [Number(l.id), l]));
  return s.locationId.map((id) => {
    const l = loc.get(Number(id))!;
    return { name: fn.get(Number(l.line[0]!.functionId))!, file: file.get(Number(l.mappingId)) ?? '' };
  });
}

export function mappingFiles(p: Profile): Map<string, string> {
  const str = p.stringTable.strings;
  return new Map(p.mapping.map((m) => [str[Number(m.filename)]!, str[Number(m.buildId)]!]));
}

/** Wait for `pattern` on the agent's stderr and return the metrics URL it printed. */
export async function metricsUrl(agent: RunningTool): Promise<string> {
  assert.ok(await agent.waitFor(/sampling every CPU/, 60000), `agent did not start: ${agent.stderr()}`);
  const m = /metrics on (http:\/\/\S+\/metrics)/.exec(agent.stderr());
  assert.ok(m, agent.stderr());
  return m[1]!;
}

/** `name{labels} value` lines of the metrics text, by the whole series text. */
export async function scrape(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(url)).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}
