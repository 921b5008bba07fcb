/**
 * Stack symbolization: turns the u64 instruction addresses of BPF stack maps / `bpf_get_stack` into frame names, for
 * the kernel (`/proc/kallsyms`) and for user processes (ELF `.symtab`/`.dynsym` of the mapped files, their separate
 * debug files, the vDSO, and `/tmp/perf-PID.map` for JIT code), and formats them as bpftrace, perf, bcc and folded
 * (flame graph) output.
 *
 * Caches, so a long profile symbolizes each address once:
 * - per address: kernel results by address, user results by (pid, address);
 * - per process: the parsed /proc/PID/maps, re-checked on cache misses at most every `mapsTtlMs`, and at once when
 *   an address falls outside every mapping. When executable mappings appeared or went away (dlopen, dlclose, JIT regions), the results inside
 *   them are dropped; when the process start time changed (pid reused), everything about the pid is. When the process is gone, its last maps are kept so that
 *   its addresses still resolve (bpftrace keeps per-pid caches the same way); {@link SymbolResolver.forget} frees them;
 * - per file (shared across processes): ELF symbol tables keyed by device, inode, size and mtime;
 * - per symbol name: its demangled form.
 * Unknown results are cached for `unknownRetryMs` only, since a JIT may describe the address later.
 *
 * Output formats (bpftrace `src/bpftrace.cpp` `get_stack`, `src/ksyms.cpp`, `src/usyms.cpp`; runtime tests
 * `tests/runtime/call` "ustack_stack_mode_env_*"):
 * - `bpftrace`: a newline, then per frame `<indent spaces>name+OFFSET` (decimal offset), indent 8; unknown frames
 *   print as `0x<hex address>`;
 * - `perf`: per frame `\t<hex address> name+OFFSET`, user frames followed by ` (<file>)`, unknown user frames as
 *   `0x<hex> ([unknown])`;
 * - `raw`: per frame `<hex address>` alone.
 * An address of all ones (u64 -1) prints `<unwind failure>` and ends the stack.
 */
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { AddrCache } from './addrcache.js';
import { findDebugFile } from './debuglink.js';
import { demangle as demangleName } from './demangle.js';
import { type DwarfInfo, openDwarf } from './dwarf/dwarf.js';
import { ET_EXEC, ElfFile, type ElfSymbols, fileOffsetToVaddr, PT_LOAD } from './elf.js';
import { type Kallsyms, kallsyms, reloadKallsyms } from './kallsyms.js';
import { PerfMap, perfMapPaths } from './perfmap.js';
import { findMapping, type Mapping, mapFilesPath, mappingFileOffset, parseMaps, readMapsText } from './procmaps.js';
import { vdsoSymbols } from './vdso.js';
import {
  bccName,
  foldedName,
  type Frame,
  type FrameSource,
  formatStack,
  frameText,
  rawStackText,
  type StackMode,
  U64_MAX,
  unwindFailure,
} from './frames.js';

export { bccName, foldedName, type Frame, type FrameSource, formatStack, frameText, type StackMode };

/** Options of {@link SymbolResolver}. */
export interface SymbolResolverOptions {
  /** Demangle C++/Rust user symbols (bpftrace's `cpp_demangle`, default true). */
  demangle?: boolean;
  /** Kernel symbol table (default: the shared `/proc/kallsyms` table, loaded on the first kernel lookup). */
  kallsyms?: Kallsyms;
  /** Look up JIT frames in `/tmp/perf-PID.map` (default true). */
  perfMaps?: boolean;
  /** How long a process's parsed maps are trusted before being re-read, in ms (default 1000; `Infinity`: never by age). */
  mapsTtlMs?: number;
  /**
   * Least time between two re-reads of a process's maps caused by an address outside all of its mappings (new code
   * mapped: dlopen, JIT), in ms (default 10). A long-running caller that samples unwinding garbage (stacks of code
   * without frame pointers) sets it to its reporting period: one re-read per period and process at most.
   */
  missRereadMs?: number;
  /** How long an unknown user address stays cached before being looked up again, in ms (default 1000). */
  unknownRetryMs?: number;
  /** /proc mount point (default `/proc`; tests only). */
  procRoot?: string;
  /** Global debug directory (default `/usr/lib/debug`). */
  debugDir?: string;
  /**
   * Read the DWARF of user files for source lines and inlined functions (bpftrace's `show_debug_info`, default
   * false here: bpftrace 0.17 prints neither). Stack text then shows them as current bpftrace does.
   */
  debugInfo?: boolean;
  /**
   * Non-PIE executables (ELF type ET_EXEC, absolute paths) whose fixed addresses name the frames of a process that
   * exited before its maps could be read: bpftrace's `BPFTRACE_CACHE_USER_SYMBOLS=PER_PROGRAM` (symbols kept per
   * program, not per process). Only an address inside one of their PT_LOAD segments is resolved this way.
   */
  programBinaries?: readonly string[];
}

/** Counters for tests and benchmarks. */
export interface ResolverStats {
  /** Lookups answered from the per-address caches. */
  hits: number;
  /** Lookups that did the work. */
  misses: number;
  /** ELF files parsed (each file once per resolver). */
  elfLoads: number;
  /** /proc/PID/maps reads. */
  mapsReads: number;
}

const KERNEL_BASE_HI = 0x80000000; // addresses with the top bit set are kernel addresses on x86-64 and aarch64

/** Initial entries of a process's address caches (they grow as needed). */
const PROC_CACHE_ENTRIES = 16;

interface FileEntry {
  syms: ElfSymbols;
  /** The file is a non-PIE executable (ET_EXEC): its symbol values are the addresses it runs at. */
  exec?: boolean;
  /** With the `debugInfo` option: the file's DWARF (`null`: none). */
  dwarf?: DwarfInfo | null;
}

interface CachedUnknown {
  frame: Frame;
  at: number;
}

interface ProcState {
  pid: number;
  startTime: string | undefined;
  mapsText: string;
  maps: Mapping[];
  checkedAt: number;
  /** Last time a miss forced a maps re-read. */
  missReadAt: number;
  exited: boolean;
  /** Symbol source per mapping (keyed by start-end-offset-inode); null = not symbolizable. */
  files: Map<string, FileEntry | null>;
  perfMap: PerfMap | null | undefined;
  /** When the perf map was last looked for and not found. */
  perfMapMissAt: number;
  cache: AddrCache<Frame>;
  unknown: AddrCache<CachedUnknown>;
}

function mappingKey(m: Mapping): string {
  return `${m.start}-${m.end}-${m.perms}-${m.offset}-${m.dev}-${m.inode}-${m.path}`;
}

export class SymbolResolver {
  private readonly opts: Required<Omit<SymbolResolverOptions, 'kallsyms'>>;
  private ksyms: Kallsyms | undefined;
  private ksymsError: string | undefined;
  private readonly kcache = new AddrCache<Frame>();
  private readonly procs = new Map<number, ProcState>();
  private readonly files = new Map<string, FileEntry | null>();
  private readonly demangled = new Map<string, string>();
  private readonly counters: ResolverStats = { hits: 0, misses: 0, elfLoads: 0, mapsReads: 0 };

  private readonly ownKallsyms: boolean;

  constructor(opts: SymbolResolverOptions = {}) {
    this.ksyms = opts.kallsyms;
    this.ownKallsyms = opts.kallsyms === undefined;
    this.opts = {
      demangle: opts.demangle ?? true,
      perfMaps: opts.perfMaps ?? true,
      mapsTtlMs: opts.mapsTtlMs ?? 1000,
      missRereadMs: opts.missRereadMs ?? 10,
      unknownRetryMs: opts.unknownRetryMs ?? 1000,
      procRoot: opts.procRoot ?? '/proc',
      debugDir: opts.debugDir ?? '/usr/lib/debug',
      debugInfo: opts.debugInfo ?? false,
      programBinaries: opts.programBinaries ?? [],
    };
  }

  /**
   * A resolver (async for callers written when the demangler had to be loaded first; it now loads on the first
   * mangled name a resolution meets, so a tool that never sees one never pays its ~50 ms).
   */
  static create(opts: SymbolResolverOptions = {}): Promise<SymbolResolver> {
    return Promise.resolve(new SymbolResolver(opts));
  }

  /** Cache and load counters since construction. */
  get stats(): Readonly<ResolverStats> {
    return this.counters;
  }

  /** Why kernel symbols are unavailable (kallsyms unreadable), or `undefined`. */
  get kernelError(): string | undefined {
    return this.ksymsError;
  }

  // ---- kernel ----

  /** Symbolize kernel address `addr` from kallsyms. Never throws: unknown addresses give `name: undefined`. */
  kernel(addr: bigint | number): Frame {
    const a = typeof addr === 'bigint' ? addr : BigInt(addr);
    return this.kernelHiLo(Number(a >> 32n), Number(a & 0xffffffffn), a);
  }

  /** {@link kernel} for an address given as u32 halves; the bigint is made only on a cache miss. */
  private kernelHiLo(hi: number, lo: number, big?: bigint): Frame {
    const hit = this.kcache.get(hi, lo);
    if (hit) {
      this.counters.hits++;
      return hit;
    }
    this.counters.misses++;
    const a = big ?? (BigInt(hi) << 32n) | BigInt(lo);
    let frame: Frame;
    const ks = this.kernelTable();
    const sym = ks?.resolveHiLo(hi, lo);
    if (sym) {
      frame =
        sym.module !== undefined
          ? { addr: a, name: sym.name, offset: sym.offset, module: sym.module, kernel: true, source: 'kallsyms' }
          : { addr: a, name: sym.name, offset: sym.offset, kernel: true, source: 'kallsyms' };
    } else {
      frame = { addr: a, name: undefined, offset: 0, kernel: true, source: 'none' };
    }
    this.kcache.set(hi, lo, frame);
    return frame;
  }

  /**
   * Re-read /proc/kallsyms (symbols of modules and BPF programs loaded since the first kernel lookup) and drop the
   * cached kernel results. Does nothing when a table was passed in the options.
   */
  reloadKernel(): void {
    if (this.ownKallsyms) {
      reloadKallsyms();
      this.ksyms = undefined;
      this.ksymsError = undefined;
    }
    this.kcache.clear();
  }

  private kernelTable(): Kallsyms | undefined {
    if (!this.ksyms && this.ksymsError === undefined) {
      try {
        this.ksyms = kallsyms();
      } catch (e) {
        this.ksymsError = (e as Error).message;
      }
    }
    return this.ksyms;
  }

  // ---- user ----

  /**
   * Symbolize user address `addr` of process `pid`: ELF symbols of the mapped file (or its debug file), the vDSO, then
   * the process's perf map. Never throws: unknown addresses give `name: undefined`.
   */
  user(pid: number, addr: bigint | number): Frame {
    const a = typeof addr === 'bigint' ? Number(addr) : addr;
    const hi = Math.floor(a / 4294967296);
    const lo = a >>> 0;
    // Hot path: a cached result needs no clock and no /proc access.
    const known = this.procs.get(pid)?.cache.get(hi, lo);
    if (known) {
      this.counters.hits++;
      return known;
    }
    const st = this.proc(pid);
    const hit = st.cache.get(hi, lo);
    if (hit) {
      this.counters.hits++;
      return hit;
    }
    const now = Date.now();
    const unk = st.unknown.get(hi, lo);
    if (unk && (now - unk.at < this.opts.unknownRetryMs || unk.at >= this.settledAt)) {
      this.counters.hits++;
      return unk.frame;
    }
    this.counters.misses++;
    const big = typeof addr === 'bigint' ? addr : BigInt(addr);
    const frame = this.resolveUser(st, a, big);
    if (frame.name !== undefined) st.cache.set(hi, lo, frame);
    else st.unknown.set(hi, lo, { frame, at: now });
    return frame;
  }

  private resolveUser(st: ProcState, a: number, big: bigint): Frame {
    let m = findMapping(st.maps, a);
    if (!m && !st.exited && Date.now() - st.missReadAt >= this.opts.missRereadMs) {
      // New code may have been mapped since the last read (dlopen, JIT).
      st.missReadAt = Date.now();
      this.revalidate(st);
      m = findMapping(st.maps, a);
    }
    if (m) {
      const entry = m.kind === 'vdso' ? this.vdso() : m.kind === 'file' ? this.fileFor(st, m) : undefined;
      if (entry) {
        const vaddr = fileOffsetToVaddr(entry.syms.loads, mappingFileOffset(m, a));
        const sym = vaddr === undefined ? undefined : entry.syms.resolve(vaddr);
        if (sym) {
          const name = this.opts.demangle ? this.demangle(sym.name) : sym.name;
          const debug = entry.dwarf && vaddr !== undefined ? this.debugAt(entry.dwarf, vaddr) : undefined;
          return {
            addr: big,
            name,
            offset: sym.offset,
            module: m.path,
            kernel: false,
            source: m.kind === 'vdso' ? 'vdso' : 'elf',
            ...(debug ? { debug } : {}),
          };
        }
      }
    }
    if (!m && st.exited && st.maps.length === 0) {
      const f = this.programFrame(a, big);
      if (f) return f;
    }
    if (this.opts.perfMaps) {
      const pm = this.perfMapFor(st);
      const sym = pm?.resolve(a);
      if (pm && sym) {
        return { addr: big, name: sym.name, offset: sym.offset, module: pm.path, kernel: false, source: 'perf-map' };
      }
    }
    return m
      ? { addr: big, name: undefined, offset: 0, module: m.path, kernel: false, source: 'none' }
      : { addr: big, name: undefined, offset: 0, kernel: false, source: 'none' };
  }

  /** Demangle once per distinct name (many addresses share a symbol; demangling costs microseconds). */
  private demangle(name: string): string {
    let d = this.demangled.get(name);
    if (d === undefined) {
      d = demangleName(name);
      this.demangled.set(name, d);
    }
    return d;
  }

  private vdso(): FileEntry | undefined {
    const syms = vdsoSymbols();
    return syms ? { syms } : undefined;
  }

  private perfMapFor(st: ProcState): PerfMap | undefined {
    if (
      st.perfMap === undefined ||
      (st.perfMap === null &&
        Date.now() - st.perfMapMissAt >= this.opts.unknownRetryMs &&
        st.perfMapMissAt < this.settledAt)
    ) {
      // Look again for a missing file now and then: the runtime may create it later.
      const paths = perfMapPaths(st.pid, this.opts.procRoot);
      let found: PerfMap | null = null;
      for (const p of paths) {
        const pm = new PerfMap(p);
        if (pm.refresh() || pm.size > 0) {
          found = pm;
          break;
        }
      }
      st.perfMap = found;
      st.perfMapMissAt = Date.now();
    }
    return st.perfMap ?? undefined;
  }

  /** The symbol tables for file mapping `m` of process `st`, from the shared per-file cache. */
  /** Source position and inline chain of `vaddr` from a file's DWARF, or `undefined` (never throws). */
  private debugAt(dwarf: DwarfInfo, vaddr: number): Frame['debug'] {
    try {
      const chain = dwarf.inlineFrames(vaddr);
      const outer = chain[chain.length - 1];
      if (!outer) return undefined;
      const name = (n: string): string => (this.opts.demangle ? this.demangle(n) : n);
      const inlined = chain.slice(0, -1).map((f) => ({ name: name(f.function), file: f.file, line: f.line }));
      return { file: outer.file, line: outer.line, inlined };
    } catch {
      return undefined;
    }
  }

  private fileFor(st: ProcState, m: Mapping): FileEntry | undefined {
    const mk = mappingKey(m);
    const known = st.files.get(mk);
    if (known !== undefined) return known ?? undefined;
    const entry = this.openMapping(st, m);
    st.files.set(mk, entry);
    return entry ?? undefined;
  }

  private openMapping(st: ProcState, m: Mapping): FileEntry | null {
    const root = `${this.opts.procRoot}/${st.pid}/root`;
    const exact = mapFilesPath(st.pid, m, this.opts.procRoot);
    const candidates = [exact];
    if (!m.deleted) candidates.push(root + m.path, m.path);
    for (const p of candidates) {
      let fd: number;
      try {
        fd = openSync(p, 'r');
      } catch {
        continue;
      }
      try {
        const s = fstatSync(fd);
        // By path (the process exited, or map_files is unreadable) the file may have been replaced since it was
        // mapped (a rebuilt binary), or be another file (the host's, for an exited container process): only the
        // inode the mapping names is the mapped file. Its symbols would be wrong names: unknown is better.
        if (p !== exact && m.inode !== 0 && s.ino !== m.inode) continue;
        const key = `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}`;
        const cached = this.files.get(key);
        if (cached !== undefined) return cached;
        const entry = this.loadElf(fd, m.path, st.exited ? '' : root);
        if (entry && this.opts.debugInfo) {
          try {
            entry.dwarf = openDwarf(p, { debugDirs: [this.opts.debugDir], path: m.path });
          } catch {
            entry.dwarf = null; // no debug information: names only
          }
        }
        this.files.set(key, entry);
        return entry;
      } catch {
        // try the next way in
      } finally {
        closeSync(fd);
      }
    }
    return null;
  }

  /** A frame from {@link SymbolResolverOptions.programBinaries} (an exited process), else undefined. */
  private programFrame(a: number, big: bigint): Frame | undefined {
    for (const path of this.opts.programBinaries) {
      let entry = this.files.get(`program:${path}`);
      if (entry === undefined) {
        let fd: number | undefined;
        try {
          fd = openSync(path, 'r');
          entry = this.loadElf(fd, path, '');
        } catch {
          entry = null;
        } finally {
          if (fd !== undefined) closeSync(fd);
        }
        this.files.set(`program:${path}`, entry);
      }
      if (!entry?.exec) continue;
      if (!entry.syms.loads.some((l) => l.type === PT_LOAD && a >= l.vaddr && a < l.vaddr + l.memsz)) continue;
      const sym = entry.syms.resolve(a);
      if (!sym) continue;
      const name = this.opts.demangle ? this.demangle(sym.name) : sym.name;
      return { addr: big, name, offset: sym.offset, module: path, kernel: false, source: 'elf' };
    }
    return undefined;
  }

  private loadElf(fd: number, path: string, root: string): FileEntry | null {
    let elf: ElfFile;
    try {
      elf = ElfFile.open(path, fd);
    } catch {
      return null;
    }
    this.counters.elfLoads++;
    try {
      if (!elf.hasSymtab()) {
        const dbg = this.findDebug(elf, path, root);
        if (dbg) {
          try {
            return { syms: elf.symbolsWithDebugFile(dbg), exec: elf.type === ET_EXEC };
          } finally {
            dbg.close();
          }
        }
      }
      return { syms: elf.symbols(), exec: elf.type === ET_EXEC };
    } catch {
      return null;
    } finally {
      elf.close();
    }
  }

  private findDebug(elf: ElfFile, path: string, root: string): ElfFile | undefined {
    const tries = root ? [root, ''] : [''];
    for (const r of tries) {
      const match = findDebugFile(elf, { path, root: r, debugDir: this.opts.debugDir });
      if (!match) continue;
      try {
        return ElfFile.open(match.path);
      } catch {
        // unreadable: keep looking
      }
    }
    return undefined;
  }

  // ---- process state ----

  private proc(pid: number): ProcState {
    let st = this.procs.get(pid);
    if (!st) {
      st = {
        pid,
        startTime: undefined,
        mapsText: '',
        maps: [],
        checkedAt: 0,
        missReadAt: 0,
        exited: false,
        files: new Map(),
        perfMap: undefined,
        perfMapMissAt: 0,
        // small at first, grown as needed (AddrCache doubles): most processes a long-running resolver sees are
        // short-lived with a few sampled addresses, and 1,024-entry caches cost ~34 KB each per process (the agent
        // on a machine starting ~100 processes a second held ~400 processes: ~27 MB of caches)
        cache: new AddrCache(PROC_CACHE_ENTRIES),
        unknown: new AddrCache(PROC_CACHE_ENTRIES),
      };
      this.procs.set(pid, st);
      this.revalidate(st);
    } else if (Date.now() - st.checkedAt >= this.opts.mapsTtlMs && st.checkedAt < this.settledAt) {
      this.revalidate(st);
    }
    return st;
  }

  /** See {@link settle}: checks made since then are trusted for the rest of the resolver's life. */
  private settledAt = Infinity;

  /**
   * For a final report (a stack tool's map after the run): from now on each process's maps are re-checked at most
   * once more, and an unknown address or a missing perf map is not looked up again once looked up after this call.
   * A report of thousands of processes then reads each one's /proc files once, not once a second for as long as
   * the report takes.
   */
  settle(): void {
    this.settledAt = Date.now();
  }

  private startTime(pid: number): string | undefined {
    try {
      const s = readFileSync(`${this.opts.procRoot}/${pid}/stat`, 'latin1');
      const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
      return rest[19]; // field 22, starttime (proc(5))
    } catch {
      return undefined;
    }
  }

  /** Re-read the process's start time and maps; reset or drop caches as described in the module docs. */
  private revalidate(st: ProcState): void {
    st.checkedAt = Date.now();
    const start = this.startTime(st.pid);
    if (start === undefined) {
      // Gone (or never seen): keep what we know. A perf map file may outlive the process.
      st.exited = true;
      return;
    }
    if (st.startTime !== undefined && start !== st.startTime) {
      // The pid was reused by a new process.
      st.files.clear();
      st.cache.clear();
      st.unknown.clear();
      st.perfMap = undefined;
      st.mapsText = '';
      st.maps = [];
    }
    st.startTime = start;
    st.exited = false;
    const text = readMapsText(st.pid, this.opts.procRoot);
    this.counters.mapsReads++;
    if (text === undefined) {
      st.exited = true;
      return;
    }
    if (text === st.mapsText) return;
    st.mapsText = text;
    const maps = parseMaps(text, true);
    const oldKeys = new Set(st.maps.map(mappingKey));
    const live = new Set(maps.map(mappingKey));
    // Only results inside executable mappings that appeared or went away are stale (heap growth and other data
    // mappings do not matter; JIT code regions do).
    const changed = st.maps
      .filter((m) => !live.has(mappingKey(m)))
      .concat(maps.filter((m) => !oldKeys.has(mappingKey(m))));
    st.maps = maps;
    st.unknown.clear();
    if (changed.length > 0) {
      st.cache.filter((hi, lo) => {
        const a = hi * 4294967296 + lo;
        return !changed.some((m) => a >= m.start && a < m.end);
      });
    }
    for (const k of st.files.keys()) if (!live.has(k)) st.files.delete(k);
  }

  /**
   * Read process `pid`'s maps and load the symbol tables of all its executable mappings now, so that its addresses
   * still resolve after it exits. Returns the number of mappings with symbols.
   */
  prepare(pid: number): number {
    const st = this.proc(pid);
    let n = 0;
    for (const m of st.maps) {
      const e = m.kind === 'vdso' ? this.vdso() : m.kind === 'file' ? this.fileFor(st, m) : undefined;
      if (e) n++;
    }
    if (this.opts.perfMaps) this.perfMapFor(st);
    return n;
  }

  /**
   * Shrink what is kept about process `pid` to what resolves its addresses once it has exited: its executable
   * mappings (their file paths shared between processes) and the symbol tables {@link prepare} found for them
   * (shared per file). The maps text and the per-address caches are dropped. Safe for a live process too: the next
   * lookup after `mapsTtlMs` re-reads its maps whole. For callers that prepare many short-lived processes (the stack
   * tools); returns the number of mappings kept.
   */
  retire(pid: number): number {
    const st = this.procs.get(pid);
    if (!st) return 0;
    const files = new Map<string, FileEntry | null>();
    st.maps = st.maps.map((m) => {
      // the path is a slice of the maps text: a shared flat copy lets the text go
      const km: Mapping = { ...m, path: this.internPath(m.path) };
      const e = st.files.get(mappingKey(m));
      if (e !== undefined) files.set(mappingKey(km), e);
      return km;
    });
    st.files = files;
    st.mapsText = '';
    st.cache.clear();
    st.unknown.clear();
    return st.maps.length;
  }

  private readonly paths = new Map<string, string>();

  /** One flat copy per distinct path (a slice of a maps text would keep the whole text alive). */
  private internPath(path: string): string {
    let p = this.paths.get(path);
    if (p === undefined) {
      p = Buffer.from(path, 'latin1').toString('latin1');
      this.paths.set(p, p);
    }
    return p;
  }

  /**
   * What is kept per process, summed (see {@link retire}): processes known, their mappings, the characters of their
   * maps texts, and the slots of their per-address caches.
   */
  get retained(): { processes: number; mappings: number; mapsTextChars: number; cacheSlots: number } {
    const r = { processes: this.procs.size, mappings: 0, mapsTextChars: 0, cacheSlots: 0 };
    for (const st of this.procs.values()) {
      r.mappings += st.maps.length;
      r.mapsTextChars += st.mapsText.length;
      r.cacheSlots += st.cache.capacity + st.unknown.capacity;
    }
    return r;
  }

  /**
   * Read process `pid`'s maps now (so that its addresses still resolve after it exits, from the mapped files by path
   * while they are unchanged), loading symbol tables only when an address needs them: the cheap form of
   * {@link prepare} for long-running callers that see many processes (the profiling agent).
   */
  track(pid: number): void {
    this.proc(pid);
  }

  /**
   * Drop the ELF symbol tables no tracked process uses any more (after {@link forget}); returns how many were
   * dropped. Keeps a long-running resolver's file cache bounded by the files of the processes it tracks.
   */
  dropUnusedFiles(): number {
    const used = new Set<FileEntry>();
    for (const st of this.procs.values()) for (const e of st.files.values()) if (e) used.add(e);
    let n = 0;
    for (const [k, e] of this.files) {
      if (!e || !used.has(e)) {
        this.files.delete(k);
        n++;
      }
    }
    return n;
  }

  /** Files whose symbol tables are cached now. */
  get cachedFiles(): number {
    return this.files.size;
  }

  /** Drop everything cached about process `pid` (call when it exited and its stacks were printed). */
  forget(pid: number): void {
    this.procs.delete(pid);
  }

  /** Drop the per-file ELF cache and all per-process state (kernel results stay). */
  clear(): void {
    this.procs.clear();
    this.files.clear();
  }

  // ---- stacks ----

  /**
   * Symbolize a kernel stack: frames up to the first 0 (stack maps pad with zeros) or the u64 -1 unwind-failure
   * marker (kept as the last frame, with `name: undefined`).
   */
  kernelStack(addrs: ArrayLike<bigint>): Frame[] {
    return this.stack(addrs, (a) => this.kernel(a));
  }

  /** Symbolize a user stack of process `pid` (same rules as {@link kernelStack}). */
  userStack(pid: number, addrs: ArrayLike<bigint>): Frame[] {
    return this.stack(addrs, (a) => this.user(pid, a));
  }

  private stack(addrs: ArrayLike<bigint>, one: (a: bigint) => Frame): Frame[] {
    const out: Frame[] = [];
    for (let i = 0; i < addrs.length; i++) {
      const a = addrs[i]!;
      if (a === 0n) break;
      if (a === U64_MAX) {
        out.push(unwindFailure());
        break;
      }
      out.push(one(a));
    }
    return out;
  }

  /**
   * {@link kernelStack} straight from the bytes of a stack map value or `bpf_get_stack` buffer (u64 little-endian
   * instruction pointers): no bigint is made for addresses already in the cache. `count` limits the frames read.
   */
  kernelStackFromBytes(buf: Uint8Array, count = buf.byteLength >>> 3): Frame[] {
    return this.stackFromBytes(buf, count, (hi, lo) => this.kernelHiLo(hi, lo));
  }

  /** {@link userStack} straight from u64 little-endian bytes, like {@link kernelStackFromBytes}. */
  userStackFromBytes(pid: number, buf: Uint8Array, count = buf.byteLength >>> 3): Frame[] {
    return this.stackFromBytes(buf, count, (hi, lo) => this.user(pid, hi * 4294967296 + lo));
  }

  private stackFromBytes(buf: Uint8Array, count: number, one: (hi: number, lo: number) => Frame): Frame[] {
    const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    const n = Math.min(count, buf.byteLength >>> 3);
    const out: Frame[] = [];
    for (let i = 0; i < n; i++) {
      const lo = dv.getUint32(i * 8, true);
      const hi = dv.getUint32(i * 8 + 4, true);
      if (hi === 0 && lo === 0) break;
      if (hi === 0xffffffff && lo === 0xffffffff) {
        out.push(unwindFailure());
        break;
      }
      out.push(one(hi, lo));
    }
    return out;
  }

  /** Text of `kstack` / `kstack(perf)` / `kstack(raw)` as bpftrace prints it (see {@link formatStack}). */
  formatKernelStack(addrs: ArrayLike<bigint>, mode: StackMode = 'bpftrace', indent = 8): string {
    if (mode === 'raw') return rawStackText(addrs, indent);
    return formatStack(this.kernelStack(addrs), mode, indent);
  }

  /** Text of `ustack` / `ustack(perf)` / `ustack(raw)` as bpftrace prints it (see {@link formatStack}). */
  formatUserStack(pid: number, addrs: ArrayLike<bigint>, mode: StackMode = 'bpftrace', indent = 8): string {
    // raw mode prints addresses only: nothing to look up (a profile map's keys are thousands of stacks)
    if (mode === 'raw') return rawStackText(addrs, indent);
    return formatStack(this.userStack(pid, addrs), mode, indent);
  }
}

/** Whether `addr` is a kernel address (top bit set on x86-64 and aarch64). */
export function isKernelAddress(addr: bigint): boolean {
  return Number(addr >> 32n) >= KERNEL_BASE_HI;
}
