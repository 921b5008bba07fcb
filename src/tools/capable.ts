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
import { INT, type Parsed, type ParserSpec } from './framework/argparse.js';
import { kfuncKind, noKfuncError } from './framework/kfunc.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { runProgram, toolMain, unsupported } from './framework/runner.js';
import { clockTime, tracepointExists } from './framework/system.js';

export const SPEC: ParserSpec = {
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
};

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

/** Event record fields, in order; kstack/ustack follow when requested. audit/insetid are -1 when unknown. */
export const FIELDS = ['uid', 'pid', 'tid', 'cap', 'audit', 'insetid', 'comm'] as const;

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
  const fmt = ['%u', '%d', '%d', '%d', '%d', '%d', '%s', ...stacks.map(() => '%s')].join('\\x1f');
  p += `${indent}printf("${fmt}\\n", uid, pid, tid, ${cap}, ${audit}, ${insetid}, comm${stacks.map((s) => `, ${s}`).join('')});\n`;
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

/**
 * One event (see {@link FIELDS}) as bcc prints it, stacks included (bpftrace's kstack/ustack text, one frame a
 * line). An unknown AUDIT or INSETID prints `N/A`.
 */
export function formatRow(f: string[], extra: boolean, time: string = clockTime()): string {
  const [uid, pid, tid, capText, audit, insetid, comm = '', ...stacks] = f;
  const cap = Number(capText);
  const a = audit === '-1' ? 'N/A' : String(Number(audit));
  const row = extra
    ? pyFormat(
        '%-9s %-6d %-6d %-6d %-16s %-4d %-20s %-6s %s',
        time,
        Number(uid),
        Number(pid),
        Number(tid),
        comm,
        cap,
        capName(cap),
        a,
        insetid === '-1' ? 'N/A' : String(Number(insetid)),
      )
    : pyFormat('%-9s %-6d %-6d %-16s %-4d %-20s %-6s', time, Number(uid), Number(pid), comm, cap, capName(cap), a);
  return `${row}\n${stacks
    .map((s) => s.replace(/^\n/, '').replace(/\n$/, ''))
    .filter((s) => s !== '')
    .map((s) => `${s}\n`)
    .join('')}`;
}

async function run(a: Parsed, writer: ToolWriter): Promise<number> {
  if (a.cgroupmap !== null || a.mntnsmap !== null) {
    throw unsupported('capable: --cgroupmap/--mntnsmap read pinned BPF maps, which bpfscope tools do not support yet');
  }
  const hasTp = tracepointExists('capability', 'cap_capable');
  const opts: CapableOptions = {
    probe: hasTp ? 'tracepoint' : 'kprobe',
    verbose: a.verbose as boolean,
    pid: a.pid as number | null,
    kernelStack: a.kernel_stack as boolean,
    userStack: a.user_stack as boolean,
    unique: a.unique as boolean,
    selfPid: process.pid,
  };
  const program = buildProgram(opts);
  if (a.ebpf) {
    writer.write(program);
    return 0;
  }
  if (!hasTp && kfuncKind() !== 'kprobe') {
    throw noKfuncError(
      'capable',
      'tracing cap_capable() on a kernel without the capability:cap_capable tracepoint',
      false,
    );
  }
  const extra = a.extra as boolean;
  return runProgram({
    tool: 'capable',
    program,
    writer,
    fieldCount: FIELDS.length + (opts.kernelStack ? 1 : 0) + (opts.userStack ? 1 : 0),
    onStarted: () => writer.write(header(extra)),
    onEvent: (f) => writer.write(formatRow(f, extra)),
  });
}

/** `bpfscope capable [flags]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(SPEC, argv, run);
}
