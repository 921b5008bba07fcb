/**
 * killsnoop: trace signals sent with the kill() system call. Follows bcc's `tools/killsnoop.py` (flags, help,
 * header with PID columns sized from `pid_max`, `%-9s %-*d %-16s %-4d %-*d %d` rows with the local time) on the
 * `syscalls:sys_enter_kill`/`sys_exit_kill` tracepoints instead of kprobes.
 */
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { type DecodedOf, records } from './framework/record.js';
import { defineTool, runProgram, toolMain } from './framework/runner.js';
import { clockTime, pidMaxText } from './framework/system.js';

export const SPEC = {
  prog: 'killsnoop',
  description: 'Trace signals issued by the kill() syscall',
  raw: true,
  epilog: `examples:
    ./killsnoop           # trace all kill() signals
    ./killsnoop -x        # only show failed kills
    ./killsnoop -p 181    # only trace PID 181
    ./killsnoop -T 189    # only trace target PID 189
    ./killsnoop -s 9      # only trace signal 9
    ./killsnoop -s 9,15   # trace signal 9 and 15
`,
  options: [
    { flags: ['-x', '--failed'], kind: 'flag', help: 'only show failed kill syscalls' },
    { flags: ['-p', '--pid'], kind: 'value', type: INT, help: 'trace this PID only which is the sender of signal' },
    {
      flags: ['-T', '--tpid'],
      kind: 'value',
      type: INT,
      help: 'trace this target PID only which is the receiver of signal',
    },
    {
      flags: ['-s', '--signal'],
      kind: 'value',
      type: {
        name: 'signal list',
        convert: (t: string): number[] => {
          const sigs = t.split(',').map((s) => s.trim());
          if (sigs.some((s) => !/^\d+$/.test(s))) throw new Error(`argparse: invalid signal list: '${t}'`);
          return sigs.map(Number);
        },
      },
      help: 'trace a signal or a signal list',
    },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
} as const satisfies ParserSpec;

export interface KillsnoopOptions {
  pid?: number | null;
  tpid?: number | null;
  signals?: number[] | null;
  failed?: boolean;
}

/** The program's record: one per kill() call (sender, signal, target, result). */
export const RECORDS = records({ kill: { pid: 'u32', sig: 's32', tpid: 's32', ret: 's32', comm: 'str' } });
export type KillRecord = DecodedOf<typeof RECORDS.decls>;

/** One kill() call (runTool's row, `--json`'s object). */
export interface KillRow {
  /** Wall-clock time when the line was printed, HH:MM:SS. */
  time: string;
  /** The sender and its name. */
  pid: number;
  comm: string;
  /** The signal number (0: a permission/existence check). */
  sig: number;
  /** kill()'s pid argument: the target (negative: a process group, -1: every process). */
  tpid: number;
  /** kill()'s return: 0, or a negative errno. */
  ret: number;
}

/** The bpftrace program for `o`. The pid and sig arguments are C ints, as in bcc's kprobe signature. */
export function buildProgram(o: KillsnoopOptions): string {
  const conds = [
    o.tpid !== null && o.tpid !== undefined ? `(int32)args.pid == ${o.tpid}` : null,
    o.pid !== null && o.pid !== undefined ? `pid == ${o.pid}` : null,
    o.signals?.length ? o.signals.map((s) => `(int32)args.sig == ${s}`).join(' || ') : null,
  ];
  let p = configBlock();
  p += `tracepoint:syscalls:sys_enter_kill${predicate(conds)} {\n`;
  p += '  @tpid[tid] = (int32)args.pid;\n  @sig[tid] = (int32)args.sig;\n  @seen[tid] = 1;\n}\n';
  p += 'tracepoint:syscalls:sys_exit_kill {\n';
  p += `  if (@seen[tid]${o.failed ? ' && args.ret < 0' : ''}) {\n`;
  p += `    ${RECORDS.emit('kill', { pid: 'pid', sig: '@sig[tid]', tpid: '@tpid[tid]', ret: 'args.ret', comm: 'comm' })}\n  }\n`;
  p += '  delete(@tpid[tid]);\n  delete(@sig[tid]);\n  delete(@seen[tid]);\n}\n';
  return p;
}

/** bcc's PID column width: the number of digits of pid_max plus one (6 when it cannot be read). */
export function pidColumnWidth(pidMax: string | null = pidMaxText()): number {
  return pidMax ? pidMax.length + 1 : 6;
}

/** bcc's header line. */
export function header(pidBytes: number): string {
  return `${pyFormat('%-9s %-*s %-16s %-4s %-*s %s', 'TIME', pidBytes, 'PID', 'COMM', 'SIG', pidBytes, 'TPID', 'RESULT')}\n`;
}

/** The row of one record. */
export function toRow(r: KillRecord, time: string = clockTime()): KillRow {
  return { time, pid: r.pid, comm: r.comm, sig: r.sig, tpid: r.tpid, ret: r.ret };
}

/** bcc's line for one row. */
export function formatRow(row: KillRow, pidBytes: number): string {
  return `${pyFormat('%-9s %-*d %-16s %-4d %-*d %d', row.time, pidBytes, row.pid, row.comm, row.sig, pidBytes, row.tpid, row.ret)}\n`;
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const program = buildProgram({ pid: a.pid, tpid: a.tpid, signals: a.signal, failed: a.failed });
  const pidBytes = pidColumnWidth();
  return runProgram({
    tool: 'killsnoop',
    program,
    writer,
    onStarted: () => writer.write(header(pidBytes)),
    records: RECORDS,
    onRecord: (r: KillRecord) => writer.emit(toRow(r), (x) => formatRow(x, pidBytes)),
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'rows', run });

/** `bpfscope killsnoop [flags]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
