/**
 * Kernel functions as the kprobe and fentry providers see them: the traceable functions (tracefs
 * `available_filter_functions`, else the code symbols of /proc/kallsyms), vmlinux's BTF functions by name, matching
 * of `[MODULE:]FUNCTION` globs with `vmlinux` as the kernel's own module name, and the `-lv` argument lines
 * (bpftrace `src/btf.cpp` get_params_impl / get_kprobes_params_from_btf, `src/probe_matcher.cpp`).
 */
import { existsSync, readFileSync } from 'node:fs';
import { BpfscopeError } from '../errors.js';
import { type Btf, BtfKind } from '../kernel/btf.js';
import { locateTracefs } from '../kernel/tracefs.js';
import { kallsyms } from '../symbols/kallsyms.js';
import { globToRegExp, hasWildcard } from './glob.js';

let traceable: string[] | undefined;
/** The text of `--traceable-functions FILE`, used instead of tracefs (see {@link useTraceableFunctionsFile}). */
let traceableText: string | undefined;

/**
 * bpftrace's `--traceable-functions FILE`: read the traceable kernel functions from FILE (the format of tracefs
 * `available_filter_functions`: `NAME` or `NAME [MODULE]` per line) instead of tracefs. It decides which kprobe and
 * fentry/fexit functions match; with --unsafe, a function not in it is still tried (with a warning). Process-wide;
 * the CLI sets it once from its options.
 * @throws BpfscopeError when FILE cannot be read (bpftrace: "Failed to open kernel function info")
 */
export function useTraceableFunctionsFile(path: string): void {
  try {
    traceableText = readFileSync(path, 'latin1');
  } catch (e) {
    throw new BpfscopeError(
      `Failed to open kernel function info: ${path}: ${(e as Error).message.replace(/^\w+: /, '')}`,
    );
  }
  traceable = undefined;
}

/**
 * Kernel functions that can be probed (sorted, unique): `NAME` for vmlinux, `MODULE:NAME` for a module's, from
 * `--traceable-functions FILE` if given, else tracefs `available_filter_functions` (lines `NAME` or `NAME [MODULE]`),
 * else the code symbols of /proc/kallsyms. GCC's `.part.N` clones are left out, as bpftrace does: they cannot be
 * traced as functions; so are the functions bpftrace leaves out because tracing them can hang or crash the kernel
 * (see {@link isUnsafeToTrace}).
 */
export function traceableFunctions(): string[] {
  if (traceable) return traceable;
  const names = new Set<string>();
  let text = traceableText;
  if (text === undefined) {
    const root = locateTracefs();
    const file = root ? `${root}/available_filter_functions` : undefined;
    try {
      if (file && existsSync(file)) text = readFileSync(file, 'latin1');
    } catch {
      // EPERM without the ftrace function tracer: fall back to kallsyms
    }
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
  traceable = [...names].filter((n) => !n.includes('.part.') && !isUnsafeToTrace(n.slice(n.indexOf(':') + 1))).sort();
  return traceable;
}

/** Functions never offered for tracing, by exact name (bpftrace `src/symbols/kernel.cpp`, from the kernel's BPF selftests). */
const UNSAFE_FUNCS = new Set(['arch_cpu_idle', 'default_idle', 'bpf_dispatcher_xdp_func']);
/** ...and by name prefix: the RCU machinery the probe itself runs under, and ftrace's placeholder symbol. */
const UNSAFE_PREFIXES = ['rcu_', '__ftrace_invalid_address__'];

/**
 * Whether bpftrace refuses to offer kernel function `name` to kprobe/fentry (and `-l`): the idle loop, the XDP
 * dispatcher and every `rcu_*` function, which are not marked notrace but can hang or crash the kernel when traced.
 * So `kprobe:rcu_*` matches nothing and `kprobe:rcu_read_lock` is "No matches" (unless --unsafe).
 */
export function isUnsafeToTrace(name: string): boolean {
  return UNSAFE_FUNCS.has(name) || UNSAFE_PREFIXES.some((p) => name.startsWith(p));
}

/** A kernel function: `module` is `vmlinux` for the kernel's own. */
export interface KernelFunction {
  module: string;
  func: string;
}

/** Splits an entry of traceableFunctions() (`NAME` or `MODULE:NAME`) into module (`vmlinux` for bare) and name. */
export function splitTraceable(entry: string): KernelFunction {
  const colon = entry.indexOf(':');
  return colon < 0
    ? { module: 'vmlinux', func: entry }
    : { module: entry.slice(0, colon), func: entry.slice(colon + 1) };
}

/**
 * The functions among `funcs` that `MODULE:FUNC` names, MODULE and FUNC each a glob or a literal (`vmlinux` is the
 * kernel's own functions), in `funcs`' order. As bpftrace matches a kprobe or fentry attach point with a target.
 */
export function matchModuleFunctions(funcs: readonly KernelFunction[], module: string, func: string): KernelFunction[] {
  const modOk = hasWildcard(module)
    ? (
        (re) => (m: string) =>
          re.test(m)
      )(globToRegExp(module))
    : (m: string) => m === module;
  const funcOk = hasWildcard(func)
    ? (
        (re) => (f: string) =>
          re.test(f)
      )(globToRegExp(func))
    : (f: string) => f === func;
  return funcs.filter((f) => modOk(f.module) && funcOk(f.func));
}

const funcIdCache = new WeakMap<Btf, Map<string, number>>();

/** Every FUNC of `btf` by name (the first id of a name), in one pass over the types; cached per Btf. */
export function btfFuncIds(btf: Btf): Map<string, number> {
  let ids = funcIdCache.get(btf);
  if (ids) return ids;
  ids = new Map();
  for (let id = 1; id <= btf.count; id++) {
    if (btf.kind(id) !== BtfKind.FUNC) continue;
    const name = btf.name(id);
    if (!ids.has(name)) ids.set(name, id);
  }
  funcIdCache.set(btf, ids);
  return ids;
}

/**
 * The `-lv` lines under a kernel function with BTF FUNC `id` (each indented by four spaces), as bpftrace prints them:
 * - `fentry`/`fexit`: `TYPE NAME` per parameter, then `TYPE retval` unless the function returns void;
 * - `kprobe`: `TYPE argN` per parameter, floating-point ones left out (they are not in argN registers);
 * - `kretprobe`: `TYPE retval`, or `void`.
 */
export function paramLines(btf: Btf, id: number, kind: 'fentry' | 'fexit' | 'kprobe' | 'kretprobe'): string[] {
  const proto = btf.funcProto(id);
  const ret = proto.returnTypeId;
  if (kind === 'kretprobe') return [ret ? `    ${btf.typeName(ret)} retval` : '    void'];
  if (kind === 'kprobe') {
    const out: string[] = [];
    for (const p of proto.params) {
      if (btf.kind(p.typeId) === BtfKind.FLOAT) continue;
      out.push(`    ${btf.typeName(p.typeId)} arg${out.length}`);
    }
    return out;
  }
  const out = proto.params.map((p) => `    ${btf.typeName(p.typeId)} ${p.name}`);
  if (ret) out.push(`    ${btf.typeName(ret)} retval`);
  return out;
}
