/**
 * ext4slower: trace ext4 reads, writes, opens and fsyncs slower than a threshold. Follows bcc's
 * `tools/ext4slower.py` (flags, help, `Tracing ext4 operations slower than N ms`, `%-8s %-14.14s %-6s %1s %-7s
 * %-8d %7.2f %s` rows, `-j` CSV, the ext4_file_operations check on reads, the `ERROR: no ext4_file_operations`
 * exit) with kprobes/kretprobes on ext4_file_read_iter (or generic_file_read_iter), ext4_file_write_iter,
 * ext4_file_open and ext4_sync_file. Entry state is kept per thread (bcc: per pid_tgid, the same key).
 *
 * These functions have no tracepoints giving their latency per file, so without kprobes the tool exits 1 with
 * one sentence.
 */
import { INT, type Parsed, type ParserSpec } from './framework/argparse.js';
import { firstKernelFunction, kernelSymbolAddress, kfuncKind, noKfuncError } from './framework/kfunc.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { runProgram, toolMain } from './framework/runner.js';
import { clockTime } from './framework/system.js';

export const SPEC: ParserSpec = {
  prog: 'ext4slower',
  description: 'Trace common ext4 file operations slower than a threshold',
  raw: true,
  epilog: `examples:
    ./ext4slower             # trace operations slower than 10 ms (default)
    ./ext4slower 1           # trace operations slower than 1 ms
    ./ext4slower -j 1        # ... 1 ms, parsable output (csv)
    ./ext4slower 0           # trace all operations (warning: verbose)
    ./ext4slower -p 185      # trace PID 185 only
`,
  options: [
    { flags: ['-j', '--csv'], kind: 'flag', help: 'just print fields: comma-separated values' },
    { flags: ['-p', '--pid'], kind: 'value', type: INT, help: 'trace this PID only' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
  positionals: [{ name: 'min_ms', help: 'minimum I/O duration to trace, in ms (default 10)', type: INT, default: 10 }],
};

export interface Ext4slowerOptions {
  /** The read function: ext4_file_read_iter, or generic_file_read_iter on old kernels. */
  readFunc: string;
  /** Address of ext4_file_operations (reads through other file systems are left out). */
  ext4Ops: bigint;
  minMs: number;
  pid?: number | null;
}

/** Bytes of the file name kept (DNAME_INLINE_LEN as bcc's data_t.file). */
const NAME_BYTES = 32;

/** Operation letters by bcc's TRACE_* number. */
const TYPES = ['R', 'W', 'O', 'S'];

/** Event record fields, in order (the name last). */
export const FIELDS = ['ts_us', 'type', 'size', 'offset', 'delta_us', 'pid', 'comm', 'file'] as const;

/** The bpftrace program for `o`. */
export function buildProgram(o: Ext4slowerOptions): string {
  const filter = predicate([o.pid ? `pid == ${o.pid}` : null]);
  const entries: [string, number, string, string][] = [
    [o.readFunc, 0, '((struct kiocb *)arg0)->ki_filp', '((struct kiocb *)arg0)->ki_pos'],
    ['ext4_file_write_iter', 1, '((struct kiocb *)arg0)->ki_filp', '((struct kiocb *)arg0)->ki_pos'],
    ['ext4_file_open', 2, '(struct file *)arg1', '0'],
    ['ext4_sync_file', 3, '(struct file *)arg0', '0'],
  ];
  let p = configBlock();
  for (const [fn, type, file, pos] of entries) {
    p += `kprobe:${fn}${filter} {\n  $fp = ${file};\n`;
    if (type === 0) p += `  if ((uint64)$fp->f_op != 0x${o.ext4Ops.toString(16)}) { return; }\n`;
    p += `  if ((uint64)$fp != 0) { @entry[tid] = (nsecs, (uint64)$fp, (uint64)${pos}); }\n}\n`;
  }
  for (const [fn, type] of entries) {
    p += `kretprobe:${fn} {\n  $i = @entry[tid];\n  if ($i.0 != 0) {\n    delete(@entry[tid]);\n`;
    p += '    $delta_us = (nsecs - $i.0) / 1000;\n';
    p += `    if (${o.minMs === 0 ? '1' : `$delta_us > ${o.minMs * 1000}`}) {\n`;
    p += '      $de = ((struct file *)$i.1)->f_path.dentry;\n      if ($de->d_name.len != 0) {\n';
    p += '        printf("%llu\\x1f%d\\x1f%u\\x1f%llu\\x1f%llu\\x1f%d\\x1f%s\\x1f%s\\n", nsecs / 1000, ';
    p += `${type}, (uint32)retval, $i.2, $delta_us, pid, comm, str($de->d_name.name, ${NAME_BYTES + 1}));\n`;
    p += '      }\n    }\n  }\n}\n';
  }
  return p;
}

/** bcc's header lines (CSV: one line of field names). */
export function header(minMs: number, csv: boolean): string {
  if (csv) return 'ENDTIME_us,TASK,PID,TYPE,BYTES,OFFSET_b,LATENCY_us,FILE\n';
  const title = minMs === 0 ? 'Tracing ext4 operations' : `Tracing ext4 operations slower than ${minMs} ms`;
  return `${title}\n${pyFormat('%-8s %-14s %-6s %1s %-7s %-8s %7s %s', 'TIME', 'COMM', 'PID', 'T', 'BYTES', 'OFF_KB', 'LAT(ms)', 'FILENAME')}\n`;
}

/** One event (see {@link FIELDS}) as bcc prints it. */
export function formatRow(f: string[], csv: boolean, time: string = clockTime()): string {
  const [ts, type, size, offset, delta, pid, comm = '', file = ''] = f;
  const t = TYPES[Number(type)] ?? 'R';
  if (csv) return `${ts},${comm},${pid},${t},${size},${offset},${delta},${file}\n`;
  return `${pyFormat('%-8s %-14.14s %-6s %1s %-7s %-8d %7.2f %s', time, comm, String(Number(pid)), t, String(Number(size)), Math.trunc(Number(offset) / 1024), Number(delta) / 1000, file)}\n`;
}

async function run(a: Parsed, writer: ToolWriter): Promise<number> {
  if (!a.ebpf && kfuncKind() !== 'kprobe') {
    throw noKfuncError('ext4slower', 'timing ext4_file_read_iter() and the other ext4 file operations', false);
  }
  const ops = kernelSymbolAddress('ext4_file_operations');
  if (ops === undefined) {
    writer.line('ERROR: no ext4_file_operations in /proc/kallsyms. Exiting.');
    writer.line('HINT: the kernel should be built with CONFIG_KALLSYMS_ALL.');
    return 1;
  }
  const minMs = a.min_ms as number;
  const program = buildProgram({
    readFunc: firstKernelFunction(['ext4_file_read_iter']) ?? 'generic_file_read_iter',
    ext4Ops: ops,
    minMs,
    pid: a.pid as number | null,
  });
  const csv = a.csv as boolean;
  return runProgram({
    tool: 'ext4slower',
    program,
    writer,
    fieldCount: FIELDS.length,
    onStarted: () => writer.write(header(minMs, csv)),
    onEvent: (f) => writer.write(formatRow(f, csv)),
  });
}

/** `bpfscope ext4slower [-j] [-p PID] [min_ms]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(SPEC, argv, run);
}
