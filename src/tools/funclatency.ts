/**
 * funclatency: time functions (entry to return) and print the latency as a log2 histogram. Follows bcc's
 * `tools/funclatency.py` (flags, help, `func` / `lib:func` patterns with `*` wildcards or `-r` regexps, "Tracing N
 * functions for ..." line, bcc's histogram in nsecs/usecs/msecs, `Function = NAME [PID]` sections with `-F` and for
 * user functions without `-p` as bcc keys them, the `avg = ... total: ... count: ...` line, `-i`/`-d` intervals,
 * `-T` times, "Detaching...") with kprobe/kretprobe or uprobe/uretprobe pairs, start times keyed by thread id.
 *
 * Not supported: `-l LEVEL` (nested calls need a per-thread stack of start times); it exits with one sentence.
 */
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import { intervalOf, intervalPrefix, resolveTargets, type Targets, tracingLine } from './framework/functool.js';
import type { HistInterval } from './framework/heatmap.js';
import {
  bccLog2Slots,
  formatLog2Hist,
  formatSectionedLog2Hist,
  type HistSection,
  type Log2Bucket,
  log2Buckets,
  log2SlotsOf,
} from './framework/hist.js';
import { keyPart, log2Slots, scalarValues } from './framework/histmaps.js';
import { runIntervals } from './framework/interval.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { findLibrary, ProbeSpecError, returnSpec, toAttachPoint } from './framework/probespec.js';
import { pyFormat } from './framework/pyformat.js';
import { defineTool, toolMain, unsupported } from './framework/runner.js';
import { clockTime } from './framework/system.js';
import type { Tracer } from '../runtime/tracer.js';
import type { MapDump } from '../runtime/output/model.js';

export const SPEC = {
  prog: 'funclatency',
  description: 'Time functions and print latency as a histogram',
  raw: true,
  epilog: `examples:
    ./funclatency do_sys_open       # time the do_sys_open() kernel function
    ./funclatency c:read            # time the read() C library function
    ./funclatency -u vfs_read       # time vfs_read(), in microseconds
    ./funclatency -m do_nanosleep   # time do_nanosleep(), in milliseconds
    ./funclatency -i 2 -d 10 c:open # output every 2 seconds, for duration 10s
    ./funclatency -mTi 5 vfs_read   # output every 5 seconds, with timestamps
    ./funclatency -p 181 vfs_read   # time process 181 only
    ./funclatency 'vfs_fstat*'      # time both vfs_fstat() and vfs_fstatat()
    ./funclatency 'c:*printf'       # time the *printf family of functions
    ./funclatency -F 'vfs_r*'       # show one histogram per matched function
`,
  options: [
    { flags: ['-p', '--pid'], kind: 'value', type: INT, help: 'trace this PID only' },
    { flags: ['-i', '--interval'], kind: 'value', type: INT, help: 'summary interval, in seconds' },
    { flags: ['-d', '--duration'], kind: 'value', type: INT, help: 'total duration of trace, in seconds' },
    { flags: ['-T', '--timestamp'], kind: 'flag', help: 'include timestamp on output' },
    { flags: ['-u', '--microseconds'], kind: 'flag', help: 'microsecond histogram' },
    { flags: ['-m', '--milliseconds'], kind: 'flag', help: 'millisecond histogram' },
    { flags: ['-F', '--function'], kind: 'flag', help: 'show a separate histogram per function' },
    {
      flags: ['-r', '--regexp'],
      kind: 'flag',
      help: 'use regular expressions. Default is "*" wildcards only.',
    },
    {
      flags: ['-l', '--level'],
      kind: 'value',
      type: INT,
      help: 'set the level of nested or recursive functions',
    },
    { flags: ['-v', '--verbose'], kind: 'flag', help: 'print the BPF program (for debugging purposes)' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
  positionals: [{ name: 'pattern', help: 'search expression for functions', required: true }],
} as const satisfies ParserSpec;

export interface FunclatencyOptions {
  pid?: number | null;
  /** Histogram unit. */
  unit: 'nsecs' | 'usecs' | 'msecs';
  /** Key the histogram by function (bcc's `need_key`: -F, or user functions without -p). */
  perFunction: boolean;
}

const DIVISOR = { nsecs: 1, usecs: 1000, msecs: 1000000 } as const;

/** bcc's `need_key`: a histogram per function with -F, and per (function, process) for user functions without -p. */
export function needKey(t: Targets, o: { function: boolean; pid?: number | null }): boolean {
  return o.function || (t.spec.kind === 'uprobe' && !o.pid);
}

/**
 * The bpftrace program: entry probes store `nsecs` by thread id; return probes add the time to `@total`/`@count`
 * (ns) and to the `@dist` histogram in the unit, keyed by `func` (and `pid` for user functions) when
 * `perFunction`.
 */
export function buildProgram(t: Targets, o: FunclatencyOptions): string {
  const ret = returnSpec(t.spec);
  const div = DIVISOR[o.unit];
  const user = t.spec.kind === 'uprobe';
  let p = configBlock();
  p += `${t.attachPoints.join(',\n')}${predicate([o.pid !== null && o.pid !== undefined ? `pid == ${o.pid}` : null])} {\n`;
  p += '  @start[tid] = nsecs;\n}\n';
  p += `${t.names.map((n) => toAttachPoint(ret, n)).join(',\n')} /@start[tid]/ {\n`;
  p += '  $delta = nsecs - @start[tid];\n  delete(@start[tid]);\n';
  p += '  @total = sum($delta);\n  @count = count();\n';
  const key = o.perFunction ? (user ? '[func, pid]' : '[func]') : '';
  p += `  @dist${key} = hist(${div === 1 ? '$delta' : `$delta / ${div}`});\n}\n`;
  return p;
}

/** The rows of a keyed `@dist[func(, pid)]` map, sorted by name, then pid. */
function keyedRows(dist: MapDump): { name: string; pid: bigint | null; vals: bigint[] }[] {
  const rows: { name: string; pid: bigint | null; vals: bigint[] }[] = [];
  for (const e of dist.entries) {
    if (e.value.kind !== 'hist') continue;
    const pid = e.key.length > 1 ? (keyPart(e.key[1]) as bigint) : null;
    rows.push({ name: String(keyPart(e.key[0])), pid, vals: bccLog2Slots(e.value.buckets) });
  }
  return rows.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : Number((a.pid ?? 0n) - (b.pid ?? 0n))));
}

/** `-F` / keyed sections: `NAME [PID]` for user functions, `NAME` for kernel ones; sorted by name, then pid. */
export function sections(dist: MapDump): HistSection[] {
  return keyedRows(dist).map((r) => ({ label: r.pid === null ? r.name : `${r.name} [${r.pid}]`, vals: r.vals }));
}

/** bcc's `avg = A UNIT, total: T UNIT, count: C` paragraph from the ns total (empty when nothing was timed). */
export function averageLine(totalNs: bigint, count: bigint, unit: FunclatencyOptions['unit']): string {
  if (count <= 0n) return '';
  const total = Number(totalNs) / DIVISOR[unit];
  return pyFormat(
    '\navg = %ld %s, total: %ld %s, count: %ld\n\n',
    Math.trunc(total / Number(count)),
    unit,
    Math.trunc(total),
    unit,
    count,
  );
}

/** One interval of funclatency (runTool's interval, `--json`'s object; the framework's {@link HistInterval}). */
export interface FunclatencyInterval extends HistInterval {
  /** Wall-clock time at the end of the interval, HH:MM:SS (bcc's -T line). */
  time: string;
  unit: FunclatencyOptions['unit'];
  /**
   * One histogram, or one per function (`function`; and `pid` for user functions without -p) when keyed (-F,
   * or user functions without -p), in name then PID order.
   */
  histograms: { function?: string; pid?: number; buckets: Log2Bucket[] }[];
  /** The interval's calls and their total time in nanoseconds. */
  count: bigint;
  totalNs: bigint;
}

/** Read one interval from the maps (`perFunction`: the histogram is keyed by function). */
export function readInterval(
  t: Pick<Tracer, 'readMap'>,
  o: Pick<FunclatencyOptions, 'unit' | 'perFunction'>,
  now: Date = new Date(),
): FunclatencyInterval {
  const dist = t.readMap('dist');
  let histograms: FunclatencyInterval['histograms'];
  if (o.perFunction) {
    histograms = keyedRows(dist).map((r) => ({
      function: r.name,
      ...(r.pid !== null ? { pid: Number(r.pid) } : {}),
      buckets: log2Buckets(r.vals),
    }));
  } else histograms = [{ buckets: log2Buckets(log2Slots(dist)) }];
  const totalNs = scalarValues(t.readMap('total'))[0]?.value ?? 0n;
  const count = scalarValues(t.readMap('count'))[0]?.value ?? 0n;
  return { time: clockTime(now), unit: o.unit, histograms, count, totalNs };
}

/** What one interval prints (bcc's loop body); `last` adds "Detaching...". */
export function formatTick(
  i: FunclatencyInterval,
  o: { timestamp: boolean; perFunction: boolean },
  now: Date,
  last: boolean,
): string {
  let out = intervalPrefix(o.timestamp, now);
  if (o.perFunction) {
    const secs = i.histograms.map((h) => ({
      label: h.pid === undefined ? h.function! : `${h.function!} [${h.pid}]`,
      vals: log2SlotsOf(h.buckets),
    }));
    out += formatSectionedLog2Hist(secs, 'Function', i.unit);
  } else out += formatLog2Hist(log2SlotsOf(i.histograms[0]?.buckets ?? []), i.unit);
  out += averageLine(i.totalNs, i.count, i.unit);
  if (last) out += 'Detaching...\n';
  return out;
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const pattern = a.pattern ?? '';
  const parts = pattern.split(':');
  if (parts.length > 2) {
    writer.line(`Error: unrecognized pattern format '${pattern}'`);
    return 1;
  }
  if (parts.length === 2 && !findLibrary(parts[0]!)) {
    writer.line(`Error: can't resolve library ${parts[0]}`);
    return 1;
  }
  if (a.level !== null && a.level > 1) {
    throw unsupported('funclatency: -l (nested or recursive levels) is not supported by bpfscope yet');
  }
  let t: Targets;
  try {
    t = resolveTargets(pattern, { regexp: a.regexp });
  } catch (e) {
    if (!(e instanceof ProbeSpecError)) throw e;
    writer.line(`Error: ${e.message}`);
    return 1;
  }
  if (t.names.length === 0) {
    writer.line(`0 functions matched by "${pattern}". Exiting.`);
    return 1;
  }
  const unit = a.milliseconds ? 'msecs' : a.microseconds ? 'usecs' : 'nsecs';
  const perFunction = needKey(t, { function: a.function, pid: a.pid });
  const program = buildProgram(t, { pid: a.pid, unit, perFunction });
  // --ebpf: the framework prints the program (runProgram); -v prints it before running.
  if (a.verbose && !a.ebpf) writer.write(program);
  const o = { unit, perFunction, timestamp: a.timestamp } as const;
  return runIntervals({
    tool: 'funclatency',
    program,
    writer,
    seconds: intervalOf(a.interval, a.duration),
    durationSec: a.duration,
    onStarted: () => writer.write(tracingLine(t.names.length, pattern)),
    read: (tracer, now) => readInterval(tracer, o, now),
    format: (i, now, last) => formatTick(i, o, now, last),
    clear: ['dist', 'total', 'count'],
  });
}

export const TOOL = defineTool({
  spec: SPEC,
  results: 'intervals',
  run,
  heatmap: { kind: 'hist', title: 'Function Latency Heat Map' },
});

/** `bpfscope funclatency [flags] pattern`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
