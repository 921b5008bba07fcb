/**
 * syncsnoop: trace sync() and related system calls (sync, fsync, fdatasync, msync, sync_file_range, syncfs).
 * Follows bcc's `tools/syncsnoop.py` (header, `%-18.9f %-16s %-16s` rows with the kernel's monotonic time in
 * seconds) on the `syscalls:sys_enter_*` tracepoints instead of kprobes. bcc's syncsnoop takes no options; this
 * one accepts `-h` (and `--ebpf`, as the other tools).
 */
import type { Parsed, ParserSpec } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { runProgram, toolMain } from './framework/runner.js';
import { tracepointExists } from './framework/system.js';

export const SPEC: ParserSpec = {
  prog: 'syncsnoop',
  description: 'Trace sync() and related syscalls',
  options: [{ flags: ['--ebpf'], kind: 'flag', help: null }],
};

/** bcc's `sys_names`, indexed by its `enum sync_syscalls` (0 and 7 are "N/A"). */
export const SYS_NAMES = ['N/A', 'sync', 'fsync', 'fdatasync', 'msync', 'sync_file_range', 'syncfs', 'N/A'];

/** Event record fields, in order. */
export const FIELDS = ['ts_us', 'sys', 'comm'] as const;

/** The bpftrace program tracing `syscalls` (names from {@link SYS_NAMES}). */
export function buildProgram(syscalls: string[]): string {
  let p = configBlock();
  for (const sc of syscalls) {
    p += `tracepoint:syscalls:sys_enter_${sc} {\n`;
    p += `  printf("%llu\\x1f%d\\x1f%s\\n", nsecs / 1000, ${SYS_NAMES.indexOf(sc)}, comm);\n}\n`;
  }
  return p;
}

/** bcc's header line. */
export function header(): string {
  return `${pyFormat('%-18s %-16s %-16s', 'TIME(s)', 'COMM', 'CALL')}\n`;
}

/** One output line: microseconds of CLOCK_MONOTONIC as seconds with 9 decimals (bcc's `float(ts) / 1000000`). */
export function formatRow(f: string[]): string {
  const [tsText, sys, comm = ''] = f;
  const us = BigInt(tsText ?? '0');
  const secs = `${us / 1000000n}.${(us % 1000000n).toString().padStart(6, '0')}000`;
  return `${pyFormat('%-18s %-16s', secs, comm)}${pyFormat(' %-16s', SYS_NAMES[Number(sys)] ?? 'N/A')}\n`;
}

async function run(a: Parsed, writer: ToolWriter): Promise<number> {
  const syscalls = SYS_NAMES.slice(1, 7).filter((sc) => tracepointExists('syscalls', `sys_enter_${sc}`));
  const program = buildProgram(syscalls);
  return runProgram({
    tool: 'syncsnoop',
    program,
    writer,
    fieldCount: FIELDS.length,
    onStarted: () => writer.write(header()),
    onEvent: (f) => writer.write(formatRow(f)),
  });
}

/** `bpfscope syncsnoop`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(SPEC, argv, run);
}
