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
import { INT, type Parsed, type ParserSpec } from './framework/argparse.js';
import { openFlags } from './framework/fcntl.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { runProgram, toolMain, unsupported } from './framework/runner.js';
import { onlineCpus, shellQuote, tracepointExists } from './framework/system.js';

export const SPEC: ParserSpec = {
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
};

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

/** Event record fields, in order (the path last). */
export const FIELDS = ['ts_us', 'uid', 'pid', 'tid', 'ret', 'flags', 'mode', 'comm', 'path'] as const;

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
  p +=
    '    printf("%llu\\x1f%u\\x1f%d\\x1f%d\\x1f%d\\x1f%d\\x1f%u\\x1f%s\\x1f%s\\n", nsecs / 1000, uid, pid, tid, args.ret,\n';
  p += '      $i.1, $i.2, comm, $i.3);\n  }\n  delete(@info[tid]);\n}\n';
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
 * bcc's `print_event`, as a function of the event fields; returns the line (with `\n`) or null when the event is
 * filtered out. `state.initialTs` is bcc's `initial_ts` (µs of the first event seen).
 */
export function formatRow(f: string[], o: RowOptions, state: { initialTs: bigint | null }): string | null {
  const [tsText, uid, pid, tid, retText, flagsText, modeText, comm = '', path = ''] = f;
  const ts = BigInt(tsText ?? '0');
  const ret = Number(retText);
  const fd = ret >= 0 ? ret : -1;
  const err = ret >= 0 ? 0 : -ret;
  if (state.initialTs === null) state.initialTs = ts;
  if (o.failed && ret >= 0) return null;
  if (o.name !== null && !comm.includes(o.name)) return null;
  let out = '';
  if (o.timestamp) {
    const delta = ts - state.initialTs;
    out += pyFormat('%-14s', `${delta / 1000000n}.${(delta % 1000000n).toString().padStart(6, '0')}000`);
  }
  if (o.printUid) out += pyFormat('%-6d', Number(uid));
  out += pyFormat('%-6d %-16s %4d %3d ', Number(o.tid ? tid : pid), comm, fd, err);
  if (o.extended) {
    const flags = Number(flagsText);
    const O = openFlags(o.machine);
    // bcc records the mode only when O_CREAT or O_TMPFILE is set (open(2) ignores it otherwise).
    const withMode = (flags & O.O_CREAT!) !== 0 || (flags & O.O_TMPFILE!) === O.O_TMPFILE;
    const mode = withMode ? Number(modeText) : 0;
    out += mode === 0 && !withMode ? pyFormat('%08o n/a  ', flags) : pyFormat('%08o %04o ', flags, mode);
  }
  return `${out}${path}\n`;
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

async function run(a: Parsed, writer: ToolWriter): Promise<number> {
  const exec = a.exec as string[] | null;
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
  for (const flag of (a.flag_filter as string[] | null) ?? []) {
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
  const extended = a.extended_fields as boolean;
  const syscalls = ['open', 'openat', 'openat2'].filter((sc) => tracepointExists('syscalls', `sys_enter_${sc}`));
  const traced = extended || flagMask !== null ? syscalls.filter((s) => s !== 'openat2') : syscalls;
  const pages = a.buffer_pages as number;
  const program = buildProgram({
    pid: a.pid as number | null,
    tid: a.tid as number | null,
    exec: exec !== null,
    uid: a.uid as number | null,
    failed: a.failed as boolean,
    flagMask,
    syscalls: traced,
    ringPages: pages > 0 ? pages * onlineCpus() : 0,
  });
  if (a.ebpf) {
    writer.write(program);
    return 0;
  }
  if (traced.length < syscalls.length) {
    writer.err.write(
      'opensnoop: openat2() calls are not traced with -e/-f: their flags are in a user-space struct open_how, which needs pointer dereference\n',
    );
  }
  const rowOpts: RowOptions = {
    timestamp: a.timestamp as boolean,
    printUid: a.print_uid as boolean,
    tid: Boolean(a.tid),
    extended,
    failed: a.failed as boolean,
    name: a.name as string | null,
  };
  const state = { initialTs: null as bigint | null };
  return runProgram({
    tool: 'opensnoop',
    program,
    writer,
    fieldCount: FIELDS.length,
    onEvent: (f) => {
      const line = formatRow(f, rowOpts, state);
      if (line !== null) writer.write(line);
    },
    onStarted: () => writer.write(header(rowOpts)),
    durationSec: a.duration as number | null,
    ...(exec !== null ? { command: shellQuote(exec) } : {}),
  });
}

/** `bpfscope opensnoop [flags]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(SPEC, argv, run);
}
