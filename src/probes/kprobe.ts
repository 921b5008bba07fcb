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
import { KernelError, PermissionError } from '../errors.js';
import { linkCreate } from '../kernel/bpf.js';
import { hasFeature } from '../kernel/features.js';
import { openProbeEvent, probePmu } from '../kernel/perf.js';
import type { AttachPoint } from '../lang/ast.js';
import { Btf } from '../kernel/btf.js';
import { CompileError } from '../lang/diagnostics.js';
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
import { btfFuncIds, matchModuleFunctions, paramLines, splitTraceable, traceableFunctions } from './kernel-funcs.js';

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
    // `kprobe:0xADDR` (--unsafe): a kernel address, named in decimal as bpftrace does (`kprobe:305419896`)
    this.addr = !module && /^0x[0-9a-f]+$/i.test(func) ? BigInt(func) : undefined;
    this.name =
      this.addr !== undefined
        ? `${provider}:${this.addr}`
        : `${provider}:${module ? `${module}:` : ''}${func}${offset ? `+${offset}` : ''}`;
  }

  /** The kernel address of `kprobe:0xADDR`, else undefined (a function name). */
  readonly addr: bigint | undefined;

  /**
   * @throws KernelError `Unable to attach probe: NAME (reason). ...` (bpftrace's wording, src/bpftrace.cpp) when the
   * kernel refuses the probe (no such function or address); PermissionError unchanged
   */
  attach(progFd: number): AttachedProbe {
    // the kprobe PMU takes `MODULE:NAME` or a bare name; `vmlinux` is the kernel itself
    const target = this.module && this.module !== 'vmlinux' ? `${this.module}:${this.func}` : this.func;
    const spec =
      this.addr !== undefined
        ? { kind: 'kprobe' as const, retprobe: this.retprobe, addr: this.addr }
        : { kind: 'kprobe' as const, retprobe: this.retprobe, target, offset: BigInt(this.offset) };
    try {
      return attachPerfEvents(progFd, [() => openProbeEvent(spec, { pid: -1, cpu: 0 })]);
    } catch (e) {
      if (!(e instanceof KernelError) || e instanceof PermissionError) throw e;
      const reason = e.message.replace(/^cannot attach [^:]*: /, '');
      throw new KernelError(
        e.syscall,
        e.errno,
        `Unable to attach probe: ${this.name} (${reason}). If this is expected, set the 'missing_probes' config ` +
          "variable to 'warn'.",
        e.hint !== undefined ? { hint: e.hint } : {},
      );
    }
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
    let names: string[];
    let modules: (string | undefined)[] | undefined;
    const wildcard = hasWildcard(glob) || (module !== undefined && hasWildcard(module));
    const written = `${module !== undefined ? `${module}:` : ''}${glob}`;
    if (module !== undefined && !hasWildcard(module) && module !== 'vmlinux') {
      // bpftrace (ap_probe_expansion.cpp): a named module must be loaded
      if (!traceableFunctions().some((n) => n.startsWith(`${module}:`)))
        throw attachPointError(ap, `specified module ${module} in probe ${this.kind}:${module}:${glob} is not loaded.`);
    }
    if (module !== undefined) {
      // `MODULE:FUNC`, either a glob: matched against `vmlinux:NAME` and `MODULE:NAME` (bpftrace's with_modules list)
      const found = matchModuleFunctions(traceableFunctions().map(splitTraceable), module, glob);
      names = found.map((f) => f.func);
      modules = found.map((f) => f.module);
    } else {
      const bare = bareFunctionNames();
      names = hasWildcard(glob)
        ? bare.filter(
            (
              (re) => (n: string) =>
                re.test(n)
            )(globToRegExp(glob)),
          )
        : bare.filter((n) => n === glob);
    }
    if (wildcard) {
      // bpftrace's expansion drops a wildcard that matches nothing (kprobe:vfs_read,kprobe:nonsense* attaches
      // vfs_read); the compiler reports a probe left with no attach point (probes/errors.ts NO_VALID_ATTACH_POINTS)
      if (names.length === 0) return [];
      // bpftrace's multi expansion: not for `MODULE:` globs (kprobe_multi takes bare names), offsets, or a body
      // that reads `probe`; only where the kernel has kprobe_multi
      if (!module && !offset && !opts.full && !opts.readsProbe && hasFeature('kprobeMulti')) {
        return [new KprobeMultiProbe(ap, this.kind, glob, names)];
      }
    } else if (names.length === 0) {
      // bpftrace (attachpoint_passes.cpp, ap_probe_expansion.cpp): a warning that the function is not traceable, then
      // "No matches" (config missing_probes = warn/ignore skip it); with --unsafe it tries to attach anyway
      const notTraceable = `${glob} is not traceable (either non-existing, inlined, or marked as "notrace"); attaching to it will likely fail`;
      if (opts.unsafe) {
        opts.warn?.(notTraceable);
        return [new KprobeProbe(ap, this.kind, glob, offset, module)];
      }
      throw new CompileError([
        { severity: 'warning', message: notTraceable, pos: ap.pos },
        {
          severity: 'error',
          message: `No matches for ${this.kind} ${written}.`,
          pos: ap.pos,
          ...((h) => (h ? { hint: h } : {}))(
            didYouMean(closestNames(glob, bareFunctionNames()).map((n) => `${this.kind}:${n}`)),
          ),
        },
      ]);
    }
    return names.map((n, i) => new KprobeProbe(ap, this.kind, n, offset, modules ? modules[i] : module));
  }

  /**
   * Shown by a full `-l` too (bpftrace's show_in_kernel_list). Empty without the kprobe PMU. As bpftrace
   * (probe_matcher.cpp): a search without a module lists bare names (`kprobe:vfs_read`, modules' functions too); a
   * search `MODULE:FUNC` lists `kprobe:vmlinux:vfs_read` / `kprobe:MODULE:NAME`. With `-v`, each function's
   * arguments from vmlinux BTF (`    struct file * arg0`; kretprobe: `    ssize_t retval`).
   */
  list(search: string, verbose = false): string[] {
    if (!probePmu('kprobe')) return [];
    const re = globToRegExp(search || '*');
    const withModules = search.includes(':');
    const entries = withModules
      ? traceableFunctions().map((n) => (n.includes(':') ? n : `vmlinux:${n}`))
      : bareFunctionNames();
    const out: string[] = [];
    let btf: Btf | undefined;
    let ids: Map<string, number> | undefined;
    if (verbose) {
      try {
        btf = Btf.vmlinux();
        ids = btfFuncIds(btf);
      } catch {
        // no kernel BTF: names only
      }
    }
    for (const n of entries) {
      if (!re.test(n)) continue;
      out.push(`${this.kind}:${n}`);
      const id = ids?.get(n.slice(n.indexOf(':') + 1));
      if (btf && id !== undefined) out.push(...paramLines(btf, id, this.kind));
    }
    return out;
  }
}
