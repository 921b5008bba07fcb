/**
 * Exporter config files: `DIR/NAME.yaml` in ebpf_exporter's v2 schema (see schema.ts), whose program is bpftrace
 * source — the `program:` key, or `DIR/NAME.bt` beside the YAML — instead of ebpf_exporter's `NAME.bpf.o`.
 *
 * Loading parses the YAML with the `yaml` package (it keeps every node's source range), validates it against
 * {@link CONFIG_SCHEMA} with ajv, then checks what a schema cannot (bucket keys per bucket type, regexps, duplicate
 * names). Every error is a {@link ConfigError} naming the file and line (`DIR/NAME.yaml:12: ...`). Whether the
 * program compiles and has the maps the metrics read is checked by check.ts.
 */
import { lstatSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';
import { isMap, isScalar, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import { BpfscopeError } from '../../errors.js';
import {
  type BucketType,
  CONFIG_SCHEMA,
  DECODER_NAMES,
  type DecoderName,
  type RawConfig,
  type RawDecoder,
  type RawMetric,
  UNSUPPORTED_KEYS,
} from './schema.js';

/** A config error: `file:line: message` (line omitted when unknown). */
export class ConfigError extends BpfscopeError {
  constructor(
    readonly file: string,
    readonly line: number | undefined,
    readonly detail: string,
    opts: { hint?: string } = {},
  ) {
    super(`${file}${line !== undefined ? `:${line}` : ''}: ${detail}`, opts);
    this.name = 'ConfigError';
  }
}

/** One decoder of a label, as configured. */
export interface DecoderConfig {
  name: DecoderName;
  staticMap?: ReadonlyMap<string, string>;
  regexps?: readonly RegExp[];
  allowUnknown: boolean;
  line: number;
}

export interface LabelConfig {
  name: string;
  /** ebpf_exporter's byte size of the key element; when given, check.ts compares it with the map's key. */
  size?: number;
  decoders: readonly DecoderConfig[];
  line: number;
}

export interface MetricConfig {
  kind: 'counter' | 'histogram';
  /** Metric name without the `ebpf_exporter_` prefix (as in the YAML). */
  name: string;
  help: string;
  /** The map it reads, without `@` (the `map:` key, else the metric's name). */
  map: string;
  labels: readonly LabelConfig[];
  /**
   * Histograms written in ebpf_exporter's style list the bucket as their last label (`name: bucket`, decoder
   * `uint`); bpfscope reads buckets from the hist()/lhist() value, so that label is dropped (and noted here).
   */
  bucketLabel?: string;
  bucketType?: BucketType;
  bucketMin?: number;
  bucketMax?: number;
  bucketMultiplier: number;
  bucketKeys?: readonly number[];
  /** Cardinality guard: most label sets kept (kernel map size); see docs/fleet.md. */
  maxSeries?: number;
  line: number;
}

export interface ExporterConfig {
  /** The config's name (`--config.names` entry). */
  name: string;
  /** Path of the YAML file. */
  file: string;
  /** The bpftrace program, and where it comes from: the `.bt` file, or the YAML file from `lineOffset` on. */
  program: { text: string; file: string; lineOffset: number };
  metrics: readonly MetricConfig[];
}

/** Line (1-based) of a node, or undefined. */
function lineOf(node: Node | null | undefined, lc: LineCounter): number | undefined {
  const range = node?.range;
  if (!range) return undefined;
  return lc.linePos(range[0]).line;
}

/** The deepest node along an ajv instance path (`/metrics/counters/0/labels/1`), and the path's pair at the end. */
function nodeAt(doc: Document, path: string): { node: Node | undefined; key?: Node } {
  const parts = path
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((p) => (/^\d+$/.test(p) ? Number(p) : p));
  let node: Node | undefined = doc.contents ?? undefined;
  let key: Node | undefined;
  for (const p of parts) {
    const col = node as unknown as { items?: unknown[] } | undefined;
    if (!col?.items) break;
    if (typeof p === 'number') {
      const item = col.items[p] as Node | undefined;
      if (!item) break;
      node = item;
      key = undefined;
    } else {
      if (!isMap(node)) break;
      const pair = node.items.find((it) => isScalar(it.key) && String(it.key.value) === p);
      if (!pair) break;
      key = pair.key as Node;
      node = (pair.value as Node | null) ?? key;
    }
  }
  return { node, ...(key ? { key } : {}) };
}

function keyNode(doc: Document, path: string, prop: string): Node | undefined {
  const { node } = nodeAt(doc, path);
  if (!isMap(node)) return undefined;
  const pair = node.items.find((it) => isScalar(it.key) && String(it.key.value) === prop);
  return (pair?.key as Node | undefined) ?? undefined;
}

/** One sentence for an ajv error. */
function describe(e: ErrorObject): { text: string; prop?: string; hint?: string } {
  const where = e.instancePath ? e.instancePath.split('/').slice(1).join('.') : 'the config';
  switch (e.keyword) {
    case 'additionalProperties': {
      const prop = String((e.params as { additionalProperty: string }).additionalProperty);
      const why = UNSUPPORTED_KEYS[prop];
      if (why) return { text: `"${prop}" is an ebpf_exporter key bpfscope does not support: ${why}`, prop };
      return { text: `unknown key "${prop}" in ${where}`, prop };
    }
    case 'required':
      return { text: `${where} lacks "${String((e.params as { missingProperty: string }).missingProperty)}"` };
    case 'enum': {
      const allowed = (e.params as { allowedValues: readonly string[] }).allowedValues;
      if (e.instancePath.endsWith('/name') && allowed === (DECODER_NAMES as readonly string[])) {
        return { text: `unknown decoder in ${where}`, hint: `decoders: ${allowed.join(' ')}` };
      }
      return { text: `${where} must be one of: ${allowed.join(', ')}` };
    }
    case 'type':
      return { text: `${where} must be ${String((e.params as { type: string }).type)}` };
    case 'pattern':
      return { text: `${where} is not a valid Prometheus name (${String((e.params as { pattern: string }).pattern)})` };
    default:
      return { text: `${where} ${e.message ?? 'is invalid'}` };
  }
}

let validator: ReturnType<Ajv['compile']> | undefined;

function validate(raw: unknown): ErrorObject[] {
  validator ??= new Ajv({ allErrors: false, strict: true, allowUnionTypes: true }).compile(CONFIG_SCHEMA);
  return validator(raw) ? [] : (validator.errors ?? []);
}

/** Parse and validate `text` (the YAML of config `name` at `file`); the program is read from `btFile` if needed. */
export function parseConfig(name: string, file: string, text: string, btFile?: string): ExporterConfig {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, uniqueKeys: true, prettyErrors: true });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const msg = e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
    throw new ConfigError(file, e.linePos?.[0]?.line, `bad YAML: ${msg}`);
  }
  const raw: unknown = doc.toJS();
  if (raw === null || raw === undefined) throw new ConfigError(file, undefined, 'the config is empty');
  const errors = validate(raw);
  if (errors.length > 0) {
    const e = errors[0]!;
    const d = describe(e);
    const at = d.prop ? keyNode(doc, e.instancePath, d.prop) : nodeAt(doc, e.instancePath).node;
    throw new ConfigError(file, lineOf(at, lc), d.text, d.hint ? { hint: d.hint } : {});
  }
  const cfg = raw as RawConfig;
  const lineAt = (path: string): number | undefined => lineOf(nodeAt(doc, path).node, lc);

  const metrics: MetricConfig[] = [];
  const seen = new Map<string, number>();
  const kinds = [
    ['counter', 'counters', cfg.metrics.counters ?? []],
    ['histogram', 'histograms', cfg.metrics.histograms ?? []],
  ] as const;
  for (const [kind, key, list] of kinds) {
    list.forEach((m: RawMetric, i) => {
      const path = `/metrics/${key}/${i}`;
      const line = lineAt(path) ?? 0;
      const fail = (msg: string, sub = '', hint?: string): never => {
        throw new ConfigError(file, lineAt(path + sub) ?? line, msg, hint ? { hint } : {});
      };
      if (seen.has(m.name)) fail(`metric "${m.name}" is defined twice (first at line ${seen.get(m.name)})`, '/name');
      seen.set(m.name, line);
      const labels = (m.labels ?? []).map((l, j) => ({
        name: l.name,
        ...(l.size !== undefined ? { size: l.size } : {}),
        decoders: l.decoders.map((d, k) => decoderConfig(d, `${path}/labels/${j}/decoders/${k}`, lineAt, fail)),
        line: lineAt(`${path}/labels/${j}`) ?? line,
      }));
      const names = new Set<string>();
      labels.forEach((l, j) => {
        if (names.has(l.name)) fail(`label "${l.name}" appears twice in metric "${m.name}"`, `/labels/${j}/name`);
        if (l.name.startsWith('__')) fail(`label names starting with "__" are reserved`, `/labels/${j}/name`);
        if (kind === 'histogram' && l.name === 'le') fail(`"le" is the bucket label of a histogram`, `/labels/${j}`);
        names.add(l.name);
      });
      const metric: MetricConfig = {
        kind,
        name: m.name,
        help: m.help,
        map: (m.map ?? `@${m.name}`).slice(1),
        labels,
        bucketMultiplier: m.bucket_multiplier ?? 1,
        ...(m.max_series !== undefined ? { maxSeries: m.max_series } : {}),
        line,
      };
      if (kind === 'histogram') {
        const t = m.bucket_type!;
        metric.bucketType = t;
        // ebpf_exporter histograms name the bucket as their last label (decoded with uint): accept and drop it
        const last = labels[labels.length - 1];
        if (last && last.name === 'bucket' && last.decoders.length === 1 && last.decoders[0]!.name === 'uint') {
          metric.bucketLabel = last.name;
          metric.labels = labels.slice(0, -1);
        }
        if (t === 'fixed') {
          if (!m.bucket_keys) fail('bucket_type fixed needs bucket_keys');
          const keys = m.bucket_keys!;
          for (let j = 1; j < keys.length; j++) {
            if (!(keys[j]! > keys[j - 1]!)) fail('bucket_keys must be increasing', `/bucket_keys/${j}`);
          }
          if (m.bucket_min !== undefined || m.bucket_max !== undefined) {
            fail('bucket_min/bucket_max do not apply to bucket_type fixed (its buckets are bucket_keys)');
          }
          metric.bucketKeys = keys;
        } else {
          if (m.bucket_keys) fail(`bucket_keys apply to bucket_type fixed only`, '/bucket_keys');
          if ((t === 'exp2' || t === 'exp2zero') && m.bucket_max === undefined)
            fail(`bucket_type ${t} needs bucket_max`);
          if (m.bucket_min !== undefined) metric.bucketMin = m.bucket_min;
          if (m.bucket_max !== undefined) metric.bucketMax = m.bucket_max;
          const min = m.bucket_min ?? 0;
          if ((t === 'exp2' || t === 'exp2zero') && (min < 0 || m.bucket_max! > 62)) {
            fail(`exp2 buckets are powers of two 2^0 .. 2^62: bucket_min/bucket_max must lie in 0..62`);
          }
          if (m.bucket_max !== undefined && m.bucket_max < min) fail('bucket_max is below bucket_min', '/bucket_max');
        }
      } else {
        for (const k of ['bucket_type', 'bucket_min', 'bucket_max', 'bucket_multiplier', 'bucket_keys'] as const) {
          if (m[k] !== undefined) fail(`${k} applies to histograms only`, `/${k}`);
        }
      }
      metrics.push(metric);
    });
  }
  if (metrics.length === 0) throw new ConfigError(file, lineAt('/metrics'), 'the config defines no metrics');

  let program: ExporterConfig['program'];
  if (cfg.program !== undefined) {
    if (btFile !== undefined) {
      throw new ConfigError(file, lineAt('/program'), `the program is given twice: program: and ${btFile}`);
    }
    const node = nodeAt(doc, '/program').node;
    const start = lineOf(node, lc) ?? 1;
    // a block scalar (`program: |`) starts on the line after its indicator
    const block = isScalar(node) && (node.type === 'BLOCK_LITERAL' || node.type === 'BLOCK_FOLDED');
    program = { text: cfg.program, file, lineOffset: block ? start : start - 1 };
  } else if (btFile !== undefined) {
    program = { text: readFileSync(btFile, 'utf8'), file: btFile, lineOffset: 0 };
  } else {
    throw new ConfigError(file, undefined, `no program: add a "program:" key or ${join(dirname(file), `${name}.bt`)}`);
  }
  return { name, file, program, metrics };
}

function decoderConfig(
  d: RawDecoder,
  path: string,
  lineAt: (p: string) => number | undefined,
  fail: (msg: string, sub?: string) => never,
): DecoderConfig {
  const line = lineAt(path) ?? 0;
  const out: DecoderConfig = { name: d.name, allowUnknown: d.allow_unknown ?? false, line };
  const rel = path.replace(/^\/metrics\/\w+\/\d+/, '');
  if (d.name === 'static_map') {
    if (!d.static_map) fail('decoder static_map needs a static_map: mapping', rel);
    out.staticMap = new Map(Object.entries(d.static_map!).map(([k, v]) => [k, String(v)]));
  } else if (d.static_map) fail(`static_map: applies to decoder static_map only`, `${rel}/static_map`);
  if (d.name === 'regexp') {
    if (!d.regexps) fail('decoder regexp needs a regexps: list', rel);
    out.regexps = d.regexps!.map((r, i) => {
      try {
        return new RegExp(r, 'u');
      } catch (e) {
        return fail(`bad regexp: ${(e as Error).message}`, `${rel}/regexps/${i}`);
      }
    });
  } else if (d.regexps) fail(`regexps: apply to decoder regexp only`, `${rel}/regexps`);
  if (d.allow_unknown !== undefined && d.name !== 'static_map') {
    fail('allow_unknown applies to decoder static_map only', `${rel}/allow_unknown`);
  }
  return out;
}

/** Warnings about files root loads that others could change (world- or group-writable, or not owned by root). */
export function permissionWarnings(paths: readonly string[]): string[] {
  const out: string[] = [];
  const asRoot = process.geteuid?.() === 0;
  for (const p of new Set(paths.flatMap((f) => [f, dirname(f)]))) {
    let st;
    try {
      st = lstatSync(p).isSymbolicLink() ? statSync(p) : lstatSync(p);
    } catch {
      continue;
    }
    const sticky = (st.mode & 0o1000) !== 0;
    if ((st.mode & 0o002) !== 0 && !(st.isDirectory() && sticky)) {
      out.push(`${p} is world-writable: any local user can change what the exporter loads as root`);
    } else if (asRoot && st.uid !== 0) {
      out.push(`${p} is owned by uid ${st.uid}, not root: that user can change what the exporter loads as root`);
    }
  }
  return out;
}

/** Load configs `names` from `dir` (ebpf_exporter's `--config.dir`/`--config.names`). */
export function loadConfigs(dir: string, names: readonly string[]): ExporterConfig[] {
  const out: ExporterConfig[] = [];
  const seenMetric = new Map<string, string>();
  for (const name of names) {
    const file = join(dir, `${name}.yaml`);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      throw new ConfigError(file, undefined, `cannot read config "${name}": ${(e as NodeJS.ErrnoException).code ?? e}`);
    }
    const bt = join(dir, `${name}.bt`);
    let hasBt = false;
    try {
      hasBt = statSync(bt).isFile();
    } catch {
      /* no .bt file */
    }
    const cfg = parseConfig(name, file, text, hasBt ? bt : undefined);
    for (const m of cfg.metrics) {
      const other = seenMetric.get(m.name);
      if (other) throw new ConfigError(file, m.line, `metric "${m.name}" is also defined by config "${other}"`);
      seenMetric.set(m.name, name);
    }
    out.push(cfg);
  }
  return out;
}
