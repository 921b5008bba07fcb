/**
 * runqlen: scheduler run queue length, sampled on every CPU at 99 Hz, as a linear histogram (or, with `-O`, the
 * run queue occupancy). Follows bcc's `tools/runqlen.py` (flags, help, "Sampling run queue length..." line,
 * `runqlen` linear histograms, `-C` sections `cpu = N`, `-O` lines, `-T`, `[interval] [count]`).
 *
 * Each sample reads the length of the CPU's run queue through the task on the CPU, as bcc does, but from the run
 * queue itself: `curtask->se.cfs_rq->rq->nr_running` (all runnable tasks of the CPU, the running one included),
 * minus the running task (0 when idle). bcc reads `nr_running` of `curtask->se.cfs_rq`, the CFS queue the current
 * task is on: with CPU cgroups or autogroup (the default on desktop kernels, and on this VM) that is the queue of
 * the task's group only, so a CPU with three pinned spinners reads 0 whenever a task of another session is
 * sampled; bcc's comment says it means `task_rq(p)`. Kernels whose `struct cfs_rq` has no `rq` member (no
 * CONFIG_FAIR_GROUP_SCHED) fall back to bcc's field, named from BTF: `nr_queued` (Linux 6.14 renamed it) or
 * `nr_running`.
 */
import type { Tracer } from '../runtime/tracer.js';
import type { MapDump } from '../runtime/output/model.js';
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import { formatLinearHist, formatSectionedLinearHist, type HistSection } from './framework/hist.js';
import { keyPart, scalarValues } from './framework/histmaps.js';
import { runIntervals } from './framework/interval.js';
import { firstStructField, kernelStructHasField } from './framework/kstruct.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { defineTool, toolMain, unsupported } from './framework/runner.js';
import { clockTime } from './framework/system.js';

export const SPEC = {
  prog: 'runqlen',
  description: 'Summarize scheduler run queue length as a histogram',
  raw: true,
  epilog: `examples:
    ./runqlen            # summarize run queue length as a histogram
    ./runqlen 1 10       # print 1 second summaries, 10 times
    ./runqlen -T 1       # 1s summaries and timestamps
    ./runqlen -O         # report run queue occupancy
    ./runqlen -C         # show each CPU separately
`,
  options: [
    { flags: ['-T', '--timestamp'], kind: 'flag', help: 'include timestamp on output' },
    { flags: ['-O', '--runqocc'], kind: 'flag', help: 'report run queue occupancy' },
    { flags: ['-C', '--cpus'], kind: 'flag', help: 'print output for each CPU separately' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
  positionals: [
    { name: 'interval', help: 'output interval, in seconds', type: INT, default: 99999999 },
    { name: 'count', help: 'number of outputs', type: INT, default: 99999999 },
  ],
} as const satisfies ParserSpec;

/** bcc's sampling frequency (Hz). */
export const FREQUENCY = 99;

/** The cfs_rq member counting queued entities: `nr_queued` since Linux 6.14, `nr_running` before. */
export const NR_FIELDS = ['nr_queued', 'nr_running'];

/** The CPU's run queue length, running task included (see the module comment). */
export const RQ_NR_RUNNING = 'curtask->se.cfs_rq->rq->nr_running';

/**
 * The expression to sample on this kernel: {@link RQ_NR_RUNNING} when `struct cfs_rq` has `rq`, else bcc's
 * `curtask->se.cfs_rq-><field>`; undefined when the kernel's BTF has neither.
 */
export function queueLengthExpr(): string | undefined {
  if (kernelStructHasField('cfs_rq', 'rq') && kernelStructHasField('rq', 'nr_running')) return RQ_NR_RUNNING;
  const field = firstStructField('cfs_rq', NR_FIELDS);
  return field && kernelStructHasField('sched_entity', 'cfs_rq') ? `curtask->se.cfs_rq->${field}` : undefined;
}

/**
 * The bpftrace program: `@dist[len]` (or `@dist[cpu, len]` with `cpus`) counts samples by queue length; `expr`
 * reads the queue length with the running task (see {@link queueLengthExpr}).
 */
export function buildProgram(o: { cpus: boolean; expr: string }): string {
  let p = configBlock();
  p += `profile:hz:${FREQUENCY} {\n  $len = ${o.expr};\n`;
  // Not counting the running task: 0 is idle or one running task.
  p += '  if ($len > 0) {\n    $len = $len - 1;\n  }\n';
  p += o.cpus ? '  @dist[cpu, $len] = count();\n}\n' : '  @dist[$len] = count();\n}\n';
  return p;
}

/** Counts by queue length (index = length) of an `@dist[len]` map. */
export function lengthSlots(dump: MapDump): bigint[] {
  const rows = scalarValues(dump).map((r) => ({ len: Number(r.key), n: r.value }));
  const vals = new Array<bigint>(Math.max(0, ...rows.map((r) => r.len + 1))).fill(0n);
  for (const r of rows) vals[r.len] = vals[r.len]! + r.n;
  return vals;
}

/** Per-CPU counts by queue length of an `@dist[cpu, len]` map, by CPU ascending. */
export function cpuSlots(dump: MapDump): { cpu: number; vals: bigint[] }[] {
  const byCpu = new Map<number, Map<number, bigint>>();
  const values = scalarValues(dump);
  dump.entries.forEach((e, i) => {
    const cpu = Number(keyPart(e.key[0]));
    const len = Number(keyPart(e.key[1]));
    const m = byCpu.get(cpu) ?? new Map<number, bigint>();
    m.set(len, (m.get(len) ?? 0n) + values[i]!.value);
    byCpu.set(cpu, m);
  });
  return [...byCpu.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([cpu, m]) => {
      const vals = new Array<bigint>(Math.max(0, ...[...m.keys()].map((l) => l + 1))).fill(0n);
      for (const [len, n] of m) vals[len] = n;
      return { cpu, vals };
    });
}

/** Python's `float(queued) / samples`, 0 without samples. */
function occupancy(vals: bigint[]): number {
  let idle = 0n;
  let queued = 0n;
  vals.forEach((v, len) => {
    if (len === 0) idle += v;
    else queued += v;
  });
  const samples = idle + queued;
  return samples ? Number(queued) / Number(samples) : 0;
}

/** One interval of runqlen (runTool's interval, `--json`'s object). */
export interface RunqlenInterval {
  /** Wall-clock time of the interval's end, HH:MM:SS (the `-T` line). */
  time: string;
  /**
   * Samples by run queue length (`counts[n]`: samples that saw n tasks waiting, the running one not counted),
   * from 0 to the longest queue seen: one histogram, or with -C one per CPU (`cpu`), by CPU.
   */
  histograms: { cpu?: number; counts: bigint[] }[];
  /** -O: the percentage of samples with a queue (length > 0); with -C per CPU from 0 to the highest seen. */
  occupancy: { cpu?: number; percent: number }[] | null;
}

/** -O's percentages (see {@link RunqlenInterval.occupancy}). */
export function occupancyOf(
  o: { cpus: boolean },
  dist: { total?: bigint[]; perCpu?: { cpu: number; vals: bigint[] }[] },
): { cpu?: number; percent: number }[] {
  if (!o.cpus) return [{ percent: 100 * occupancy(dist.total ?? []) }];
  const perCpu = dist.perCpu ?? [];
  const cpumax = Math.max(0, ...perCpu.map((c) => c.cpu));
  const out: { cpu: number; percent: number }[] = [];
  for (let c = 0; c <= cpumax; c++) {
    out.push({ cpu: c, percent: 100 * occupancy(perCpu.find((x) => x.cpu === c)?.vals ?? []) });
  }
  return out;
}

/** bcc's `-O` lines for {@link occupancyOf}'s percentages. */
function formatOccupancyRows(rows: { cpu?: number; percent: number }[]): string {
  return rows
    .map((r) =>
      r.cpu === undefined
        ? `${pyFormat('runqocc: %0.2f%%', r.percent)}\n`
        : `${pyFormat('runqocc, CPU %-3d %6.2f%%', r.cpu, r.percent)}\n`,
    )
    .join('');
}

/**
 * bcc's `-O` lines: `runqocc: N.NN%`, or with `-C` one `runqocc, CPU %-3d %6.2f%%` line per CPU from 0 to the
 * highest CPU seen.
 */
export function formatOccupancy(
  o: { cpus: boolean },
  dist: { total?: bigint[]; perCpu?: { cpu: number; vals: bigint[] }[] },
): string {
  return formatOccupancyRows(occupancyOf(o, dist));
}

/** Read one interval from `@dist`. */
export function readInterval(
  t: Pick<Tracer, 'readMap'>,
  o: { cpus: boolean; runqocc: boolean },
  now: Date = new Date(),
): RunqlenInterval {
  const dump = t.readMap('dist');
  const time = clockTime(now);
  if (o.cpus) {
    const perCpu = cpuSlots(dump);
    return {
      time,
      histograms: perCpu.map((c) => ({ cpu: c.cpu, counts: c.vals })),
      occupancy: o.runqocc ? occupancyOf(o, { perCpu }) : null,
    };
  }
  const total = lengthSlots(dump);
  return { time, histograms: [{ counts: total }], occupancy: o.runqocc ? occupancyOf(o, { total }) : null };
}

/** bcc's text of one interval: an empty line, the time with -T, then the histogram(s) or the occupancy. */
export function formatTick(i: RunqlenInterval, o: { cpus: boolean; timestamp: boolean }): string {
  let out = '\n';
  if (o.timestamp) out += pyFormat('%-8s\n', i.time);
  if (i.occupancy) return out + formatOccupancyRows(i.occupancy);
  if (o.cpus) {
    const sections: HistSection[] = i.histograms.map((h) => ({ label: String(h.cpu), vals: h.counts }));
    return out + formatSectionedLinearHist(sections, 'cpu', 'runqlen');
  }
  return out + formatLinearHist(i.histograms[0]?.counts ?? [], 'runqlen');
}

/** One interval's text: an empty line, the time with -T, then the histogram(s) or the occupancy. */
export function formatInterval(
  t: Pick<Tracer, 'readMap'>,
  o: { cpus: boolean; runqocc: boolean; timestamp: boolean },
  now: Date = new Date(),
): string {
  return formatTick(readInterval(t, o, now), o);
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const expr = queueLengthExpr();
  const o = { cpus: a.cpus, runqocc: a.runqocc, timestamp: a.timestamp };
  return runIntervals<RunqlenInterval>({
    tool: 'runqlen',
    program: buildProgram({ cpus: o.cpus, expr: expr ?? RQ_NR_RUNNING }),
    writer,
    requires: () => {
      if (!expr) {
        throw unsupported(
          "runqlen: the kernel's BTF (/sys/kernel/btf/vmlinux) has no struct cfs_rq with rq, nr_queued or nr_running to read the run queue length from",
        );
      }
    },
    seconds: a.interval,
    count: a.count,
    header: 'Sampling run queue length... Hit Ctrl-C to end.\n',
    read: (t, now) => readInterval(t, o, now),
    format: (i) => formatTick(i, o),
    clear: ['dist'],
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'intervals', run });

/** `bpfscope runqlen [-T] [-O] [-C] [interval] [count]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
