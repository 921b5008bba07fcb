/**
 * syscount: summarize system call counts and latencies, by system call or by process. Follows bcc's
 * `tools/syscount.py` (flags, help, header lines, column formats, top-N sorting, "Detaching..." at the end) on
 * the `raw_syscalls:sys_enter`/`sys_exit` tracepoints, as bcc does.
 *
 * Not supported: `-c/--ppid` (needs `curtask->real_parent->tgid`: struct dereference).
 */
import type { MapDump } from '../runtime/output/model.js';
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import { runIntervals } from './framework/interval.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { defineTool, toolMain, unsupported } from './framework/runner.js';
import {
  clockTime,
  parseErrno,
  readComm,
  shellQuote,
  syscallName,
  syscallNumber,
  syscallTable,
} from './framework/system.js';

export const SPEC = {
  prog: 'syscount',
  description: 'Summarize syscall counts and latencies.',
  options: [
    { flags: ['-p', '--pid'], kind: 'value', type: INT, help: 'trace only this pid' },
    { flags: ['-t', '--tid'], kind: 'value', type: INT, help: 'trace only this tid' },
    { flags: ['-c', '--ppid'], kind: 'value', type: INT, help: 'trace only child of this pid' },
    { flags: ['-i', '--interval'], kind: 'value', type: INT, help: 'print summary at this interval (seconds)' },
    { flags: ['-d', '--duration'], kind: 'value', type: INT, help: 'total duration of trace, in seconds' },
    {
      flags: ['-T', '--top'],
      kind: 'value',
      type: INT,
      default: 10,
      help: 'print only the top syscalls by count or latency',
    },
    { flags: ['-x', '--failures'], kind: 'flag', help: 'trace only failed syscalls (return < 0)' },
    {
      flags: ['-e', '--errno'],
      kind: 'value',
      type: {
        name: 'errno',
        convert: (t) => {
          const n = parseErrno(t);
          if (n === undefined) throw new Error(`argparse: couldn't map ${t} to an errno`);
          return n;
        },
      },
      help: 'trace only syscalls that return this error (numeric or EPERM, etc.)',
    },
    { flags: ['-L', '--latency'], kind: 'flag', help: 'collect syscall latency' },
    {
      flags: ['-m', '--milliseconds'],
      kind: 'flag',
      help: 'display latency in milliseconds (default: microseconds)',
    },
    { flags: ['-P', '--process'], kind: 'flag', help: 'count by process and not by syscall' },
    { flags: ['-l', '--list'], kind: 'flag', help: 'print list of recognized syscalls and exit' },
    {
      flags: ['--syscall'],
      kind: 'value',
      help: 'trace this syscall only (use option -l to get all recognized syscalls)',
    },
    { flags: ['--ebpf'], kind: 'flag', help: null },
    {
      flags: ['--exec'],
      kind: 'remainder',
      help: 'execute command (as the last parameter, supports multiple parameters, for example: --exec ls -l /tmp',
    },
  ],
} as const satisfies ParserSpec;

export interface SyscountOptions {
  pid?: number | null;
  tid?: number | null;
  /** Filter on the `--exec` child (`cpid`). */
  exec?: boolean;
  failures?: boolean;
  errno?: number | null;
  latency?: boolean;
  process?: boolean;
  syscallNr?: number | null;
}

/** The bpftrace program for `o` (bcc's BPF text, as tracepoint probes in our language). */
export function buildProgram(o: SyscountOptions): string {
  const who = o.pid ? `pid == ${o.pid}` : o.exec ? 'pid == cpid' : o.tid ? `tid == ${o.tid}` : null;
  const nr = o.syscallNr !== undefined && o.syscallNr !== null ? `args.id == ${o.syscallNr}` : null;
  const outcome = [o.failures ? 'args.ret < 0' : null, o.errno ? `args.ret == -${o.errno}` : null];
  const key = o.process ? 'pid' : 'args.id';
  let p = configBlock();
  if (!o.latency) {
    p += `tracepoint:raw_syscalls:sys_exit${predicate([nr, who, ...outcome])} {\n  @data[${key}] = count();\n}\n`;
    return p;
  }
  const extra = outcome.filter(Boolean).join(' && ');
  p += `tracepoint:raw_syscalls:sys_enter${predicate([nr, who])} {\n  @start[tid] = nsecs;\n}\n`;
  p += `tracepoint:raw_syscalls:sys_exit${predicate([nr, who])} {\n  $s = @start[tid];\n  delete(@start[tid]);\n`;
  p += `  if ($s != 0${extra ? ` && ${extra}` : ''}) {\n    @count[${key}] = count();\n    @total_ns[${key}] = sum(nsecs - $s);\n  }\n}\n`;
  return p;
}

/** One row of the summary: the map key (syscall number or PID), count and total latency (ns). */
export interface SyscountRow {
  key: bigint;
  count: bigint;
  totalNs: bigint;
}

function intKey(v: MapDump['entries'][number]['key'][number] | undefined): bigint {
  return v && v.kind === 'int' ? v.value : -1n;
}

function aggNumber(v: MapDump['entries'][number]['value']): bigint {
  return 'value' in v && typeof v.value === 'bigint' ? v.value : 0n;
}

/** Join the count and latency maps into rows. */
export function rowsFromMaps(count: MapDump, total?: MapDump): SyscountRow[] {
  const rows = new Map<bigint, SyscountRow>();
  for (const e of count.entries) {
    const key = intKey(e.key[0]);
    rows.set(key, { key, count: aggNumber(e.value), totalNs: 0n });
  }
  for (const e of total?.entries ?? []) {
    const row = rows.get(intKey(e.key[0]));
    if (row) row.totalNs = aggNumber(e.value);
  }
  return [...rows.values()];
}

export interface PrintOptions {
  latency: boolean;
  milliseconds: boolean;
  process: boolean;
  top: number;
  /** Name of a key (syscall name or `PID    COMM`), injectable for tests. */
  keyName?: (key: bigint) => string;
  /** Time stamp shown in brackets. */
  time?: string;
}

/** The name of a process for -P: its comm, `[unknown]` when the process is gone (bcc's `agg_colval`). */
function processName(pid: bigint): string {
  const comm = readComm(Number(pid));
  return comm === null ? '[unknown]' : comm.trim();
}

/** bcc's `agg_colval`: a syscall name, or `%-6d %-15s` of PID and comm (`[unknown]` when the process is gone). */
export function keyName(key: bigint, process: boolean): string {
  if (!process) return syscallName(key);
  return pyFormat('%-6d %-15s', key, processName(key));
}

/** One row of syscount's interval. */
export interface SyscountTickRow {
  /** The syscall number, or with -P the process ID. */
  key: bigint;
  /** The syscall's name, or with -P the process's comm (`[unknown]` when it is gone). */
  name: string;
  count: bigint;
  /** -L: the calls' total latency in nanoseconds (null without -L). */
  totalNs: bigint | null;
}

/** One interval of syscount (runTool's interval, `--json`'s object). */
export interface SyscountInterval {
  /** Wall-clock time of the summary, HH:MM:SS (bcc's `[%H:%M:%S]`). */
  time: string;
  /** The top `-T` rows as printed: by count, or with -L by total latency, largest first. */
  rows: SyscountTickRow[];
}

/** bcc's order and `-T` cut: largest count (or -L total latency) first, ties by key; unknown keys left out. */
function topRows(rows: SyscountRow[], o: { latency: boolean; top: number }): SyscountRow[] {
  const sorted = [...rows].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  if (o.latency) sorted.sort((a, b) => (b.totalNs > a.totalNs ? 1 : b.totalNs < a.totalNs ? -1 : 0));
  else sorted.sort((a, b) => (b.count > a.count ? 1 : b.count < a.count ? -1 : 0));
  return sorted.slice(0, Math.max(0, o.top)).filter((r) => r.key !== 0xffffffffn && r.key !== -1n);
}

/** One interval from the maps' rows: the top rows with their names. */
export function intervalOf(
  rows: SyscountRow[],
  o: { latency: boolean; process: boolean; top: number },
  time: string,
): SyscountInterval {
  return {
    time,
    rows: topRows(rows, o).map((r) => ({
      key: r.key,
      name: o.process ? processName(r.key) : syscallName(r.key),
      count: r.count,
      totalNs: o.latency ? r.totalNs : null,
    })),
  };
}

function table(time: string, rows: { col: string; count: bigint; totalNs: bigint }[], o: PrintOptions): string {
  const agg = o.process ? 'PID    COMM' : 'SYSCALL';
  let out = `[${time}]\n`;
  if (o.latency) {
    out += `${pyFormat('%-22s %8s %16s', agg, 'COUNT', o.milliseconds ? 'TIME (ms)' : 'TIME (us)')}\n`;
    for (const r of rows) {
      const t = Number(r.totalNs) / (o.milliseconds ? 1e6 : 1e3);
      out += `${pyFormat(`%-22s %8d ${o.milliseconds ? '%16.6f' : '%16.3f'}`, r.col, r.count, t)}\n`;
    }
  } else {
    out += `${pyFormat('%-22s %8s', agg, 'COUNT')}\n`;
    for (const r of rows) out += `${pyFormat('%-22s %8d', r.col, r.count)}\n`;
  }
  return `${out}\n`;
}

/** bcc's `print_count_stats` / `print_latency_stats` text for `rows` (ties keep the key order). */
export function formatStats(rows: SyscountRow[], o: PrintOptions): string {
  const name = o.keyName ?? ((k: bigint) => keyName(k, o.process));
  const top = topRows(rows, o).map((r) => ({ col: name(r.key), count: r.count, totalNs: r.totalNs }));
  return table(o.time ?? clockTime(), top, o);
}

/** bcc's text of one interval. */
export function formatInterval(i: SyscountInterval, o: PrintOptions): string {
  const rows = i.rows.map((r) => ({
    col: o.process ? pyFormat('%-6d %-15s', r.key, r.name) : r.name,
    count: r.count,
    totalNs: r.totalNs ?? 0n,
  }));
  return table(i.time, rows, o);
}

/** `syscount -l`: every known syscall name, sorted, four `%-22s` columns joined by three spaces. */
export function formatList(names: string[]): string {
  const sorted = [...names].sort();
  let out = '';
  for (let i = 0; i < sorted.length; i += 4) {
    out += `${sorted
      .slice(i, i + 4)
      .map((s) => pyFormat('%-22s', s))
      .join('   ')}\n`;
  }
  return out;
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const duration = a.duration;
  const interval = a.interval || duration || 99999999;
  const exec = a.exec;
  if (a.pid && exec) {
    writer.line('ERROR: can only use -p or --exec. Exiting.');
    return 1;
  }
  if (exec !== null && exec.length === 0) {
    writer.line('ERROR: --exec without command. Exiting.');
    return 1;
  }
  let syscallNr: number | null = null;
  if (a.syscall !== null) {
    const nr = syscallNumber(a.syscall);
    if (nr === undefined) {
      writer.line(`Error: syscall '${a.syscall}' not found. Exiting.`);
      return 1;
    }
    syscallNr = nr;
  }
  if (a.list) {
    writer.write(formatList(Object.values(syscallTable())));
    return 0;
  }
  if (!a.pid && !exec && !a.tid && a.ppid) {
    throw unsupported(
      "syscount: -c/--ppid needs the parent's PID (curtask->real_parent->tgid), and bpfscope's language cannot dereference kernel structs yet",
    );
  }
  const opts: SyscountOptions = {
    pid: a.pid,
    tid: a.tid,
    exec: !a.pid && exec !== null,
    failures: a.failures,
    errno: a.errno,
    latency: a.latency,
    process: a.process,
    syscallNr,
  };
  const print: PrintOptions = { latency: a.latency, milliseconds: a.milliseconds, process: a.process, top: a.top };
  const failed = a.failures ? 'failed ' : '';
  return runIntervals<SyscountInterval>({
    tool: 'syscount',
    program: buildProgram(opts),
    writer,
    ...(exec !== null && !a.pid ? { command: shellQuote(exec) } : {}),
    seconds: interval,
    durationSec: duration,
    header:
      a.syscall !== null
        ? `Tracing ${failed}syscall '${a.syscall}'... Ctrl+C to quit.\n`
        : `Tracing ${failed}syscalls, printing top ${a.top}... Ctrl+C to quit.\n`,
    read: (t, now) => {
      const rows = a.latency
        ? rowsFromMaps(t.readMap('count'), t.readMap('total_ns'))
        : rowsFromMaps(t.readMap('data'));
      return intervalOf(rows, print, clockTime(now));
    },
    format: (i) => formatInterval(i, print),
    clear: a.latency ? ['count', 'total_ns'] : ['data'],
    detach: 'always',
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'intervals', run });

/** `bpfscope syscount [flags]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
