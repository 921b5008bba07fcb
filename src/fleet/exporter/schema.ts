/**
 * JSON schema (draft-07, checked with ajv) of one exporter config file: ebpf_exporter's v2 YAML schema
 * (`config/config.go` of cloudflare/ebpf_exporter: `metrics.counters[]`, `metrics.histograms[]`, labels and their
 * decoders) plus bpfscope's keys: `program` (bpftrace source instead of a `.bpf.o`), `map` (which `@map` a metric
 * reads) and `max_series` (the cardinality guard). Keys of ebpf_exporter that bpfscope does not implement
 * (`tracing`, `kaddrs`, `cgroup_id_map`, `perf_event_array`, `flush_interval`) are listed in {@link UNSUPPORTED_KEYS}
 * so that config.ts can name them; the schema rejects them as unknown keys.
 */

/** The decoders of ebpf_exporter (`decoder/decoder.go`), all implemented in decoders/. */
export const DECODER_NAMES = [
  'cgroup',
  'dname',
  'errno',
  'hex',
  'ifname',
  'inet_ip',
  'kstack',
  'ksym',
  'majorminor',
  'pci_class',
  'pci_device',
  'pci_subclass',
  'pci_vendor',
  'regexp',
  'static_map',
  'string',
  'syscall',
  'uint',
] as const;

export type DecoderName = (typeof DECODER_NAMES)[number];

export const BUCKET_TYPES = ['exp2', 'exp2zero', 'linear', 'fixed'] as const;
export type BucketType = (typeof BUCKET_TYPES)[number];

/** ebpf_exporter keys this exporter does not implement, with the reason printed when a config uses one. */
export const UNSUPPORTED_KEYS: Readonly<Record<string, string>> = {
  tracing: 'OpenTelemetry spans are not implemented',
  kaddrs: 'kernel addresses are resolved by the program itself (kaddr("name") in bpftrace)',
  cgroup_id_map: 'cgroup id maps are not implemented; filter with cgroup == cgroupid("/path") in the program',
  perf_event_array: 'counters are read from maps only; count in a map with count()',
  flush_interval: 'counters are read from maps only (no perf event array to flush)',
};

const METRIC_NAME = '^[a-zA-Z_:][a-zA-Z0-9_:]*$';
const LABEL_NAME = '^[a-zA-Z_][a-zA-Z0-9_]*$';

const decoder = {
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', enum: DECODER_NAMES },
    static_map: {
      type: 'object',
      additionalProperties: { type: ['string', 'number', 'boolean'] },
    },
    regexps: { type: 'array', minItems: 1, items: { type: 'string' } },
    allow_unknown: { type: 'boolean' },
  },
};

const label = {
  type: 'object',
  required: ['name', 'decoders'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', pattern: LABEL_NAME },
    size: { type: 'integer', minimum: 1 },
    padding: { type: 'integer', minimum: 0 },
    decoders: { type: 'array', minItems: 1, items: decoder },
  },
};

const common = {
  name: { type: 'string', pattern: METRIC_NAME },
  help: { type: 'string', minLength: 1 },
  map: { type: 'string', pattern: '^@[a-zA-Z0-9_]*$' },
  max_series: { type: 'integer', minimum: 1 },
  labels: { type: 'array', items: label },
};

const counter = {
  type: 'object',
  required: ['name', 'help'],
  additionalProperties: false,
  properties: { ...common },
};

const histogram = {
  type: 'object',
  required: ['name', 'help', 'bucket_type'],
  additionalProperties: false,
  properties: {
    ...common,
    bucket_type: { type: 'string', enum: BUCKET_TYPES },
    bucket_min: { type: 'integer' },
    bucket_max: { type: 'integer' },
    bucket_multiplier: { type: 'number', exclusiveMinimum: 0 },
    bucket_keys: { type: 'array', minItems: 1, items: { type: 'number' } },
  },
};

/** The schema of a whole config file. */
export const CONFIG_SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  required: ['metrics'],
  additionalProperties: false,
  properties: {
    program: { type: 'string', minLength: 1 },
    metrics: {
      type: 'object',
      additionalProperties: false,
      properties: {
        counters: { type: 'array', items: counter },
        histograms: { type: 'array', items: histogram },
      },
    },
  },
};

/** A config file as the schema admits it (before the checks of config.ts). */
export interface RawDecoder {
  name: DecoderName;
  static_map?: Record<string, string | number | boolean>;
  regexps?: string[];
  allow_unknown?: boolean;
}
export interface RawLabel {
  name: string;
  size?: number;
  padding?: number;
  decoders: RawDecoder[];
}
export interface RawMetric {
  name: string;
  help: string;
  map?: string;
  max_series?: number;
  labels?: RawLabel[];
  bucket_type?: BucketType;
  bucket_min?: number;
  bucket_max?: number;
  bucket_multiplier?: number;
  bucket_keys?: number[];
}
export interface RawConfig {
  program?: string;
  metrics: { counters?: RawMetric[]; histograms?: RawMetric[] };
}
