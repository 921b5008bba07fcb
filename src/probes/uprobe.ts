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
import { closeSync, existsSync, mkdtempSync, openSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { KernelError } from '../errors.js';
import { linkCreate } from '../kernel/bpf.js';
import { close as closeFd } from '../kernel/ffi.js';
import { hasFeature } from '../kernel/features.js';
import { openProbeEvent } from '../kernel/perf.js';
import type { AttachPoint } from '../lang/ast.js';
import type { SType } from '../lang/types.js';
import { demangle } from '../symbols/demangle.js';
import { zipStoredMember } from '../symbols/zip.js';
import { ElfFile, type ElfSegment, STT_FUNC, STT_GNU_IFUNC, symbolFileOffset } from '../symbols/elf.js';
import { attachPointError, attachTimeError, closestNames, didYouMean, isRefusedProbe } from './errors.js';
import { globToRegExp, hasWildcard } from './glob.js';
import { attachPerfEvents, linkHandle } from './perf-attach.js';
import { PtRegsProbe } from './regs-probe.js';
import { type BinaryTarget, resolveTargets } from './targets.js';
import { uprobeArgLines, uprobeArgsType, uprobeLineAddress, uprobeUserType } from './uprobe-args.js';
import {
  type AttachedProbe,
  type AttachOptions,
  BPF_ATTACH_TYPE,
  type ExpandedProbe,
  type ExpandOptions,
  type ProbeProvider,
} from './types.js';

export { PT_REGS_X86_64 } from './regs-probe.js';
export { resolveBinary } from './targets.js';

export class UprobeProbe extends PtRegsProbe {
  readonly name: string;

  constructor(
    attachPoint: AttachPoint,
    provider: 'uprobe' | 'uretprobe',
    /** Absolute path of the binary. */
    readonly path: string,
    /** The function's symbol as the file has it (C++ names mangled), or the address text for address probes. */
    readonly symbol: string,
    /** Offset in the file where the probe goes. */
    readonly fileOffset: number,
    display: string,
    /** The binary as bpftrace prints it (as written for a path: targets.ts); `path` when absent. */
    displayPath: string = path,
    /** `func` is the demangled name (bpftrace's `cpp_demangle`, {@link ExpandOptions.demangle}). */
    private readonly demangled = false,
  ) {
    super(attachPoint, provider);
    this.name = `${provider}:${displayPath}:${display}`;
  }

  private funcName: string | undefined;

  /**
   * The `func` builtin's value: {@link symbol}, demangled (`_ZN4demo4workEi` -> `demo::work(int)`) when the program's
   * `cpp_demangle` is on. Computed when first read, so a probe whose body never reads `func` does not load the
   * demangler.
   */
  get func(): string {
    this.funcName ??= this.demangled ? demangle(this.symbol) : this.symbol;
    return this.funcName;
  }

  private argsType: SType | null | undefined;

  /** `args` from the binary's DWARF at a function's entry (probes/uprobe-args.ts), else none. */
  override get args(): SType | null {
    if (this.argsType === undefined) {
      this.argsType = this.provider === 'uprobe' ? uprobeArgsType(this.path, this.symbol, this.fileOffset) : null;
    }
    return this.argsType;
  }

  /** `struct Foo` etc. from the binary's DWARF (probes/uprobe-args.ts uprobeUserType). */
  userType(spec: string): SType | undefined {
    return uprobeUserType(this.path, spec);
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
    /** The matched functions' symbols as the file has them (C++ names mangled), in cookie order. */
    readonly symbols: readonly string[],
    /** File offset of each function's probe (bytes). */
    readonly fileOffsets: readonly number[],
    /** The binary as bpftrace prints it (as written for a path: targets.ts); `path` when absent. */
    readonly displayPath: string = path,
    /** `funcs` are the demangled names (bpftrace's `cpp_demangle`, {@link ExpandOptions.demangle}). */
    private readonly demangled = false,
  ) {
    super(attachPoint, provider);
    this.name = `${provider}:${displayPath}:${glob}`;
    this.probeNames = symbols.map((f) => `${provider}:${displayPath}:${f}`);
  }

  readonly probeNames: readonly string[];

  private funcNames: readonly string[] | undefined;

  /**
   * The `func` builtin's value of each function, in cookie order: its symbol, demangled when the program's
   * `cpp_demangle` is on (computed when first read, as {@link UprobeProbe.func}).
   */
  get funcs(): readonly string[] {
    this.funcNames ??= this.demangled ? this.symbols.map(demangle) : this.symbols;
    return this.funcNames;
  }

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
    const all = this.symbols.map((_, i) => i);
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
          `${this.provider}:${this.displayPath}:${this.symbols[i]}: the kernel cannot probe this function (${(e as KernelError).message.replace(/^.*: /, '')}), skipped`,
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

/** Exact-name lookups per binary (see {@link functionByName}), checked against the file's identity as above. */
const functionLookups = new Map<
  string,
  { id: string; loads: ElfSegment[]; found: Map<string, { value: number; size: number } | null> }
>();

/**
 * One function of the binary at `path` by exact name, as {@link functionTable} would give it (first address and its
 * size), and the binary's load segments; without reading the whole function table when it has not been read
 * already (ElfFile.findFunction: libc's ~3,000 names decoded into a Map cost 30-80 ms of cold JavaScript at every
 * uprobe tool's start). @throws Error when unreadable
 */
function functionByName(path: string, name: string): { loads: ElfSegment[]; fn?: { value: number; size: number } } {
  const st = statSync(path);
  const id = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
  const full = functionTables.get(path);
  if (full && full.id === id) {
    const value = full.table.funcs.get(name);
    const loads = full.table.loads;
    return value === undefined ? { loads } : { loads, fn: { value, size: full.table.sizes.get(name) ?? 0 } };
  }
  let c = functionLookups.get(path);
  if (c && c.id === id && c.found.has(name)) {
    const fn = c.found.get(name);
    return fn ? { loads: c.loads, fn } : { loads: c.loads };
  }
  const elf = ElfFile.open(path);
  try {
    if (!c || c.id !== id) {
      c = { id, loads: elf.loadSegments(), found: new Map() };
      functionLookups.set(path, c);
    }
    const f = elf.findFunction(name);
    const fn = f ? { value: f.value, size: f.size } : null;
    c.found.set(name, fn);
    return fn ? { loads: c.loads, fn } : { loads: c.loads };
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
    // `uprobe:BIN@FILE:LINE`: a source location (a binary whose own name has an `@` is taken as written)
    const first = ap.parts[0] ?? '';
    const at = first.lastIndexOf('@');
    if (this.kind === 'uprobe' && at > 0 && !existsSync(first)) {
      return this.expandSourceLine(ap, first.slice(0, at), first.slice(at + 1), opts);
    }
    if (ap.parts.length !== 2 || ap.parts[1] === '' || (ap.parts[0] === '' && opts.pid === undefined)) {
      throw attachPointError(ap, `${this.kind} probe type requires 2 arguments: ${this.kind}:BINARY:FUNCTION`);
    }
    const [target, fnSpec] = ap.parts as [string, string];
    const bang = target.indexOf('!/');
    if (bang > 0 && existsSync(target.slice(0, bang)) && statSync(target.slice(0, bang)).isFile()) {
      return this.expandZipMember(ap, target, bang, fnSpec, opts);
    }
    const targets = resolveTargets(target, opts.pid);
    if (targets.length === 0) {
      if (hasWildcard(target) && !target.includes('/') && opts.pid === undefined) {
        throw attachPointError(
          ap,
          `a wildcard binary ('${target}') needs -p PID: it stands for the process's mappings`,
        );
      }
      throw attachPointError(ap, `could not find binary or library '${target}'`);
    }
    const several = targets.length > 1 || hasWildcard(target) || target === '';
    const out: ExpandedProbe[] = [];
    for (const t of targets) {
      let probes: ExpandedProbe[];
      try {
        probes = this.expandIn(ap, t, fnSpec, opts);
      } catch (e) {
        // a wildcard over binaries: those without a match are skipped (bpftrace matches over all of them)
        if (several) continue;
        throw e;
      }
      out.push(...probes);
    }
    if (out.length === 0) throw attachPointError(ap, `No matches for ${this.kind} ${target}:${fnSpec}.`);
    return out;
  }

  /**
   * `uprobe:"ARCHIVE.zip!/MEMBER":FUNCTION` (bcc's and bpftrace's archive targets): a binary stored uncompressed in
   * a ZIP archive is probed in the archive file, at the member's data offset plus the function's offset in the
   * member. The member is read from a temporary copy; wildcard functions are refused (one probe per function).
   * @throws CompileError when the archive or member cannot be used, or the function is not in the member
   */
  private expandZipMember(
    ap: AttachPoint,
    target: string,
    bang: number,
    fnSpec: string,
    opts: ExpandOptions,
  ): ExpandedProbe[] {
    const archive = resolve(target.slice(0, bang));
    let member: ReturnType<typeof zipStoredMember>;
    try {
      member = zipStoredMember(archive, target.slice(bang + 2));
    } catch (e) {
      throw attachPointError(ap, `${target}: ${(e as Error).message}`);
    }
    if (typeof member === 'string') throw attachPointError(ap, member);
    if (hasWildcard(fnSpec)) throw attachPointError(ap, `${target}: wildcards are not supported in archive members`);
    const dir = mkdtempSync(join(tmpdir(), 'bpfscope-zip-'));
    try {
      const copy = join(dir, 'member');
      const fd = openSync(archive, 'r');
      try {
        const bytes = Buffer.alloc(member.size);
        readSync(fd, bytes, 0, member.size, member.offset);
        writeFileSync(copy, bytes);
      } finally {
        closeSync(fd);
      }
      const prefix = `${this.kind}:${target}:`;
      return this.expandIn(ap, { path: copy, display: target }, fnSpec, opts).map((p) => {
        if (!(p instanceof UprobeProbe) || !p.name.startsWith(prefix)) {
          throw attachPointError(ap, `${target}: this probe cannot be placed in an archive member`);
        }
        const where = p.name.slice(prefix.length);
        return new UprobeProbe(ap, this.kind, archive, p.symbol, member.offset + p.fileOffset, where, target);
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  /**
   * `uprobe:BIN@FILE:LINE[:COL]` (bpftrace `docs/language.md`): one probe at the first line-table row of FILE:LINE
   * in the binary's DWARF (probes/uprobe-args.ts uprobeLineAddress).
   * @throws CompileError when the binary or the line cannot be found
   */
  private expandSourceLine(ap: AttachPoint, target: string, file: string, opts: ExpandOptions): ExpandedProbe[] {
    const [lineText = '', colText = '0', ...rest] = ap.parts.slice(1);
    if (file === '' || !/^\d+$/.test(lineText) || !/^\d+$/.test(colText) || rest.length > 0) {
      throw attachPointError(ap, `${this.kind} source location must be BINARY@FILE:LINE[:COLUMN]`);
    }
    const targets = resolveTargets(target, opts.pid);
    if (targets.length !== 1) throw attachPointError(ap, `could not find binary or library '${target}'`);
    const t = targets[0]!;
    let table: FunctionTable;
    try {
      table = functionTable(t.path);
    } catch (e) {
      throw attachPointError(ap, `${t.display}: ${(e as Error).message}`);
    }
    const hit = uprobeLineAddress(t.path, file, Number(lineText), Number(colText));
    if (typeof hit === 'string') throw attachPointError(ap, hit);
    const off = symbolFileOffset(table.loads, { name: `${file}:${lineText}`, value: hit.addr });
    const where = `${lineText}${ap.parts.length > 2 ? `:${colText}` : ''}`;
    const func = hit.func ?? `${file}:${where}`;
    return [new UprobeProbe(ap, this.kind, t.path, func, off, where, `${t.display}@${file}`, opts.demangle)];
  }

  /** The probes of one binary (see {@link expand}). @throws CompileError when nothing matches in it */
  private expandIn(ap: AttachPoint, t: BinaryTarget, fnSpec: string, opts: ExpandOptions): ExpandedProbe[] {
    const { path, display } = t;
    const m = /^(.*?)\+(0x[0-9a-f]+|\d+)$/i.exec(fnSpec);
    const fnGlob = m ? m[1]! : fnSpec;
    const extra = m ? Number(m[2]) : 0;
    const isAddress = /^0x[0-9a-f]+$/i.test(fnSpec) || /^\d+$/.test(fnSpec);
    if (!isAddress && !hasWildcard(fnGlob)) {
      // one exact name (the uprobe tools' case): looked up alone, the whole table only for the error's suggestions
      let one: ReturnType<typeof functionByName>;
      try {
        one = functionByName(path, fnGlob);
      } catch (e) {
        throw attachPointError(ap, `${display}: ${(e as Error).message}`);
      }
      if (one.fn) return this.exactProbes(ap, t, fnGlob, extra, one.fn, one.loads, opts);
    }
    let table: FunctionTable;
    try {
      table = functionTable(path);
    } catch (e) {
      // a flat binary (code without an ELF header, mapped executable by its loader): with --unsafe, bpftrace puts
      // an address probe at that file offset, since there are no symbols to check it against
      if (isAddress && opts.unsafe && /not an ELF file/.test((e as Error).message)) {
        return [new UprobeProbe(ap, this.kind, path, fnSpec, Number(fnSpec), fnSpec, display)];
      }
      throw attachPointError(ap, `${display}: ${(e as Error).message}`);
    }
    const { funcs, sizes, loads } = table;
    if (isAddress) {
      // an address must lie inside a function (bpftrace: `Could not resolve address: /bin/bash:0xa`)
      const addr = Number(fnSpec);
      const inside = [...funcs].some(([n, v]) => addr >= v && addr < v + Math.max(1, sizes.get(n) ?? 0));
      if (!inside) throw attachTimeError(`Could not resolve address: ${display}:0x${addr.toString(16)}`);
      const off = symbolFileOffset(loads, { name: fnSpec, value: addr });
      return [new UprobeProbe(ap, this.kind, path, fnSpec, off, fnSpec, display)];
    }
    let names: string[];
    if (hasWildcard(fnGlob)) {
      const re = globToRegExp(fnGlob);
      names = [...funcs.keys()].filter((n) => re.test(n)).sort();
      if (names.length === 0) throw attachPointError(ap, `No matches for ${this.kind} ${display}:${fnGlob}.`);
    } else {
      if (!funcs.has(fnGlob)) {
        // current bpftrace's wording (ap_probe_expansion.cpp), which config missing_probes = warn/ignore skips
        throw attachPointError(
          ap,
          `No matches for ${this.kind} ${display}:${fnGlob}.`,
          didYouMean(closestNames(fnGlob, funcs.keys()).map((n) => `${this.kind}:${display}:${n}`)),
        );
      }
      const fn = { value: funcs.get(fnGlob)!, size: sizes.get(fnGlob) ?? 0 };
      return this.exactProbes(ap, t, fnGlob, extra, fn, loads, opts);
    }
    const offsets = names.map((n) => symbolFileOffset(loads, { name: n, value: funcs.get(n)! }) + extra);
    // bpftrace's multi expansion: a wildcard without an offset, unless the body reads `probe`; where the kernel has it
    if (hasWildcard(fnGlob) && !extra && !opts.full && hasFeature('uprobeMulti')) {
      return [new UprobeMultiProbe(ap, this.kind, path, fnGlob, names, offsets, display, opts.demangle)];
    }
    return names.map(
      (n, i) =>
        new UprobeProbe(ap, this.kind, path, n, offsets[i]!, extra ? `${n}+${extra}` : n, display, opts.demangle),
    );
  }

  /** The probe on one function found by exact name (`name` or `name+extra`). @throws CompileError as expandIn */
  private exactProbes(
    ap: AttachPoint,
    t: BinaryTarget,
    name: string,
    extra: number,
    fn: { value: number; size: number },
    loads: ElfSegment[],
    opts: ExpandOptions,
  ): ExpandedProbe[] {
    const size = fn.size;
    if (extra && size && extra >= size) {
      throw attachPointError(ap, `Offset outside the function bounds ('${name}' size is ${size})`);
    }
    if (size === 0 && !opts.unsafe) {
      // bpftrace's check (attached_probe.cpp): without a size the probe cannot be checked to be on an instruction
      throw attachTimeError(
        `Could not determine boundary for ${name} (symbol has size 0).\nUse --unsafe to force attachment. WARNING: This option could lead to data corruption in the target process.`,
      );
    }
    const off = symbolFileOffset(loads, { name, value: fn.value }) + extra;
    const display = extra ? `${name}+${extra}` : name;
    return [new UprobeProbe(ap, this.kind, t.path, name, off, display, t.display, opts.demangle)];
  }

  /**
   * `-l 'uprobe:/path:glob'` (with `-p`, also `uprobe:*:glob` over the process's mappings): function symbols; with
   * `-lv`, each followed by its parameters from the binary's DWARF (`    int* n`), as bpftrace lists them.
   */
  list(search: string, verbose = false, opts: { pid?: number } = {}): string[] {
    const i = search.lastIndexOf(':');
    const target = i < 0 ? search : search.slice(0, i);
    const glob = i < 0 ? '*' : search.slice(i + 1) || '*';
    const re = globToRegExp(glob);
    const out: string[] = [];
    for (const t of resolveTargets(target, opts.pid)) {
      let table: FunctionTable;
      try {
        table = functionTable(t.path);
      } catch {
        continue; // not an ELF file (a wildcard over a directory): nothing to list
      }
      const names = [...table.funcs.keys()].filter((n) => re.test(n)).sort();
      for (const n of names) {
        out.push(`${this.kind}:${t.display}:${n}`);
        // -lv: the function's parameters from DWARF, as bpftrace lists them
        if (verbose) out.push(...uprobeArgLines(t.path, n));
      }
    }
    return out;
  }
}
