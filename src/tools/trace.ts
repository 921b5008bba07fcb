/**
 * trace: attach to functions, tracepoints and USDT probes and print one line per event, with an optional filter and
 * printf-style message. Follows bcc's `tools/trace.py`: its probe syntax
 * `[{p,r}]:[library]:function[+offset][(signature)] [(predicate)] ["format", arguments]`, `t:category:event` and
 * `u:library:probe`, its flags, header (`PID     TID     COMM            FUNC             -`) and rows
 * (`%-7d %-7d %-15s %-16s %s`), `-t`/`-T`/`-C` columns, `-K`/`-U` stacks, `-n`/`-f` filters and `-M`/`-A`.
 *
 * Each probe becomes one bpftrace probe (bcc's C predicate and arguments translated by framework/cexpr.ts) whose
 * event record carries the probe's index, the ids, the optional time/CPU/stacks, then the format's values (integers
 * first, then the comm, then strings); the message is formatted here, as bcc formats it in Python.
 *
 * Not supported: `-c` (cgroup filter: needs bpf_current_task_under_cgroup), `-s` (build-id stacks). `-I` is
 * accepted and ignored: kernel types come from BTF.
 */
import type { Tracer } from '../runtime/tracer.js';
import { bccName, SymbolResolver } from '../symbols/resolver.js';
import { ArgError, formatUsage, INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import { convertTo, type CType, paramExpr, parseSignature, translateCExpr } from './framework/cexpr.js';
import type { ToolWriter } from './framework/output.js';
import {
  kprobesAvailable,
  matchTargets,
  parseProbeSpec,
  type ProbeSpec,
  toAttachPoint,
} from './framework/probespec.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { type FieldType, records, type RecordSet } from './framework/record.js';
import { defineTool, runProgram, toolMain, unsupported } from './framework/runner.js';
import { clockTime, onlineCpus } from './framework/system.js';
import {
  C_TYPE,
  type FormatPart,
  parseFormat,
  parseTraceProbe,
  type TraceConv,
  type TraceProbe,
  TraceProbeError,
} from './trace-probe.js';

const EXAMPLES = `EXAMPLES:

trace do_sys_open
        Trace the open syscall and print a default trace message when entered
trace kfree_skb+0x12
        Trace the kfree_skb kernel function after the instruction on the 0x12 offset
trace 'do_sys_open "%s", arg2@user'
        Trace the open syscall and print the filename being opened @user is
        added to arg2 in kprobes to ensure that char * should be copied from
        the userspace stack to the bpf stack. If not specified, previous
        behaviour is expected.

trace 'do_sys_open "%s", arg2@user' -n main
        Trace the open syscall and only print event that process names containing "main"
trace 'do_sys_open "%s", arg2@user' --uid 1001
        Trace the open syscall and only print event that processes with user ID 1001
trace 'do_sys_open "%s", arg2@user' -f config
        Trace the open syscall and print the filename being opened filtered by "config"
trace 'sys_read (arg3 > 20000) "read %d bytes", arg3'
        Trace the read syscall and print a message for reads >20000 bytes
trace 'r::do_sys_open "%llx", retval'
        Trace the return from the open syscall and print the return value
trace 'c:open (arg2 == 42) "%s %d", arg1, arg2'
        Trace the open() call from libc only if the flags (arg2) argument is 42
trace 'c:malloc "size = %d", arg1'
        Trace malloc calls and print the size being allocated
trace 'p:c:write (arg1 == 1) "writing %d bytes to STDOUT", arg3'
        Trace the write() call from libc to monitor writes to STDOUT
trace 'r::__kmalloc (retval == 0) "kmalloc failed!"'
        Trace returns from __kmalloc which returned a null pointer
trace 'r:c:malloc (retval) "allocated = %x", retval'
        Trace returns from malloc and print non-NULL allocated buffers
trace 't:block:block_rq_complete "sectors=%d", args->nr_sector'
        Trace the block_rq_complete kernel tracepoint and print # of tx sectors
trace 'u:pthread:pthread_create (arg4 != 0)'
        Trace the USDT probe pthread_create when its 4th argument is non-zero
trace 'u:pthread:libpthread:pthread_create (arg4 != 0)'
        Ditto, but the provider name "libpthread" is specified.
trace 'p::SyS_nanosleep(struct timespec *ts) "sleep for %lld ns", ts->tv_nsec'
        Trace the nanosleep syscall and print the sleep duration in ns
trace -c /sys/fs/cgroup/system.slice/workload.service '__x64_sys_nanosleep' '__x64_sys_clone'
        Trace nanosleep/clone syscall calls only under workload.service
        cgroup hierarchy.
trace -I 'linux/fs.h' \\
      'p::uprobe_register(struct inode *inode) "a_ops = %llx", inode->i_mapping->a_ops'
        Trace the uprobe_register inode mapping ops, and the symbol can be found
        in /proc/kallsyms
trace -I 'kernel/sched/sched.h' \\
      'p::__account_cfs_rq_runtime(struct cfs_rq *cfs_rq) "%d", cfs_rq->runtime_remaining'
        Trace the cfs scheduling runqueue remaining runtime. The struct cfs_rq is defined
        in kernel/sched/sched.h which is in kernel source tree and not in kernel-devel
        package.  So this command needs to run at the kernel source tree root directory
        so that the added header file can be found by the compiler.
trace -I 'net/sock.h' \\
      'udpv6_sendmsg(struct sock *sk) (sk->sk_dport == 13568)'
        Trace udpv6 sendmsg calls only if socket's destination port is equal
        to 53 (DNS; 13568 in big endian order)
trace -I 'linux/fs_struct.h' 'mntns_install "users = %d", $task->fs->users'
        Trace the number of users accessing the file system of the current task
trace -s /lib/x86_64-linux-gnu/libc.so.6,/bin/ping 'p:c:inet_pton' -U
        Trace inet_pton system call and use the specified libraries/executables for
        symbol resolution.
`;

export const SPEC = {
  prog: 'trace',
  description: 'Attach to functions and print trace messages.',
  raw: true,
  epilog: EXAMPLES,
  options: [
    {
      flags: ['-b', '--buffer-pages'],
      kind: 'value',
      type: INT,
      default: 64,
      help: 'number of pages to use for perf_events ring buffer (default: 64)',
    },
    {
      flags: ['-p', '--pid'],
      kind: 'value',
      type: INT,
      metavar: 'PID',
      dest: 'tgid',
      help: 'id of the process to trace (optional)',
    },
    {
      flags: ['-L', '--tid'],
      kind: 'value',
      type: INT,
      metavar: 'TID',
      dest: 'pid',
      help: 'id of the thread to trace (optional)',
    },
    { flags: ['--uid'], kind: 'value', type: INT, metavar: 'UID', help: 'id of the user to trace (optional)' },
    { flags: ['-v', '--verbose'], kind: 'flag', help: 'print resulting BPF program code before executing' },
    {
      flags: ['-Z', '--string-size'],
      kind: 'value',
      type: INT,
      default: 80,
      help: 'maximum size to read from strings',
    },
    { flags: ['-S', '--include-self'], kind: 'flag', help: "do not filter trace's own pid from the trace" },
    {
      flags: ['-M', '--max-events'],
      kind: 'value',
      type: INT,
      help: 'number of events to print before quitting',
    },
    { flags: ['-t', '--timestamp'], kind: 'flag', help: 'print timestamp column (offset from trace start)' },
    {
      flags: ['-u', '--unix-timestamp'],
      kind: 'flag',
      help: 'print UNIX timestamp instead of offset from trace start, requires -t',
    },
    { flags: ['-T', '--time'], kind: 'flag', help: 'print time column' },
    { flags: ['-C', '--print_cpu'], kind: 'flag', help: 'print CPU id' },
    {
      flags: ['-c', '--cgroup-path'],
      kind: 'value',
      metavar: 'CGROUP_PATH',
      dest: 'cgroup_path',
      help: 'cgroup path',
    },
    { flags: ['-n', '--name'], kind: 'value', help: 'only print process names containing this name' },
    {
      flags: ['-f', '--msg-filter'],
      kind: 'value',
      dest: 'msg_filter',
      help: 'only print the msg of event containing this string',
    },
    { flags: ['-B', '--bin_cmp'], kind: 'flag', help: 'allow to use STRCMP with binary values' },
    {
      flags: ['-s', '--sym_file_list'],
      kind: 'value',
      metavar: 'SYM_FILE_LIST',
      dest: 'sym_file_list',
      help: 'comma separated list of symbol files to use for symbol resolution',
    },
    { flags: ['-K', '--kernel-stack'], kind: 'flag', help: 'output kernel stack trace' },
    { flags: ['-U', '--user-stack'], kind: 'flag', help: 'output user stack trace' },
    { flags: ['-a', '--address'], kind: 'flag', help: 'print virtual address in stacks' },
    {
      flags: ['-I', '--include'],
      kind: 'append',
      metavar: 'header',
      help:
        'additional header files to include in the BPF program as either full path, or relative to current ' +
        'working directory, or relative to default kernel header search path',
    },
    { flags: ['-A', '--aggregate'], kind: 'flag', help: 'aggregate amount of each trace' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
  positionals: [{ name: 'probes', metavar: 'probe', nargs: '+', help: 'probe specifier (see examples)' }],
} as const satisfies ParserSpec;

export { type FormatPart, parseFormat, parseTraceProbe, type TraceConv, type TraceProbe, TraceProbeError };

/** Options of {@link buildProgram} (bcc's flags). */
export interface TraceOptions {
  /** -p: process id (tgid). */
  tgid?: number | null;
  /** -L: thread id. */
  tid?: number | null;
  uid?: number | null;
  /** Our own pid, filtered out unless -S (null: not filtered). */
  selfPid?: number | null;
  stringSize: number;
  /** -t: record the event time. */
  timestamp: boolean;
  /** -C */
  cpu: boolean;
  kernelStack: boolean;
  userStack: boolean;
  ringPages?: number;
}

/**
 * The bpftrace attach point of a probe (via framework/probespec.ts); `resolve` sees the parsed spec first.
 * @throws TraceProbeError for an unknown library
 */
export function attachPoint(p: TraceProbe, resolve?: (spec: ProbeSpec) => void): string {
  const specText =
    p.type === 't'
      ? `t:${p.target}`
      : p.type === 'u'
        ? `u:${p.library}:${p.target}`
        : `${p.type}:${p.library}:${p.target}`;
  let spec: ProbeSpec;
  try {
    spec = parseProbeSpec(specText, { allowReturn: true });
  } catch (e) {
    throw new TraceProbeError(p.raw, (e as Error).message);
  }
  resolve?.(spec);
  return toAttachPoint(spec, p.offset ? `${p.target}+${p.offset}` : p.target);
}

/** x86-64 registers of a syscall's arguments in the `struct pt_regs` a `__x64_sys_*` wrapper receives. */
const SYSCALL_REGS = ['di', 'si', 'dx', 'r10', 'r8', 'r9'];

/**
 * The bpftrace names of bcc's aliases in probe `p`: `arg1..arg6` (argument registers, USDT arguments, or the
 * wrapped `pt_regs` of a `__x64_sys_*` kprobe as bcc's `aliases_indarg`), `retval`, `$uid`, `$gid`, `$pid` (the
 * thread id), `$tgid`, `$cpu`, `$task`, and the signature's parameters.
 */
export function traceNames(p: TraceProbe): (name: string) => string | undefined {
  const syscallWrapper = p.type === 'p' && p.library === '' && p.target.startsWith('__x64_sys_');
  const params = new Map<string, string>();
  if (p.signature !== null) {
    parseSignature(p.signature).forEach((q, i) => {
      try {
        params.set(q.name, paramExpr(i, q.type));
      } catch (e) {
        throw new TraceProbeError(p.raw, (e as Error).message);
      }
    });
  }
  const common: Record<string, string> = {
    retval: 'retval',
    $uid: 'uid',
    $gid: 'gid',
    $pid: 'tid',
    $tgid: 'pid',
    $cpu: 'cpu',
    $task: 'curtask',
  };
  return (name) => {
    const a = /^arg([1-6])$/.exec(name);
    if (a && p.type !== 't') {
      const i = Number(a[1]) - 1;
      return syscallWrapper ? `((struct pt_regs *)arg0)->${SYSCALL_REGS[i]}` : `arg${i}`;
    }
    return params.get(name) ?? common[name];
  };
}

/** The probes' records: one record kind per probe (`p0`, `p1`, ... in probe order). */
export type TraceRecords = RecordSet<Readonly<Record<string, Readonly<Record<string, FieldType>>>>>;

/**
 * The record of probe `p`: the process and thread ids, the optional time (-t), CPU (-C) and stacks (-K/-U) as
 * `kstack(raw)`/`ustack(raw)` text, then the format's values (`v0`, `v1`, ... in format order: integers as 64-bit
 * values of their conversion's signedness, `%s` as strings) and the comm.
 */
function probeFields(p: TraceProbe, o: TraceOptions): Record<string, FieldType> {
  const f: Record<string, FieldType> = { tgid: 'u32', tid: 'u32' };
  if (o.timestamp) f.ts = 'u64';
  if (o.cpu) f.cpu = 'u32';
  if (o.kernelStack) f.kstack = 'str';
  if (o.userStack) f.ustack = 'str';
  const convs = p.format.flatMap((x) => ('conv' in x ? [x.conv] : []));
  convs.forEach((c, i) => {
    if (c !== 's') f[`v${i}`] = C_TYPE[c].kind === 'int' && C_TYPE[c].signed ? 's64' : 'u64';
  });
  f.comm = 'str';
  convs.forEach((c, i) => {
    if (c === 's') f[`v${i}`] = 'str';
  });
  return f;
}

/** The records of `probes` with options `o` (see {@link probeFields}); the program and the decoder both use them. */
export function traceRecords(probes: readonly TraceProbe[], o: TraceOptions): TraceRecords {
  const decls: Record<string, Record<string, FieldType>> = {};
  probes.forEach((p, i) => {
    decls[`p${i}`] = probeFields(p, o);
  });
  return records(decls);
}

/** The bpftrace probe for trace probe `p` (index `index`): filters, then one `p<index>` record of `recs`. */
export function probeProgram(
  p: TraceProbe,
  index: number,
  o: TraceOptions,
  attach: string,
  recs: TraceRecords,
): string {
  const names = traceNames(p);
  const tr = (e: string): string => {
    try {
      return translateCExpr(e, { names }).trim();
    } catch (err) {
      throw new TraceProbeError(p.raw, (err as Error).message);
    }
  };
  const who =
    o.tid != null
      ? `tid == ${o.tid}`
      : o.tgid != null
        ? `pid == ${o.tgid}`
        : o.selfPid != null
          ? `pid != ${o.selfPid}`
          : null;
  const conds = [who, o.uid != null ? `uid == ${o.uid}` : null, p.filter !== null ? tr(p.filter) : null];
  const convs = p.format.flatMap((f) => ('conv' in f ? [f.conv] : []));
  const exprs: Record<string, string> = { tgid: 'pid', tid: 'tid', comm: 'comm' };
  if (o.timestamp) exprs.ts = 'nsecs';
  if (o.cpu) exprs.cpu = 'cpu';
  if (o.kernelStack) exprs.kstack = 'kstack(raw)';
  if (o.userStack) exprs.ustack = 'ustack(raw)';
  convs.forEach((c, i) => {
    const t: CType = c === 's' ? { kind: 'string' } : C_TYPE[c];
    exprs[`v${i}`] = convertTo(t, tr(p.values[i]!), o.stringSize);
  });
  return `${attach}${predicate(conds)} {\n  ${recs.emit(`p${index}`, exprs)}\n}\n`;
}

/** The bpftrace program for `probes` (attach points given, in order). */
export function buildProgram(probes: TraceProbe[], attach: string[], o: TraceOptions): string {
  const recs = traceRecords(probes, o);
  let prog = configBlock(o.ringPages ? { ringPages: o.ringPages } : {});
  probes.forEach((p, i) => {
    prog += probeProgram(p, i, o, attach[i]!, recs);
  });
  return prog;
}

/** One decoded event of a probe. */
export interface TraceEvent {
  tgid: number;
  tid: number;
  ts: bigint | null;
  cpu: number | null;
  kstack: bigint[];
  ustack: bigint[];
  comm: string;
  /** Values in format order: integers as bigint, strings as text. */
  values: (bigint | string)[];
}

/** Addresses of a `kstack(raw)`/`ustack(raw)` text (one hex address per line). */
export function rawStack(text: string): bigint[] {
  return (text.match(/[0-9a-fA-F]+/g) ?? []).map((h) => BigInt(`0x${h}`));
}

/** The probe index and event of one decoded record (see {@link traceRecords}). */
export function eventOf(
  r: { kind: string } & Readonly<Record<string, unknown>>,
  o: TraceOptions,
): [number, TraceEvent] {
  const values: (bigint | string)[] = [];
  for (let i = 0; `v${i}` in r; i++) values.push(r[`v${i}`] as bigint | string);
  const ev: TraceEvent = {
    tgid: r.tgid as number,
    tid: r.tid as number,
    ts: o.timestamp ? (r.ts as bigint) : null,
    cpu: o.cpu ? (r.cpu as number) : null,
    kstack: o.kernelStack ? rawStack(r.kstack as string) : [],
    ustack: o.userStack ? rawStack(r.ustack as string) : [],
    comm: r.comm as string,
    values,
  };
  return [Number(r.kind.slice(1)), ev];
}

/** Symbol text of `%K` (kernel, pid -1) and `%U` (the event's process) values: bcc's `sym(addr, pid, True, True)`. */
export interface Symbolizer {
  kernel: (addr: bigint) => string;
  user: (pid: number, addr: bigint) => string;
}

/**
 * A symbolizer on our resolver: `name+0xoff [module]`, `[unknown]` for an unknown address. The mappings of
 * `prepare` (the -p process) are read now, so its addresses resolve even when it exits before its events are read.
 */
export function resolverSymbolizer(prepare: number | null = null, r = new SymbolResolver()): Symbolizer {
  if (prepare !== null) {
    try {
      r.prepare(prepare);
    } catch {
      // The process may be gone already; its frames then print as [unknown], as bcc's do.
    }
  }
  return {
    kernel: (a) => bccName(r.kernel(a), { showModule: true, showOffset: true }),
    user: (pid, a) => bccName(r.user(pid, a), { showModule: true, showOffset: true }),
  };
}

/** bcc's `_format_message`: the probe's format with the event's values (`%d` decimal, `%x` hex, `%K`/`%U` symbols). */
export function formatMessage(p: TraceProbe, ev: TraceEvent, sym: Symbolizer): string {
  let out = '';
  let i = 0;
  for (const part of p.format) {
    if ('text' in part) {
      out += part.text;
      continue;
    }
    const v = ev.values[i++]!;
    switch (part.conv) {
      case 's':
        out += String(v);
        break;
      case 'x':
      case 'lx':
      case 'llx':
        out += BigInt(v).toString(16);
        break;
      case 'c':
        out += String.fromCharCode(Number(BigInt.asUintN(8, BigInt(v))));
        break;
      case 'K':
        out += sym.kernel(BigInt(v));
        break;
      case 'U':
        out += sym.user(ev.tgid, BigInt(v));
        break;
      default:
        out += BigInt(v).toString();
    }
  }
  return out;
}

/** How rows are printed (bcc's class-level Probe settings). */
export interface RowOptions {
  /** -t: offset from the start; -T: local time; -u with either: UNIX time / 17 columns. */
  timestamp: boolean;
  time: boolean;
  unixTimestamp: boolean;
  cpu: boolean;
  address: boolean;
  /** Monotonic ns and UNIX seconds at the start (bcc's first_ts, first_ts_real). */
  firstTs: bigint;
  firstTsReal: number;
}

/** bcc's header line (`all_probes_trivial`: no probe has a message). */
export function header(
  o: Pick<RowOptions, 'timestamp' | 'time' | 'unixTimestamp' | 'cpu'>,
  allTrivial: boolean,
): string {
  let h = '';
  if (o.timestamp || o.time) h += pyFormat(o.unixTimestamp ? '%-17s ' : '%-8s ', 'TIME');
  if (o.cpu) h += pyFormat('%-3s ', 'CPU');
  return `${h}${pyFormat('%-7s %-7s %-15s %-16s %s', 'PID', 'TID', 'COMM', 'FUNC', allTrivial ? '' : '-')}\n`;
}

/** bcc's `_time_off_str` text of an event time, before truncation. */
function timeText(ts: bigint | null, o: RowOptions, now: Date): string {
  if (!o.timestamp || ts === null) return clockTime(now);
  const offset = Number(ts - o.firstTs) / 1e9;
  return (o.unixTimestamp ? offset + o.firstTsReal : offset).toFixed(6);
}

/** bcc's `_stack_to_string`: one line per frame, 8 spaces, `-a` adds the address as `%16x `. */
export function stackText(addrs: bigint[], name: (a: bigint) => string, address: boolean): string {
  let s = '';
  for (const a of addrs) s += `        ${address ? pyFormat('%16x ', a) : ''}${name(a)}\n`;
  return s;
}

/** One event (runTool's row, `--json`'s object): bcc's columns as data. */
export interface TraceRow {
  /** The TIME column as printed (-t: seconds since the start, -u: UNIX time, -T: HH:MM:SS), or null without. */
  time: string | null;
  /** -C: the CPU, else null. */
  cpu: number | null;
  /** The process (PID column), the thread (TID) and its comm. */
  pid: number;
  tid: number;
  comm: string;
  /** The FUNC column: the function, the tracepoint's event or the USDT probe. */
  func: string;
  /** The probe's message (its format with the values), '' for a probe without one. */
  message: string;
  /** -K / -U: the stacks' frames, innermost first, as printed (with -a, `%16x ` address first); [] without. */
  kernelStack: string[];
  userStack: string[];
  /** -A: how many events printed this same text (the rows come at -M's end, most frequent first). */
  count?: number;
}

/** The row of event `ev` of probe `p` with message `msg`. */
export function toRow(
  p: TraceProbe,
  ev: TraceEvent,
  msg: string,
  o: RowOptions & { kernelStack: boolean; userStack: boolean },
  sym: Symbolizer,
  now = new Date(),
): TraceRow {
  let time: string | null = null;
  if (o.timestamp || o.time) {
    const t = timeText(ev.ts, o, now);
    time = o.unixTimestamp ? t.slice(0, 17) : t.slice(0, 8);
  }
  const frames = (addrs: bigint[], name: (a: bigint) => string): string[] =>
    addrs.map((a) => `${o.address ? pyFormat('%16x ', a) : ''}${name(a)}`);
  return {
    time,
    cpu: o.cpu ? ev.cpu : null,
    pid: ev.tgid,
    tid: ev.tid,
    comm: ev.comm,
    func: p.display,
    message: msg,
    kernelStack: o.kernelStack ? frames(ev.kstack, (a) => sym.kernel(a)) : [],
    userStack: o.userStack ? frames(ev.ustack, (a) => sym.user(ev.tgid, a)) : [],
  };
}

/** bcc's `print_event` text for one row (the line, then its stacks, 8 spaces before each frame). */
export function formatRow(row: TraceRow, o: Pick<RowOptions, 'unixTimestamp'>): string {
  let s = '';
  if (row.time !== null) s += o.unixTimestamp ? pyFormat('%-17s ', row.time) : pyFormat('%-8s ', row.time);
  if (row.cpu !== null) s += pyFormat('%-3s ', String(row.cpu));
  s += pyFormat('%-7d %-7d %-15s %-16s %s\n', row.pid, row.tid, row.comm, row.func, row.message);
  for (const f of row.kernelStack) s += `        ${f}\n`;
  for (const f of row.userStack) s += `        ${f}\n`;
  return s;
}

/** bcc's `print_event` text for one event (the row, then its stacks). */
export function formatEvent(
  p: TraceProbe,
  ev: TraceEvent,
  msg: string,
  o: RowOptions & { kernelStack: boolean; userStack: boolean },
  sym: Symbolizer,
  now = new Date(),
): string {
  return formatRow(toRow(p, ev, msg, o, sym, now), o);
}

function usageError(message: string): ArgError {
  return new ArgError(message, formatUsage(SPEC), SPEC.prog);
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  if (a.tgid && a.pid) throw usageError('only one of -p and -L may be specified');
  const maxEvents = a.max_events;
  if (a.aggregate && maxEvents === null) {
    writer.line('-M/--max-events should be specified with -A/--aggregate');
    return 1;
  }
  if (a.cgroup_path !== null) {
    throw unsupported(
      'trace: -c/--cgroup-path needs a cgroup-array map and bpf_current_task_under_cgroup, which bpfscope does not have yet',
    );
  }
  if (a.sym_file_list !== null) {
    throw unsupported('trace: -s/--sym_file_list needs build-id stack traces, which bpfscope does not support yet');
  }
  let probes: TraceProbe[];
  const attach: string[] = [];
  try {
    probes = a.probes.map(parseTraceProbe);
    for (const p of probes) {
      attach.push(
        attachPoint(p, (spec) => {
          if (spec.kind === 'kprobe' || spec.kind === 'kretprobe') {
            if (!kprobesAvailable()) matchTargets(spec);
          }
        }),
      );
    }
  } catch (e) {
    if (e instanceof TraceProbeError) {
      writer.line(e.message);
      return 1;
    }
    throw e;
  }
  const opts: TraceOptions = {
    tgid: a.tgid,
    tid: a.pid,
    uid: a.uid,
    selfPid: a.include_self ? null : process.pid,
    stringSize: a.string_size,
    timestamp: a.timestamp,
    cpu: a.print_cpu,
    kernelStack: a.kernel_stack,
    userStack: a.user_stack,
    ringPages: a.buffer_pages > 0 ? a.buffer_pages * onlineCpus() : 0,
  };
  let program: string;
  try {
    program = buildProgram(probes, attach, opts);
  } catch (e) {
    if (e instanceof TraceProbeError) {
      writer.line(e.message);
      return 1;
    }
    throw e;
  }
  // --ebpf: the framework prints the program (runProgram); -v prints it before running.
  if (a.verbose && !a.ebpf) writer.line(program);
  const rows: RowOptions & { kernelStack: boolean; userStack: boolean } = {
    timestamp: a.timestamp,
    time: a.time,
    unixTimestamp: a.unix_timestamp,
    cpu: opts.cpu,
    address: a.address,
    kernelStack: opts.kernelStack,
    userStack: opts.userStack,
    firstTs: process.hrtime.bigint(),
    firstTsReal: Date.now() / 1000,
  };
  const sym = resolverSymbolizer(
    opts.userStack || probes.some((p) => p.format.some((f) => 'conv' in f && f.conv === 'U'))
      ? (opts.tgid ?? null)
      : null,
  );
  const name = a.name;
  const msgFilter = a.msg_filter;
  const aggregate = a.aggregate;
  const recs = traceRecords(probes, opts);
  const stacks = rows.kernelStack || rows.userStack;
  // -A: each distinct text, its first row and its count
  const counts = new Map<string, { row: TraceRow; count: number }>();
  let eventCount = 0;
  let done = false;
  let tracer: Tracer | null = null;
  return runProgram({
    tool: 'trace',
    program,
    writer,
    stackMapEntries: 1024,
    onStarted: (t) => {
      tracer = t;
      writer.write(
        header(
          rows,
          probes.every((p) => p.format.length === 0),
        ),
      );
    },
    records: recs,
    onRecord: (r: { kind: string } & Readonly<Record<string, unknown>>) => {
      if (done) return;
      const [index, ev] = eventOf(r, opts);
      const p = probes[index];
      if (!p) return;
      if (name !== null && !ev.comm.includes(name)) return;
      const msg = formatMessage(p, ev, sym);
      if (msgFilter && !msg.includes(msgFilter)) return;
      const row = toRow(p, ev, msg, rows, sym);
      if (!aggregate) writer.emit(row, (x) => (stacks ? `${formatRow(x, rows)}\n` : formatRow(x, rows)));
      else {
        const text = formatRow(row, rows);
        const seen = counts.get(text);
        if (seen) seen.count++;
        else counts.set(text, { row, count: 1 });
      }
      eventCount++;
      if (maxEvents !== null && eventCount >= maxEvents) {
        if (aggregate) {
          const sorted = [...counts.values()].sort((x, y) => y.count - x.count);
          for (const e of sorted) writer.emit({ ...e.row, count: e.count }, (x) => formatAggregateRow(x, rows));
        }
        done = true;
        (tracer as Tracer | null)?.stop();
      }
    },
  });
}

/** One line of bcc's `print_aggregate_events`: the event's text and `-->COUNT n`, then a blank line. */
export function formatAggregateRow(row: TraceRow, o: Pick<RowOptions, 'unixTimestamp'>): string {
  return `${formatRow(row, o)}-->COUNT ${row.count ?? 1}\n\n`;
}

/** bcc's `print_aggregate_events`: each distinct event text with its count, most frequent first. */
export function formatAggregate(counts: Map<string, number>): string {
  return [...counts.entries()]
    .sort((x, y) => y[1] - x[1])
    .map(([k, v]) => `${k}-->COUNT ${v}\n\n`)
    .join('');
}

export const TOOL = defineTool({ spec: SPEC, results: 'rows', run });

/** `bpfscope trace [flags] probe [probe ...]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
