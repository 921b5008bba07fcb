/**
 * `bpfscope exporter`: a Prometheus exporter with ebpf_exporter's command line and config schema, whose programs
 * are bpftrace source compiled by bpfscope (docs/fleet.md).
 *
 * Flags (ebpf_exporter's `cmd/ebpf_exporter/main.go`, `--flag=value` or `--flag value`): --config.dir,
 * --config.names, --config.check, --config.strict, --web.listen-address (default 127.0.0.1:9435; ebpf_exporter's
 * is :9435, every address), --web.telemetry-path (default /metrics), --debug (adds /maps); bpfscope's own:
 * --unsafe (let programs use bpftrace's unsafe builtins), --bpf-stats (hold BPF_ENABLE_STATS while running, so
 * the ebpf_program_run_* metrics count).
 */
import { BpfscopeError } from '../../errors.js';
import { enableStats } from '../../kernel/bpf.js';
import { close as closeFd } from '../../kernel/ffi.js';
import { reportError } from '../../cli/report.js';
import { type PreparedProgram, prepareProgram } from './check.js';
import { type ExporterConfig, loadConfigs, permissionWarnings } from './config.js';
import { Exporter, type LoadedConfig } from './exporter.js';
import { startProgram } from './program.js';
import { startServer } from './server.js';

export const USAGE = `usage: bpfscope exporter --config.dir=DIR --config.names=NAME[,NAME...] [options]

Prometheus exporter of bpftrace programs, with ebpf_exporter's flags and config schema
(DIR/NAME.yaml; the program: key or DIR/NAME.bt). See docs/fleet.md.

  --config.dir=DIR             directory of the configs (required)
  --config.names=A,B           comma-separated config names to load (required)
  --config.check               check the configs and programs (compile only), then exit
  --config.strict              compile warnings are errors
  --web.listen-address=H:P     address to listen on (default 127.0.0.1:9435; ebpf_exporter's is :9435)
  --web.telemetry-path=PATH    path of the metrics (default /metrics)
  --debug                      also serve /maps (the metric maps, decoded)
  --unsafe                     allow programs to use unsafe builtins (system(), signal(), ...)
  --bpf-stats                  count program run time while running (BPF_ENABLE_STATS)
  -h, --help                   this text
`;

export interface ExporterOptions {
  configDir: string;
  configNames: string[];
  check: boolean;
  strict: boolean;
  host: string;
  port: number;
  telemetryPath: string;
  debug: boolean;
  unsafe: boolean;
  bpfStats: boolean;
}

class UsageError extends BpfscopeError {}

const VALUE_FLAGS = ['config.dir', 'config.names', 'web.listen-address', 'web.telemetry-path'];
const BOOL_FLAGS = ['config.check', 'config.strict', 'debug', 'unsafe', 'bpf-stats'];

/** Split `host:port` (`[::1]:9435`, `:9435` = every address). */
export function parseListen(s: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(s);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new UsageError(`--web.listen-address must be HOST:PORT (got "${s}")`);
  const host = m[1] ?? m[2] ?? '';
  return { host: host === '' ? '::' : host, port };
}

export function parseArgs(argv: string[]): ExporterOptions | 'help' {
  const v = new Map<string, string>();
  const b = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '-h' || a === '--help') return 'help';
    const m = /^--([a-z.-]+)(?:=(.*))?$/s.exec(a);
    if (!m) throw new UsageError(`unexpected argument "${a}"`);
    const [, name, value] = m as unknown as [string, string, string | undefined];
    if (VALUE_FLAGS.includes(name)) {
      const val = value ?? argv[++i];
      if (val === undefined) throw new UsageError(`--${name} needs a value`);
      v.set(name, val);
    } else if (BOOL_FLAGS.includes(name)) {
      if (value !== undefined && value !== 'true' && value !== 'false') {
        throw new UsageError(`--${name} takes no value (or =true/=false)`);
      }
      if (value !== 'false') b.add(name);
    } else {
      throw new UsageError(`unknown flag --${name}`);
    }
  }
  const dir = v.get('config.dir');
  const names = v.get('config.names');
  if (!dir) throw new UsageError('--config.dir is required');
  if (!names) throw new UsageError('--config.names is required');
  const list = names
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const n of list) {
    if (!/^[A-Za-z0-9_.-]+$/.test(n) || n.startsWith('.')) throw new UsageError(`bad config name "${n}"`);
  }
  const path = v.get('web.telemetry-path') ?? '/metrics';
  if (!path.startsWith('/')) throw new UsageError('--web.telemetry-path must start with /');
  return {
    configDir: dir,
    configNames: list,
    check: b.has('config.check'),
    strict: b.has('config.strict'),
    ...parseListen(v.get('web.listen-address') ?? '127.0.0.1:9435'),
    telemetryPath: path,
    debug: b.has('debug'),
    unsafe: b.has('unsafe'),
    bpfStats: b.has('bpf-stats'),
  };
}

const log = (s: string): void => {
  process.stderr.write(`${s}\n`);
};

/** Load and check every config (nothing is loaded into the kernel). */
export function checkConfigs(o: ExporterOptions): { configs: ExporterConfig[]; prepared: PreparedProgram[] } {
  const configs = loadConfigs(o.configDir, o.configNames);
  const files = configs.flatMap((c) => [c.file, c.program.file]);
  for (const w of permissionWarnings(files)) log(`WARNING: ${w}`);
  const prepared = configs.map((c) => prepareProgram(c, { unsafe: o.unsafe, strict: o.strict }));
  for (const p of prepared) for (const w of p.warnings) log(`WARNING: ${w}`);
  return { configs, prepared };
}

export async function main(argv: string[]): Promise<number> {
  let o: ExporterOptions | 'help';
  try {
    o = parseArgs(argv);
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`ERROR: ${e.message}\n\n${USAGE}`);
      return 1;
    }
    throw e;
  }
  if (o === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  const loaded: LoadedConfig[] = [];
  let statsFd: number | undefined;
  let server: Awaited<ReturnType<typeof startServer>>['server'] | undefined;
  const ac = new AbortController();
  const onSignal = (): void => ac.abort();
  try {
    const { configs, prepared } = checkConfigs(o);
    if (o.check) {
      for (const c of configs) process.stdout.write(`${c.name}: ok (${c.file}, ${c.metrics.length} metric(s))\n`);
      return 0;
    }
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    for (let i = 0; i < configs.length; i++) {
      const program = await startProgram(prepared[i]!, { unsafe: o.unsafe });
      loaded.push({ config: configs[i]!, prepared: prepared[i]!, program });
    }
    if (o.bpfStats) statsFd = enableStats();
    const exporter = new Exporter(loaded, log, statsFd !== undefined);
    const started = await startServer(exporter, o, log);
    server = started.server;
    const a = started.address;
    const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
    log(
      `Listening on ${host}:${a.port}${o.telemetryPath} with ${configs.length} config(s): ${o.configNames.join(', ')}`,
    );
    const ended = await Promise.race([
      new Promise<string>((r) => ac.signal.addEventListener('abort', () => r(''), { once: true })),
      ...loaded.map((l) => l.program.exited.then(() => `the program of config "${l.config.name}" exited`)),
    ]);
    if (ended) throw new BpfscopeError(ended);
    return 0;
  } catch (e) {
    return reportError(e);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    if (server) await new Promise((r) => server!.close(() => r(undefined)));
    for (const l of loaded) await l.program.close();
    if (statsFd !== undefined) closeFd(statsFd);
  }
}
