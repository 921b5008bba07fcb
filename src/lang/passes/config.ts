/**
 * The `config = { key = value; ... }` block and the matching `BPFTRACE_*` environment variables (bpftrace
 * `docs/language.md` "Config Variables"; an environment variable wins over the block, as bpftrace documents). Supported so far:
 * - `max_map_keys` (default 4096): max_entries of every map;
 * - `max_strlen` (default 64, at most 16384): bytes read by str(); a probe whose strings do not fit the 512-byte BPF
 *   stack keeps its frame in a frame map (codegen/frame.ts);
 * - `perf_rb_pages` (default: 256 pages = 1 MiB): size of the event ring buffer in pages, rounded up to a power of
 *   two (bpftrace sizes its per-CPU buffers with it; we have one BPF ring buffer);
 * - `print_maps_on_exit` (default true; `0`/`1`/`true`/`false`): whether maps are printed when the run ends;
 * - `max_cat_bytes` (default 10240): bytes of a file cat() prints at most;
 * - `missing_probes` (`error` default, `warn`, `ignore`): what an attach point matching nothing does;
 * - `max_probes` (default 1024): the most probes a program attaches (a multi-attach link counts once);
 * - `show_debug_info` (default false): source lines and inlined functions in user stacks, from DWARF.
 * - `cpp_demangle` (default true; `0`/`1`/`true`/`false`): C++/Rust user symbol names printed demangled.
 * - `stack_mode` (`bpftrace` default, `perf`, `raw`; `BPFTRACE_STACK_MODE`): the output mode of `kstack`/`ustack`
 *   written without a mode (bpftrace's `build_id` mode is not supported yet: an error).
 * - `str_trunc_trailer` (default `..`, `BPFTRACE_STR_TRUNC_TRAILER`): printed after a string that fills its buffer
 *   without a NUL (current bpftrace `types_format.cpp`).
 * - `license` (default `GPL`): one of the GPL-compatible names bpftrace accepts (its `src/config.cpp`, the kernel's
 *   `license_is_gpl_compatible`); another is an error with bpftrace's message. The programs are loaded as `GPL`
 *   whichever is chosen: the kernel only records whether the license is GPL-compatible, which every accepted one is.
 * Other bpftrace variables are accepted with a warning that they have no effect yet.
 */
import type { Program } from '../ast.js';
import { CompileError, type Diagnostic } from '../diagnostics.js';

export interface RuntimeConfig {
  maxMapKeys: number;
  /** Bytes of strings read by str() (default 64, at most MAX_STRLEN_LIMIT). */
  maxStrlen: number;
  /** Ring buffer size in bytes: a power of two, at least one page. */
  ringbufSize: number;
  /** Whether maps are printed when the run ends (`print_maps_on_exit`, default true). */
  printMapsOnExit: boolean;
  /** Bytes of a file cat() prints at most (`max_cat_bytes`, default 10240 as bpftrace). */
  maxCatBytes: number;
  /** An attach point that matches nothing: an error, a warning and skipped, or skipped (`missing_probes`). */
  missingProbes: 'error' | 'warn' | 'ignore';
  /**
   * `max_probes` (`BPFTRACE_MAX_PROBES`, default 1024 as current bpftrace's config.h): the most probes a program may
   * attach; a multi-attach link (uprobe_multi/kprobe_multi) counts as one, as it is one attachment.
   */
  maxProbes: number;
  /**
   * `max_bpf_progs` (`BPFTRACE_MAX_BPF_PROGS`, default 1024 as bpftrace's config.h): the most programs bpftrace would
   * generate for the program's wildcard attach points, one per match where it expands fully (see compiler.ts
   * attach_points); checked while the attach points are expanded, before anything is loaded.
   */
  maxBpfProgs: number;
  /**
   * `show_debug_info` (default false, as bpftrace 0.17, which has no such output; current bpftrace built with
   * blazesym defaults to true): user stack frames show `@file:line` and `[inlined]` frames from DWARF.
   */
  showDebugInfo: boolean;
  /** `cpp_demangle` (default true, as bpftrace): C++ and Rust names of user symbols are printed demangled. */
  cppDemangle: boolean;
  /** `stack_mode`: the mode of `kstack`/`ustack` written without one (bpftrace's StackMode, default `bpftrace`). */
  stackMode: StackMode;
  /** `str_trunc_trailer`: text printed after a truncated string (current bpftrace's default `..`). */
  strTruncTrailer: string;
  /** `license`: one of {@link BPF_LICENSES} (default `GPL`). */
  license: string;
  /**
   * `BPFTRACE_DUMMY_TS_MAP=@name` (bpftrace's test hook, `IRBuilderBPF::CreateGetNs`): tseries() takes its clock
   * from this scalar u64 map instead of the kernel's TAI clock, so tests control time. The map name without `@`.
   */
  dummyTsMap?: string;
}

/** The stack output modes bpfscope prints (bpftrace `src/types.h` StackMode; `build_id` is for ustack only). */
export type StackMode = 'bpftrace' | 'perf' | 'raw' | 'build_id';
const STACK_MODES: readonly string[] = ['bpftrace', 'perf', 'raw', 'build_id'];

/**
 * The licenses `license` accepts, in the order bpftrace's error message lists them (its `src/config.cpp`
 * BPF_LICENSE_STR; the kernel's `license_is_gpl_compatible` accepts the same six).
 */
export const BPF_LICENSES: readonly string[] = [
  'Dual MIT/GPL',
  'Dual BSD/GPL',
  'Dual MPL/GPL',
  'GPL and additional rights',
  'GPL v2',
  'GPL',
];

export const PAGE = 4096;
/** Largest max_strlen accepted: a few such strings must fit a frame map value (codegen/frame.ts MAX_MAP_FRAME). */
const MAX_STRLEN_LIMIT = 16384;
const KNOWN_LATER = new Set([
  'log_size',
  'lazy_symbolication',
  'on_stack_limit',
  'symbol_source',
  'max_type_res_iterations',
  'unstable_map_decl',
  'unstable_import',
  'cache_user_symbols',
]);

function pow2AtLeast(n: number): number {
  let p = PAGE;
  while (p < n) p *= 2;
  return p;
}

/** Resolve the configuration from the program's config block and the environment. @throws CompileError */
export function resolveConfig(
  program: Program,
  env: NodeJS.ProcessEnv = process.env,
): { config: RuntimeConfig; warnings: Diagnostic[] } {
  const values = new Map<string, bigint | string>();
  /** Keys set by the environment: the block's value for them is checked but not used. */
  const fromEnv = new Set<string>();
  const errors: Diagnostic[] = [];
  const warnings: Diagnostic[] = [];
  for (const [k, v] of [
    ['max_map_keys', env.BPFTRACE_MAX_MAP_KEYS],
    ['perf_rb_pages', env.BPFTRACE_PERF_RB_PAGES],
    ['max_strlen', env.BPFTRACE_MAX_STRLEN],
    ['print_maps_on_exit', env.BPFTRACE_PRINT_MAPS_ON_EXIT],
    ['max_cat_bytes', env.BPFTRACE_MAX_CAT_BYTES],
    ['max_probes', env.BPFTRACE_MAX_PROBES],
    ['max_bpf_progs', env.BPFTRACE_MAX_BPF_PROGS],
  ] as const) {
    if (v !== undefined && /^\d+$/.test(v)) {
      values.set(k, BigInt(v));
      fromEnv.add(k);
    }
  }
  let missingProbes: RuntimeConfig['missingProbes'] = 'error';
  let stackMode: StackMode = 'bpftrace';
  let strTruncTrailer = env.BPFTRACE_STR_TRUNC_TRAILER ?? '..';
  let license = 'GPL';
  if (env.BPFTRACE_STR_TRUNC_TRAILER !== undefined) fromEnv.add('str_trunc_trailer');
  /** bpftrace's stack_mode parser (types.h ConfigParser<StackMode>): a name, never a number. */
  const stackModeError = (value: unknown): string | undefined =>
    typeof value === 'string' && STACK_MODES.includes(value)
      ? undefined
      : 'Invalid value for stack_mode: valid values are bpftrace, raw, perf, and build_id.';
  if (env.BPFTRACE_STACK_MODE !== undefined) {
    const message = stackModeError(env.BPFTRACE_STACK_MODE);
    if (message) errors.push({ severity: 'error', message: `BPFTRACE_STACK_MODE: ${message}` });
    else {
      stackMode = env.BPFTRACE_STACK_MODE as StackMode;
      fromEnv.add('stack_mode');
    }
  }
  for (const item of program.config) {
    const key = item.key.replace(/^BPFTRACE_/i, '').toLowerCase();
    if (
      key === 'max_map_keys' ||
      key === 'perf_rb_pages' ||
      key === 'max_strlen' ||
      key === 'max_cat_bytes' ||
      key === 'max_probes' ||
      key === 'max_bpf_progs'
    ) {
      if (typeof item.value !== 'bigint' || item.value <= 0n) {
        errors.push({
          severity: 'error',
          message: `Invalid value for ${key}: expected a positive integer`,
          pos: item.pos,
        });
        continue;
      }
      if (!fromEnv.has(key)) values.set(key, item.value);
    } else if (key === 'missing_probes') {
      if (item.value !== 'error' && item.value !== 'warn' && item.value !== 'ignore') {
        errors.push({
          severity: 'error',
          message: `Invalid value for ${key}: expected error, warn or ignore`,
          pos: item.pos,
        });
        continue;
      }
      missingProbes = item.value;
    } else if (key === 'stack_mode') {
      const message = stackModeError(item.value);
      if (message) {
        errors.push({ severity: 'error', message, pos: item.pos });
        continue;
      }
      if (!fromEnv.has(key)) stackMode = item.value as StackMode;
    } else if (key === 'str_trunc_trailer') {
      if (typeof item.value !== 'string') {
        errors.push({ severity: 'error', message: `Invalid value for ${key}: expected a string`, pos: item.pos });
        continue;
      }
      if (!fromEnv.has(key)) strTruncTrailer = item.value;
    } else if (key === 'license') {
      const found = typeof item.value === 'string' ? item.value : String(item.value);
      if (!BPF_LICENSES.includes(found)) {
        errors.push({
          severity: 'error',
          message: `Invalid value for license. Found: ${found}. Valid values: ${BPF_LICENSES.join(', ')}. Read more about BPF programs and licensing: https://docs.kernel.org/bpf/bpf_licensing.html#using-bpf-programs-in-the-linux-kernel`,
          pos: item.pos,
        });
        continue;
      }
      license = found;
    } else if (key === 'print_maps_on_exit' || key === 'show_debug_info' || key === 'cpp_demangle') {
      const v =
        typeof item.value === 'bigint'
          ? item.value !== 0n
          : item.value === 'true'
            ? true
            : item.value === 'false'
              ? false
              : null;
      if (v === null) {
        errors.push({ severity: 'error', message: `Invalid value for ${key}: expected a boolean`, pos: item.pos });
        continue;
      }
      if (!fromEnv.has(key)) values.set(key, v ? 1n : 0n);
    } else if (KNOWN_LATER.has(key)) {
      warnings.push({
        severity: 'warning',
        message: `config variable ${key} has no effect in bpfscope yet`,
        pos: item.pos,
      });
    } else {
      errors.push({ severity: 'error', message: `${item.key}: not a known configuration option`, pos: item.pos });
    }
  }
  const strlen = Number(values.get('max_strlen') ?? 64n);
  if (strlen > MAX_STRLEN_LIMIT) {
    const item = program.config.find((i) => i.key.toLowerCase().endsWith('max_strlen'));
    errors.push({
      severity: 'error',
      message: `max_strlen ${strlen} is larger than bpfscope supports (${MAX_STRLEN_LIMIT} bytes)`,
      ...(item ? { pos: item.pos } : {}),
    });
  }
  if (errors.length) throw new CompileError(errors);
  const pages = Number(values.get('perf_rb_pages') ?? 256n);
  return {
    config: {
      maxMapKeys: Number(values.get('max_map_keys') ?? 4096n),
      maxStrlen: strlen,
      ringbufSize: pow2AtLeast(pages * PAGE),
      printMapsOnExit: values.get('print_maps_on_exit') !== 0n,
      showDebugInfo: values.get('show_debug_info') === 1n,
      cppDemangle: values.get('cpp_demangle') !== 0n,
      maxCatBytes: Number(values.get('max_cat_bytes') ?? 10240n),
      maxProbes: Number(values.get('max_probes') ?? 1024n),
      maxBpfProgs: Number(values.get('max_bpf_progs') ?? 1024n),
      missingProbes,
      stackMode,
      strTruncTrailer,
      license,
      ...(env.BPFTRACE_DUMMY_TS_MAP?.startsWith('@') ? { dummyTsMap: env.BPFTRACE_DUMMY_TS_MAP.slice(1) } : {}),
    },
    warnings,
  };
}
