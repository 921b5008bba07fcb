/**
 * `bpfscope agent`: continuous CPU profiling pushed to Pyroscope or Parca (docs/fleet-agent.md).
 *
 *     bpfscope agent --pyroscope http://pyroscope:4040 --app web-1 --hz 49 --period 15s
 *     bpfscope agent --parca http://parca:7070 --app web-1
 *
 * Every period (profiler.ts) becomes one gzip'ed pprof (pprof.ts) queued for each backend (queue.ts, push.ts); the
 * agent's own metrics are on http://127.0.0.1:9436/metrics (metrics.ts). SIGINT/SIGTERM end the run: the partial
 * period is sent, queues get a few seconds to drain, everything is detached. Exit status 0 after a signal, 1 on a
 * failure to start (one sentence on stderr), 2 on a usage error.
 */
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import type { Server } from 'node:http';
import { BpfscopeError } from '../../errors.js';
import { type Metric, parseListenAddress, serveMetrics } from './metrics.js';
import { HeapTrimmer } from './heaptrim.js';
import { PprofDictionary, buildAgentProfile } from './pprof.js';
import { type PeriodData, Profiler, type ProfilerOptions } from './profiler.js';
import type { SeriesLabel } from './proto.js';
import { type Backend, ParcaBackend, PyroscopeBackend } from './push.js';
import { SendQueue } from './queue.js';

const USAGE = `usage: bpfscope agent (--pyroscope URL | --parca URL)... [options]

Continuous CPU profiling: samples every CPU, and every period pushes one pprof profile
(labels: comm, pid, cgroup, container_id, build_id) to Pyroscope and/or Parca.
With --offcpu, a second profile per period: the time threads spent off the CPU, by stack.

options:
  --pyroscope URL          push to Pyroscope (Connect /push.v1.PusherService/Push, /ingest fallback)
  --parca URL              push to Parca (gRPC WriteRaw; http:// is cleartext HTTP/2)
  --app NAME               service_name label (default: the host name)
  --label NAME=VALUE       extra series label (repeatable)
  --tenant ID              X-Scope-OrgID header / Parca tenant
  -F, --hz N               samples per second per CPU, 19-99 (default 49)
  --period DURATION        profile length: 10s, 1m, 1500ms; at least 1s (default 15s)
  -p, --pid PID[,PID...]   profile these processes only (default: every process)
  --offcpu                 also push off-CPU time per stack (series __name__="off_cpu")
  --max-stacks N           distinct stacks x processes per period (default 10240)
  --stack-storage-size N   distinct stacks kept per stack map (default 16384)
  --queue-size N           profiles held per backend while it is down, oldest dropped (default 20)
  --queue-bytes N          bytes held per backend (default 33554432)
  --queue-dir DIR          keep the queues on disk in DIR too: a restarted agent sends what was left
  --timeout DURATION       one push's timeout (default 10s)
  --retry-max DURATION     longest wait between retries (default 8s)
  --metrics-address H:P    serve the agent's metrics on http://H:P/metrics (default 127.0.0.1:9436)
  --no-metrics             do not serve metrics
  -h, --help               this help
`;

class UsageError extends Error {}

/** `15s`, `1m`, `1500ms`, `2h` (or plain seconds) in ms. */
export function parseDuration(s: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(s.trim());
  if (!m) throw new UsageError(`${flag} must be a duration such as 15s, 1m or 1500ms, not ${JSON.stringify(s)}`);
  const unit = { ms: 1, s: 1000, m: 60000, h: 3600000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  return Math.round(Number(m[1]) * unit);
}

function intArg(s: string | undefined, flag: string, min: number, max: number, dflt: number): number {
  if (s === undefined) return dflt;
  const n = Number(s);
  if (!/^\d+$/.test(s) || n < min || n > max)
    throw new UsageError(`${flag} must be an integer from ${min} to ${max}, not ${JSON.stringify(s)}`);
  return n;
}

function checkUrl(u: string, flag: string): string {
  let url: URL;
  try {
    url = new URL(u);
  } catch {
    throw new UsageError(`${flag} needs an http:// or https:// URL, not ${JSON.stringify(u)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`${flag} needs an http:// or https:// URL, not ${JSON.stringify(u)}`);
  }
  return u;
}

function nonEmpty(s: string, flag: string): string {
  if (s === '') throw new UsageError(`${flag} needs a directory`);
  return s;
}

/** A label name as Prometheus/Pyroscope accept it. */
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export interface AgentConfig {
  backends: Backend[];
  app: string;
  labels: SeriesLabel[];
  hz: number;
  periodMs: number;
  pids?: number[];
  offcpu: boolean;
  maxStacks: number;
  stackStorage: number;
  queueSize: number;
  queueBytes: number;
  queueDir?: string;
  timeoutMs: number;
  retryMaxMs: number;
  metrics: { host: string; port: number } | null;
}

/** The agent's configuration from its arguments. @throws UsageError (one sentence) */
export function parseAgentArgs(argv: string[]): AgentConfig | 'help' {
  let v;
  try {
    v = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        pyroscope: { type: 'string', multiple: true },
        parca: { type: 'string', multiple: true },
        app: { type: 'string' },
        label: { type: 'string', multiple: true },
        tenant: { type: 'string' },
        hz: { type: 'string', short: 'F' },
        period: { type: 'string' },
        pid: { type: 'string', short: 'p' },
        offcpu: { type: 'boolean' },
        'max-stacks': { type: 'string' },
        'stack-storage-size': { type: 'string' },
        'queue-size': { type: 'string' },
        'queue-bytes': { type: 'string' },
        'queue-dir': { type: 'string' },
        timeout: { type: 'string' },
        'retry-max': { type: 'string' },
        'metrics-address': { type: 'string' },
        'no-metrics': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (e) {
    throw new UsageError((e as Error).message.split('\n')[0]!);
  }
  if (v.help) return 'help';
  const tenant = v.tenant ?? '';
  const backends: Backend[] = [
    ...(v.pyroscope ?? []).map((u) => new PyroscopeBackend(checkUrl(u, '--pyroscope'), tenant)),
    ...(v.parca ?? []).map((u) => new ParcaBackend(checkUrl(u, '--parca'), tenant)),
  ];
  if (backends.length === 0) throw new UsageError('give a backend: --pyroscope URL or --parca URL');
  const hz = intArg(v.hz, '--hz', 19, 99, 49);
  const periodMs = parseDuration(v.period ?? '15s', '--period');
  if (periodMs < 1000 || periodMs % 1 !== 0) throw new UsageError('--period must be at least 1s');
  const labels: SeriesLabel[] = [];
  for (const l of v.label ?? []) {
    const eq = l.indexOf('=');
    const name = eq > 0 ? l.slice(0, eq) : '';
    if (!LABEL_NAME.test(name) || name.startsWith('__')) {
      throw new UsageError(
        `--label must be NAME=VALUE with a label name ([a-zA-Z_][a-zA-Z0-9_]*), not ${JSON.stringify(l)}`,
      );
    }
    labels.push({ name, value: l.slice(eq + 1) });
  }
  let pids: number[] | undefined;
  if (v.pid !== undefined) {
    pids = v.pid.split(',').map((p) => intArg(p, '--pid', 1, 2 ** 31 - 1, 0));
  }
  let metrics: AgentConfig['metrics'] = null;
  if (!v['no-metrics']) {
    try {
      metrics = parseListenAddress(v['metrics-address'] ?? '127.0.0.1:9436');
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
  }
  return {
    backends,
    app: v.app ?? hostname(),
    labels,
    hz,
    periodMs,
    ...(pids ? { pids } : {}),
    offcpu: v.offcpu === true,
    maxStacks: intArg(v['max-stacks'], '--max-stacks', 16, 1 << 20, 10240),
    stackStorage: intArg(v['stack-storage-size'], '--stack-storage-size', 16, 1 << 20, 16384),
    queueSize: intArg(v['queue-size'], '--queue-size', 1, 100000, 20),
    queueBytes: intArg(v['queue-bytes'], '--queue-bytes', 1024, 2 ** 40, 32 << 20),
    ...(v['queue-dir'] !== undefined ? { queueDir: nonEmpty(v['queue-dir'], '--queue-dir') } : {}),
    timeoutMs: parseDuration(v.timeout ?? '10s', '--timeout'),
    retryMaxMs: parseDuration(v['retry-max'] ?? '8s', '--retry-max'),
    metrics,
  };
}

/** State the metrics are rendered from. */
interface Counters {
  periods: number;
  /** Profiles made (one per period, two with --offcpu). */
  profiles: number;
  /** Off-CPU nanoseconds measured. */
  offcpuNs: number;
  samples: number;
  mapFull: number;
  processes: number;
  lastReadMs: number;
  /** When to give freed C heap pages back to the kernel (heaptrim.ts): after start and after each period. */
  trimmer: HeapTrimmer;
  /** The pprof dictionaries kept across periods, by profile (`cpu`, `offcpu`). */
  dictionaries: Record<string, PprofDictionary>;
}

function agentMetrics(c: Counters, queues: readonly SendQueue[], profiler: Profiler, started: number): Metric[] {
  const per = (f: (q: SendQueue) => number, extra: Record<string, string> = {}) =>
    queues.map((q) => ({ labels: { backend: q.backend.name, ...extra }, value: f(q) }));
  const mem = process.memoryUsage();
  const cpu = process.cpuUsage();
  const st = profiler.resolverStats;
  return [
    {
      name: 'bpfscope_agent_periods_total',
      help: 'Profiling periods completed.',
      type: 'counter',
      samples: [{ value: c.periods }],
    },
    {
      name: 'bpfscope_agent_profiles_total',
      help: 'Profiles made and queued for each backend (one per period; two with --offcpu).',
      type: 'counter',
      samples: [{ value: c.profiles }],
    },
    {
      name: 'bpfscope_agent_offcpu_seconds_total',
      help: 'Off-CPU time measured (--offcpu), seconds.',
      type: 'counter',
      samples: [{ value: c.offcpuNs / 1e9 }],
    },
    {
      name: 'bpfscope_agent_samples_total',
      help: 'CPU samples collected.',
      type: 'counter',
      samples: [{ value: c.samples }],
    },
    {
      name: 'bpfscope_agent_stack_map_full_total',
      help: 'Periods whose stack count map was full (new stacks of the period were not counted; raise --max-stacks).',
      type: 'counter',
      samples: [{ value: c.mapFull }],
    },
    {
      name: 'bpfscope_agent_heap_trims_total',
      help: 'Times freed C heap (malloc) pages were given back to the kernel with malloc_trim(3).',
      type: 'counter',
      samples: [{ value: c.trimmer.trims }],
    },
    {
      name: 'bpfscope_agent_late_periods_total',
      help: 'Periods read more than a period late (merged into the next profile).',
      type: 'counter',
      samples: [{ value: profiler.latePeriods }],
    },
    {
      name: 'bpfscope_agent_pprof_dictionary_entries',
      help: 'Entries of the pprof dictionary kept across periods (strings, locations), by profile.',
      type: 'gauge',
      samples: Object.entries(c.dictionaries).flatMap(([profile, d]) => [
        { labels: { profile, table: 'strings' }, value: d.strings.strings.length },
        { labels: { profile, table: 'locations' }, value: d.locations.length },
      ]),
    },
    {
      name: 'bpfscope_agent_pprof_dictionary_resets_total',
      help: 'Times a pprof dictionary passed its bound and was started again, by profile.',
      type: 'counter',
      samples: Object.entries(c.dictionaries).map(([profile, d]) => ({ labels: { profile }, value: d.resets })),
    },
    {
      name: 'bpfscope_agent_processes',
      help: 'Processes sampled in the last period.',
      type: 'gauge',
      samples: [{ value: c.processes }],
    },
    {
      name: 'bpfscope_agent_period_read_seconds',
      help: 'Wall time the last period took to read, symbolize and encode (in slices, other work running between them).',
      type: 'gauge',
      samples: [{ value: c.lastReadMs / 1000 }],
    },
    {
      name: 'bpfscope_agent_symbol_cache_hits_total',
      help: 'Symbol lookups answered from the cache.',
      type: 'counter',
      samples: [{ value: st.hits }],
    },
    {
      name: 'bpfscope_agent_symbol_cache_misses_total',
      help: 'Symbol lookups that were resolved.',
      type: 'counter',
      samples: [{ value: st.misses }],
    },
    {
      name: 'bpfscope_agent_maps_reads_total',
      help: 'Reads of /proc/PID/maps (a process when first seen, after an exec, at most once a period on an address outside its mappings).',
      type: 'counter',
      samples: [{ value: st.mapsReads }],
    },
    {
      name: 'bpfscope_agent_symbol_tables_loaded_total',
      help: 'ELF symbol tables loaded (once per file while a sampled process uses it).',
      type: 'counter',
      samples: [{ value: st.elfLoads }],
    },
    {
      name: 'bpfscope_agent_demangle_batches_total',
      help: 'Short-lived processes run to demangle C++/Rust names never seen before (at most one a period).',
      type: 'counter',
      samples: [{ value: profiler.demangler?.batches ?? 0 }],
    },
    {
      name: 'bpfscope_agent_demangle_failures_total',
      help: 'Demangling processes that failed: their names stayed mangled.',
      type: 'counter',
      samples: [{ value: profiler.demangler?.failures ?? 0 }],
    },
    {
      name: 'bpfscope_agent_process_changes_total',
      help: 'Known processes that exec()ed or whose pid was reused: what was known about them was dropped.',
      type: 'counter',
      samples: [{ value: profiler.execs }],
    },
    {
      name: 'bpfscope_agent_profiles_sent_total',
      help: 'Profiles the backend accepted.',
      type: 'counter',
      samples: per((q) => q.sent),
    },
    {
      name: 'bpfscope_agent_sent_bytes_total',
      help: 'Bytes of pprof the backend accepted.',
      type: 'counter',
      samples: per((q) => q.sentBytes),
    },
    {
      name: 'bpfscope_agent_push_failures_total',
      help: 'Failed push attempts (each retry counts).',
      type: 'counter',
      samples: per((q) => q.failures),
    },
    {
      name: 'bpfscope_agent_profiles_dropped_total',
      help: 'Profiles never sent: queue_full (oldest dropped while the backend was down), rejected (refused by the backend).',
      type: 'counter',
      samples: [...per((q) => q.dropped, { reason: 'queue_full' }), ...per((q) => q.rejected, { reason: 'rejected' })],
    },
    {
      name: 'bpfscope_agent_queue_loaded_profiles',
      help: 'Profiles found in the on-disk queue at start (left by an earlier run).',
      type: 'gauge',
      samples: per((q) => q.loaded),
    },
    {
      name: 'bpfscope_agent_queue_profiles',
      help: 'Profiles waiting to be sent.',
      type: 'gauge',
      samples: per((q) => q.length),
    },
    {
      name: 'bpfscope_agent_queue_bytes',
      help: 'Bytes waiting to be sent.',
      type: 'gauge',
      samples: per((q) => q.bytes),
    },
    {
      name: 'process_cpu_seconds_total',
      help: 'Total user and system CPU time spent in seconds.',
      type: 'counter',
      samples: [{ value: (cpu.user + cpu.system) / 1e6 }],
    },
    {
      name: 'process_resident_memory_bytes',
      help: 'Resident memory size in bytes.',
      type: 'gauge',
      samples: [{ value: mem.rss }],
    },
    {
      name: 'process_start_time_seconds',
      help: 'Start time of the process since unix epoch in seconds.',
      type: 'gauge',
      samples: [{ value: started }],
    },
  ];
}

function log(msg: string): void {
  process.stderr.write(`bpfscope agent: ${msg}\n`);
}

/** Run the agent until SIGINT/SIGTERM. Resolves with the exit status. */
export async function runAgent(cfg: AgentConfig, run: AgentRunOptions = {}): Promise<number> {
  const started = Date.now() / 1000;
  const failingSince = new Map<string, boolean>();
  const queues = cfg.backends.map((b) => {
    try {
      return new SendQueue(b, {
        maxItems: cfg.queueSize,
        maxBytes: cfg.queueBytes,
        timeoutMs: cfg.timeoutMs,
        minBackoffMs: Math.min(500, cfg.retryMaxMs),
        maxBackoffMs: cfg.retryMaxMs,
        onError: (m, name) => {
          if (!failingSince.get(name)) log(`${name}: ${m} (retrying; later failures are counted in /metrics)`);
          failingSince.set(name, true);
        },
        ...(cfg.queueDir !== undefined ? { dir: cfg.queueDir } : {}),
      });
    } catch (e) {
      throw new BpfscopeError(`cannot use the queue directory ${cfg.queueDir}: ${(e as Error).message}`);
    }
  });
  for (const q of queues) {
    if (q.loaded > 0) log(`${q.backend.name}: ${q.loaded} profiles queued on disk by an earlier run, sending them`);
    q.start();
  }
  // strings, functions, locations and mappings kept across periods (bounded), one dictionary per profile kind
  const cpuDictionary = new PprofDictionary();
  const offDictionary = new PprofDictionary();
  const counters: Counters = {
    dictionaries: cfg.offcpu ? { cpu: cpuDictionary, offcpu: offDictionary } : { cpu: cpuDictionary },
    periods: 0,
    profiles: 0,
    offcpuNs: 0,
    samples: 0,
    mapFull: 0,
    processes: 0,
    lastReadMs: 0,
    trimmer: new HeapTrimmer(),
  };
  const series: SeriesLabel[] = [
    { name: '__name__', value: 'process_cpu' },
    { name: 'service_name', value: cfg.app },
    ...cfg.labels,
  ];
  const offSeries: SeriesLabel[] = [{ name: '__name__', value: 'off_cpu' }, ...series.slice(1)];
  const periodNs = Math.round(1e9 / cfg.hz);
  const onPeriod = async (d: PeriodData): Promise<void> => {
    const t0 = performance.now();
    // build-ids of mapped files, once per process and file in a period (each costs a stat, and an ELF read once)
    const ids = new Map<string, string>();
    const buildIdOf = (file: string, s: { labels: Readonly<Record<string, string>> }): string => {
      const k = `${s.labels.pid}\0${file}`;
      let id = ids.get(k);
      if (id === undefined) ids.set(k, (id = profiler?.procs.mappedBuildId(Number(s.labels.pid), file) ?? ''));
      return id;
    };
    const pprof = await buildAgentProfile(d.samples, {
      periodNs,
      timeNanos: d.startNs,
      durationNanos: d.durationNs,
      buildIdOf,
      dictionary: cpuDictionary,
    });
    const offPprof = d.offcpu
      ? await buildAgentProfile(d.offcpu, {
          kind: 'offcpu',
          periodNs,
          timeNanos: d.startNs,
          durationNanos: d.durationNs,
          buildIdOf,
          dictionary: offDictionary,
        })
      : undefined;
    counters.periods++;
    counters.profiles += offPprof ? 2 : 1;
    counters.offcpuNs += d.offcpuTotal ?? 0;
    counters.samples += d.total;
    if (d.mapFull) counters.mapFull++;
    counters.processes = d.processes;
    counters.lastReadMs = d.readMs + (performance.now() - t0);
    for (const q of queues) {
      if (q.failing === 0 && failingSince.get(q.backend.name)) {
        log(`${q.backend.name}: pushing again`);
        failingSince.set(q.backend.name, false);
      }
      q.add({ pprof, labels: series, startNs: d.startNs, durationNs: d.durationNs, hz: cfg.hz });
      if (offPprof)
        q.add({ pprof: offPprof, labels: offSeries, startNs: d.startNs, durationNs: d.durationNs, hz: cfg.hz });
    }
    // the period's symbol tables, maps texts and batch reads are freed now (heaptrim.ts)
    counters.trimmer.check();
  };
  let profiler: Profiler | undefined;
  let demangleFailures = 0;
  profiler = await Profiler.start(
    {
      hz: cfg.hz,
      periodMs: cfg.periodMs,
      maxStacks: cfg.maxStacks,
      stackStorage: cfg.stackStorage,
      offcpu: cfg.offcpu,
      ...(cfg.pids ? { pids: cfg.pids } : {}),
      ...(run.compile ? { compile: run.compile } : {}),
      // the first failure is logged (names stay mangled); later ones only counted (bpfscope_agent_demangle_*)
      ...(run.demangle
        ? { demangle: run.demangle, onDemangleError: (e: Error) => void (demangleFailures++ === 0 && log(e.message)) }
        : {}),
    },
    onPeriod,
  );
  // the compiler's and the loader's allocations at start are freed now
  counters.trimmer.check();
  let server: Server | undefined;
  try {
    if (cfg.metrics) {
      const p = profiler;
      server = await serveMetrics(cfg.metrics.host, cfg.metrics.port, () => agentMetrics(counters, queues, p, started));
      const a = server.address();
      const where =
        a && typeof a === 'object' ? `${a.address.includes(':') ? `[${a.address}]` : a.address}:${a.port}` : '';
      log(`metrics on http://${where}/metrics`);
    }
  } catch (e) {
    await profiler.stop();
    throw new BpfscopeError(
      `cannot serve metrics on ${cfg.metrics!.host}:${cfg.metrics!.port}: ${(e as Error).message}`,
    );
  }
  log(
    `sampling every CPU at ${cfg.hz} Hz, one profile every ${cfg.periodMs / 1000} s to ${cfg.backends.map((b) => b.name).join(', ')}`,
  );
  await new Promise<void>((resolve) => {
    const done = (): void => {
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
      resolve();
    };
    process.on('SIGINT', done);
    process.on('SIGTERM', done);
    void profiler.wait().then(done);
  });
  try {
    await profiler.stop();
  } finally {
    await Promise.all(queues.map((q) => q.drain(5000)));
    server?.close();
  }
  return 0;
}

/** How the agent runs, besides its arguments. */
export interface AgentRunOptions {
  /** Compiles the profiler's program elsewhere (ProfilerOptions.compile); default: in this process. */
  compile?: ProfilerOptions['compile'];
  /** Demangles C++/Rust names elsewhere (ProfilerOptions.demangle); default: in this process. */
  demangle?: ProfilerOptions['demangle'];
}

/** `bpfscope agent ARGS`; resolves with the exit status. */
export async function main(argv: string[], run: AgentRunOptions = {}): Promise<number> {
  let cfg: AgentConfig | 'help';
  try {
    cfg = parseAgentArgs(argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`bpfscope agent: ${e.message}\n${USAGE.split('\n')[0]}\n`);
    return 2;
  }
  if (cfg === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  return runAgent(cfg, run);
}
