/**
 * The probe provider plug-in interface (ply's design: one module per provider behind one interface). The compiler
 * asks the registry (`registry.ts`) for the provider of each attach point, `expand`s it into concrete probes
 * (resolving wildcards), compiles one BPF program per probe with the program type the probe names, and the runtime
 * loads it and calls `attach` (or, for BEGIN/END, runs it with BPF_PROG_TEST_RUN).
 */
import type { AttachPoint } from '../lang/ast.js';
import type { SType } from '../lang/types.js';

/** BPF program types used by the providers (`enum bpf_prog_type`, include/uapi/linux/bpf.h). */
export const BPF_PROG_TYPE = {
  KPROBE: 2,
  TRACEPOINT: 5,
  XDP: 6,
  PERF_EVENT: 7,
  RAW_TRACEPOINT: 17,
  TRACING: 26,
} as const;

/** BPF attach types used by the providers (`enum bpf_attach_type`, include/uapi/linux/bpf.h). */
export const BPF_ATTACH_TYPE = {
  TRACE_RAW_TP: 23,
  TRACE_FENTRY: 24,
  TRACE_FEXIT: 25,
  PERF_EVENT: 41,
  KPROBE_MULTI: 42,
  UPROBE_MULTI: 48,
} as const;

/** One USDT argument operand (from the `.note.stapsdt` argument string; offsets into `struct pt_regs`). */
export type UsdtArg =
  | { kind: 'reg'; size: number; signed: boolean; regOffset: number }
  | { kind: 'mem'; size: number; signed: boolean; regOffset: number; disp: number }
  | { kind: 'const'; size: number; signed: boolean; value: bigint };

/** What `attach` returns: closing it detaches the program and closes every fd the attachment opened. Idempotent. */
export interface AttachedProbe {
  close(): void;
  /**
   * How many probes this attachment is, for the `Attached N probes` notice: the functions on a multi-attach link
   * (current bpftrace's probe_count()), else 1 (absent).
   */
  readonly count?: number;
}

/** Options for {@link ExpandedProbe.attach}. */
export interface AttachOptions {
  /** `-p PID`: providers that can filter by process in the kernel (profile) open their events for this pid only. */
  pid?: number;
  /**
   * A non-fatal attach problem (e.g. one function of a wildcard the kernel refuses, skipped): one sentence, without
   * the `WARNING:` prefix. Default: written to stderr as `WARNING: MESSAGE`.
   */
  warn?: (message: string) => void;
}

/** One concrete probe an attach point expanded to; the compiler emits one BPF program per ExpandedProbe. */
export interface ExpandedProbe {
  /** Canonical provider name (`tracepoint`, `interval`, `begin`, ...), never an alias. */
  readonly provider: string;
  /**
   * Canonical full name, what the `probe` builtin prints (current bpftrace's form): `tracepoint:sched:sched_switch`,
   * `interval:s:1`, `interval:us:1000000` (for `interval:1s`), `profile:hz:99`, `begin`, `end`.
   */
  readonly name: string;
  /** The attach point as written, for error positions. */
  readonly attachPoint: AttachPoint;
  /** Program type to load this probe's program with (see {@link BPF_PROG_TYPE}). */
  readonly progType: number;
  /** `expected_attach_type` for BPF_PROG_LOAD, when the program type needs one. */
  readonly expectedAttachType?: number;
  /** `attach_btf_id` for BPF_PROG_LOAD (tp_btf/fentry). */
  readonly attachBtfId?: number;
  /**
   * Type of the `args` builtin: a tracepoint's record (fields at their context offsets, see
   * `tracepoint-format.ts`), or null where `args` does not exist. May be computed lazily on first read (it can
   * throw a BpfscopeError if the format cannot be read).
   */
  readonly args: SType | null;
  /**
   * For probes whose context is `struct pt_regs` (uprobe, kprobe): byte offsets of the argument registers
   * (`arg0..argN`) and of the return value register (`retval`, meaningful in return probes).
   */
  readonly regs?: { readonly args: readonly number[]; readonly ret: number };
  /** True for return probes (uretprobe, kretprobe, fexit): `retval` is available. */
  readonly retprobe?: boolean;
  /** USDT probes: the operands `arg0..argN` read (registers, user memory, constants). */
  readonly usdtArgs?: readonly UsdtArg[];
  /** The probed function's name (the `func` builtin), where known at compile time. */
  readonly func?: string;
  /**
   * Multi-attach probes (one program and one kprobe_multi/uprobe_multi link for every function a wildcard matched,
   * bpftrace's "multi expansion"): the functions, in attach-cookie order. The link gives function `i` the cookie
   * `i`; the `func` builtin reads the name from a table indexed by bpf_get_attach_cookie().
   */
  readonly funcs?: readonly string[];
  /**
   * Multi-attach probes: what the `probe` builtin gives for each function, in cookie order (the name the same match
   * has as a probe of its own, e.g. `uprobe:/usr/lib/libc.so.6:malloc`), read like `func` by the attach cookie. So a
   * body that reads `probe` keeps the one multi link instead of one program per match (bpftrace's full expansion).
   */
  readonly probeNames?: readonly string[];
  /**
   * A syscall tracepoint wildcard attached as one `raw_syscalls` program (probes/syscalls.ts): the program returns
   * unless the syscall number has a name in this table, and `probe` reads the name from it.
   */
  readonly syscalls?: SyscallTable;
  /**
   * BEGIN/END: the runtime runs the program once with BPF_PROG_TEST_RUN instead of calling `attach`; `signal`
   * (`self:signal:SIGUSR1`): it runs the program that way each time bpfscope receives the signal; bench probes
   * (`bench:NAME`) are test-run repeatedly, and only in `--mode bench`; test probes (`test:NAME`) once each, in
   * `--mode test`.
   */
  readonly special?: 'begin' | 'end' | 'signal' | 'bench' | 'test';
  /**
   * Attach a loaded program (`progFd` is the fd BPF_PROG_LOAD returned; the caller keeps owning it).
   * @throws KernelError / BpfscopeError when the kernel refuses (nothing stays open then).
   */
  attach(progFd: number, opts?: AttachOptions): AttachedProbe;
}

/** What the compiler tells a provider about the probe an attach point belongs to. */
export interface ExpandOptions {
  /**
   * The probe body reads `probe`: every match needs a program of its own, which knows its name (bpftrace's "full
   * expansion"); otherwise a wildcard may become one multi-attach probe (kprobe_multi) where the kernel has it.
   */
  full?: boolean;
}

/** A probe provider: parses, expands, lists and attaches one kind of attach point. */
export interface ProbeProvider {
  /** Canonical name first, then aliases (bpftrace's): `['tracepoint', 't']`. Matched exactly, then lower-cased. */
  readonly names: readonly string[];
  /** False for providers that are known but not implemented yet (`expand` then throws "not supported yet"). */
  readonly supported: boolean;
  /** Shown when `-l` lists every provider (bpftrace's `show_in_kernel_list`). */
  readonly listed: boolean;
  /**
   * Expand one attach point (wildcards resolved) into concrete probes, sorted by name, never empty.
   * @throws CompileError (positioned at `ap.pos`, with a "did you mean" hint where one helps) for a malformed attach
   * point or when nothing matches.
   */
  expand(ap: AttachPoint, opts?: ExpandOptions): ExpandedProbe[];
  /**
   * Lines of `-l` output for the attach points matching `search`, the text after `provider:` (a glob, e.g.
   * `sched:sched_*`, `*:*`); with `verbose`, each probe's argument lines follow it, indented by four spaces, as
   * `bpftrace -lv` prints them.
   */
  list(search: string, verbose: boolean): string[];
}

/** See {@link ExpandedProbe.syscalls}. */
export interface SyscallTable {
  /** `probe` by syscall number (index = number; `''` = not matched: the program returns). */
  readonly names: readonly string[];
  /** Byte offset of `long id` (the syscall number) in the raw_syscalls record, from its format file. */
  readonly idOffset: number;
  /** x86-64: byte offset of `thread_info.status` in `task_struct` (BTF), for the TS_COMPAT check. */
  readonly compatStatusOffset: number;
  /** The status bit of a compat syscall (x86-64 `TS_COMPAT`): the program returns when it is set. */
  readonly compatMask: number;
}
