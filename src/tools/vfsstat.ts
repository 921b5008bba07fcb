/**
 * vfsstat: count calls of some VFS functions per second. Follows bcc's `tools/vfsstat.py` (flags, help, the
 * `%-8s  ` + ` %8s` header of `READ/s`..`RMDIR/s`, `%-8s: ` + ` %8d` rows of count / interval, `[interval]
 * [count]`, `-p PID`): fentry programs on vfs_read, vfs_write, vfs_fsync_range, vfs_open, vfs_create,
 * vfs_unlink, vfs_mkdir and vfs_rmdir when the kernel allows BPF trampolines, else kprobes (bcc's order).
 * No tracepoint gives these facts (the syscall tracepoints miss in-kernel callers such as exec and splice, and
 * count calls, not VFS operations), so a kernel with neither kprobes nor fentry gets one sentence and exit 1.
 * Functions this kernel lacks are left out (their column stays 0); bcc fails to attach instead.
 */
import { INT, type Parsed, type ParserSpec } from './framework/argparse.js';
import { scalarValues } from './framework/histmaps.js';
import { type KfuncKind, kernelFunctionExists, kfuncKind, noKfuncError } from './framework/kfunc.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { runProgram, toolMain } from './framework/runner.js';
import { clockTime } from './framework/system.js';
import type { Tracer } from '../runtime/tracer.js';

export const SPEC: ParserSpec = {
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
};

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

/** One output line: counts per label over `interval` seconds (Python's `value / interval` printed with `%8d`). */
export function formatRow(counts: Record<string, bigint>, interval: number, time: string = clockTime()): string {
  let out = pyFormat('%-8s: ', time);
  for (const s of STATS) {
    const v = counts[s.label] ?? 0n;
    out += pyFormat(' %8d', interval > 0 ? Math.trunc(Number(v) / interval) : 0);
  }
  return `${out}\n`;
}

function readCounts(t: Tracer): Record<string, bigint> {
  const out: Record<string, bigint> = {};
  const names = t.mapNames();
  for (const s of STATS) {
    const name = mapName(s.label);
    if (!names.includes(name)) continue; // not probed on this kernel
    out[s.label] = scalarValues(t.readMap(name)).reduce((a, r) => a + r.value, 0n);
    t.clearMap(name);
  }
  return out;
}

async function run(a: Parsed, writer: ToolWriter): Promise<number> {
  const interval = a.interval as number;
  const kind = kfuncKind(true);
  const funcs = STATS.map((s) => s.func).filter((f) => kind === null || kernelFunctionExists(f));
  const program = buildProgram({ kind: kind ?? 'fentry', pid: a.pid as number | null, funcs });
  if (a.ebpf) {
    writer.write(program);
    return 0;
  }
  if (kind === null) throw noKfuncError('vfsstat', 'counting calls of vfs_read() and the other VFS functions');
  return runProgram({
    tool: 'vfsstat',
    program,
    writer,
    // bcc's interval 0 prints one line at once and exits.
    interval: { seconds: Math.max(0, interval), count: interval > 0 ? (a.count as number) : 1 },
    onStarted: () => writer.write(header()),
    onTick: (t) => writer.write(formatRow(readCounts(t), interval)),
  });
}

/** `bpfscope vfsstat [-p PID] [interval] [count]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(SPEC, argv, run);
}
