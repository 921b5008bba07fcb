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
import { INT, type Parsed, type ParserSpec } from './framework/argparse.js';
import { keyPart } from './framework/histmaps.js';
import { hardwareEventsWork } from './framework/kfunc.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { runProgram, toolMain, unsupported } from './framework/runner.js';
import type { MapDump } from '../runtime/output/model.js';

export const SPEC: ParserSpec = {
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
      type: {
        name: 'duration',
        convert: (t) => {
          const n = Number(t);
          if (t.trim() === '' || !Number.isFinite(n)) throw new Error(`could not convert string to float: '${t}'`);
          return n;
        },
      },
      default: 10,
    },
  ],
};

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

async function run(a: Parsed, writer: ToolWriter): Promise<number> {
  const o: LlcstatOptions = { samplePeriod: a.sample_period as number, tid: a.tid as boolean };
  const program = buildProgram(o);
  if (a.ebpf) {
    writer.write(program);
    return 0;
  }
  if (!hardwareEventsWork(3) || !hardwareEventsWork(2)) {
    throw unsupported(
      'llcstat: the cache-references and cache-misses hardware events cannot be opened: this machine has no hardware performance counters (PMU) the kernel exposes',
    );
  }
  const duration = a.duration as number;
  return runProgram({
    tool: 'llcstat',
    program,
    writer,
    interval: { seconds: duration, count: 1 },
    onStarted: () => writer.line(`Running for ${String(a.duration)} seconds or hit Ctrl-C to end.`),
    onTick: (t) => writer.write(formatTable(rowsFromMaps(t.readMap('ref'), t.readMap('miss')), o.tid)),
  });
}

/** `bpfscope llcstat [-c SAMPLE_PERIOD] [-t] [duration]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(SPEC, argv, run);
}
