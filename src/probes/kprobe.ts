/**
 * The `kprobe`/`kretprobe` providers (aliases `k`/`kr`): `kprobe:FUNCTION`, `kprobe:FUNCTION+OFFSET`,
 * `kprobe:MODULE:FUNCTION`, with `*`/`?` wildcards over the traceable kernel functions (tracefs
 * `available_filter_functions`, else the code symbols of /proc/kallsyms) — bpftrace `docs/language.md` "kprobe".
 *
 * Programs are BPF_PROG_TYPE_KPROBE with a `struct pt_regs` context (`arg0..arg5`, `retval`), attached through the
 * kprobe PMU (`/sys/bus/event_source/devices/kprobe`), so no `kprobe_events` entry is created. Availability is
 * detected by trying: a kernel without CONFIG_KPROBES (like the development VM) gets one clear sentence, with the
 * tracepoint alternative when the function has an obvious one.
 */
import { existsSync, readFileSync } from 'node:fs';
import { linkCreate } from '../kernel/bpf.js';
import { hasFeature } from '../kernel/features.js';
import { openProbeEvent, probePmu } from '../kernel/perf.js';
import { locateTracefs } from '../kernel/tracefs.js';
import type { AttachPoint } from '../lang/ast.js';
import { kallsyms } from '../symbols/kallsyms.js';
import { attachPointError, closestNames, didYouMean } from './errors.js';
import { globToRegExp, hasWildcard } from './glob.js';
import { attachPerfEvents, linkHandle } from './perf-attach.js';
import {
  type AttachedProbe,
  BPF_ATTACH_TYPE,
  type ExpandedProbe,
  type ExpandOptions,
  type ProbeProvider,
} from './types.js';
import { PtRegsProbe } from './regs-probe.js';

export class KprobeProbe extends PtRegsProbe {
  readonly name: string;

  constructor(
    attachPoint: AttachPoint,
    provider: 'kprobe' | 'kretprobe',
    readonly func: string,
    readonly offset: number,
    readonly module: string | undefined,
  ) {
    super(attachPoint, provider);
    this.name = `${provider}:${module ? `${module}:` : ''}${func}${offset ? `+${offset}` : ''}`;
  }

  attach(progFd: number): AttachedProbe {
    const target = this.module ? `${this.module}:${this.func}` : this.func;
    const spec = { kind: 'kprobe' as const, retprobe: this.retprobe, target, offset: BigInt(this.offset) };
    return attachPerfEvents(progFd, [() => openProbeEvent(spec, { pid: -1, cpu: 0 })]);
  }
}

/** Tracepoints that give the same facts as commonly probed functions (for the "no kprobes" message). */
const TRACEPOINT_ALTERNATIVES: Record<string, string> = {
  do_nanosleep: 'tracepoint:syscalls:sys_enter_nanosleep / sys_enter_clock_nanosleep',
  vfs_read: 'tracepoint:syscalls:sys_enter_read',
  vfs_write: 'tracepoint:syscalls:sys_enter_write',
  vfs_open: 'tracepoint:syscalls:sys_enter_openat',
  do_sys_openat2: 'tracepoint:syscalls:sys_enter_openat',
  tcp_v4_connect: 'tracepoint:sock:inet_sock_set_state',
  tcp_set_state: 'tracepoint:sock:inet_sock_set_state',
  tcp_retransmit_skb: 'tracepoint:tcp:tcp_retransmit_skb',
  oom_kill_process: 'tracepoint:oom:mark_victim',
  finish_task_switch: 'tracepoint:sched:sched_switch',
  blk_account_io_start: 'tracepoint:block:block_io_start / block_rq_issue',
  do_exit: 'tracepoint:sched:sched_process_exit',
  wake_up_new_task: 'tracepoint:sched:sched_wakeup_new',
};

let traceable: string[] | undefined;

/**
 * Kernel functions that can be probed (sorted, unique): `NAME` for vmlinux, `MODULE:NAME` for a module's, from
 * tracefs `available_filter_functions` (lines `NAME` or `NAME [MODULE]`), else the code symbols of /proc/kallsyms.
 * GCC's `.part.N` clones are left out, as bpftrace does: they cannot be traced as functions.
 */
function traceableFunctions(): string[] {
  if (traceable) return traceable;
  const root = locateTracefs();
  const file = root ? `${root}/available_filter_functions` : undefined;
  const names = new Set<string>();
  let text: string | undefined;
  try {
    if (file && existsSync(file)) text = readFileSync(file, 'latin1');
  } catch {
    // EPERM without the ftrace function tracer: fall back to kallsyms
  }
  if (text !== undefined) {
    for (const line of text.split('\n')) {
      const m = /^(\S+)(?:\s+\[(\S+)\])?/.exec(line);
      if (m) names.add(m[2] ? `${m[2]}:${m[1]}` : m[1]!);
    }
  } else {
    for (const e of kallsyms().symbols()) {
      if (e.type === 't' || e.type === 'T') names.add(e.module ? `${e.module}:${e.name}` : e.name);
    }
  }
  traceable = [...names].filter((n) => !n.includes('.part.')).sort();
  return traceable;
}

/** The bare function names of every traceable function, vmlinux's and the modules' (sorted, unique). */
function bareFunctionNames(): string[] {
  return [...new Set(traceableFunctions().map((n) => n.slice(n.indexOf(':') + 1)))].sort();
}

/**
 * A wildcard kprobe/kretprobe as one program on one kprobe_multi link (BPF_TRACE_KPROBE_MULTI, Linux 5.18,
 * fprobe based: uapi `bpf_attr.link_create.kprobe_multi`), instead of one perf event per function. Function `i`
 * gets attach cookie `i`, from which the `func` builtin reads its name.
 */
export class KprobeMultiProbe extends PtRegsProbe {
  readonly expectedAttachType = BPF_ATTACH_TYPE.KPROBE_MULTI;
  readonly name: string;

  constructor(
    attachPoint: AttachPoint,
    provider: 'kprobe' | 'kretprobe',
    /** The glob as written (the probe's name). */
    glob: string,
    /** The matched functions (vmlinux or module functions, by bare name), in cookie order. */
    readonly funcs: readonly string[],
  ) {
    super(attachPoint, provider);
    this.name = `${provider}:${glob}`;
    this.probeNames = funcs.map((f) => `${provider}:${f}`);
  }

  readonly probeNames: readonly string[];

  attach(progFd: number): AttachedProbe {
    const fd = linkCreate(progFd, 0, BPF_ATTACH_TYPE.KPROBE_MULTI, {
      kind: 'kprobe_multi',
      flags: this.retprobe ? BPF_F_KPROBE_MULTI_RETURN : 0,
      syms: [...this.funcs],
      cookies: this.funcs.map((_, i) => BigInt(i)),
    });
    return { ...linkHandle(fd), count: this.funcs.length };
  }
}

/** `bpf_attr.link_create.kprobe_multi.flags`: attach to the functions' returns (uapi `BPF_F_KPROBE_MULTI_RETURN`). */
const BPF_F_KPROBE_MULTI_RETURN = 1;

export class KprobeProvider implements ProbeProvider {
  readonly supported = true;
  /** A full `-l` shows kprobes, not kretprobes (bpftrace's show_in_kernel_list). */
  readonly listed: boolean;
  readonly names: readonly string[];

  constructor(readonly kind: 'kprobe' | 'kretprobe') {
    this.names = kind === 'kprobe' ? ['kprobe', 'k'] : ['kretprobe', 'kr'];
    this.listed = kind === 'kprobe';
  }

  expand(ap: AttachPoint, opts: ExpandOptions = {}): ExpandedProbe[] {
    if (ap.parts.length < 1 || ap.parts.length > 2 || ap.parts.some((p) => p === '')) {
      throw attachPointError(ap, `${this.kind} probe type requires 1 or 2 arguments: ${this.kind}:[MODULE:]FUNCTION`);
    }
    if (!probePmu('kprobe')) {
      const fn = ap.parts[ap.parts.length - 1]!;
      const alt = TRACEPOINT_ALTERNATIVES[fn];
      throw attachPointError(
        ap,
        `${this.kind} probes are not available: this kernel was built without CONFIG_KPROBES (no kprobe PMU)`,
        alt ? `use ${alt} instead` : 'use a tracepoint (bpfscope -l "tracepoint:*") or a uprobe instead',
      );
    }
    const module = ap.parts.length === 2 ? ap.parts[0] : undefined;
    const spec = ap.parts[ap.parts.length - 1]!;
    const m = /^(.*?)\+(0x[0-9a-f]+|\d+)$/i.exec(spec);
    const glob = m ? m[1]! : spec;
    const offset = m ? Number(m[2]) : 0;
    if (offset && this.kind === 'kretprobe') throw attachPointError(ap, 'kretprobe does not support an offset');
    const bare = module
      ? traceableFunctions()
          .filter((n) => n.startsWith(`${module}:`))
          .map((n) => n.slice(module.length + 1))
      : bareFunctionNames();
    let names: string[];
    if (hasWildcard(glob)) {
      const re = globToRegExp(glob);
      names = bare.filter((n) => re.test(n));
      if (names.length === 0)
        throw attachPointError(ap, `No matches for ${this.kind}:${module ? `${module}:` : ''}${glob}`);
      // bpftrace's multi expansion: not for `MODULE:` globs (kprobe_multi takes bare names), offsets, or a body
      // that reads `probe`; only where the kernel has kprobe_multi
      if (!module && !offset && !opts.full && hasFeature('kprobeMulti')) {
        return [new KprobeMultiProbe(ap, this.kind, glob, names)];
      }
    } else {
      if (!bare.includes(glob)) {
        throw attachPointError(
          ap,
          `Could not resolve kernel function: ${glob}`,
          didYouMean(closestNames(glob, bare).map((n) => `${this.kind}:${n}`)),
        );
      }
      names = [glob];
    }
    return names.map((n) => new KprobeProbe(ap, this.kind, n, offset, module));
  }

  /** Shown by a full `-l` too (bpftrace's show_in_kernel_list). Empty without the kprobe PMU. */
  list(search: string): string[] {
    if (!probePmu('kprobe')) return [];
    const re = globToRegExp(search || '*');
    return traceableFunctions()
      .filter((n) => re.test(n))
      .map((n) => `${this.kind}:${n}`);
  }
}
