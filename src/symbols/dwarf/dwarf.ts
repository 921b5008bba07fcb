/**
 * DWARF debug information of one ELF file (DWARF versions 2 to 5, as gcc and clang emit them): functions with their
 * parameters, C types, the line table and inlined subroutines, looked up by name or by address.
 *
 * Lookups by name are lazy: the first one walks `.debug_info` once to build a name index (the names of the functions
 * and types at the top level of each unit, and inside C++ namespaces), later ones go straight to the DIE, and every
 * function and type is built once and cached. Address lookups read one unit's DIEs and line program on first use.
 *
 * {@link openDwarf} finds the debug information where gdb does: in the file itself, in a separate debug file by
 * build-id or `.gnu_debuglink` (../debuglink.ts), with extra debug directories searched before /usr/lib/debug.
 * Split DWARF (`-gsplit-dwarf`: skeleton units naming `.dwo` files) is detected and reported, not read.
 */
import { existsSync } from 'node:fs';
import { basename, dirname, isAbsolute, join } from 'node:path';
import { ElfFile } from '../elf.js';
import { DEBUG_DIR, findDebugFile } from '../debuglink.js';
import { AddressLookup, type InlineFrame, type SourceLine } from './addresses.js';
import { DwarfError } from './errors.js';
import { buildFunction, type DwarfFunction } from './functions.js';
import type { LineTable } from './line.js';
import { readRanges } from './lists.js';
import { buildNameIndex, concreteOf, type NameIndex } from './names.js';
import { DwarfSections } from './sections.js';
import { DieStore } from './store.js';
import { TypeBuilder } from './type-builder.js';
import type { DwarfType } from './types.js';
import { isSkeleton, readUnits, type Unit } from './units.js';

export type { InlineFrame, SourceLine } from './addresses.js';
export type { DwarfFunction, DwarfParam } from './functions.js';

/** Where the debug information came from. */
export interface DebugSource {
  /** The file whose sections are read. */
  path: string;
  via: 'self' | 'build-id' | 'debuglink';
}

/** A compilation unit whose DIEs are in a split DWARF file (`-gsplit-dwarf`). */
export interface SplitUnit {
  name: string;
  compDir: string;
  dwoName: string;
}

/** Options of {@link openDwarf}. */
export interface OpenDwarfOptions {
  /** Debug directories searched for build-id and debuglink files, in order; `/usr/lib/debug` is always searched
   * last (gdb's `debug-file-directory`). */
  debugDirs?: string[];
  /** Prefix for paths in another mount namespace (`/proc/PID/root`). */
  root?: string;
  /** The file's path in its own mount namespace (for `.gnu_debuglink` directories), when `path` has a prefix. */
  path?: string;
}

/**
 * The DWARF of one ELF file. Create with {@link openDwarf} (which finds separate debug files) or
 * {@link DwarfInfo.fromElf}; {@link close} releases the file once lookups are done. A facade over the DIE store
 * (store.ts), the name index (names.ts), the function and type builders (functions.ts, type-builder.ts) and the
 * address lookups (addresses.ts).
 */
export class DwarfInfo {
  readonly units: Unit[];
  /** Units whose debug information is in `.dwo` files that this reader does not read. */
  readonly splitUnits: SplitUnit[];
  private readonly store: DieStore;
  private readonly types: TypeBuilder;
  private readonly addresses: AddressLookup;
  private index: NameIndex | undefined;
  private readonly fnCache = new Map<string, DwarfFunction[]>();
  private readonly typeByName = new Map<string, DwarfType | null>();

  private constructor(
    readonly elf: ElfFile,
    readonly source: DebugSource,
    /** ELF `e_machine` of the binary (register names depend on it). */
    readonly machine: number,
    sections: DwarfSections = new DwarfSections(elf),
  ) {
    this.units = readUnits(sections);
    for (const u of this.units) u.readUnitDie((unit, av) => readRanges(unit, av, 0));
    this.store = new DieStore(this.units);
    this.types = new TypeBuilder(this.store);
    this.addresses = new AddressLookup(this.store);
    this.splitUnits = this.units
      .filter((u) => isSkeleton(u))
      .map((u) => ({ name: u.name, compDir: u.compDir, dwoName: u.dwoName ?? '' }));
  }

  /**
   * The DWARF in `elf` itself (`source` says where it came from, for messages). `machine` is the binary's
   * `e_machine` (the same as `elf`'s unless `elf` is a separate debug file).
   * @throws DwarfError when `elf` has no `.debug_info` or it is malformed.
   */
  static fromElf(
    elf: ElfFile,
    source: DebugSource = { path: elf.path, via: 'self' },
    machine = elf.machine,
  ): DwarfInfo {
    const s = new DwarfSections(elf);
    if (!s.has('info')) throw new DwarfError(`${elf.path} has no .debug_info section`);
    return new DwarfInfo(elf, source, machine);
  }

  /**
   * The DWARF of this file's split units (`-gsplit-dwarf`), one {@link DwarfInfo} per `.dwo` file found: looked for
   * next to `binaryPath` (its file name) and at the skeleton's `DW_AT_comp_dir`/`DW_AT_dwo_name`. Addresses come from
   * this file's `.debug_addr` at the skeleton's `DW_AT_addr_base`. Only name and type lookups are meant for them
   * (addresses and lines are answered by the skeleton's line table here). `.dwp` packages are not read.
   */
  splitInfos(binaryPath: string): DwarfInfo[] {
    const out: DwarfInfo[] = [];
    for (const u of this.units) {
      if (!isSkeleton(u) || u.dwoName === undefined) continue;
      const dwo = u.dwoName;
      const cands = [join(dirname(binaryPath), basename(dwo))];
      cands.push(isAbsolute(dwo) ? dwo : join(u.compDir, dwo));
      for (const p of cands) {
        if (!existsSync(p)) continue;
        let elf: ElfFile;
        try {
          elf = ElfFile.open(p);
        } catch {
          continue;
        }
        try {
          const sections = new DwarfSections(elf, { main: u.sections });
          if (!sections.has('info')) throw new DwarfError(`${p} has no .debug_info.dwo section`);
          const info = new DwarfInfo(elf, { path: p, via: 'self' }, this.machine, sections);
          for (const su of info.units) su.addrBase = u.addrBase;
          out.push(info);
          break;
        } catch {
          elf.close();
        }
      }
    }
    return out;
  }

  /** Release the ELF file (lookups that need sections not read yet fail afterwards). */
  close(): void {
    this.elf.close();
  }

  // ---------------------------------------------------------------- name index

  private names(): NameIndex {
    this.index ??= buildNameIndex(this.units);
    return this.index;
  }

  // ---------------------------------------------------------------- functions

  /**
   * The functions named `name` (a C name, or `ns::name` in C++), those with code first. Several when static functions
   * of different units share the name. Empty when there is none.
   */
  functions(name: string): DwarfFunction[] {
    let fns = this.fnCache.get(name);
    if (fns) return fns;
    const idx = this.names();
    const offs = idx.functions.get(name) ?? [];
    const seen = new Set<number>();
    fns = [];
    for (const off of offs) {
      // A declaration or abstract instance: the DIEs completing it carry the code.
      const concrete = concreteOf(off, idx);
      for (const c of concrete.length > 0 ? concrete : [off]) {
        if (seen.has(c)) continue;
        seen.add(c);
        fns.push(buildFunction(this.store, this.types, this.machine, c, name));
      }
    }
    fns.sort((a, b) => Number(b.entry !== undefined) - Number(a.entry !== undefined));
    this.fnCache.set(name, fns);
    return fns;
  }

  /** The function `name` with code (the first of {@link functions} with an entry address), or `undefined`. */
  findFunction(name: string): DwarfFunction | undefined {
    return this.functions(name).find((f) => f.entry !== undefined) ?? this.functions(name)[0];
  }

  /**
   * Like {@link findFunction}, but a missing function is an error that says why (no such function, or its unit's
   * debug information is in split DWARF files).
   * @throws DwarfError
   */
  function(name: string): DwarfFunction {
    const f = this.findFunction(name);
    if (f) return f;
    throw this.missing(`function ${name}`);
  }

  private missing(what: string): DwarfError {
    if (this.splitUnits.length > 0) {
      const dwo = this.splitUnits.map((s) => s.dwoName).slice(0, 3);
      return new DwarfError(
        `${this.source.path}: ${what} not found: ${this.splitUnits.length} compilation unit(s) keep their debug ` +
          `information in split DWARF files (${dwo.join(', ')}), which bpfscope does not read yet`,
        { hint: 'rebuild without -gsplit-dwarf' },
      );
    }
    return new DwarfError(`${this.source.path}: no debug information for ${what}`);
  }

  // ---------------------------------------------------------------- types

  /**
   * The type named `name`: `struct foo`, `union u`, `enum e`, `class c`, or a typedef or base type name (`size_t`,
   * `unsigned int`). A complete definition is preferred to a forward declaration. `undefined` when there is none.
   */
  findType(name: string): DwarfType | undefined {
    const key = name.trim().replace(/\s+/g, ' ');
    const cached = this.typeByName.get(key);
    if (cached !== undefined) return cached ?? undefined;
    const offs = this.names().types.get(key) ?? [];
    let best: DwarfType | undefined;
    for (const off of offs) {
      const t = this.typeAt(off);
      best ??= t;
      if (!('declaration' in t) || !t.declaration) {
        best = t;
        break;
      }
    }
    this.typeByName.set(key, best ?? null);
    return best;
  }

  /**
   * Like {@link findType}, but a missing type is an error.
   * @throws DwarfError
   */
  type(name: string): DwarfType {
    const t = this.findType(name);
    if (t) return t;
    throw this.missing(`type ${name}`);
  }

  /** The type described by the DIE at `.debug_info` offset `off`, built once (cycles share objects). */
  typeAt(off: number): DwarfType {
    return this.types.typeAt(off);
  }

  // ---------------------------------------------------------------- addresses

  /** The decoded line program of `unit`, read once; `undefined` when it has none. */
  lineTable(unit: Unit): LineTable | undefined {
    return this.store.lineTable(unit);
  }

  /** The source position of the instruction at `addr` (file address space), from the line table; `undefined`
   * outside every sequence. */
  lineAt(addr: number): SourceLine | undefined {
    return this.addresses.lineAt(addr);
  }

  /**
   * The addresses where statements of `file`:`line` start (rows with `is_stmt`), ascending: what a probe on a
   * source line attaches to. `file` matches a table entry equal to it or ending in `/file`.
   */
  addressesOfLine(file: string, line: number): number[] {
    return this.addresses.addressesOfLine(file, line);
  }

  /**
   * The address bpftrace attaches `uprobe:BIN@file:line[:col]` to (`dwarf_parser.cpp` line_to_addr): the first row, in
   * line-table order, of the first unit with such a file whose file is `file` (or ends in `/file`), whose line is
   * `line` and, when `column` is not 0, whose column is `column`. `undefined` when no row matches.
   */
  lineAddress(file: string, line: number, column = 0): number | undefined {
    return this.addresses.lineAddress(file, line, column);
  }

  /**
   * The inline chain at `addr`, innermost first (what `addr2line -i -f` prints): the inlined copies containing the
   * address, then the out-of-line function. Empty when no function's code contains `addr`.
   */
  inlineFrames(addr: number): InlineFrame[] {
    return this.addresses.inlineFrames(addr);
  }

  /** The out-of-line function whose code contains `addr` (its name), or `undefined`. */
  functionAt(addr: number): string | undefined {
    return this.addresses.functionAt(addr);
  }
}

/**
 * Open the DWARF of the ELF file at `path`: its own sections when it has `.debug_info`, otherwise a separate debug
 * file by build-id or `.gnu_debuglink` under `opts.debugDirs` then /usr/lib/debug (gdb's "Separate Debug Files").
 * @throws DwarfError naming the file and where it looked when there is none (and `BpfscopeError` for an unreadable
 * or non-ELF file).
 */
export function openDwarf(path: string, opts: OpenDwarfOptions = {}): DwarfInfo {
  const elf = ElfFile.open(path);
  try {
    const sections = new DwarfSections(elf);
    if (sections.has('info')) return DwarfInfo.fromElf(elf);
    const dirs = [...(opts.debugDirs ?? []), DEBUG_DIR];
    for (const debugDir of dirs) {
      const m = findDebugFile(elf, { path: opts.path ?? path, root: opts.root ?? '', debugDir });
      if (!m) continue;
      const dbg = ElfFile.open(m.path);
      try {
        if (new DwarfSections(dbg).has('info')) {
          const machine = elf.machine;
          elf.close();
          return DwarfInfo.fromElf(dbg, { path: m.path, via: m.via }, machine);
        }
      } catch (e) {
        dbg.close();
        throw e;
      }
      dbg.close();
    }
    const id = elf.buildId();
    const link = elf.debugLink();
    const looked = [id ? `build-id ${id}` : 'no build-id', link ? `debuglink ${link.file}` : 'no .gnu_debuglink'].join(
      ', ',
    );
    throw new DwarfError(`${path} has no debug information (${looked}; searched ${dirs.join(', ')})`, {
      hint: 'install its debug symbols (Debian: the -dbgsym package) or build it with -g',
    });
  } catch (e) {
    elf.close();
    throw e;
  }
}
