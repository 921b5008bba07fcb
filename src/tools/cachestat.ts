/**
 * cachestat: page cache hits, misses and dirties per interval. Follows bcc's `tools/cachestat.py` (flags, help,
 * `%8s %8s %8s %8s %12s %10s` header, `%8d %8d %8d %7.2f%% %12.0f %10.0f` rows with Buffers/Cached from
 * /proc/meminfo, `-T`, `[interval] [count]`, `Detaching...` on Ctrl-C) and its arithmetic (total = accessed -
 * buffer dirtied, misses = added - dirtied, clamped as bcc). Counts kprobes on filemap_add_folio (or
 * add_to_page_cache_lru), folio_mark_accessed (or mark_page_accessed), mark_buffer_dirty, and
 * folio_account_dirtied / account_page_dirtied or else the writeback:writeback_dirty_folio/page tracepoint.
 *
 * Page accesses (folio_mark_accessed) have no tracepoint, so without kprobes the tool exits 1 with one sentence.
 */
import { readFileSync } from 'node:fs';
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import { scalarValues } from './framework/histmaps.js';
import { runIntervals } from './framework/interval.js';
import { firstKernelFunction, kfuncKind, noKfuncError } from './framework/kfunc.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { defineTool, toolMain, unsupported } from './framework/runner.js';
import { clockTime, tracepointExists } from './framework/system.js';
import type { Tracer } from '../runtime/tracer.js';

export const SPEC = {
  prog: 'cachestat',
  description: 'Count cache kernel function calls',
  raw: true,
  options: [
    { flags: ['-T', '--timestamp'], kind: 'flag', help: 'include timestamp on output' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
  positionals: [
    { name: 'interval', help: 'output interval, in seconds', type: INT, default: 1 },
    { name: 'count', help: 'number of outputs', type: INT, default: -1 },
  ],
} as const satisfies ParserSpec;

/** The four counted events: probe (`kprobe:FN` or `tracepoint:CAT:EV`) per map name. */
export interface CachestatProbes {
  apcl: string;
  mpa: string;
  mbd: string;
  apd: string;
}

/** bcc's probe choice on this kernel, or a reason it cannot be made. */
export function chooseProbes(): CachestatProbes | string {
  const apcl = firstKernelFunction(['filemap_add_folio', 'add_to_page_cache_lru']);
  const mpa = firstKernelFunction(['folio_mark_accessed', 'mark_page_accessed']);
  const apdFn = firstKernelFunction(['folio_account_dirtied', 'account_page_dirtied']);
  const apdTp = ['writeback_dirty_folio', 'writeback_dirty_page'].find((e) => tracepointExists('writeback', e));
  if (!apcl) return 'no filemap_add_folio or add_to_page_cache_lru kernel function';
  if (!mpa) return 'no folio_mark_accessed or mark_page_accessed kernel function';
  if (!apdFn && !apdTp) return 'no folio_account_dirtied or account_page_dirtied kernel function or any tracepoint';
  return {
    apcl: `kprobe:${apcl}`,
    mpa: `kprobe:${mpa}`,
    mbd: 'kprobe:mark_buffer_dirty',
    apd: apdFn ? `kprobe:${apdFn}` : `tracepoint:writeback:${apdTp}`,
  };
}

/** The bpftrace program: one `count()` map per event. */
export function buildProgram(p: CachestatProbes): string {
  return `${configBlock()}${(['apcl', 'mpa', 'mbd', 'apd'] as const).map((k) => `${p[k]} { @${k} = count(); }\n`).join('')}`;
}

/** bcc's header line. */
export function header(timestamp: boolean): string {
  return `${timestamp ? pyFormat('%-8s ', 'TIME') : ''}${pyFormat('%8s %8s %8s %8s %12s %10s', 'HITS', 'MISSES', 'DIRTIES', 'HITRATIO', 'BUFFERS_MB', 'CACHED_MB')}\n`;
}

/** bcc's arithmetic on one interval's counts: hits, misses, dirties (mbd) and the hit ratio (0..1). */
export function cacheStats(c: { apcl: bigint; mpa: bigint; mbd: bigint; apd: bigint }): {
  hits: bigint;
  misses: bigint;
  dirties: bigint;
  ratio: number;
} {
  let total = c.mpa - c.mbd;
  let misses = c.apcl - c.apd;
  if (misses < 0n) misses = 0n;
  if (total < 0n) total = 0n;
  let hits = total - misses;
  // Read-ahead can add more pages than were accessed: then all accesses count as misses.
  if (hits < 0n) {
    misses = total;
    hits = 0n;
  }
  return { hits, misses, dirties: c.mbd, ratio: total > 0n ? Number(hits) / Number(total) : 0 };
}

/** `Buffers` and `Cached` of /proc/meminfo in kB. */
export function readMeminfo(text?: string): { buffersKb: number; cachedKb: number } {
  let t = text;
  if (t === undefined) {
    try {
      t = readFileSync('/proc/meminfo', 'utf8');
    } catch {
      t = '';
    }
  }
  const get = (k: string): number => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(t)?.[1] ?? 0);
  return { buffersKb: get('Buffers'), cachedKb: get('Cached') };
}

/** One output line. */
export function formatRow(
  s: ReturnType<typeof cacheStats>,
  mem: { buffersKb: number; cachedKb: number },
  timestamp: boolean,
  time: string = clockTime(),
): string {
  return `${timestamp ? pyFormat('%-8s ', time) : ''}${pyFormat('%8d %8d %8d %7.2f%% %12.0f %10.0f', s.hits, s.misses, s.dirties, 100 * s.ratio, mem.buffersKb / 1024, mem.cachedKb / 1024)}\n`;
}

/** One interval of cachestat (runTool's interval, `--json`'s object). */
export interface CachestatInterval {
  /** Wall-clock time of the line, HH:MM:SS (the `-T` column). */
  time: string;
  /** bcc's arithmetic on the interval's counts (see {@link cacheStats}); `ratio` is 0..1 (HITRATIO / 100). */
  hits: bigint;
  misses: bigint;
  dirties: bigint;
  ratio: number;
  /** `Buffers` and `Cached` of /proc/meminfo at the time, in kB (bcc prints them in MB). */
  buffersKb: number;
  cachedKb: number;
}

function readCounts(t: Tracer): { apcl: bigint; mpa: bigint; mbd: bigint; apd: bigint } {
  const out = { apcl: 0n, mpa: 0n, mbd: 0n, apd: 0n };
  for (const k of ['apcl', 'mpa', 'mbd', 'apd'] as const) {
    out[k] = scalarValues(t.readMap(k)).reduce((a, r) => a + r.value, 0n);
  }
  return out;
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const probes = chooseProbes();
  if (typeof probes === 'string' && writer.mode === 'ebpf') throw unsupported(`cachestat: ${probes}`);
  const program = typeof probes === 'string' ? '' : buildProgram(probes);
  const ts = a.timestamp;
  return runIntervals<CachestatInterval>({
    tool: 'cachestat',
    program,
    writer,
    requires: () => {
      if (kfuncKind() !== 'kprobe') {
        throw noKfuncError(
          'cachestat',
          'counting page cache accesses (folio_mark_accessed(), which has no tracepoint)',
          false,
        );
      }
      if (typeof probes === 'string') throw unsupported(`cachestat: ${probes}`);
    },
    seconds: a.interval,
    count: a.count > 0 ? a.count : null,
    header: header(ts),
    read: (t, now) => ({ time: clockTime(now), ...cacheStats(readCounts(t)), ...readMeminfo() }),
    format: (i) => formatRow(i, i, ts, i.time),
    clear: ['apcl', 'mpa', 'mbd', 'apd'],
    detach: 'stopped',
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'intervals', run });

/** `bpfscope cachestat [-T] [interval] [count]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
