/**
 * capable: trace security capability checks (cap_capable()). Follows bcc's `tools/capable.py` (flags, help, the
 * `%-9s %-6s %-6s %-16s %-4s %-20s %-6s` header and rows, `-x` TID/INSETID columns, `-K`/`-U` stacks, `--unique`,
 * the tool's own process left out).
 *
 * Probe: the `capability:cap_capable` tracepoint when the kernel has it (6.x kernels with it fire it at the end of
 * cap_capable() for every check: fields cred, target_ns, capable_ns, cap, ret), else `kprobe:cap_capable` as bcc.
 * Column mapping on the tracepoint: UID = the current task's uid (bcc: bpf_get_current_uid_gid(), same), PID/TID =
 * the current task, COMM = its comm, CAP = `cap`, NAME = the capability's name; AUDIT and INSETID come from
 * cap_capable()'s `opts` argument, which the tracepoint does not carry: they print `N/A`, and without `-v` the
 * non-audit checks (CAP_OPT_NOAUDIT) cannot be left out, so every check is shown. On the kprobe path AUDIT is
 * `(opts & CAP_OPT_NOAUDIT) == 0` and INSETID `(opts & CAP_OPT_INSETID) != 0` (include/linux/security.h), as bcc.
 */
import { CAPABILITIES } from './data/capabilities.js';
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import { kfuncKind, noKfuncError } from './framework/kfunc.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { type DecodedOf, records } from './framework/record.js';
import { defineTool, runProgram, toolMain, unsupported } from './framework/runner.js';
import { clockTime, tracepointExists } from './framework/system.js';

export const SPEC = {
  prog: 'capable',
  description: 'Trace security capability checks',
  raw: true,
  epilog: `examples:
    ./capable             # trace capability checks
    ./capable -v          # verbose: include non-audit checks
    ./capable -p 181      # only trace PID 181
    ./capable -K          # add kernel stacks to trace
    ./capable -U          # add user-space stacks to trace
    ./capable -x          # extra fields: show TID and INSETID columns
    ./capable --unique    # don't repeat stacks for the same pid or cgroup
    ./capable --cgroupmap mappath  # only trace cgroups in this BPF map
    ./capable --mntnsmap mappath   # only trace mount namespaces in the map
`,
  options: [
    { flags: ['-v', '--verbose'], kind: 'flag', help: 'include non-audit checks' },
    { flags: ['-p', '--pid'], kind: 'value', type: INT, help: 'trace this PID only' },
    { flags: ['-K', '--kernel-stack'], kind: 'flag', help: 'output kernel stack trace' },
    { flags: ['-U', '--user-stack'], kind: 'flag', help: 'output user stack trace' },
    { flags: ['-x', '--extra'], kind: 'flag', help: 'show extra fields in TID and INSETID columns' },
    { flags: ['--cgroupmap'], kind: 'value', help: 'trace cgroups in this BPF map only' },
    { flags: ['--mntnsmap'], kind: 'value', help: 'trace mount namespaces in this BPF map only' },
    { flags: ['--unique'], kind: 'flag', help: "don't repeat stacks for the same pid or cgroup" },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
} as const satisfies ParserSpec;

export interface CapableOptions {
  /** `tracepoint`: capability:cap_capable; `kprobe`: kprobe:cap_capable (arg2 = cap, arg3 = opts). */
  probe: 'tracepoint' | 'kprobe';
  verbose?: boolean;
  pid?: number | null;
  kernelStack?: boolean;
  userStack?: boolean;
  unique?: boolean;
  /** The tracing process, left out as bcc leaves itself out. */
  selfPid: number;
}

/**
 * The program's record: one per check. audit/insetid are -1 when unknown (the tracepoint); the stacks are bpftrace's
 * kstack/ustack text, empty when not requested.
 */
export const RECORDS = records({
  check: {
    uid: 'u32',
    pid: 'u32',
    tid: 'u32',
    cap: 's32',
    audit: 's32',
    insetid: 's32',
    comm: 'str',
    kstack: 'str',
    ustack: 'str',
  },
});
export type CheckRecord = DecodedOf<typeof RECORDS.decls>;

/** One capability check (runTool's row, `--json`'s object). */
export interface CapCheckRow {
  /** Wall-clock time when the line was printed, HH:MM:SS. */
  time: string;
  uid: number;
  pid: number;
  tid: number;
  comm: string;
  /** The capability's number, and its name (linux/capability.h; `?` when unknown). */
  cap: number;
  name: string;
  /** Whether the check is audited (1/0), null when the probe cannot tell (the tracepoint: bcc's AUDIT prints N/A). */
  audit: number | null;
  /** Whether CAP_OPT_INSETID was set (1/0), null when the probe cannot tell (bcc's -x INSETID column). */
  insetid: number | null;
  /** `-K`/`-U`: the kernel and user stacks, innermost frame first (symbol+offset as bpftrace prints them); else null. */
  kernelStack: string[] | null;
  userStack: string[] | null;
}

/** The bpftrace program for `o`. */
export function buildProgram(o: CapableOptions): string {
  const tp = o.probe === 'tracepoint';
  const cap = tp ? 'args.cap' : '(int32)arg2';
  const conds = [`pid != ${o.selfPid}`, o.pid ? `pid == ${o.pid}` : null];
  // CAP_OPT_NOAUDIT = 1 << 1, CAP_OPT_INSETID = 1 << 2 (include/linux/security.h).
  if (!tp && !o.verbose) conds.push('(arg3 & 2) == 0');
  const stacks = [o.kernelStack ? 'kstack' : null, o.userStack ? 'ustack' : null].filter((s) => s !== null);
  let p = configBlock();
  p += `${tp ? 'tracepoint:capability:cap_capable' : 'kprobe:cap_capable'}${predicate(conds)} {\n`;
  let indent = '  ';
  if (o.unique) {
    const key = [cap, 'pid', ...stacks].join(', ');
    p += `  if (@seen[${key}] == 0) {\n    @seen[${key}] = 1;\n`;
    indent = '    ';
  }
  const audit = tp ? '-1' : '(arg3 & 2) == 0 ? 1 : 0';
  const insetid = tp ? '-1' : '(arg3 & 4) != 0 ? 1 : 0';
  const emit = RECORDS.emit('check', {
    uid: 'uid',
    pid: 'pid',
    tid: 'tid',
    cap,
    audit,
    insetid,
    comm: 'comm',
    kstack: o.kernelStack ? 'kstack' : '""',
    ustack: o.userStack ? 'ustack' : '""',
  });
  p += `${indent}${emit}\n`;
  if (o.unique) p += '  }\n';
  p += '}\n';
  return p;
}

/** bcc's header line (`-x` adds TID and INSETID). */
export function header(extra: boolean): string {
  return extra
    ? `${pyFormat('%-9s %-6s %-6s %-6s %-16s %-4s %-20s %-6s %s', 'TIME', 'UID', 'PID', 'TID', 'COMM', 'CAP', 'NAME', 'AUDIT', 'INSETID')}\n`
    : `${pyFormat('%-9s %-6s %-6s %-16s %-4s %-20s %-6s', 'TIME', 'UID', 'PID', 'COMM', 'CAP', 'NAME', 'AUDIT')}\n`;
}

/** bcc's name of capability `cap` (`?` when unknown). */
export function capName(cap: number): string {
  return CAPABILITIES[cap] ?? '?';
}

/** bpftrace's stack text (`\n` then one frame a line, indented by 8 spaces) as frames; null when not requested. */
function frames(text: string, requested: boolean): string[] | null {
  if (!requested) return null;
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => (l.startsWith(STACK_INDENT) ? l.slice(STACK_INDENT.length) : l.trimStart()));
}

/** How bpftrace (and bcc's capable) indents a stack frame. */
const STACK_INDENT = ' '.repeat(8);

/** The row of one record; `stacks` says which stacks the program sends (`-K`, `-U`). */
export function toRow(
  r: CheckRecord,
  stacks: { kernel: boolean; user: boolean },
  time: string = clockTime(),
): CapCheckRow {
  return {
    time,
    uid: r.uid,
    pid: r.pid,
    tid: r.tid,
    comm: r.comm,
    cap: r.cap,
    name: capName(r.cap),
    audit: r.audit === -1 ? null : r.audit,
    insetid: r.insetid === -1 ? null : r.insetid,
    kernelStack: frames(r.kstack, stacks.kernel),
    userStack: frames(r.ustack, stacks.user),
  };
}

/** One check as bcc prints it, stacks included (one frame a line). An unknown AUDIT or INSETID prints `N/A`. */
export function formatRow(row: CapCheckRow, extra: boolean): string {
  const a = row.audit === null ? 'N/A' : String(row.audit);
  const line = extra
    ? pyFormat(
        '%-9s %-6d %-6d %-6d %-16s %-4d %-20s %-6s %s',
        row.time,
        row.uid,
        row.pid,
        row.tid,
        row.comm,
        row.cap,
        row.name,
        a,
        row.insetid === null ? 'N/A' : String(row.insetid),
      )
    : pyFormat('%-9s %-6d %-6d %-16s %-4d %-20s %-6s', row.time, row.uid, row.pid, row.comm, row.cap, row.name, a);
  const stack = [...(row.kernelStack ?? []), ...(row.userStack ?? [])];
  return `${line}\n${stack.map((f) => `${STACK_INDENT}${f}\n`).join('')}`;
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  if (a.cgroupmap !== null || a.mntnsmap !== null) {
    throw unsupported('capable: --cgroupmap/--mntnsmap read pinned BPF maps, which bpfscope tools do not support yet');
  }
  const hasTp = tracepointExists('capability', 'cap_capable');
  const opts: CapableOptions = {
    probe: hasTp ? 'tracepoint' : 'kprobe',
    verbose: a.verbose,
    pid: a.pid,
    kernelStack: a.kernel_stack,
    userStack: a.user_stack,
    unique: a.unique,
    selfPid: process.pid,
  };
  const program = buildProgram(opts);
  // --ebpf prints the kprobe program even where kprobes are missing
  if (!hasTp && kfuncKind() !== 'kprobe' && writer.mode !== 'ebpf') {
    throw noKfuncError(
      'capable',
      'tracing cap_capable() on a kernel without the capability:cap_capable tracepoint',
      false,
    );
  }
  const extra = a.extra;
  const stacks = { kernel: a.kernel_stack, user: a.user_stack };
  return runProgram({
    tool: 'capable',
    program,
    writer,
    onStarted: () => writer.write(header(extra)),
    records: RECORDS,
    onRecord: (r: CheckRecord) => writer.emit(toRow(r, stacks), (x) => formatRow(x, extra)),
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'rows', run });

/** `bpfscope capable [flags]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
