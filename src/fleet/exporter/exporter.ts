/**
 * The exporter: runs each config's program and turns its maps into metric families at every scrape, plus
 * ebpf_exporter's built-in metrics (`exporter/exporter.go`): `ebpf_exporter_enabled_configs`,
 * `ebpf_exporter_ebpf_program_info`, `_attached`, `_run_time_seconds`, `_run_count_total` (the last two only while
 * the kernel counts them: `kernel.bpf_stats_enabled` = 1, or `--bpf-stats`) and `ebpf_exporter_decoder_errors_total`,
 * and the cardinality guard's `ebpf_exporter_dropped_series` / `ebpf_exporter_evicted_series_total`.
 */
import { readFileSync } from 'node:fs';
import { collectDefaultMetrics, Counter, Gauge, Registry, type RegistryContentType } from 'prom-client';
import type { Hist, LinearHist } from '../../api/index.js';
import { objGetFdById, objGetInfoByFd, objGetNextId, progInfo } from '../../kernel/bpf.js';
import { close as closeFd } from '../../kernel/ffi.js';
import type { PreparedProgram } from './check.js';
import type { ExporterConfig, MetricConfig } from './config.js';
import { decodeLabels, DecodeError, SKIP } from './decoders/index.js';
import { expose, type Family, formatFloat, type Sample } from './exposition.js';
import { cumulative } from './histogram.js';
import type { MapEntry, RunningProgram } from './program.js';

export const PREFIX = 'ebpf_exporter_';

/** A config with its running program. */
export interface LoadedConfig {
  config: ExporterConfig;
  prepared: PreparedProgram;
  program: RunningProgram;
}

/** Where messages go (stderr in the CLI). */
export type Logger = (line: string) => void;

function statsEnabled(): boolean {
  try {
    return readFileSync('/proc/sys/kernel/bpf_stats_enabled', 'utf8').trim() === '1';
  } catch {
    return false;
  }
}

interface ProgramStat {
  config: string;
  id: number;
  name: string;
  tag: string;
  runTimeNs: bigint;
  runCnt: bigint;
  /** A BPF link runs the program (see {@link linkedPrograms}). */
  attached: boolean;
}

/** `struct bpf_link_info` up to `prog_id` (uapi bpf.h: type u32, id u32, prog_id u32). */
const LINK_INFO_HEAD = 16;

/**
 * Ids of the programs a BPF link attaches now: every link on the host (BPF_LINK_GET_NEXT_ID), its `prog_id` from
 * BPF_OBJ_GET_INFO_BY_FD. bpfscope attaches every probe with a link (BPF_LINK_CREATE: perf events, kprobe_multi,
 * uprobe_multi, raw tracepoints, tracing), so a program without one is not attached: one whose probe failed to
 * attach or was detached, or a BEGIN/END program (run once by the runtime, never attached). On kernels older than
 * 5.15, where perf-event attachments fall back to an ioctl without a link, attached programs read 0.
 */
export function linkedPrograms(): Set<number> {
  const out = new Set<number>();
  const head = Buffer.alloc(LINK_INFO_HEAD);
  for (let id = objGetNextId('link', 0); id !== undefined; id = objGetNextId('link', id)) {
    const fd = objGetFdById('link', id);
    if (fd === undefined) continue; // gone meanwhile
    try {
      head.fill(0);
      objGetInfoByFd(fd, head);
      out.add(head.readUInt32LE(8));
    } catch {
      /* detached meanwhile */
    } finally {
      closeFd(fd);
    }
  }
  return out;
}

export class Exporter {
  readonly registry = new Registry<RegistryContentType>();
  private readonly decoderErrors: Counter<'config'>;
  /** Label sets of the last scrape per metric (for evictions), and evictions counted. */
  private readonly lastKeys = new Map<MetricConfig, Set<string>>();
  private readonly evicted: Counter<'config' | 'metric'>;
  private readonly dropped: Gauge<'config' | 'metric'>;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    readonly loaded: readonly LoadedConfig[],
    private readonly log: Logger,
    private readonly statsHeld = false,
  ) {
    const r = this.registry;
    collectDefaultMetrics({ register: r });
    // gauges whose names end in _total (promtool check metrics rejects them; ebpf_exporter has none of these)
    for (const n of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) {
      r.removeSingleMetric(n);
    }
    const enabled = new Gauge({
      name: `${PREFIX}enabled_configs`,
      help: 'The set of enabled configs',
      labelNames: ['name'],
      registers: [r],
    });
    for (const l of loaded) enabled.set({ name: l.config.name }, 1);
    this.decoderErrors = new Counter({
      name: `${PREFIX}decoder_errors_total`,
      help: 'How many times has decoders encountered errors',
      labelNames: ['config'],
      registers: [r],
    });
    for (const l of loaded) this.decoderErrors.inc({ config: l.config.name }, 0);
    this.evicted = new Counter({
      name: `${PREFIX}evicted_series_total`,
      help: 'Label sets that left a max_series (LRU) map between two scrapes (at least this many)',
      labelNames: ['config', 'metric'],
      registers: [r],
    });
    this.dropped = new Gauge({
      name: `${PREFIX}dropped_series`,
      help: 'Label sets not exported at the last scrape because the metric had max_series of them already',
      labelNames: ['config', 'metric'],
      registers: [r],
    });
    for (const l of loaded) {
      for (const m of l.config.metrics) {
        if (m.maxSeries === undefined) continue;
        this.dropped.set({ config: l.config.name, metric: m.name }, 0);
        if (m.kind === 'counter') this.evicted.inc({ config: l.config.name, metric: m.name }, 0);
      }
    }
    let stats: ProgramStat[] = [];
    const readStats = (): ProgramStat[] => this.programStats();
    const counting = (): boolean => this.statsHeld || statsEnabled();
    new Gauge({
      name: `${PREFIX}ebpf_program_info`,
      help: 'Info about ebpf programs',
      labelNames: ['config', 'program', 'tag', 'id'],
      registers: [r],
      collect() {
        stats = readStats();
        this.reset();
        for (const s of stats) this.set({ config: s.config, program: s.name, tag: s.tag, id: String(s.id) }, 1);
      },
    });
    new Gauge({
      name: `${PREFIX}ebpf_program_attached`,
      help: 'Whether a program is attached (a BPF link runs it)',
      labelNames: ['id'],
      registers: [r],
      collect() {
        this.reset();
        for (const s of stats) this.set({ id: String(s.id) }, s.attached ? 1 : 0);
      },
    });
    new Counter({
      name: `${PREFIX}ebpf_program_run_time_seconds`,
      help: 'How long has the program been executing',
      labelNames: ['id'],
      registers: [r],
      collect() {
        this.reset();
        if (counting()) for (const s of stats) this.inc({ id: String(s.id) }, Number(s.runTimeNs) / 1e9);
      },
    });
    new Counter({
      name: `${PREFIX}ebpf_program_run_count_total`,
      help: 'How many times has the program been executed',
      labelNames: ['id'],
      registers: [r],
      collect() {
        this.reset();
        if (counting()) for (const s of stats) this.inc({ id: String(s.id) }, Number(s.runCnt));
      },
    });
    this.rememberNames();
  }

  private programStats(): ProgramStat[] {
    const out: ProgramStat[] = [];
    const linked = linkedPrograms();
    for (const l of this.loaded) {
      for (const id of l.program.programIds()) {
        const fd = objGetFdById('prog', id);
        if (fd === undefined) continue;
        try {
          const info = progInfo(fd);
          out.push({
            config: l.config.name,
            id,
            name: info.name,
            tag: info.tag,
            runTimeNs: info.runTimeNs,
            runCnt: info.runCnt,
            attached: linked.has(id),
          });
        } finally {
          closeFd(fd);
        }
      }
    }
    return out;
  }

  /** Each registered metric's name as registered. */
  private readonly names = new Map<object, string>();

  private rememberNames(): void {
    for (const m of this.registry.getMetricsAsArray()) this.names.set(m, (m as unknown as { name: string }).name);
  }

  /** The config metrics now. */
  async families(): Promise<Family[]> {
    const out: Family[] = [];
    for (const l of this.loaded) {
      for (const m of l.config.metrics) {
        const plan = l.prepared.maps.get(m)!;
        let entries: MapEntry[];
        try {
          entries = await l.program.readMap(m.map, plan.keyTypes.length);
        } catch (e) {
          this.decoderErrors.inc({ config: l.config.name });
          this.log(`error reading map @${m.map} of config "${l.config.name}": ${(e as Error).message}`);
          continue;
        }
        out.push(this.family(l.config, m, entries));
      }
    }
    return out;
  }

  private family(cfg: ExporterConfig, m: MetricConfig, entries: MapEntry[]): Family {
    const fam: Family = { name: PREFIX + m.name, help: m.help, type: m.kind, samples: [] };
    // decode, then sum label sets several keys decode to (a recycled id, a static_map folding values), as
    // ebpf_exporter's aggregateMapValues
    const sets = new Map<string, { labels: string[]; entries: MapEntry[] }>();
    for (const e of entries) {
      let labels: string[] | typeof SKIP;
      try {
        labels = decodeLabels(m.labels, e.elements);
      } catch (err) {
        if (!(err instanceof DecodeError)) throw err;
        this.decoderErrors.inc({ config: cfg.name });
        continue;
      }
      if (labels === SKIP) continue;
      const key = JSON.stringify(labels);
      const s = sets.get(key);
      if (s) s.entries.push(e);
      else sets.set(key, { labels, entries: [e] });
    }
    // cardinality guard: the label sets seen at the last scrape are kept first, then new ones in key order
    let kept = [...sets.entries()];
    if (m.maxSeries !== undefined) {
      const last = this.lastKeys.get(m) ?? new Set();
      if (m.kind === 'counter') {
        let gone = 0;
        for (const k of last) if (!sets.has(k)) gone++;
        if (gone) this.evicted.inc({ config: cfg.name, metric: m.name }, gone);
      }
      kept.sort(([a], [b]) => Number(last.has(b)) - Number(last.has(a)));
      this.dropped.set({ config: cfg.name, metric: m.name }, Math.max(0, kept.length - m.maxSeries));
      kept = kept.slice(0, m.maxSeries);
      this.lastKeys.set(m, new Set(kept.map(([k]) => k)));
    }
    for (const [, s] of kept) {
      const labels = m.labels.map((l, i) => [l.name, s.labels[i]!] as const);
      if (m.kind === 'counter') {
        let sum = 0n;
        for (const e of s.entries) sum += typeof e.value === 'bigint' ? e.value : BigInt(e.value as number);
        fam.samples.push({ suffix: '', labels, value: sum.toString() });
      } else {
        this.histogramSamples(cfg, m, labels, s.entries, fam.samples);
      }
    }
    return fam;
  }

  private histogramSamples(
    cfg: ExporterConfig,
    m: MetricConfig,
    labels: readonly (readonly [string, string])[],
    entries: MapEntry[],
    out: Sample[],
  ): void {
    let buckets: { le: number; count: bigint }[] | undefined;
    let count = 0n;
    for (const e of entries) {
      let h;
      try {
        h = cumulative(m, e.value as Hist | LinearHist);
      } catch (err) {
        this.decoderErrors.inc({ config: cfg.name });
        this.log(`histogram ${m.name} of config "${cfg.name}": ${(err as Error).message}`);
        return;
      }
      count += h.count;
      if (!buckets) buckets = h.buckets;
      else buckets = buckets.map((b, i) => ({ le: b.le, count: b.count + h.buckets[i]!.count }));
    }
    for (const b of buckets ?? []) {
      out.push({ suffix: '_bucket', labels: [...labels, ['le', formatFloat(b.le)]], value: b.count.toString() });
    }
    out.push({ suffix: '_bucket', labels: [...labels, ['le', '+Inf']], value: count.toString() });
    out.push({ suffix: '_count', labels, value: count.toString() });
  }

  /** The whole exposition in the text format or OpenMetrics; one scrape at a time. */
  scrape(openMetrics: boolean): Promise<{ body: string; contentType: string }> {
    const run = this.chain.then(async () => {
      const families = await this.families();
      this.registry.setContentType(openMetrics ? Registry.OPENMETRICS_CONTENT_TYPE : Registry.PROMETHEUS_CONTENT_TYPE);
      // prom-client's OpenMetrics output renames counters in place (drops `_total` from metric.name): put the
      // names back so the next text-format scrape has them
      for (const [metric, name] of this.names) (metric as { name: string }).name = name;
      let builtin = await this.registry.metrics();
      if (openMetrics) builtin = builtin.replace(/# EOF\n?$/, '');
      const mine = expose(families, openMetrics);
      const body =
        builtin + (builtin.endsWith('\n') || builtin === '' ? '' : '\n') + mine + (openMetrics ? '# EOF\n' : '');
      return { body, contentType: this.registry.contentType };
    });
    this.chain = run.catch(() => {});
    return run;
  }

  /** `/maps` (with --debug): every metric's map entries, decoded labels and values, as text. */
  async mapsText(): Promise<string> {
    let out = '';
    for (const l of this.loaded) {
      out += `## Config: ${l.config.name}\n\n`;
      for (const m of l.config.metrics) {
        const plan = l.prepared.maps.get(m)!;
        out += `### Map: @${m.map} (metric ${m.name})\n\n`;
        const entries = await l.program.readMap(m.map, plan.keyTypes.length);
        for (const e of entries) {
          let labels: string;
          try {
            const d = decodeLabels(m.labels, e.elements);
            labels = d === SKIP ? '(skipped)' : JSON.stringify(d);
          } catch (err) {
            labels = `(decoder error: ${(err as Error).message})`;
          }
          out += `${stringify(e.elements)} (labels: ${labels}) -> ${stringify(e.value)}\n`;
        }
        out += '\n';
      }
    }
    return out;
  }
}

function stringify(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    typeof x === 'bigint' ? x.toString() : x instanceof Uint8Array ? Buffer.from(x).toString('hex') : x,
  );
}
