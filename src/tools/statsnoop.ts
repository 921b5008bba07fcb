/**
 * statsnoop: trace stat() family system calls. Follows bcc's `tools/statsnoop.py` (flags, help, header,
 * `%-7d %-16s %4d %3d` rows, `-t` seconds since the first shown event, `-s` syscall names) on the
 * `syscalls:sys_enter_*`/`sys_exit_*` tracepoints of stat, statx, statfs, newstat, newlstat, fstatat64 and
 * newfstatat (those this kernel has) instead of kprobes. The path is read at syscall entry (bcc reads it at exit).
 */
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { type DecodedOf, records } from './framework/record.js';
import { defineTool, runProgram, toolMain } from './framework/runner.js';
import { tracepointExists } from './framework/system.js';

export const SPEC = {
  prog: 'statsnoop',
  description: 'Trace stat() syscalls',
  raw: true,
  epilog: `examples:
    ./statsnoop           # trace all stat() syscalls
    ./statsnoop -t        # include timestamps
    ./statsnoop -s        # include syscall name
    ./statsnoop -x        # only show failed stats
    ./statsnoop -p 181    # only trace PID 181
`,
  options: [
    { flags: ['-t', '--timestamp'], kind: 'flag', help: 'include timestamp on output' },
    { flags: ['-s', '--sysname'], kind: 'flag', help: 'include syscall name on output' },
    { flags: ['-x', '--failed'], kind: 'flag', help: 'only show failed stats' },
    { flags: ['-p', '--pid'], kind: 'value', type: INT, help: 'trace this PID only' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
} as const satisfies ParserSpec;

/** bcc's `sys_names`, indexed by its `enum sys_type` (0 is "N/A"). */
export const SYS_NAMES = ['N/A', 'stat', 'statx', 'statfs', 'newstat', 'newlstat', 'fstatat64', 'newfstatat'];

/** The program's record: one per call; `type` indexes {@link SYS_NAMES}. */
export const RECORDS = records({
  stat: { tsNs: 'u64', pid: 'u32', ret: 'num', type: 'u32', comm: 'str', path: 'str' },
});
export type StatRecord = DecodedOf<typeof RECORDS.decls>;

/** One stat call (runTool's row, `--json`'s object). */
export interface StatRow {
  /** Nanoseconds since the first call shown (bcc's -t column is this in seconds). */
  elapsedNs: number;
  pid: number;
  comm: string;
  /** The call's return when it succeeded (bcc's FD column), else -1. */
  fd: number;
  /** The errno of a failed call, else 0. */
  err: number;
  /** The system call (bcc's -s column): stat, statx, statfs, newstat, newlstat, fstatat64 or newfstatat. */
  syscall: string;
  /** The path as passed to the call. */
  path: string;
}

/** The bpftrace program tracing `syscalls` (names from {@link SYS_NAMES}). */
export function buildProgram(syscalls: string[], pid?: number | null): string {
  let p = configBlock();
  const who = pid !== null && pid !== undefined ? `pid == ${pid}` : null;
  for (const sc of syscalls) {
    p += `tracepoint:syscalls:sys_enter_${sc}${predicate([who])} {\n`;
    // statfs(2) names its path argument `pathname`; the others `filename`. The path is read at entry (see
    // opensnoop.ts: no user pointers in maps yet).
    const arg = sc === 'statfs' ? 'pathname' : 'filename';
    p += `  @info[tid] = (${SYS_NAMES.indexOf(sc)}, str(args.${arg}, 255));\n}\n`;
  }
  p += `${syscalls.map((sc) => `tracepoint:syscalls:sys_exit_${sc}`).join(',\n')} {\n`;
  p += '  $i = @info[tid];\n  if ($i.0 != 0) {\n';
  p += `    ${RECORDS.emit('stat', { tsNs: 'nsecs', pid: 'pid', ret: 'args.ret', type: '$i.0', comm: 'comm', path: '$i.1' })}\n`;
  p += '  }\n  delete(@info[tid]);\n}\n';
  return p;
}

export interface RowOptions {
  timestamp: boolean;
  sysname: boolean;
  failed: boolean;
}

/** bcc's header line. */
export function header(o: RowOptions): string {
  let h = o.timestamp ? pyFormat('%-14s', 'TIME(s)') : '';
  h += pyFormat('%-7s %-16s %4s %3s', 'PID', 'COMM', 'FD', 'ERR');
  if (o.sysname) h += pyFormat(' %-12s', 'SYSCALL');
  return `${h} PATH\n`;
}

/**
 * bcc's `print_event` up to the line: the row of one record, or null when `-x` drops it. `state.startTs` is bcc's
 * `start_ts` (the first shown call's time, ns; 0 before it).
 */
export function toRow(r: StatRecord, o: Pick<RowOptions, 'failed'>, state: { startTs: bigint }): StatRow | null {
  if (r.ret >= 0 && o.failed) return null;
  if (state.startTs === 0n) state.startTs = r.tsNs;
  return {
    elapsedNs: Number(r.tsNs - state.startTs),
    pid: r.pid,
    comm: r.comm,
    fd: r.ret >= 0 ? r.ret : -1,
    err: r.ret >= 0 ? 0 : -r.ret,
    syscall: SYS_NAMES[r.type] ?? 'N/A',
    path: r.path,
  };
}

/** bcc's line for one row. */
export function formatRow(row: StatRow, o: RowOptions): string {
  let out = '';
  if (o.timestamp) {
    const d = row.elapsedNs;
    out += pyFormat('%-14s', `${Math.floor(d / 1e9)}.${String(d % 1e9).padStart(9, '0')}`);
  }
  out += pyFormat('%-7d %-16s %4d %3d', row.pid, row.comm, row.fd, row.err);
  if (o.sysname) out += pyFormat(' %-12s', row.syscall);
  return `${out} ${row.path}\n`;
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const syscalls = SYS_NAMES.slice(1).filter((sc) => tracepointExists('syscalls', `sys_enter_${sc}`));
  const program = buildProgram(syscalls, a.pid);
  const o: RowOptions = { timestamp: a.timestamp, sysname: a.sysname, failed: a.failed };
  const state = { startTs: 0n };
  return runProgram({
    tool: 'statsnoop',
    program,
    writer,
    onStarted: () => writer.write(header(o)),
    records: RECORDS,
    onRecord: (r: StatRecord) => {
      const row = toRow(r, o, state);
      if (row !== null) writer.emit(row, (x) => formatRow(x, o));
    },
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'rows', run });

/** `bpfscope statsnoop [flags]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
