/**
 * opensnoop: trace open() system calls, one line per call. Follows bcc's `tools/opensnoop.py` (flags, help,
 * header, `%-6d %-16s %4d %3d` columns, FD/ERR split, `-T` seconds since the first event, `-n` substring match on
 * the comm in user space) on the `syscalls:sys_enter_*`/`sys_exit_*` tracepoints of open, openat and openat2
 * (those this kernel has) instead of kprobes/fentry. The path is read at syscall exit, as bcc's return probe does,
 * when the page is known to be resident.
 *
 * Not supported: `-F` (walks task->fs->pwd dentries: struct dereference and loops), `--cgroupmap`/`--mntnsmap`
 * (pinned BPF maps). openat2() passes its flags in a user-space `struct open_how`, which cannot be read without
 * pointer dereference: with `-e`/`-f` openat2 calls are not traced (a note says so on stderr).
 */
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import { openFlags } from './framework/fcntl.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { type DecodedOf, records } from './framework/record.js';
import { defineTool, runProgram, toolMain, unsupported } from './framework/runner.js';
import { onlineCpus, shellQuote, tracepointExists } from './framework/system.js';

export const SPEC = {
  prog: 'opensnoop',
  description: 'Trace open() syscalls',
  raw: true,
  epilog: `examples:
    ./opensnoop                        # trace all open() syscalls
    ./opensnoop -T                     # include timestamps
    ./opensnoop -U                     # include UID
    ./opensnoop -x                     # only show failed opens
    ./opensnoop -p 181                 # only trace PID 181
    ./opensnoop -t 123                 # only trace TID 123
    ./opensnoop -u 1000                # only trace UID 1000
    ./opensnoop -d 10                  # trace for 10 seconds only
    ./opensnoop -n main                # only print process names containing "main"
    ./opensnoop -e                     # show extended fields
    ./opensnoop -f O_WRONLY -f O_RDWR  # only print calls for writing
    ./opensnoop -F                     # show full path for an open file with relative path
    ./opensnoop --cgroupmap mappath    # only trace cgroups in this BPF map
    ./opensnoop --mntnsmap mappath     # only trace mount namespaces in the map
`,
  options: [
    { flags: ['-T', '--timestamp'], kind: 'flag', help: 'include timestamp on output' },
    { flags: ['-U', '--print-uid'], kind: 'flag', help: 'print UID column' },
    { flags: ['-x', '--failed'], kind: 'flag', help: 'only show failed opens' },
    { flags: ['-p', '--pid'], kind: 'value', type: INT, help: 'trace this PID only' },
    { flags: ['-t', '--tid'], kind: 'value', type: INT, help: 'trace this TID only' },
    { flags: ['--cgroupmap'], kind: 'value', help: 'trace cgroups in this BPF map only' },
    { flags: ['--mntnsmap'], kind: 'value', help: 'trace mount namespaces in this BPF map only' },
    { flags: ['-u', '--uid'], kind: 'value', type: INT, help: 'trace this UID only' },
    { flags: ['-d', '--duration'], kind: 'value', type: INT, help: 'total duration of trace in seconds' },
    { flags: ['-n', '--name'], kind: 'value', help: 'only print process names containing this name' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
    { flags: ['-e', '--extended_fields'], kind: 'flag', help: 'show extended fields' },
    { flags: ['-f', '--flag_filter'], kind: 'append', help: 'filter on flags argument (e.g., O_WRONLY)' },
    { flags: ['-F', '--full-path'], kind: 'flag', help: 'show full path for an open file with relative path' },
    {
      flags: ['-b', '--buffer-pages'],
      kind: 'value',
      type: INT,
      default: 64,
      help: 'size of the perf ring buffer (must be a power of two number of pages and defaults to 64)',
    },
    {
      flags: ['--exec'],
      kind: 'remainder',
      help: 'execute command (as the last parameter, supports multiple parameters, for example: --exec ls -l /tmp',
    },
  ],
} as const satisfies ParserSpec;

export interface OpensnoopOptions {
  pid?: number | null;
  tid?: number | null;
  exec?: boolean;
  uid?: number | null;
  failed?: boolean;
  /** OR of the `-f` flags; null: no flag filter. */
  flagMask?: number | null;
  /** Tracepoint syscalls to trace: some of `open`, `openat`, `openat2`. */
  syscalls: string[];
  ringPages?: number;
}

/** The program's record: one per open call. */
export const RECORDS = records({
  open: {
    tsUs: 'u64',
    uid: 'u32',
    pid: 'u32',
    tid: 'u32',
    ret: 'num',
    flags: 'num',
    mode: 'u32',
    comm: 'str',
    path: 'str',
  },
});
export type OpenRecord = DecodedOf<typeof RECORDS.decls>;

/** One open call (runTool's row, `--json`'s object). */
export interface OpenRow {
  /** Microseconds since the first open seen (bcc's -T column is this in seconds). */
  elapsedUs: number;
  uid: number;
  pid: number;
  tid: number;
  /** The file descriptor, or -1 when the call failed. */
  fd: number;
  /** The errno of a failed call, else 0. */
  err: number;
  /** The open flags (open(2)'s O_* bits; 0 for openat2). */
  flags: number;
  /** The mode, when the flags have O_CREAT or O_TMPFILE (open(2) ignores it otherwise); else null. */
  mode: number | null;
  comm: string;
  /** The path as passed to the call. */
  path: string;
}

/** The bpftrace program for `o`. */
export function buildProgram(o: OpensnoopOptions): string {
  const who = o.tid ? `tid == ${o.tid}` : o.pid ? `pid == ${o.pid}` : o.exec ? 'pid == cpid' : null;
  const uid = o.uid !== null && o.uid !== undefined ? `uid == ${o.uid}` : null;
  let p = configBlock(o.ringPages ? { ringPages: o.ringPages } : {});
  for (const sc of o.syscalls) {
    const flags =
      sc === 'openat2'
        ? null
        : o.flagMask !== null && o.flagMask !== undefined
          ? `(args.flags & ${o.flagMask}) != 0`
          : null;
    // The path is read here, at entry: a user pointer cannot be kept in a map for the exit probe yet.
    const fm = sc === 'openat2' ? '0, 0' : 'args.flags, args.mode';
    p += `tracepoint:syscalls:sys_enter_${sc}${predicate([who, uid, flags])} {\n`;
    p += `  @info[tid] = (1, ${fm}, str(args.filename, 255));\n}\n`;
  }
  const exits = o.syscalls.map((sc) => `tracepoint:syscalls:sys_exit_${sc}`).join(',\n');
  p += `${exits} {\n  $i = @info[tid];\n  if ($i.0 == 1${o.failed ? ' && args.ret < 0' : ''}) {\n`;
  const emit = RECORDS.emit('open', {
    tsUs: 'nsecs / 1000',
    uid: 'uid',
    pid: 'pid',
    tid: 'tid',
    ret: 'args.ret',
    flags: '$i.1',
    mode: '$i.2',
    comm: 'comm',
    path: '$i.3',
  });
  p += `    ${emit}\n  }\n  delete(@info[tid]);\n}\n`;
  return p;
}

export interface RowOptions {
  timestamp: boolean;
  printUid: boolean;
  tid: boolean;
  extended: boolean;
  failed: boolean;
  name: string | null;
  machine?: string;
}

/**
 * bcc's `print_event` up to the line: the row of one record, or null when it is filtered out (`-x`, `-n`).
 * `state.initialTs` is bcc's `initial_ts` (µs of the first event seen).
 */
export function toRow(
  r: OpenRecord,
  o: Pick<RowOptions, 'failed' | 'name' | 'machine'>,
  state: { initialTs: bigint | null },
): OpenRow | null {
  if (state.initialTs === null) state.initialTs = r.tsUs;
  if (o.failed && r.ret >= 0) return null;
  if (o.name !== null && !r.comm.includes(o.name)) return null;
  const O = openFlags(o.machine);
  // bcc records the mode only when O_CREAT or O_TMPFILE is set (open(2) ignores it otherwise).
  const withMode = (r.flags & O.O_CREAT!) !== 0 || (r.flags & O.O_TMPFILE!) === O.O_TMPFILE;
  return {
    elapsedUs: Number(r.tsUs - state.initialTs),
    uid: r.uid,
    pid: r.pid,
    tid: r.tid,
    fd: r.ret >= 0 ? r.ret : -1,
    err: r.ret >= 0 ? 0 : -r.ret,
    flags: r.flags,
    mode: withMode ? r.mode : null,
    comm: r.comm,
    path: r.path,
  };
}

/** bcc's line for one row (with `\n`). */
export function formatRow(row: OpenRow, o: Pick<RowOptions, 'timestamp' | 'printUid' | 'tid' | 'extended'>): string {
  let out = '';
  if (o.timestamp) {
    const d = row.elapsedUs;
    out += pyFormat('%-14s', `${Math.floor(d / 1000000)}.${String(d % 1000000).padStart(6, '0')}000`);
  }
  if (o.printUid) out += pyFormat('%-6d', row.uid);
  out += pyFormat('%-6d %-16s %4d %3d ', o.tid ? row.tid : row.pid, row.comm, row.fd, row.err);
  if (o.extended) {
    out += row.mode === null ? pyFormat('%08o n/a  ', row.flags) : pyFormat('%08o %04o ', row.flags, row.mode);
  }
  return `${out}${row.path}\n`;
}

/** bcc's header line. */
export function header(o: Pick<RowOptions, 'timestamp' | 'printUid' | 'tid' | 'extended'>): string {
  let h = '';
  if (o.timestamp) h += pyFormat('%-14s', 'TIME(s)');
  if (o.printUid) h += pyFormat('%-6s', 'UID');
  h += pyFormat('%-6s %-16s %4s %3s ', o.tid ? 'TID' : 'PID', 'COMM', 'FD', 'ERR');
  if (o.extended) h += pyFormat('%-8s %-4s ', 'FLAGS', 'MODE');
  return `${h}PATH\n`;
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const exec = a.exec;
  if (a.pid && exec) {
    writer.line('ERROR: can only use -p or --exec. Exiting.');
    return 1;
  }
  if (exec !== null && exec.length === 0) {
    writer.line('ERROR: --exec without command. Exiting.');
    return 1;
  }
  let flagMask: number | null = null;
  const O = openFlags();
  for (const flag of a.flag_filter ?? []) {
    if (!flag.startsWith('O_') || O[flag] === undefined) {
      writer.err.write(`Bad flag: ${flag}\n`);
      return 1;
    }
    flagMask = (flagMask ?? 0) | O[flag]!;
  }
  if (a.full_path) {
    throw unsupported(
      "opensnoop: -F/--full-path walks the dentries of task->fs->pwd, which needs struct dereference and loops that bpfscope's language does not have yet",
    );
  }
  if (a.cgroupmap !== null || a.mntnsmap !== null) {
    throw unsupported(
      'opensnoop: --cgroupmap/--mntnsmap read pinned BPF maps, which bpfscope tools do not support yet',
    );
  }
  const extended = a.extended_fields;
  const syscalls = ['open', 'openat', 'openat2'].filter((sc) => tracepointExists('syscalls', `sys_enter_${sc}`));
  const traced = extended || flagMask !== null ? syscalls.filter((s) => s !== 'openat2') : syscalls;
  const pages = a.buffer_pages;
  const program = buildProgram({
    pid: a.pid,
    tid: a.tid,
    exec: exec !== null,
    uid: a.uid,
    failed: a.failed,
    flagMask,
    syscalls: traced,
    ringPages: pages > 0 ? pages * onlineCpus() : 0,
  });
  if (traced.length < syscalls.length && writer.mode !== 'ebpf') {
    writer.err.write(
      'opensnoop: openat2() calls are not traced with -e/-f: their flags are in a user-space struct open_how, which needs pointer dereference\n',
    );
  }
  const rowOpts: RowOptions = {
    timestamp: a.timestamp,
    printUid: a.print_uid,
    tid: Boolean(a.tid),
    extended,
    failed: a.failed,
    name: a.name,
  };
  const state = { initialTs: null as bigint | null };
  return runProgram({
    tool: 'opensnoop',
    program,
    writer,
    records: RECORDS,
    onRecord: (r: OpenRecord) => {
      const row = toRow(r, rowOpts, state);
      if (row !== null) writer.emit(row, (x) => formatRow(x, rowOpts));
    },
    onStarted: () => writer.write(header(rowOpts)),
    durationSec: a.duration,
    ...(exec !== null ? { command: shellQuote(exec) } : {}),
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'rows', run });

/** `bpfscope opensnoop [flags]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
