/**
 * The `uprobe`/`uretprobe` providers (aliases `u`/`ur`): `uprobe:BINARY:FUNCTION`, `uprobe:BINARY:FUNCTION+OFFSET`,
 * `uprobe:BINARY:0xADDRESS`, with `*`/`?` wildcards over the binary's ELF function symbols (bpftrace
 * `docs/language.md` "uprobe, uretprobe"). BINARY is a path, or a library/executable name resolved through the
 * dynamic linker's cache (`ldconfig -p`) and `$PATH`, as bpftrace does.
 *
 * The program is a BPF_PROG_TYPE_KPROBE program whose context is `struct pt_regs` (`arg0..arg5` from the calling
 * convention's registers, `retval` from the return register); it is attached through the uprobe PMU
 * (`/sys/bus/event_source/devices/uprobe`) at the function's *file offset*, so nothing is written to tracefs'
 * `uprobe_events` and nothing outlives the process.
 */
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { childProcess } from '../builtins.js';
import { readLdCache } from './ldcache.js';
import type { KernelError } from '../errors.js';
import { linkCreate } from '../kernel/bpf.js';
import { close as closeFd } from '../kernel/ffi.js';
import { hasFeature } from '../kernel/features.js';
import { openProbeEvent } from '../kernel/perf.js';
import type { AttachPoint } from '../lang/ast.js';
import type { SType } from '../lang/types.js';
import { ElfFile, type ElfSegment, STT_FUNC, STT_GNU_IFUNC, symbolFileOffset } from '../symbols/elf.js';
import { attachPointError, closestNames, didYouMean, isRefusedProbe } from './errors.js';
import { globToRegExp, hasWildcard } from './glob.js';
import { attachPerfEvents, linkHandle } from './perf-attach.js';
import { PtRegsProbe } from './regs-probe.js';
import { uprobeArgsType } from './uprobe-args.js';
import {
  type AttachedProbe,
  type AttachOptions,
  BPF_ATTACH_TYPE,
  type ExpandedProbe,
  type ExpandOptions,
  type ProbeProvider,
} from './types.js';

export { PT_REGS_X86_64 } from './regs-probe.js';

export class UprobeProbe extends PtRegsProbe {
  readonly name: string;

  constructor(
    attachPoint: AttachPoint,
    provider: 'uprobe' | 'uretprobe',
    /** Absolute path of the binary. */
    readonly path: string,
    /** Function name (the `func` builtin), or the address text for address probes. */
    readonly func: string,
    /** Offset in the file where the probe goes. */
    readonly fileOffset: number,
    display: string,
  ) {
    super(attachPoint, provider);
    this.name = `${provider}:${path}:${display}`;
  }

  private argsType: SType | null | undefined;

  /** `args` from the binary's DWARF at a function's entry (probes/uprobe-args.ts), else none. */
  override get args(): SType | null {
    if (this.argsType === undefined) {
      this.argsType = this.provider === 'uprobe' ? uprobeArgsType(this.path, this.func, this.fileOffset) : null;
    }
    return this.argsType;
  }

  attach(progFd: number, opts: AttachOptions = {}): AttachedProbe {
    const spec = {
      kind: 'uprobe' as const,
      retprobe: this.retprobe,
      target: this.path,
      offset: BigInt(this.fileOffset),
    };
    return attachPerfEvents(progFd, [
      () => openProbeEvent(spec, { pid: opts.pid ?? -1, cpu: opts.pid === undefined ? 0 : -1 }),
    ]);
  }
}

/**
 * A uprobe/uretprobe wildcard as one program on one uprobe_multi link (BPF_TRACE_UPROBE_MULTI, Linux 6.6: uapi
 * `bpf_attr.link_create.uprobe_multi`) instead of one perf event per function, as bpftrace does where the kernel
 * has it. Function `i` gets attach cookie `i`, from which the `func` builtin reads its name.
 */
export class UprobeMultiProbe extends PtRegsProbe {
  readonly expectedAttachType = BPF_ATTACH_TYPE.UPROBE_MULTI;
  readonly name: string;

  constructor(
    attachPoint: AttachPoint,
    provider: 'uprobe' | 'uretprobe',
    /** Absolute path of the binary. */
    readonly path: string,
    /** The glob as written (the probe's name). */
    glob: string,
    /** The matched functions, in cookie order. */
    readonly funcs: readonly string[],
    /** File offset of each function's probe (bytes). */
    readonly fileOffsets: readonly number[],
  ) {
    super(attachPoint, provider);
    this.name = `${provider}:${path}:${glob}`;
    this.probeNames = funcs.map((f) => `${provider}:${path}:${f}`);
  }

  readonly probeNames: readonly string[];

  /**
   * With `opts.pid`, only that process's calls (the link's pid filter). The kernel refuses a whole uprobe_multi
   * link when it cannot place a uprobe on one of the functions (an instruction uprobes cannot single-step: ENOTSUPP,
   * EINVAL): those functions are found by bisection, each skipped with a warning (`opts.warn`), and the link is made
   * for the rest, keeping every function's cookie (so `func`/`probe` still name the right one).
   * @throws KernelError when the kernel refuses every function, or for any other error.
   */
  attach(progFd: number, opts: AttachOptions = {}): AttachedProbe {
    const create = (indexes: readonly number[]) =>
      linkCreate(progFd, 0, BPF_ATTACH_TYPE.UPROBE_MULTI, {
        kind: 'uprobe_multi',
        path: this.path,
        offsets: indexes.map((i) => BigInt(this.fileOffsets[i]!)),
        cookies: indexes.map((i) => BigInt(i)),
        flags: this.retprobe ? BPF_F_UPROBE_MULTI_RETURN : 0,
        ...(opts.pid !== undefined ? { pid: opts.pid } : {}),
      });
    const all = this.funcs.map((_, i) => i);
    try {
      return { ...linkHandle(create(all)), count: all.length };
    } catch (e) {
      if (!isRefusedProbe(e)) throw e;
      const refused = new Set(refusedIndexes(all, create));
      const rest = all.filter((i) => !refused.has(i));
      if (rest.length === 0) throw e;
      const warn = opts.warn ?? ((m: string) => process.stderr.write(`WARNING: ${m}\n`));
      for (const i of refused) {
        warn(
          `${this.provider}:${this.path}:${this.funcs[i]}: the kernel cannot probe this function (${(e as KernelError).message.replace(/^.*: /, '')}), skipped`,
        );
      }
      return { ...linkHandle(create(rest)), count: rest.length };
    }
  }
}

/**
 * The indexes whose uprobe the kernel refuses, by bisection: a set that links is closed again and has none; one that
 * fails is split until single functions remain. About 2k·log2(n) link attempts for k refused functions of n.
 */
function refusedIndexes(indexes: readonly number[], create: (i: readonly number[]) => number): number[] {
  try {
    closeFd(create(indexes));
    return [];
  } catch (e) {
    if (!isRefusedProbe(e)) throw e;
    if (indexes.length === 1) return [...indexes];
    const mid = indexes.length >> 1;
    return [...refusedIndexes(indexes.slice(0, mid), create), ...refusedIndexes(indexes.slice(mid), create)];
  }
}

/** `bpf_attr.link_create.uprobe_multi.flags`: attach to the functions' returns (uapi `BPF_F_UPROBE_MULTI_RETURN`). */
const BPF_F_UPROBE_MULTI_RETURN = 1;

let ldCache: Map<string, string> | undefined;

/**
 * Library name → path from the dynamic linker's cache for this machine's architecture: /etc/ld.so.cache read
 * directly, else `ldconfig -p` (an older cache format).
 */
function libraryCache(): Map<string, string> {
  if (ldCache) return ldCache;
  ldCache = readLdCache();
  if (ldCache) return ldCache;
  ldCache = new Map();
  for (const bin of ['/sbin/ldconfig', '/usr/sbin/ldconfig', 'ldconfig']) {
    try {
      const out = childProcess().execFileSync(bin, ['-p'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
      for (const line of out.split('\n')) {
        const m = /^\s+(\S+) \(([^)]*)\) => (\S+)$/.exec(line);
        if (!m) continue;
        if (process.arch === 'x64' && !m[2]!.includes('x86-64')) continue;
        if (!ldCache.has(m[1]!)) ldCache.set(m[1]!, m[3]!);
      }
      break;
    } catch {
      /* try the next location */
    }
  }
  return ldCache;
}

/** Resolve a uprobe target the way bpftrace does: a path, else a library name (`libc`, `c`, `libc.so.6`), else `$PATH`. */
export function resolveBinary(target: string): string | undefined {
  // paths are kept as written (bpftrace prints them so in `probe`); the kernel resolves symlinks at attach
  if (target.includes('/')) return existsSync(target) ? resolve(target) : undefined;
  const cache = libraryCache();
  const names = [target, `lib${target}`].flatMap((n) => [n, `${n}.so`]);
  for (const [soname, path] of cache) {
    if (names.some((n) => soname === n || soname.startsWith(`${n}.`))) return path;
  }
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(delimiter)) {
    const p = join(dir, target);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

function isFunction(type: number): boolean {
  return type === STT_FUNC || type === STT_GNU_IFUNC;
}

/** A binary's functions as uprobe expansion uses them: first address and size per name, and its load segments. */
interface FunctionTable {
  funcs: Map<string, number>;
  sizes: Map<string, number>;
  loads: ElfSegment[];
}

/**
 * Function tables of the binaries expanded so far, keyed by path and checked against the file's identity (device,
 * inode, size, mtime), so a program probing several functions of one library (gethostlatency: six probes on libc)
 * reads its symbols once, and a file replaced since is read again.
 */
const functionTables = new Map<string, { id: string; table: FunctionTable }>();

/** The function table of the ELF file at `path` (cached, see {@link functionTables}). @throws Error when unreadable */
function functionTable(path: string): FunctionTable {
  const st = statSync(path);
  const id = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
  const hit = functionTables.get(path);
  if (hit && hit.id === id) return hit.table;
  const elf = ElfFile.open(path);
  try {
    const loads = elf.loadSegments();
    const funcs = new Map<string, number>();
    const sizes = new Map<string, number>();
    for (const s of elf.symbols().list((n) => n.length > 0)) {
      if (!isFunction(s.type) || s.value === 0 || funcs.has(s.name)) continue;
      funcs.set(s.name, s.value);
      sizes.set(s.name, s.size);
    }
    const table = { funcs, sizes, loads };
    functionTables.set(path, { id, table });
    return table;
  } finally {
    elf.close();
  }
}

export class UprobeProvider implements ProbeProvider {
  readonly supported = true;
  readonly listed = false;
  readonly names: readonly string[];

  constructor(readonly kind: 'uprobe' | 'uretprobe') {
    this.names = kind === 'uprobe' ? ['uprobe', 'u'] : ['uretprobe', 'ur'];
  }

  expand(ap: AttachPoint, opts: ExpandOptions = {}): ExpandedProbe[] {
    if (ap.parts.length !== 2 || ap.parts[0] === '' || ap.parts[1] === '') {
      throw attachPointError(ap, `${this.kind} probe type requires 2 arguments: ${this.kind}:BINARY:FUNCTION`);
    }
    const [target, fnSpec] = ap.parts as [string, string];
    const path = resolveBinary(target);
    if (!path) throw attachPointError(ap, `could not find binary or library '${target}'`);
    let table: FunctionTable;
    try {
      table = functionTable(path);
    } catch (e) {
      throw attachPointError(ap, `${path}: ${(e as Error).message}`);
    }
    const { funcs, sizes, loads } = table;
    if (/^0x[0-9a-f]+$/i.test(fnSpec) || /^\d+$/.test(fnSpec)) {
      // an address must lie inside a function (bpftrace: `Could not resolve address: /bin/bash:0xa`)
      const addr = Number(fnSpec);
      const inside = [...funcs].some(([n, v]) => addr >= v && addr < v + Math.max(1, sizes.get(n) ?? 0));
      if (!inside) throw attachPointError(ap, `Could not resolve address: ${path}:0x${addr.toString(16)}`);
      const off = symbolFileOffset(loads, { name: fnSpec, value: addr });
      return [new UprobeProbe(ap, this.kind, path, fnSpec, off, fnSpec)];
    }
    const m = /^(.*?)\+(0x[0-9a-f]+|\d+)$/i.exec(fnSpec);
    const fnGlob = m ? m[1]! : fnSpec;
    const extra = m ? Number(m[2]) : 0;
    let names: string[];
    if (hasWildcard(fnGlob)) {
      const re = globToRegExp(fnGlob);
      names = [...funcs.keys()].filter((n) => re.test(n)).sort();
      if (names.length === 0) throw attachPointError(ap, `No matches for ${this.kind} ${path}:${fnGlob}`);
    } else {
      if (!funcs.has(fnGlob)) {
        throw attachPointError(
          ap,
          `Could not resolve symbol: ${path}:${fnGlob}`,
          didYouMean(closestNames(fnGlob, funcs.keys()).map((n) => `${this.kind}:${path}:${n}`)),
        );
      }
      names = [fnGlob];
      const size = sizes.get(fnGlob) ?? 0;
      if (extra && size && extra >= size) {
        throw attachPointError(ap, `Offset outside the function bounds ('${fnGlob}' size is ${size})`);
      }
    }
    const offsets = names.map((n) => symbolFileOffset(loads, { name: n, value: funcs.get(n)! }) + extra);
    // bpftrace's multi expansion: a wildcard without an offset, unless the body reads `probe`; where the kernel has it
    if (hasWildcard(fnGlob) && !extra && !opts.full && hasFeature('uprobeMulti')) {
      return [new UprobeMultiProbe(ap, this.kind, path, fnGlob, names, offsets)];
    }
    return names.map((n, i) => new UprobeProbe(ap, this.kind, path, n, offsets[i]!, extra ? `${n}+${extra}` : n));
  }

  /** `-l 'uprobe:/path:glob'`: the binary's function symbols. */
  list(search: string): string[] {
    const i = search.lastIndexOf(':');
    if (i < 0) return [];
    const path = resolveBinary(search.slice(0, i));
    if (!path) return [];
    const re = globToRegExp(search.slice(i + 1) || '*');
    const elf = ElfFile.open(path);
    try {
      const names = new Set<string>();
      for (const s of elf.symbols().list((n) => n.length > 0))
        if (isFunction(s.type) && s.value !== 0 && re.test(s.name)) names.add(s.name);
      return [...names].sort().map((n) => `${this.kind}:${path}:${n}`);
    } finally {
      elf.close();
    }
  }
}
