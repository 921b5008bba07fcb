/**
 * statsnoop: trace stat() family system calls. Follows bcc's `tools/statsnoop.py` (flags, help, header,
 * `%-7d %-16s %4d %3d` rows, `-t` seconds since the first shown event, `-s` syscall names) on the
 * `syscalls:sys_enter_*`/`sys_exit_*` tracepoints of stat, statx, statfs, newstat, newlstat, fstatat64 and
 * newfstatat (those this kernel has) instead of kprobes. The path is read at syscall entry (bcc reads it at exit).
 */
import { INT, type Parsed, type ParserSpec } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { runProgram, toolMain } from './framework/runner.js';
import { tracepointExists } from './framework/system.js';

export const SPEC: ParserSpec = {
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
};

/** bcc's `sys_names`, indexed by its `enum sys_type` (0 is "N/A"). */
export const SYS_NAMES = ['N/A', 'stat', 'statx', 'statfs', 'newstat', 'newlstat', 'fstatat64', 'newfstatat'];

/** Event record fields, in order (the path last). */
export const FIELDS = ['ts_ns', 'pid', 'ret', 'type', 'comm', 'path'] as const;

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
  p += '    printf("%llu\\x1f%d\\x1f%d\\x1f%d\\x1f%s\\x1f%s\\n", nsecs, pid, args.ret, $i.0, comm, $i.1);\n';
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

/** bcc's `print_event`: the line for the event fields, or null when `-x` drops it. */
export function formatRow(f: string[], o: RowOptions, state: { startTs: bigint }): string | null {
  const [tsText, pid, retText, type, comm = '', path = ''] = f;
  const ret = Number(retText);
  const fd = ret >= 0 ? ret : -1;
  const err = ret >= 0 ? 0 : -ret;
  if (ret >= 0 && o.failed) return null;
  const ts = BigInt(tsText ?? '0');
  if (state.startTs === 0n) state.startTs = ts;
  let out = '';
  if (o.timestamp) {
    const d = ts - state.startTs;
    out += pyFormat('%-14s', `${d / 1000000000n}.${(d % 1000000000n).toString().padStart(9, '0')}`);
  }
  out += pyFormat('%-7d %-16s %4d %3d', Number(pid), comm, fd, err);
  if (o.sysname) out += pyFormat(' %-12s', SYS_NAMES[Number(type)] ?? 'N/A');
  return `${out} ${path}\n`;
}

async function run(a: Parsed, writer: ToolWriter): Promise<number> {
  const syscalls = SYS_NAMES.slice(1).filter((sc) => tracepointExists('syscalls', `sys_enter_${sc}`));
  const program = buildProgram(syscalls, a.pid as number | null);
  const o: RowOptions = {
    timestamp: a.timestamp as boolean,
    sysname: a.sysname as boolean,
    failed: a.failed as boolean,
  };
  const state = { startTs: 0n };
  return runProgram({
    tool: 'statsnoop',
    program,
    writer,
    fieldCount: FIELDS.length,
    onStarted: () => writer.write(header(o)),
    onEvent: (f) => {
      const line = formatRow(f, o, state);
      if (line !== null) writer.write(line);
    },
  });
}

/** `bpfscope statsnoop [flags]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(SPEC, argv, run);
}
