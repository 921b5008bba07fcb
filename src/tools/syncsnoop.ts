/**
 * syncsnoop: trace sync() and related system calls (sync, fsync, fdatasync, msync, sync_file_range, syncfs).
 * Follows bcc's `tools/syncsnoop.py` (header, `%-18.9f %-16s %-16s` rows with the kernel's monotonic time in
 * seconds) on the `syscalls:sys_enter_*` tracepoints instead of kprobes. bcc's syncsnoop takes no options; this
 * one accepts `-h` (and `--ebpf`, as the other tools).
 */
import type { ParserSpec } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { type DecodedOf, records } from './framework/record.js';
import { defineTool, runProgram, toolMain } from './framework/runner.js';
import { tracepointExists } from './framework/system.js';

export const SPEC = {
  prog: 'syncsnoop',
  description: 'Trace sync() and related syscalls',
  options: [{ flags: ['--ebpf'], kind: 'flag', help: null }],
} as const satisfies ParserSpec;

/** bcc's `sys_names`, indexed by its `enum sync_syscalls` (0 and 7 are "N/A"). */
export const SYS_NAMES = ['N/A', 'sync', 'fsync', 'fdatasync', 'msync', 'sync_file_range', 'syncfs', 'N/A'];

/** The program's record: one per call; `sys` indexes {@link SYS_NAMES}. */
export const RECORDS = records({ sync: { tsUs: 'num', sys: 'u32', comm: 'str' } });
export type SyncRecord = DecodedOf<typeof RECORDS.decls>;

/** One call (runTool's row, `--json`'s object). */
export interface SyncRow {
  /** CLOCK_MONOTONIC at the call, in µs (bcc's TIME(s) column is this in seconds). */
  tsUs: number;
  /** The calling task's name. */
  comm: string;
  /** The system call: sync, fsync, fdatasync, msync, sync_file_range or syncfs. */
  call: string;
}

/** The bpftrace program tracing `syscalls` (names from {@link SYS_NAMES}). */
export function buildProgram(syscalls: string[]): string {
  let p = configBlock();
  for (const sc of syscalls) {
    p += `tracepoint:syscalls:sys_enter_${sc} {\n`;
    p += `  ${RECORDS.emit('sync', { tsUs: 'nsecs / 1000', sys: String(SYS_NAMES.indexOf(sc)), comm: 'comm' })}\n}\n`;
  }
  return p;
}

/** bcc's header line. */
export function header(): string {
  return `${pyFormat('%-18s %-16s %-16s', 'TIME(s)', 'COMM', 'CALL')}\n`;
}

/** The row of one record. */
export function toRow(r: SyncRecord): SyncRow {
  return { tsUs: r.tsUs, comm: r.comm, call: SYS_NAMES[r.sys] ?? 'N/A' };
}

/** One output line: microseconds of CLOCK_MONOTONIC as seconds with 9 decimals (bcc's `float(ts) / 1000000`). */
export function formatRow(row: SyncRow): string {
  const us = row.tsUs;
  const secs = `${Math.floor(us / 1000000)}.${String(us % 1000000).padStart(6, '0')}000`;
  return `${pyFormat('%-18s %-16s', secs, row.comm)}${pyFormat(' %-16s', row.call)}\n`;
}

async function run(_a: unknown, writer: ToolWriter): Promise<number> {
  const syscalls = SYS_NAMES.slice(1, 7).filter((sc) => tracepointExists('syscalls', `sys_enter_${sc}`));
  const program = buildProgram(syscalls);
  return runProgram({
    tool: 'syncsnoop',
    program,
    writer,
    onStarted: () => writer.write(header()),
    records: RECORDS,
    onRecord: (r: SyncRecord) => writer.emit(toRow(r), formatRow),
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'rows', run });

/** `bpfscope syncsnoop`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
