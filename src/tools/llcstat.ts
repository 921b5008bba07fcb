/**
 * llcstat: summarize last-level cache references and misses by process (and CPU). Follows bcc's
 * `tools/llcstat.py` (flags, help, `-c` sample period, `-t` by thread, `[duration]` default 10 s, the `PID
 * NAME CPU REFERENCE MISS HIT%` table and the total line) on `hardware:cache-references:N` and
 * `hardware:cache-misses:N` programs that add the sample period per sample (bcc adds `ctx->sample_period`, the
 * same number).
 *
 * Hardware events need a PMU the kernel exposes: without one (most virtual machines, the development VM and the
 * Debian guest of test/matrix/) the tool exits 1 with one sentence (bcc prints "Failed to attach to a hardware
 * event. Is this a virtual machine?" and exits 0). Rows are sorted by PID, TID and CPU (bcc prints its hash
 * table's order); an empty run prints a hit rate of 0.00% (bcc divides by zero).
 */
import { INT, type OptionsOf, type ParserSpec, type ValueType } from './framework/argparse.js';
import { keyPart } from './framework/histmaps.js';
import { runIntervals } from './framework/interval.js';
import { hardwareEventsWork } from './framework/kfunc.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { defineTool, toolMain, unsupported } from './framework/runner.js';
import { clockTime } from './framework/system.js';
import type { MapDump } from '../runtime/output/model.js';

/** Python's `float()` of the duration argument. */
const FLOAT: ValueType<number> = {
  name: 'duration',
  convert: (t) => {
    const n = Number(t);
    if (t.trim() === '' || !Number.isFinite(n)) throw new Error(`could not convert string to float: '${t}'`);
    return n;
  },
};

export const SPEC = {
  prog: 'llcstat',
  description: 'Summarize cache references and misses by PID',
  raw: true,
  options: [
    {
      flags: ['-c', '--sample_period'],
      kind: 'value',
      type: INT,
      default: 100,
      help: 'Sample one in this many number of cache reference / miss events',
    },
    { flags: ['-t', '--tid'], kind: 'flag', help: 'Summarize cache references and misses by PID/TID' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
  positionals: [
    {
      name: 'duration',
      help: 'Duration, in seconds, to run',
      type: FLOAT,
      default: 10,
    },
  ],
} as const satisfies ParserSpec;

export interface LlcstatOptions {
  samplePeriod: number;
  tid: boolean;
}

/** The bpftrace program: `@ref`/`@miss` sums keyed by (pid, [tid,] cpu, comm). */
export function buildProgram(o: LlcstatOptions): string {
  const key = `pid, ${o.tid ? 'tid' : 'pid'}, cpu, comm`;
  let p = configBlock();
  p += `hardware:cache-misses:${o.samplePeriod} { @miss[${key}] = sum(${o.samplePeriod}); }\n`;
  p += `hardware:cache-references:${o.samplePeriod} { @ref[${key}] = sum(${o.samplePeriod}); }\n`;
  return p;
}

/** One row of the table: counts of one (pid, tid, cpu, comm). */
export interface LlcRow {
  pid: number;
  tid: number;
  cpu: number;
  comm: string;
  ref: bigint;
  miss: bigint;
}

/** Rows for every `@ref` key, with the matching `@miss` (0 when absent), sorted by pid, tid, cpu. */
export function rowsFromMaps(ref: MapDump, miss: MapDump): LlcRow[] {
  const k = (parts: (bigint | string)[]): string => parts.map(String).join('\0');
  const misses = new Map<string, bigint>();
  const val = (v: MapDump['entries'][number]['value']): bigint =>
    'value' in v && typeof v.value === 'bigint' ? v.value : 0n;
  for (const e of miss.entries) misses.set(k(e.key.map(keyPart)), val(e.value));
  const rows = ref.entries.map((e) => {
    const [pid, tid, cpu, comm] = e.key.map(keyPart);
    return {
      pid: Number(pid),
      tid: Number(tid),
      cpu: Number(cpu),
      comm: String(comm),
      ref: val(e.value),
      miss: misses.get(k(e.key.map(keyPart))) ?? 0n,
    };
  });
  return rows.sort((a, b) => a.pid - b.pid || a.tid - b.tid || a.cpu - b.cpu);
}

/** bcc's table: header, one line per row (HIT% of the references), and the totals line. */
export function formatTable(rows: LlcRow[], tid: boolean): string {
  let out = `PID      ${tid ? 'TID      ' : ''}NAME             CPU     REFERENCE         MISS    HIT%\n`;
  let totRef = 0n;
  let totMiss = 0n;
  for (const r of rows) {
    totRef += r.ref;
    totMiss += r.miss;
    const hit = r.ref >= r.miss ? r.ref - r.miss : 0n;
    const pct = r.ref > 0n ? (Number(hit) / Number(r.ref)) * 100 : 0;
    out += tid ? pyFormat('%-8d %-8d ', r.pid, r.tid) : pyFormat('%-8d ', r.pid);
    out += `${pyFormat('%-16s %-4d %12d %12d %6.2f%%', r.comm, r.cpu, r.ref, r.miss, pct)}\n`;
  }
  const rate = totRef > 0n ? (Number(totRef - totMiss) / Number(totRef)) * 100 : 0;
  out += `Total References: ${totRef} Total Misses: ${totMiss} Hit Rate: ${pyFormat('%.2f', rate)}%\n`;
  return out;
}

/** What llcstat gathered, at the end of the run (runTool's one interval, `--json`'s object). */
export interface LlcstatInterval {
  /** Wall-clock time at the end, HH:MM:SS. */
  time: string;
  /** The table's rows, by PID, TID and CPU (references and misses are sample counts times the sample period). */
  rows: LlcRow[];
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const o: LlcstatOptions = { samplePeriod: a.sample_period, tid: a.tid };
  return runIntervals<LlcstatInterval>({
    tool: 'llcstat',
    program: buildProgram(o),
    writer,
    requires: () => {
      if (!hardwareEventsWork(3) || !hardwareEventsWork(2)) {
        throw unsupported(
          'llcstat: the cache-references and cache-misses hardware events cannot be opened: this machine has no hardware performance counters (PMU) the kernel exposes',
        );
      }
    },
    seconds: a.duration,
    count: 1,
    header: `Running for ${String(a.duration)} seconds or hit Ctrl-C to end.\n`,
    read: (t, now) => ({ time: clockTime(now), rows: rowsFromMaps(t.readMap('ref'), t.readMap('miss')) }),
    format: (i) => formatTable(i.rows, o.tid),
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'intervals', run });

/** `bpfscope llcstat [-c SAMPLE_PERIOD] [-t] [duration]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
