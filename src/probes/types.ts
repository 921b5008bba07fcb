/**
 * The probe provider plug-in interface (ply's design: one module per provider behind one interface). The compiler
 * asks the registry (`registry.ts`) for the provider of each attach point, `expand`s it into concrete probes
 * (resolving wildcards), compiles one BPF program per probe with the program type the probe names, and the runtime
 * loads it and calls `attach` (or, for BEGIN/END, runs it with BPF_PROG_TEST_RUN).
 */
import type { AttachPoint } from '../lang/ast.js';
import type { ExpandedProbe } from '../lang/probe.js';

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

// The probe description the compiler consumes is declared in lang/probe.ts (the analyser reads it).
export type { AttachedProbe, AttachOptions, ExpandedProbe, SyscallTable, UsdtArg } from '../lang/probe.js';

/** What the compiler tells a provider about the probe an attach point belongs to. */
export interface ExpandOptions {
  /**
   * Every match as a probe of its own (bpftrace's "full expansion"; `-l PROGRAM` lists them so); otherwise a wildcard
   * may become one multi-attach probe (kprobe_multi, uprobe_multi) where the kernel has it.
   */
  full?: boolean;
  /**
   * The probe body reads `probe`: a kprobe/kretprobe wildcard then gets one program per function, as bpftrace (a
   * uprobe wildcard keeps its uprobe_multi link and reads `probe` by attach cookie: docs/compat.md).
   */
  readsProbe?: boolean;
  /** `-p PID`: uprobe/USDT targets may be wildcards over the process's mappings, or in its mount namespace. */
  pid?: number;
  /** `--unsafe`: a uprobe on a function whose symbol has no size, or at an address of a file that is not ELF (a flat binary: the address is the file offset), is allowed (bpftrace refuses both otherwise). */
  unsafe?: boolean;
  /**
   * uprobe/uretprobe: `func` names a C++ or Rust function demangled (`demo::work(int)`), as bpftrace's `cpp_demangle`
   * config (default on) does; probe names and wildcards keep the symbols as the file has them.
   */
  demangle?: boolean;
  /** Reports a warning about the attach point (bpftrace's: a kprobe on a function that is not traceable). */
  warn?: (message: string) => void;
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
   * Expand one attach point (wildcards resolved) into concrete probes, sorted by name; empty only for a kprobe or
   * kretprobe wildcard that matches nothing (bpftrace drops it; the compiler reports a probe left with none).
   * @throws CompileError (positioned at `ap.pos`, with a "did you mean" hint where one helps) for a malformed attach
   * point or when nothing matches.
   */
  expand(ap: AttachPoint, opts?: ExpandOptions): ExpandedProbe[];
  /**
   * Lines of `-l` output for the attach points matching `search`, the text after `provider:` (a glob, e.g.
   * `sched:sched_*`, `*:*`); with `verbose`, each probe's argument lines follow it, indented by four spaces, as
   * `bpftrace -lv` prints them. `opts.pid` (`-l -p PID`): uprobe/USDT searches cover the process's mappings.
   */
  list(search: string, verbose: boolean, opts?: { pid?: number }): string[];
}
