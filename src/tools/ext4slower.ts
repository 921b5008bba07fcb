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
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import { firstKernelFunction, kernelSymbolAddress, kfuncKind, noKfuncError } from './framework/kfunc.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { type DecodedOf, records } from './framework/record.js';
import { defineTool, runProgram, toolMain } from './framework/runner.js';
import { clockTime } from './framework/system.js';

export const SPEC = {
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
} as const satisfies ParserSpec;

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
const TYPES = ['R', 'W', 'O', 'S'] as const;

/**
 * The program's record: one per operation over the threshold: its end time (µs, CLOCK_MONOTONIC), bcc's TRACE_*
 * number, the bytes (read/write's return), the file offset at entry, the latency (µs), the process and the file
 * name (last).
 */
export const RECORDS = records({
  op: {
    tsUs: 'num',
    type: 'u32',
    size: 'u32',
    offset: 'num',
    deltaUs: 'num',
    pid: 'u32',
    comm: 'str',
    file: 'str',
  },
});
export type Ext4Record = DecodedOf<typeof RECORDS.decls>;

/** One slow operation (runTool's row, `--json`'s object). */
export interface Ext4Row {
  /** Wall-clock time when the line was printed, HH:MM:SS. */
  time: string;
  /** When the operation ended, µs of CLOCK_MONOTONIC (bcc's ENDTIME_us of -j). */
  endTimeUs: number;
  comm: string;
  pid: number;
  /** `R` read, `W` write, `O` open, `S` fsync. */
  type: 'R' | 'W' | 'O' | 'S';
  /** Bytes read or written (0 for open and fsync). */
  bytes: number;
  /** File offset of a read or write, bytes (0 for open and fsync); the text shows it in KiB (OFF_KB). */
  offset: number;
  /** The operation's latency, µs (the text shows ms, LAT(ms)). */
  latencyUs: number;
  /** The file's name (its dentry name, not the path). */
  file: string;
}

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
    const rec = RECORDS.emit('op', {
      tsUs: 'nsecs / 1000',
      type: String(type),
      size: '(uint32)retval',
      offset: '$i.2',
      deltaUs: '$delta_us',
      pid: 'pid',
      comm: 'comm',
      file: `str($de->d_name.name, ${NAME_BYTES + 1})`,
    });
    p += `        ${rec}\n      }\n    }\n  }\n}\n`;
  }
  return p;
}

/** bcc's header lines (CSV: one line of field names). */
export function header(minMs: number, csv: boolean): string {
  if (csv) return 'ENDTIME_us,TASK,PID,TYPE,BYTES,OFFSET_b,LATENCY_us,FILE\n';
  const title = minMs === 0 ? 'Tracing ext4 operations' : `Tracing ext4 operations slower than ${minMs} ms`;
  return `${title}\n${pyFormat('%-8s %-14s %-6s %1s %-7s %-8s %7s %s', 'TIME', 'COMM', 'PID', 'T', 'BYTES', 'OFF_KB', 'LAT(ms)', 'FILENAME')}\n`;
}

/** The row of one record. */
export function toRow(r: Ext4Record, time: string = clockTime()): Ext4Row {
  return {
    time,
    endTimeUs: r.tsUs,
    comm: r.comm,
    pid: r.pid,
    type: TYPES[r.type] ?? 'R',
    bytes: r.size,
    offset: r.offset,
    latencyUs: r.deltaUs,
    file: r.file,
  };
}

/** bcc's line for one row (`csv`: -j's comma-separated fields). */
export function formatRow(row: Ext4Row, csv: boolean): string {
  if (csv) {
    return `${row.endTimeUs},${row.comm},${row.pid},${row.type},${row.bytes},${row.offset},${row.latencyUs},${row.file}\n`;
  }
  return `${pyFormat('%-8s %-14.14s %-6s %1s %-7s %-8d %7.2f %s', row.time, row.comm, String(row.pid), row.type, String(row.bytes), Math.trunc(row.offset / 1024), row.latencyUs / 1000, row.file)}\n`;
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  // --ebpf prints the kprobe program even where kprobes are missing
  if (writer.mode !== 'ebpf' && kfuncKind() !== 'kprobe') {
    throw noKfuncError('ext4slower', 'timing ext4_file_read_iter() and the other ext4 file operations', false);
  }
  const ops = kernelSymbolAddress('ext4_file_operations');
  if (ops === undefined) {
    writer.line('ERROR: no ext4_file_operations in /proc/kallsyms. Exiting.');
    writer.line('HINT: the kernel should be built with CONFIG_KALLSYMS_ALL.');
    return 1;
  }
  const minMs = a.min_ms;
  const program = buildProgram({
    readFunc: firstKernelFunction(['ext4_file_read_iter']) ?? 'generic_file_read_iter',
    ext4Ops: ops,
    minMs,
    pid: a.pid,
  });
  const csv = a.csv;
  return runProgram({
    tool: 'ext4slower',
    program,
    writer,
    onStarted: () => writer.write(header(minMs, csv)),
    records: RECORDS,
    onRecord: (r: Ext4Record) => writer.emit(toRow(r), (row) => formatRow(row, csv)),
  });
}

export const TOOL = defineTool({
  spec: SPEC,
  results: 'rows',
  run,
  heatmap: {
    kind: 'events',
    title: 'ext4 Operation Latency Heat Map',
    point: (r: Ext4Row) => ({ timeUs: r.endTimeUs, latencyUs: r.latencyUs }),
  },
});

/** `bpfscope ext4slower [-j] [-p PID] [min_ms]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
