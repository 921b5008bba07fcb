/**
 * What the compiler knows about one concrete probe: the {@link ExpandedProbe} a provider (`probes/`) expanded an
 * attach point into, with the context it offers (`args` type, `pt_regs` offsets, USDT operands) and how to attach
 * the loaded program. The analyser and the code generator read it; the providers implement it. It is declared
 * here, in lang/, so that the analyser does not import the providers' layer (probes/types.ts re-exports it).
 */
import type { AttachPoint } from './ast.js';
import type { SType } from './types.js';

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
  /** Program type to load this probe's program with (`enum bpf_prog_type`; probes/types.ts BPF_PROG_TYPE). */
  readonly progType: number;
  /** `expected_attach_type` for BPF_PROG_LOAD, when the program type needs one. */
  readonly expectedAttachType?: number;
  /** `attach_btf_id` for BPF_PROG_LOAD (tp_btf/fentry). */
  readonly attachBtfId?: number;
  /**
   * `attach_prog_fd` for BPF_PROG_LOAD (the same field as `attach_btf_obj_fd`): the BPF program an `fentry:bpf:ID:NAME`
   * program traces, `attachBtfId` then being the FUNC id in that program's BTF.
   */
  readonly attachBtfObjFd?: number;
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
  /**
   * Uprobes: a named C type (`struct Foo`, a typedef) as the probed binary's debug information declares it, for
   * casts and `sizeof` in the probe's body; `undefined` when it has none (the kernel's BTF is searched next).
   */
  userType?(spec: string): SType | undefined;
  /** USDT probes: the operands `arg0..argN` read (registers, user memory, constants). */
  readonly usdtArgs?: readonly UsdtArg[];
  /** iter probes: the iterator's name (`task`, `task_file`, ...); `ctx` is a `struct bpf_iter__NAME *`. */
  readonly iter?: string;
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
