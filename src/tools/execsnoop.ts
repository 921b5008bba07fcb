/**
 * execsnoop: trace new processes through execve(), one line per exec. Follows bcc's `tools/execsnoop.py` as
 * shipped in bcc 0.26 (Debian's bpfcc-tools): flags, help, the `PCOMM PID PPID RET ARGS` header, `%-16s %-7d %-7s
 * %3d %s` rows, `-T` wall clock, `-t` seconds since the start, `-U` UID column, `-q` quoting, `-n`/`-l` regular
 * expressions matched in user space, `--max-args`, `-P` parent filter and `-u USER`; on the
 * `syscalls:sys_enter_execve`/`sys_exit_execve` tracepoints instead of a kprobe/kretprobe pair.
 *
 * As in bcc, the entry probe sends one record per argument (the file name first, then argv[1..max-args-1], then
 * `...` when the list was cut) and the exit probe sends the result; user space collects the arguments by PID and
 * prints them with the result. Each argument is read as at most 128 bytes (bcc's ARGSIZE).
 *
 * Not supported: `--cgroupmap`/`--mntnsmap` (pinned BPF maps).
 */
import { type OptionsOf, type ParserSpec, type ValueType } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { type DecodedOf, records } from './framework/record.js';
import { defineTool, runProgram, toolMain, unsupported } from './framework/runner.js';
import { clockTime, readPpid, uidOfUser } from './framework/system.js';

/** bcc's `parse_uid`: a number, else a user name from the password database. */
const USER: ValueType<number> = {
  name: 'parse_uid',
  convert: (t: string): number => {
    if (/^\s*[+-]?\d+(_\d+)*\s*$/.test(t)) return Number(t.trim().replace(/_/g, ''));
    const uid = uidOfUser(t);
    if (uid === undefined) throw new Error(`argparse: '${t}' is not valid UID or user entry`);
    return uid;
  },
};

export const SPEC = {
  prog: 'execsnoop',
  description: 'Trace exec() syscalls',
  raw: true,
  epilog: `examples:
    ./execsnoop                      # trace all exec() syscalls
    ./execsnoop -x                   # include failed exec()s
    ./execsnoop -T                   # include time (HH:MM:SS)
    ./execsnoop -P 181               # only trace new processes whose parent PID is 181
    ./execsnoop -U                   # include UID
    ./execsnoop -u 1000              # only trace UID 1000
    ./execsnoop -u user              # get user UID and trace only them
    ./execsnoop -t                   # include timestamps
    ./execsnoop -q                   # add "quotemarks" around arguments
    ./execsnoop -n main              # only print command lines containing "main"
    ./execsnoop -l tpkg              # only print command where arguments contains "tpkg"
    ./execsnoop --cgroupmap mappath  # only trace cgroups in this BPF map
    ./execsnoop --mntnsmap mappath   # only trace mount namespaces in the map
`,
  options: [
    { flags: ['-T', '--time'], kind: 'flag', help: 'include time column on output (HH:MM:SS)' },
    { flags: ['-t', '--timestamp'], kind: 'flag', help: 'include timestamp on output' },
    { flags: ['-x', '--fails'], kind: 'flag', help: 'include failed exec()s' },
    { flags: ['--cgroupmap'], kind: 'value', help: 'trace cgroups in this BPF map only' },
    { flags: ['--mntnsmap'], kind: 'value', help: 'trace mount namespaces in this BPF map only' },
    { flags: ['-u', '--uid'], kind: 'value', type: USER, metavar: 'USER', help: 'trace this UID only' },
    { flags: ['-q', '--quote'], kind: 'flag', help: 'Add quotemarks (") around arguments.' },
    { flags: ['-n', '--name'], kind: 'value', help: 'only print commands matching this name (regex), any arg' },
    { flags: ['-l', '--line'], kind: 'value', help: 'only print commands where arg contains this line (regex)' },
    { flags: ['-U', '--print-uid'], kind: 'flag', help: 'print UID column' },
    {
      flags: ['--max-args'],
      kind: 'value',
      default: '20',
      help: 'maximum number of arguments parsed and displayed, defaults to 20',
    },
    { flags: ['-P', '--ppid'], kind: 'value', help: 'trace this parent PID only' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
} as const satisfies ParserSpec;

export interface ExecsnoopOptions {
  uid?: number | null;
  ppid?: number | null;
  /** bcc's MAXARG: the file name plus up to `maxArgs - 1` arguments are read, then `...` if there are more. */
  maxArgs: number;
}

/** The program's records: one per argument, then the exec's result. */
export const RECORDS = records({
  arg: { pid: 'u32', arg: 'str' },
  exit: { pid: 'u32', ppid: 'u32', uid: 'u32', ret: 's32', comm: 'str' },
});
export type ExecRecord = DecodedOf<typeof RECORDS.decls>;

/** One exec (runTool's row, `--json`'s object): what bcc prints on one line. */
export interface ExecRow {
  /** Wall-clock time of the event, HH:MM:SS (bcc's -T column). */
  time: string;
  /** Seconds since tracing started (bcc's -t column). */
  elapsed: number;
  uid: number;
  pid: number;
  /** Parent PID; null when neither the kernel nor /proc gave it (bcc prints "?"). */
  ppid: number | null;
  /** execve()'s return: 0, or a negative errno (only with -x). */
  ret: number;
  /** The task's name after the exec (bcc's PCOMM). */
  comm: string;
  /** The file name, then the arguments (at most --max-args, then "..." when cut). */
  args: string[];
}

/** bcc's ARGSIZE: bytes read per argument. str() counts the terminating NUL, hence one more. */
const ARGSIZE = 128;

/** The bpftrace program for `o`. */
export function buildProgram(o: ExecsnoopOptions): string {
  const ppid = 'curtask->real_parent->tgid';
  const filter = predicate([
    o.uid !== null && o.uid !== undefined ? `uid == ${o.uid}` : null,
    o.ppid !== null && o.ppid !== undefined ? `${ppid} == ${o.ppid}` : null,
  ]);
  const arg = (text: string): string => `${RECORDS.emit('arg', { pid: 'pid', arg: text })}\n`;
  let p = configBlock();
  p += `tracepoint:syscalls:sys_enter_execve${filter} {\n`;
  p += `  ${arg(`str(args.filename, ${ARGSIZE + 1})`)}`;
  p += '  $i = 1;\n  $more = 1;\n';
  p += `  while ($i < ${o.maxArgs}) {\n`;
  // argv is a user-space array of user-space pointers.
  p += '    $p = *uptr((uint64 *)((uint64)args.argv + $i * 8));\n';
  p += '    if ($p == 0) {\n      $more = 0;\n      break;\n    }\n';
  p += `    ${arg(`str(uptr((int8 *)$p), ${ARGSIZE + 1})`)}`;
  p += '    $i++;\n  }\n';
  p += `  if ($more) {\n    ${arg('"..."')}  }\n}\n`;
  p += `tracepoint:syscalls:sys_exit_execve${filter} {\n`;
  p += `  ${RECORDS.emit('exit', { pid: 'pid', ppid, uid: 'uid', ret: 'args.ret', comm: 'comm' })}\n}\n`;
  return p;
}

export interface RowOptions {
  time: boolean;
  timestamp: boolean;
  printUid: boolean;
  fails: boolean;
  quote: boolean;
  name: RegExp | null;
  line: RegExp | null;
}

/** bcc's header line. */
export function header(o: Pick<RowOptions, 'time' | 'timestamp' | 'printUid'>): string {
  let h = '';
  if (o.time) h += pyFormat('%-9s', 'TIME');
  if (o.timestamp) h += pyFormat('%-8s', 'TIME(s)');
  if (o.printUid) h += pyFormat('%-6s', 'UID');
  return `${h}${pyFormat('%-16s %-7s %-7s %3s %s', 'PCOMM', 'PID', 'PPID', 'RET', 'ARGS')}\n`;
}

/** What a row needs besides the event: the clock (`-T`), seconds since the start (`-t`), the /proc fallback. */
export interface RowContext {
  clock?: () => string;
  elapsedSec?: () => number;
  ppidOf?: (pid: number) => number;
}

/** The argument lists of the execs in flight, by PID (a `Map<number, string[]>` will do; see {@link PendingArgs}). */
export interface ArgLists {
  get(pid: number): string[] | undefined;
  set(pid: number, list: string[]): unknown;
  delete(pid: number): boolean;
  readonly size: number;
}

/**
 * {@link ArgLists} in two arrays searched from the end (a handful of execs are in flight at a time). Not a Map: a
 * long-lived Map that gains and loses one key per exec gets a new hash table at every rehash, allocated straight in
 * V8's old generation once the Map is old (about 58 bytes per exec), which only a full GC takes back: that was
 * execsnoop's RSS drift in the soak (docs/reliability.md §5; +183 kB/min at ~50 execs/s).
 */
export class PendingArgs implements ArgLists {
  private readonly pids: number[] = [];
  private readonly lists: string[][] = [];

  get size(): number {
    return this.pids.length;
  }

  get(pid: number): string[] | undefined {
    const i = this.pids.lastIndexOf(pid);
    return i < 0 ? undefined : this.lists[i];
  }

  set(pid: number, list: string[]): this {
    const i = this.pids.lastIndexOf(pid);
    if (i >= 0) this.lists[i] = list;
    else {
      this.pids.push(pid);
      this.lists.push(list);
    }
    return this;
  }

  delete(pid: number): boolean {
    const i = this.pids.lastIndexOf(pid);
    if (i < 0) return false;
    this.pids.splice(i, 1);
    this.lists.splice(i, 1);
    return true;
  }
}

/**
 * bcc's `print_event` for one record: an argument is added to the PID's list and gives null; a result gives the
 * exec's row, or null when filtered out (`-x`, `-n`, `-l`), and forgets the list.
 */
export function collect(
  r: ExecRecord,
  o: Pick<RowOptions, 'fails' | 'name' | 'line'>,
  argv: ArgLists,
  ctx: RowContext = {},
): ExecRow | null {
  if (r.kind === 'arg') {
    const list = argv.get(r.pid);
    if (list) list.push(r.arg);
    else argv.set(r.pid, [r.arg]);
    return null;
  }
  const args = argv.get(r.pid) ?? [];
  argv.delete(r.pid);
  if (r.ret !== 0 && !o.fails) return null;
  if (o.name && !o.name.test(r.comm)) return null;
  if (o.line && !o.line.test(args.join(' '))) return null;
  // Some kernels report 0 as the parent's tgid: bcc then reads /proc/PID/status, and prints "?" if that fails.
  let ppid = r.ppid;
  if (!(ppid > 0)) ppid = (ctx.ppidOf ?? readPpid)(r.pid);
  return {
    time: (ctx.clock ?? clockTime)(),
    elapsed: ctx.elapsedSec?.() ?? 0,
    uid: r.uid,
    pid: r.pid,
    ppid: ppid > 0 ? ppid : null,
    ret: r.ret,
    comm: r.comm,
    args,
  };
}

/** bcc's line for one exec (with `\n`). */
export function formatRow(row: ExecRow, o: Pick<RowOptions, 'time' | 'timestamp' | 'printUid' | 'quote'>): string {
  let out = '';
  if (o.time) out += pyFormat('%-9s', row.time);
  if (o.timestamp) out += pyFormat('%-8.3f', row.elapsed);
  if (o.printUid) out += pyFormat('%-6d', row.uid);
  const args = o.quote ? row.args.map((a) => `"${a.replace(/"/g, '\\"')}"`) : row.args;
  const argvText = args.join(' ').replace(/\n/g, '\\n');
  out += pyFormat(
    '%-16s %-7d %-7s %3d %s',
    row.comm,
    row.pid,
    row.ppid !== null ? String(row.ppid) : '?',
    row.ret,
    argvText,
  );
  return `${out}\n`;
}

/** A Python `re` pattern as a JavaScript RegExp (named groups `(?P<n>` → `(?<n>`); null when it does not compile. */
export function pythonRegex(src: string): RegExp | null {
  try {
    return new RegExp(src.replace(/\(\?P</g, '(?<').replace(/\(\?P=(\w+)\)/g, '\\k<$1>'));
  } catch {
    return null;
  }
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  if (a.cgroupmap !== null || a.mntnsmap !== null) {
    throw unsupported(
      'execsnoop: --cgroupmap/--mntnsmap read pinned BPF maps, which bpfscope tools do not support yet',
    );
  }
  const maxArgs = a.max_args.trim();
  if (!/^\d+$/.test(maxArgs)) throw unsupported(`execsnoop: --max-args must be a number, not '${maxArgs}'`);
  const ppidText = a.ppid;
  if (ppidText !== null && !/^\d+$/.test(ppidText.trim())) {
    throw unsupported(`execsnoop: -P/--ppid must be a PID, not '${ppidText}'`);
  }
  const regex = (flag: string, src: string | null): RegExp | null => {
    if (src === null) return null;
    const re = pythonRegex(src);
    if (!re) throw unsupported(`execsnoop: ${flag}: invalid regular expression '${src}'`);
    return re;
  };
  const rowOpts: RowOptions = {
    time: a.time,
    timestamp: a.timestamp,
    printUid: a.print_uid,
    fails: a.fails,
    quote: a.quote,
    name: regex('-n/--name', a.name),
    line: regex('-l/--line', a.line),
  };
  const program = buildProgram({
    uid: a.uid,
    ppid: ppidText !== null ? Number(ppidText) : null,
    maxArgs: Number(maxArgs),
  });
  const argv = new PendingArgs();
  let start = 0;
  const ctx: RowContext = { elapsedSec: () => (performance.now() - start) / 1000 };
  return runProgram({
    tool: 'execsnoop',
    program,
    writer,
    onStarted: () => {
      writer.write(header(rowOpts));
      start = performance.now();
    },
    records: RECORDS,
    onRecord: (r: ExecRecord) => {
      const row = collect(r, rowOpts, argv, ctx);
      if (row !== null) writer.emit(row, (x) => formatRow(x, rowOpts));
    },
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'rows', run });

/** `bpfscope execsnoop [flags]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
