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
import { type Parsed, type ParserSpec } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { runProgram, toolMain, unsupported } from './framework/runner.js';
import { clockTime, readPpid, uidOfUser } from './framework/system.js';

/** bcc's `parse_uid`: a number, else a user name from the password database. */
const USER = {
  name: 'parse_uid',
  convert: (t: string): number => {
    if (/^\s*[+-]?\d+(_\d+)*\s*$/.test(t)) return Number(t.trim().replace(/_/g, ''));
    const uid = uidOfUser(t);
    if (uid === undefined) throw new Error(`argparse: '${t}' is not valid UID or user entry`);
    return uid;
  },
};

export const SPEC: ParserSpec = {
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
};

export interface ExecsnoopOptions {
  uid?: number | null;
  ppid?: number | null;
  /** bcc's MAXARG: the file name plus up to `maxArgs - 1` arguments are read, then `...` if there are more. */
  maxArgs: number;
}

/** Event record fields, in order: kind (0 argument, 1 result), then the text last (argument or comm). */
export const FIELDS = ['kind', 'pid', 'ppid', 'uid', 'ret', 'text'] as const;

/** bcc's ARGSIZE: bytes read per argument. str() counts the terminating NUL, hence one more. */
const ARGSIZE = 128;

/** The bpftrace program for `o`. */
export function buildProgram(o: ExecsnoopOptions): string {
  const ppid = 'curtask->real_parent->tgid';
  const filter = predicate([
    o.uid !== null && o.uid !== undefined ? `uid == ${o.uid}` : null,
    o.ppid !== null && o.ppid !== undefined ? `${ppid} == ${o.ppid}` : null,
  ]);
  const arg = (text: string): string => `printf("0\\x1f%d\\x1f0\\x1f0\\x1f0\\x1f%s\\n", pid, ${text});\n`;
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
  p += `  printf("1\\x1f%d\\x1f%d\\x1f%u\\x1f%d\\x1f%s\\n", pid, ${ppid}, uid, args.ret, comm);\n}\n`;
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

/**
 * bcc's `print_event` for one record (see {@link FIELDS}): an argument is added to the PID's list and gives null;
 * a result gives the line (with `\n`), or null when filtered out (`-x`, `-n`, `-l`), and forgets the list.
 */
export function handleEvent(
  f: string[],
  o: RowOptions,
  argv: Map<number, string[]>,
  ctx: RowContext = {},
): string | null {
  const [kind, pidText, ppidText, uid, retText, text = ''] = f;
  const pid = Number(pidText);
  if (kind === '0') {
    const list = argv.get(pid);
    if (list) list.push(text);
    else argv.set(pid, [text]);
    return null;
  }
  let args = argv.get(pid) ?? [];
  argv.delete(pid);
  const ret = Number(retText);
  if (ret !== 0 && !o.fails) return null;
  if (o.name && !o.name.test(text)) return null;
  if (o.line && !o.line.test(args.join(' '))) return null;
  if (o.quote) args = args.map((a) => `"${a.replace(/"/g, '\\"')}"`);
  let out = '';
  if (o.time) out += pyFormat('%-9s', (ctx.clock ?? clockTime)());
  if (o.timestamp) out += pyFormat('%-8.3f', ctx.elapsedSec?.() ?? 0);
  if (o.printUid) out += pyFormat('%-6d', Number(uid));
  // Some kernels report 0 as the parent's tgid: bcc then reads /proc/PID/status, and prints "?" if that fails.
  let ppid = Number(ppidText);
  if (!(ppid > 0)) ppid = (ctx.ppidOf ?? readPpid)(pid);
  const argvText = args.join(' ').replace(/\n/g, '\\n');
  out += pyFormat('%-16s %-7d %-7s %3d %s', text, pid, ppid > 0 ? String(ppid) : '?', ret, argvText);
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

async function run(a: Parsed, writer: ToolWriter): Promise<number> {
  if (a.cgroupmap !== null || a.mntnsmap !== null) {
    throw unsupported(
      'execsnoop: --cgroupmap/--mntnsmap read pinned BPF maps, which bpfscope tools do not support yet',
    );
  }
  const maxArgs = String(a.max_args).trim();
  if (!/^\d+$/.test(maxArgs)) throw unsupported(`execsnoop: --max-args must be a number, not '${maxArgs}'`);
  const ppidText = a.ppid as string | null;
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
    time: a.time as boolean,
    timestamp: a.timestamp as boolean,
    printUid: a.print_uid as boolean,
    fails: a.fails as boolean,
    quote: a.quote as boolean,
    name: regex('-n/--name', a.name as string | null),
    line: regex('-l/--line', a.line as string | null),
  };
  const program = buildProgram({
    uid: a.uid as number | null,
    ppid: ppidText !== null ? Number(ppidText) : null,
    maxArgs: Number(maxArgs),
  });
  if (a.ebpf) {
    writer.write(program);
    return 0;
  }
  const argv = new Map<number, string[]>();
  let start = 0;
  const ctx: RowContext = { elapsedSec: () => (performance.now() - start) / 1000 };
  return runProgram({
    tool: 'execsnoop',
    program,
    writer,
    fieldCount: FIELDS.length,
    onStarted: () => {
      writer.write(header(rowOpts));
      start = performance.now();
    },
    onEvent: (f) => {
      const line = handleEvent(f, rowOpts, argv, ctx);
      if (line !== null) writer.write(line);
    },
  });
}

/** `bpfscope execsnoop [flags]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(SPEC, argv, run);
}
