/**
 * vfsstat: count calls of some VFS functions per second. Follows bcc's `tools/vfsstat.py` (flags, help, the
 * `%-8s  ` + ` %8s` header of `READ/s`..`RMDIR/s`, `%-8s: ` + ` %8d` rows of count / interval, `[interval]
 * [count]`, `-p PID`): fentry programs on vfs_read, vfs_write, vfs_fsync_range, vfs_open, vfs_create,
 * vfs_unlink, vfs_mkdir and vfs_rmdir when the kernel allows BPF trampolines, else kprobes (bcc's order).
 * No tracepoint gives these facts (the syscall tracepoints miss in-kernel callers such as exec and splice, and
 * count calls, not VFS operations), so a kernel with neither kprobes nor fentry gets one sentence and exit 1.
 * Functions this kernel lacks are left out (their column stays 0); bcc fails to attach instead.
 */
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import { scalarValues } from './framework/histmaps.js';
import { runIntervals } from './framework/interval.js';
import { type KfuncKind, kernelFunctionExists, kfuncKind, noKfuncError } from './framework/kfunc.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { defineTool, toolMain } from './framework/runner.js';
import { clockTime } from './framework/system.js';
import type { Tracer } from '../runtime/tracer.js';

export const SPEC = {
  prog: 'vfsstat',
  description: 'Count some VFS calls.',
  raw: true,
  epilog: `examples:
    ./vfsstat             # count some VFS calls per second
    ./vfsstat -p 185      # trace PID 185 only
    ./vfsstat 2 5         # print 2 second summaries, 5 times
`,
  options: [
    { flags: ['-p', '--pid'], kind: 'value', type: INT, help: 'trace this PID only' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
  positionals: [
    { name: 'interval', help: 'output interval, in seconds', type: INT, default: 1 },
    { name: 'count', help: 'number of outputs', type: INT, default: 99999999 },
  ],
} as const satisfies ParserSpec;

/** bcc's columns, in order: label and the kernel function counted. */
export const STATS: readonly { label: string; func: string }[] = [
  { label: 'READ', func: 'vfs_read' },
  { label: 'WRITE', func: 'vfs_write' },
  { label: 'FSYNC', func: 'vfs_fsync_range' },
  { label: 'OPEN', func: 'vfs_open' },
  { label: 'CREATE', func: 'vfs_create' },
  { label: 'UNLINK', func: 'vfs_unlink' },
  { label: 'MKDIR', func: 'vfs_mkdir' },
  { label: 'RMDIR', func: 'vfs_rmdir' },
];

export interface VfsstatOptions {
  kind: KfuncKind;
  pid?: number | null;
  /** Functions to probe (default: all of {@link STATS}). */
  funcs?: string[];
}

/** Map name holding the count of `label` (`@read`, `@write`, ...). */
function mapName(label: string): string {
  return label.toLowerCase();
}

/** The bpftrace program: one `@<label> = count()` per probed function, filtered on the process ID with -p. */
export function buildProgram(o: VfsstatOptions): string {
  const funcs = o.funcs ?? STATS.map((s) => s.func);
  const filter = predicate([o.pid ? `pid == ${o.pid}` : null]);
  let p = configBlock();
  for (const s of STATS) {
    if (!funcs.includes(s.func)) continue;
    p += `${o.kind}:${s.func}${filter} { @${mapName(s.label)} = count(); }\n`;
  }
  return p;
}

/** bcc's header line. */
export function header(): string {
  return `${pyFormat('%-8s  ', 'TIME')}${STATS.map((s) => pyFormat(' %8s', `${s.label}/s`)).join('')}\n`;
}

/** One interval of vfsstat (runTool's interval, `--json`'s object). */
export interface VfsstatInterval {
  /** Wall-clock time of the line, HH:MM:SS. */
  time: string;
  /** The interval in seconds: bcc prints each count divided by it (truncated), as calls per second. */
  interval: number;
  /** Calls in the interval by bcc's column label (READ, WRITE, FSYNC, OPEN, CREATE, UNLINK, MKDIR, RMDIR). */
  counts: Record<string, bigint>;
}

/** One output line: counts per label over `interval` seconds (Python's `value / interval` printed with `%8d`). */
export function formatRow(counts: Record<string, bigint>, interval: number, time: string = clockTime()): string {
  let out = pyFormat('%-8s: ', time);
  for (const s of STATS) {
    const v = counts[s.label] ?? 0n;
    out += pyFormat(' %8d', interval > 0 ? Math.trunc(Number(v) / interval) : 0);
  }
  return `${out}\n`;
}

/** The counts of one interval (every label; 0 for a function not probed on this kernel). */
export function readCounts(t: Pick<Tracer, 'readMap' | 'mapNames'>): Record<string, bigint> {
  const out: Record<string, bigint> = {};
  const names = t.mapNames();
  for (const s of STATS) {
    const name = mapName(s.label);
    out[s.label] = names.includes(name) ? scalarValues(t.readMap(name)).reduce((a, r) => a + r.value, 0n) : 0n;
  }
  return out;
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const interval = a.interval;
  const kind = kfuncKind(true);
  const funcs = STATS.map((s) => s.func).filter((f) => kind === null || kernelFunctionExists(f));
  return runIntervals<VfsstatInterval>({
    tool: 'vfsstat',
    program: buildProgram({ kind: kind ?? 'fentry', pid: a.pid, funcs }),
    writer,
    requires: () => {
      if (kind === null) throw noKfuncError('vfsstat', 'counting calls of vfs_read() and the other VFS functions');
    },
    // bcc's interval 0 prints one line at once and exits.
    seconds: Math.max(0, interval),
    count: interval > 0 ? a.count : 1,
    header: header(),
    read: (t, now) => ({ time: clockTime(now), interval, counts: readCounts(t) }),
    format: (i) => formatRow(i.counts, i.interval, i.time),
    clear: STATS.map((s) => mapName(s.label)),
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'intervals', run });

/** `bpfscope vfsstat [-p PID] [interval] [count]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
