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
import {
  DW_AT_abstract_origin,
  DW_AT_bit_offset,
  DW_AT_bit_size,
  DW_AT_byte_size,
  DW_AT_call_file,
  DW_AT_call_line,
  DW_AT_const_value,
  DW_AT_count,
  DW_AT_data_bit_offset,
  DW_AT_data_member_location,
  DW_AT_decl_file,
  DW_AT_decl_line,
  DW_AT_declaration,
  DW_AT_encoding,
  DW_AT_external,
  DW_AT_high_pc,
  DW_AT_inline,
  DW_AT_linkage_name,
  DW_AT_location,
  DW_AT_low_pc,
  DW_AT_lower_bound,
  DW_AT_MIPS_linkage_name,
  DW_AT_name,
  DW_AT_ranges,
  DW_AT_sibling,
  DW_AT_specification,
  DW_AT_type,
  DW_AT_upper_bound,
  DW_ATE_address,
  DW_ATE_boolean,
  DW_ATE_float,
  DW_ATE_signed,
  DW_ATE_signed_char,
  DW_ATE_unsigned,
  DW_ATE_unsigned_char,
  DW_ATE_UTF,
  DW_FORM_implicit_const,
  DW_FORM_sdata,
  DW_FORM_string,
  DW_INL_declared_inlined,
  DW_INL_inlined,
  DW_TAG_array_type,
  DW_TAG_atomic_type,
  DW_TAG_base_type,
  DW_TAG_class_type,
  DW_TAG_const_type,
  DW_TAG_enumeration_type,
  DW_TAG_enumerator,
  DW_TAG_formal_parameter,
  DW_TAG_inlined_subroutine,
  DW_TAG_lexical_block,
  DW_TAG_member,
  DW_TAG_namespace,
  DW_TAG_pointer_type,
  DW_TAG_reference_type,
  DW_TAG_restrict_type,
  DW_TAG_rvalue_reference_type,
  DW_TAG_structure_type,
  DW_TAG_subprogram,
  DW_TAG_subrange_type,
  DW_TAG_subroutine_type,
  DW_TAG_typedef,
  DW_TAG_union_type,
  DW_TAG_unspecified_parameters,
  DW_TAG_unspecified_type,
  DW_TAG_volatile_type,
} from './constants.js';
import { Cursor } from './cursor.js';
import { DwarfError } from './errors.js';
import { type LineTable, readLineTable } from './line.js';
import {
  type DwarfLocation,
  decodeLocation,
  type LocationRange,
  type Range,
  readLocationList,
  readRanges,
} from './lists.js';
import { DwarfSections } from './sections.js';
import { type DwarfMember, type DwarfType, stripType } from './types.js';
import { type AttrValue, type Die, isConstant, isSkeleton, readUnits, type Unit } from './units.js';

/** A formal parameter of a function (§3.3.8.2 with §4.1 for its location). */
export interface DwarfParam {
  /** `undefined` for an unnamed parameter (`int f(int)`). */
  name: string | undefined;
  type: DwarfType;
  /** `DW_AT_location` when it is one expression valid for the whole function (typically -O0's `fbreg`). */
  location?: DwarfLocation;
  /** `DW_AT_location` when it is a location list (optimized code): where the value is over which pc ranges. */
  locations?: LocationRange[];
  /** Where the value is at the function's entry address (from {@link location} or the list entry covering it). */
  entryLocation?: DwarfLocation;
  /**
   * The register the calling convention passes it in at the function's first instruction, where that is simple:
   * integer, enum and pointer parameters of up to 8 bytes, in order (x86-64 System V psABI §3.2.3: `rdi`, `rsi`,
   * `rdx`, `rcx`, `r8`, `r9`, after `rdi` for a hidden return pointer; AAPCS64: `x0`-`x7`). `undefined` for
   * floating-point, aggregate and stack-passed parameters and for every parameter after an aggregate.
   */
  abiRegister?: string;
}

/** A function: a `DW_TAG_subprogram` (§3.3), merged with its abstract instance or declaration when it has one. */
export interface DwarfFunction {
  name: string;
  linkageName?: string;
  /** `.debug_info` offset of the DIE describing its code (the concrete instance), or of its only DIE. */
  dieOffset: number;
  /** Name of the compilation unit (`DW_AT_name` of the unit, the main source file as given to the compiler). */
  unit: string;
  /** Entry address in the file's address space (`DW_AT_low_pc`, or the first range); `undefined` when the function
   * has no out-of-line code (only inlined copies, or a declaration). */
  entry?: number;
  /** Its code, as [start, end) address ranges. */
  ranges: Range[];
  declFile?: string;
  declLine?: number;
  external: boolean;
  /** Declared `inline`, or inlined by the compiler somewhere (`DW_AT_inline`). */
  inline: boolean;
  returnType: DwarfType;
  params: DwarfParam[];
  variadic: boolean;
}

/** One frame of the inline chain at an address: innermost first, the outermost is the real (out-of-line) function. */
export interface InlineFrame {
  function: string;
  /** Source position in this frame: the line table's row for the innermost, the call site of the inner frame for
   * the others. */
  file: string;
  line: number;
  /** Whether this frame is an inlined copy (all but the outermost). */
  inlined: boolean;
}

/** A source position from the line table. */
export interface SourceLine {
  file: string;
  line: number;
  column: number;
}

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

interface Scope {
  kind: 'function' | 'inlined' | 'block';
  /** Offset of the subprogram DIE naming it (abstract origin followed). */
  origin: number;
  ranges: Range[];
  callFile?: number;
  callLine?: number;
  children: Scope[];
}

interface UnitData {
  unit: Unit;
  lines?: LineTable;
  /** The line table's file names, when only its header was read. */
  files?: string[];
  scopes?: Scope[];
}

/** Index kinds: functions, and types by their C spelling (`struct foo`, `union u`, `enum e`, typedef and base names). */
interface NameIndex {
  functions: Map<string, number[]>;
  types: Map<string, number[]>;
  /** Concrete or defining DIEs by the DIE they complete (`DW_AT_abstract_origin`, `DW_AT_specification`). */
  completions: Map<number, number[]>;
}

const TYPE_KEYWORD: Record<number, string> = {
  [DW_TAG_structure_type]: 'struct',
  [DW_TAG_union_type]: 'union',
  [DW_TAG_enumeration_type]: 'enum',
  [DW_TAG_class_type]: 'class',
};

/**
 * The DWARF of one ELF file. Create with {@link openDwarf} (which finds separate debug files) or
 * {@link DwarfInfo.fromElf}; {@link close} releases the file once lookups are done.
 */
export class DwarfInfo {
  readonly units: Unit[];
  /** Units whose debug information is in `.dwo` files that this reader does not read. */
  readonly splitUnits: SplitUnit[];
  private readonly unitData: UnitData[];
  private readonly unitByOffset: (u: number) => Unit;
  private index: NameIndex | undefined;
  private readonly typeCache = new Map<number, DwarfType>();
  private readonly fnCache = new Map<string, DwarfFunction[]>();
  private readonly typeByName = new Map<string, DwarfType | null>();
  private addrIndex: { start: number; end: number; unit: number }[] | undefined;

  private constructor(
    readonly elf: ElfFile,
    readonly source: DebugSource,
    /** ELF `e_machine` of the binary (register names depend on it). */
    readonly machine: number,
    sections: DwarfSections = new DwarfSections(elf),
  ) {
    this.units = readUnits(sections);
    for (const u of this.units) u.readUnitDie((unit, av) => readRanges(unit, av, 0));
    this.unitData = this.units.map((unit) => ({ unit }));
    const starts = this.units.map((u) => u.offset);
    this.unitByOffset = (off: number): Unit => {
      let lo = 0;
      let hi = starts.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (starts[mid]! <= off) lo = mid;
        else hi = mid - 1;
      }
      const u = this.units[lo];
      if (!u || off < u.offset || off >= u.end) throw new DwarfError(`.debug_info offset ${off} is in no unit`);
      return u;
    };
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

  /** Build the name index: one pass over `.debug_info` reading only the names of top-level DIEs. */
  private buildIndex(): NameIndex {
    const idx: NameIndex = { functions: new Map(), types: new Map(), completions: new Map() };
    const add = (m: Map<string | number, number[]>, k: string | number, v: number): void => {
      const l = m.get(k);
      if (l) l.push(v);
      else m.set(k, [v]);
    };
    for (const u of this.units) {
      if (u.dieOffset >= u.end) continue;
      const info = u.sections.get('info');
      const c = new Cursor(info, u.dieOffset, '.debug_info');
      // prefix per depth: a string when DIEs at that depth are indexed (the unit's children, namespace children)
      const prefix: (string | undefined)[] = [undefined, ''];
      let depth = 0;
      while (c.pos < u.end) {
        const off = c.pos;
        const code = c.uleb();
        if (code === 0) {
          depth--;
          if (depth <= 0) break;
          continue;
        }
        const ab = u.abbrevs[code];
        if (!ab) throw new DwarfError(`.debug_info DIE at offset ${off} uses unknown abbreviation ${code}`);
        const pre = prefix[depth];
        const tag = ab.tag;
        const wanted =
          pre !== undefined &&
          (tag === DW_TAG_subprogram ||
            tag === DW_TAG_typedef ||
            tag === DW_TAG_base_type ||
            tag === DW_TAG_namespace ||
            TYPE_KEYWORD[tag] !== undefined);
        let name: string | undefined;
        let sibling = -1;
        let origin = -1;
        if (!wanted) {
          for (let i = 0; i < ab.forms.length; i++) u.skipForm(c, ab.forms[i]!);
        } else {
          for (let i = 0; i < ab.forms.length; i++) {
            const at = ab.attrs[i]!;
            const form = ab.forms[i]!;
            if (at === DW_AT_name) {
              name = form === DW_FORM_string ? c.cstr() : u.string({ form, value: u.readForm(c, form) as number });
            } else if (at === DW_AT_sibling) sibling = u.ref({ form, value: u.readForm(c, form) as number }) ?? -1;
            else if (at === DW_AT_abstract_origin || at === DW_AT_specification) {
              origin = u.ref({ form, value: u.readForm(c, form) as number }) ?? -1;
            } else u.skipForm(c, form);
          }
          if (tag === DW_TAG_subprogram) {
            // Declarations too: their definitions (DW_AT_specification) are found through `completions`.
            if (name !== undefined) add(idx.functions, pre === '' ? name : pre + name, off);
            if (origin >= 0) add(idx.completions, origin, off);
          } else if (name !== undefined && tag !== DW_TAG_namespace) {
            const kw = TYPE_KEYWORD[tag];
            add(idx.types, kw ? `${kw} ${pre}${name}` : pre === '' ? name : pre + name, off);
          }
        }
        if (ab.hasChildren) {
          if (wanted && tag === DW_TAG_namespace) {
            depth++;
            prefix[depth] = `${pre ?? ''}${name ?? '(anonymous namespace)'}::`;
          } else if (sibling > off && depth >= 1) {
            c.pos = sibling;
          } else {
            depth++;
            prefix[depth] = depth === 1 ? '' : undefined;
          }
        }
      }
    }
    return idx;
  }

  private names(): NameIndex {
    this.index ??= this.buildIndex();
    return this.index;
  }

  private dieAt(off: number): Die {
    const d = this.unitByOffset(off).die(off);
    if (!d) throw new DwarfError(`.debug_info offset ${off} is a null entry, not a DIE`);
    return d;
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
      const concrete = this.concreteOf(off, idx);
      for (const c of concrete.length > 0 ? concrete : [off]) {
        if (seen.has(c)) continue;
        seen.add(c);
        fns.push(this.buildFunction(c, name));
      }
    }
    fns.sort((a, b) => Number(b.entry !== undefined) - Number(a.entry !== undefined));
    this.fnCache.set(name, fns);
    return fns;
  }

  private concreteOf(off: number, idx: NameIndex): number[] {
    const out: number[] = [];
    for (const c of idx.completions.get(off) ?? []) {
      const more = this.concreteOf(c, idx);
      out.push(...(more.length > 0 ? more : [c]));
    }
    return out;
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

  /** Attributes of a DIE merged with those of the DIEs it completes (abstract origin, specification), own first. */
  private merged(die: Die): Map<number, AttrValue & { unit: Unit }> {
    const out = new Map<number, AttrValue & { unit: Unit }>();
    let cur: Die | undefined = die;
    for (let hop = 0; cur && hop < 8; hop++) {
      for (const [k, v] of cur.attrs) if (!out.has(k)) out.set(k, { ...v, unit: cur.unit });
      const o = cur.attrs.get(DW_AT_abstract_origin) ?? cur.attrs.get(DW_AT_specification);
      const ref = cur.unit.ref(o);
      cur = ref === undefined ? undefined : this.dieAt(ref);
    }
    return out;
  }

  private buildFunction(off: number, name: string): DwarfFunction {
    const die = this.dieAt(off);
    const u = die.unit;
    const a = this.merged(die);
    const str = (at: number): string | undefined => {
      const v = a.get(at);
      return v ? v.unit.string(v) : undefined;
    };
    const num = (at: number): number | undefined => {
      const v = a.get(at);
      return v && typeof v.value === 'number' ? v.value : undefined;
    };
    const ranges = this.dieRanges(die);
    const fn: DwarfFunction = {
      name,
      dieOffset: off,
      unit: u.name,
      ranges,
      external: num(DW_AT_external) !== undefined && num(DW_AT_external) !== 0,
      inline: num(DW_AT_inline) === DW_INL_inlined || num(DW_AT_inline) === DW_INL_declared_inlined,
      returnType: this.typeRef(a.get(DW_AT_type)),
      params: [],
      variadic: false,
    };
    const linkage = str(DW_AT_linkage_name) ?? str(DW_AT_MIPS_linkage_name);
    if (linkage !== undefined) fn.linkageName = linkage;
    const low = die.attrs.get(DW_AT_low_pc);
    if (low) fn.entry = u.address(low);
    else if (ranges.length > 0) fn.entry = ranges[0]![0];
    const df = a.get(DW_AT_decl_file);
    if (df && typeof df.value === 'number') {
      const f = this.fileName(df.unit, df.value);
      if (f !== undefined) fn.declFile = f;
    }
    const dl = num(DW_AT_decl_line);
    if (dl !== undefined) fn.declLine = dl;
    // Parameters: the concrete DIE's children (with locations), completed by their abstract origins; a function
    // without code lists them on its declaration.
    let children = u
      .children(die)
      .filter((c) => c.tag === DW_TAG_formal_parameter || c.tag === DW_TAG_unspecified_parameters);
    if (!children.some((c) => c.tag === DW_TAG_formal_parameter)) {
      const o = die.attrs.get(DW_AT_abstract_origin) ?? die.attrs.get(DW_AT_specification);
      const ref = u.ref(o);
      if (ref !== undefined) {
        const od = this.dieAt(ref);
        children = od.unit
          .children(od)
          .filter((c) => c.tag === DW_TAG_formal_parameter || c.tag === DW_TAG_unspecified_parameters);
      }
    }
    for (const c of children) {
      if (c.tag === DW_TAG_unspecified_parameters) {
        fn.variadic = true;
        continue;
      }
      const pa = this.merged(c);
      const nv = pa.get(DW_AT_name);
      const p: DwarfParam = { name: nv ? nv.unit.string(nv) : undefined, type: this.typeRef(pa.get(DW_AT_type)) };
      const loc = c.attrs.get(DW_AT_location);
      if (loc) {
        if (loc.value instanceof Buffer) {
          p.location = decodeLocation(loc.value, this.machine);
          p.entryLocation = p.location;
        } else if (typeof loc.value === 'number') {
          p.locations = readLocationList(c.unit, loc, this.machine);
          const e = fn.entry;
          const hit = e === undefined ? undefined : p.locations.find((l) => l.start <= e && e < l.end);
          if (hit) p.entryLocation = hit.location;
        }
      }
      fn.params.push(p);
    }
    assignAbiRegisters(fn, this.machine);
    return fn;
  }

  private dieRanges(die: Die): Range[] {
    const u = die.unit;
    const low = die.attrs.get(DW_AT_low_pc);
    const high = die.attrs.get(DW_AT_high_pc);
    if (low && high) {
      const s = u.address(low);
      return [[s, u.highPc(s, high)]];
    }
    const r = die.attrs.get(DW_AT_ranges);
    return r ? readRanges(u, r) : [];
  }

  /** The file name for `DW_AT_decl_file`/`DW_AT_call_file` index `i` in `unit`'s line table. */
  private fileName(unit: Unit, i: number): string | undefined {
    const d = this.unitData[this.units.indexOf(unit)];
    if (!d || unit.lineOffset < 0) return undefined;
    d.files ??= d.lines?.files ?? readLineTable(unit.sections, unit.lineOffset, unit.compDir, true).files;
    return d.files[i];
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

  /** The type of a `DW_AT_type` attribute (absent means `void`). */
  private typeRef(av: (AttrValue & { unit?: Unit }) | undefined): DwarfType {
    if (!av) return { kind: 'void' };
    const unit = av.unit ?? this.units[0]!;
    const off = unit.ref(av);
    return off === undefined ? { kind: 'void' } : this.typeAt(off);
  }

  /** The type described by the DIE at `.debug_info` offset `off`, built once (cycles share objects). */
  typeAt(off: number): DwarfType {
    const hit = this.typeCache.get(off);
    if (hit) return hit;
    const die = this.dieAt(off);
    const u = die.unit;
    const a = die.attrs;
    const num = (at: number): number | undefined => {
      const v = a.get(at);
      return v && typeof v.value === 'number' ? v.value : undefined;
    };
    const name = u.string(a.get(DW_AT_name));
    const size = num(DW_AT_byte_size) ?? 0;
    const target = (): DwarfType => this.typeRef(withUnit(a.get(DW_AT_type), u));
    let t: DwarfType;
    switch (die.tag) {
      case DW_TAG_base_type:
        t = { kind: 'base', name: name ?? '', size, encoding: num(DW_AT_encoding) ?? 0 };
        this.typeCache.set(off, t);
        return t;
      case DW_TAG_pointer_type:
      case DW_TAG_reference_type:
      case DW_TAG_rvalue_reference_type: {
        const kind =
          die.tag === DW_TAG_pointer_type
            ? 'pointer'
            : die.tag === DW_TAG_reference_type
              ? 'reference'
              : 'rvalue_reference';
        const p = { kind, size: size || u.addrSize, target: { kind: 'void' } } as DwarfType & { target: DwarfType };
        this.typeCache.set(off, p);
        p.target = target();
        return p;
      }
      case DW_TAG_const_type:
      case DW_TAG_volatile_type:
      case DW_TAG_restrict_type:
      case DW_TAG_atomic_type: {
        const kind = (
          {
            [DW_TAG_const_type]: 'const',
            [DW_TAG_volatile_type]: 'volatile',
            [DW_TAG_restrict_type]: 'restrict',
            [DW_TAG_atomic_type]: 'atomic',
          } as const
        )[die.tag];
        const q = { kind, target: { kind: 'void' } } as DwarfType & { target: DwarfType };
        this.typeCache.set(off, q);
        q.target = target();
        return q;
      }
      case DW_TAG_typedef: {
        const td = { kind: 'typedef', name: name ?? '', target: { kind: 'void' } } as DwarfType & { target: DwarfType };
        this.typeCache.set(off, td);
        td.target = target();
        return td;
      }
      case DW_TAG_structure_type:
      case DW_TAG_union_type:
      case DW_TAG_class_type: {
        const kind = die.tag === DW_TAG_structure_type ? 'struct' : die.tag === DW_TAG_union_type ? 'union' : 'class';
        const members: DwarfMember[] = [];
        const s: DwarfType = { kind, name, size, members, declaration: num(DW_AT_declaration) !== undefined };
        this.typeCache.set(off, s);
        for (const m of u.children(die)) {
          if (m.tag !== DW_TAG_member) continue;
          members.push(this.member(m));
        }
        return s;
      }
      case DW_TAG_enumeration_type: {
        const enumerators: { name: string; value: number }[] = [];
        for (const e of u.children(die)) {
          if (e.tag !== DW_TAG_enumerator) continue;
          const cv = e.attrs.get(DW_AT_const_value);
          let value = typeof cv?.value === 'number' ? cv.value : 0;
          // dataN constants are unsigned as stored; an enum with a signed underlying type reads them back signed.
          if (cv && cv.form !== DW_FORM_sdata && cv.form !== DW_FORM_implicit_const && size > 0 && size < 8) {
            const under = a.get(DW_AT_type) ? stripType(target()) : undefined;
            const signed =
              under?.kind === 'base' && (under.encoding === DW_ATE_signed || under.encoding === DW_ATE_signed_char);
            const bits = 8 * Math.min(size, cvSize(cv.form));
            if (signed && value >= 2 ** (bits - 1)) value -= 2 ** bits;
          }
          enumerators.push({ name: u.string(e.attrs.get(DW_AT_name)) ?? '', value });
        }
        t = { kind: 'enum', name, size, enumerators, declaration: num(DW_AT_declaration) !== undefined };
        this.typeCache.set(off, t);
        return t;
      }
      case DW_TAG_array_type: {
        const arr = { kind: 'array', element: { kind: 'void' }, dims: [], size: 0 } as unknown as DwarfType & {
          kind: 'array';
        };
        this.typeCache.set(off, arr);
        arr.element = target();
        for (const d of u.children(die)) {
          if (d.tag !== DW_TAG_subrange_type) continue;
          const cnt = d.attrs.get(DW_AT_count);
          const ub = d.attrs.get(DW_AT_upper_bound);
          const lb = d.attrs.get(DW_AT_lower_bound);
          const lower = lb && typeof lb.value === 'number' ? lb.value : 0;
          if (cnt && isConstant(cnt.form)) arr.dims.push(cnt.value as number);
          else if (ub && isConstant(ub.form)) arr.dims.push((ub.value as number) - lower + 1);
          else arr.dims.push(-1);
        }
        const elemSize = typeSizeOf(arr.element);
        arr.size = arr.dims.some((d) => d < 0) ? 0 : arr.dims.reduce((p, d) => p * d, elemSize);
        if (size > 0) arr.size = size;
        return arr;
      }
      case DW_TAG_subroutine_type: {
        const fnT = {
          kind: 'function',
          returns: { kind: 'void' },
          params: [],
          variadic: false,
        } as unknown as DwarfType & {
          kind: 'function';
        };
        this.typeCache.set(off, fnT);
        fnT.returns = target();
        for (const p of u.children(die)) {
          if (p.tag === DW_TAG_formal_parameter) fnT.params.push(this.typeRef(withUnit(p.attrs.get(DW_AT_type), u)));
          else if (p.tag === DW_TAG_unspecified_parameters) fnT.variadic = true;
        }
        return fnT;
      }
      case DW_TAG_unspecified_type:
        t = { kind: 'unspecified', name: name ?? '' };
        this.typeCache.set(off, t);
        return t;
      default:
        throw new DwarfError(`.debug_info DIE at offset ${off} (tag 0x${die.tag.toString(16)}) is not a type`);
    }
  }

  private member(m: Die): DwarfMember {
    const u = m.unit;
    const a = m.attrs;
    const type = this.typeRef(withUnit(a.get(DW_AT_type), u));
    const loc = a.get(DW_AT_data_member_location);
    let offset = 0;
    if (loc && typeof loc.value === 'number') offset = loc.value;
    else if (loc && loc.value instanceof Buffer) {
      // DWARF 2: a location expression, DW_OP_plus_uconst N.
      const c = new Cursor(loc.value, 0);
      if (c.u8() === 0x23) offset = c.uleb();
    }
    const mem: DwarfMember = { name: u.string(a.get(DW_AT_name)), type, offset };
    const bs = a.get(DW_AT_bit_size);
    if (bs && typeof bs.value === 'number') {
      mem.bitSize = bs.value;
      const dbo = a.get(DW_AT_data_bit_offset);
      const bo = a.get(DW_AT_bit_offset);
      if (dbo && typeof dbo.value === 'number') {
        mem.bitOffset = dbo.value;
        mem.offset = Math.floor(dbo.value / 8);
      } else if (bo && typeof bo.value === 'number') {
        // DWARF 2-3 (little-endian): bits counted from the most significant bit of the storage unit.
        const storage = 8 * (num(a.get(DW_AT_byte_size)) ?? typeSizeOf(type));
        mem.bitOffset = offset * 8 + storage - bo.value - bs.value;
      } else mem.bitOffset = offset * 8;
    }
    return mem;
  }

  // ---------------------------------------------------------------- addresses

  private unitIndexAt(addr: number): number | undefined {
    if (!this.addrIndex) {
      this.addrIndex = [];
      this.units.forEach((u, i) => {
        for (const [s, e] of u.ranges) this.addrIndex!.push({ start: s, end: e, unit: i });
      });
      this.addrIndex.sort((x, y) => x.start - y.start);
    }
    const ix = this.addrIndex;
    let lo = 0;
    let hi = ix.length - 1;
    let found: number | undefined;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (ix[mid]!.start <= addr) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    // Ranges may nest or overlap: look back from the last start <= addr.
    for (let i = found ?? -1; i >= 0 && i > (found ?? 0) - 64; i--) {
      if (ix[i]!.start <= addr && addr < ix[i]!.end) return ix[i]!.unit;
    }
    return undefined;
  }

  /** The decoded line program of `unit`, read once; `undefined` when it has none. */
  lineTable(unit: Unit): LineTable | undefined {
    const d = this.unitData[this.units.indexOf(unit)];
    if (!d || unit.lineOffset < 0) return undefined;
    d.lines ??= readLineTable(unit.sections, unit.lineOffset, unit.compDir);
    return d.lines;
  }

  /** The source position of the instruction at `addr` (file address space), from the line table; `undefined`
   * outside every sequence. */
  lineAt(addr: number): SourceLine | undefined {
    const ui = this.unitIndexAt(addr);
    const candidates = ui === undefined ? this.units : [this.units[ui]!];
    for (const u of candidates) {
      const t = this.lineTable(u);
      if (!t) continue;
      const rows = t.rows;
      let seqStart = 0;
      for (let i = 0; i < rows.length; i++) {
        if (!rows[i]!.endSequence) continue;
        if (rows[seqStart]!.address <= addr && addr < rows[i]!.address) {
          let best = seqStart;
          for (let j = seqStart; j < i; j++) if (rows[j]!.address <= addr) best = j;
          const r = rows[best]!;
          return { file: t.files[r.file] ?? '', line: r.line, column: r.column };
        }
        seqStart = i + 1;
      }
    }
    return undefined;
  }

  /**
   * The addresses where statements of `file`:`line` start (rows with `is_stmt`), ascending: what a probe on a
   * source line attaches to. `file` matches a table entry equal to it or ending in `/file`.
   */
  addressesOfLine(file: string, line: number): number[] {
    const out = new Set<number>();
    for (const u of this.units) {
      const t = this.lineTable(u);
      if (!t) continue;
      const match = fileIndexes(t.files, file);
      if (match.size === 0) continue;
      let prevHit = false;
      for (const r of t.rows) {
        const hit = !r.endSequence && r.isStmt && r.line === line && match.has(r.file);
        if (hit && !prevHit) out.add(r.address);
        prevHit = hit;
        if (r.endSequence) prevHit = false;
      }
    }
    return [...out].sort((a, b) => a - b);
  }

  /**
   * The address bpftrace attaches `uprobe:BIN@file:line[:col]` to (`dwarf_parser.cpp` line_to_addr): the first row, in
   * line-table order, of the first unit with such a file whose file is `file` (or ends in `/file`), whose line is
   * `line` and, when `column` is not 0, whose column is `column`. `undefined` when no row matches.
   */
  lineAddress(file: string, line: number, column = 0): number | undefined {
    for (const u of this.units) {
      const t = this.lineTable(u);
      if (!t) continue;
      const match = fileIndexes(t.files, file);
      if (match.size === 0) continue;
      for (const r of t.rows) {
        if (r.endSequence || r.line !== line || !match.has(r.file)) continue;
        if (column !== 0 && r.column !== column) continue;
        return r.address;
      }
    }
    return undefined;
  }

  private scopes(ui: number): Scope[] {
    const d = this.unitData[ui]!;
    if (d.scopes) return d.scopes;
    const u = d.unit;
    const build = (die: Die, kind: Scope['kind']): Scope | undefined => {
      const ranges = this.dieRanges(die);
      const origin = u.ref(die.attrs.get(DW_AT_abstract_origin) ?? die.attrs.get(DW_AT_specification)) ?? die.offset;
      const s: Scope = { kind, origin, ranges, children: [] };
      const cf = die.attrs.get(DW_AT_call_file);
      const cl = die.attrs.get(DW_AT_call_line);
      if (cf && typeof cf.value === 'number') s.callFile = cf.value;
      if (cl && typeof cl.value === 'number') s.callLine = cl.value;
      if (die.hasChildren) {
        for (const c of u.children(die)) {
          if (c.tag === DW_TAG_inlined_subroutine) {
            const cs = build(c, 'inlined');
            if (cs) s.children.push(cs);
          } else if (c.tag === DW_TAG_lexical_block) {
            const cs = build(c, 'block');
            if (cs) s.children.push(cs);
          }
        }
      }
      return s;
    };
    const out: Scope[] = [];
    const root = u.die(u.dieOffset);
    const walk = (die: Die): void => {
      for (const c of u.children(die)) {
        if (c.tag === DW_TAG_subprogram) {
          if (c.attrs.has(DW_AT_low_pc) || c.attrs.has(DW_AT_ranges)) {
            const s = build(c, 'function');
            if (s) out.push(s);
          }
        } else if (c.tag === DW_TAG_namespace || c.tag === DW_TAG_structure_type || c.tag === DW_TAG_class_type) {
          if (c.hasChildren) walk(c);
        }
      }
    };
    if (root) walk(root);
    d.scopes = out;
    return out;
  }

  /** The name of the subprogram DIE at `off` (following abstract origins and specifications). */
  private nameOf(off: number): string {
    const a = this.merged(this.dieAt(off));
    const v = a.get(DW_AT_name);
    return (v ? v.unit.string(v) : undefined) ?? '<unknown>';
  }

  /**
   * The inline chain at `addr`, innermost first (what `addr2line -i -f` prints): the inlined copies containing the
   * address, then the out-of-line function. Empty when no function's code contains `addr`.
   */
  inlineFrames(addr: number): InlineFrame[] {
    const ui = this.unitIndexAt(addr);
    if (ui === undefined) return [];
    const within = (s: Scope): boolean => s.ranges.some(([a, b]) => a <= addr && addr < b);
    const fn = this.scopes(ui).find(within);
    if (!fn) return [];
    const chain: Scope[] = [fn];
    for (let cur: Scope | undefined = fn; cur;) {
      const next: Scope | undefined = cur.children.find(within);
      if (next) chain.push(next);
      cur = next;
    }
    const frames = chain.filter((s) => s.kind !== 'block');
    const unit = this.units[ui]!;
    const here = this.lineAt(addr);
    const out: InlineFrame[] = [];
    let file = here?.file ?? '';
    let line = here?.line ?? 0;
    for (let i = frames.length - 1; i >= 0; i--) {
      const s = frames[i]!;
      out.push({ function: this.nameOf(s.origin), file, line, inlined: s.kind === 'inlined' });
      if (s.kind === 'inlined') {
        file = s.callFile !== undefined ? (this.fileName(unit, s.callFile) ?? '') : '';
        line = s.callLine ?? 0;
      }
    }
    return out;
  }

  /** The out-of-line function whose code contains `addr` (its name), or `undefined`. */
  functionAt(addr: number): string | undefined {
    const f = this.inlineFrames(addr);
    return f.length > 0 ? f[f.length - 1]!.function : undefined;
  }
}

function withUnit(av: AttrValue | undefined, unit: Unit): (AttrValue & { unit: Unit }) | undefined {
  return av ? { ...av, unit } : undefined;
}

function num(av: AttrValue | undefined): number | undefined {
  return av && typeof av.value === 'number' ? av.value : undefined;
}

function cvSize(form: number): number {
  return form === 0x0b ? 1 : form === 0x05 ? 2 : form === 0x06 ? 4 : 8;
}

function typeSizeOf(t: DwarfType): number {
  const s = stripType(t);
  return 'size' in s ? s.size : 0;
}

/** Integer-class scalars of up to 8 bytes (psABI §3.2.3 INTEGER class: integers, bool, char, enums, pointers). */
function integerClass(t: DwarfType): boolean {
  const s = stripType(t);
  if (s.kind === 'pointer' || s.kind === 'reference' || s.kind === 'rvalue_reference') return true;
  if (s.kind === 'enum') return s.size <= 8;
  if (s.kind !== 'base' || s.size > 8) return false;
  return [
    DW_ATE_signed,
    DW_ATE_unsigned,
    DW_ATE_signed_char,
    DW_ATE_unsigned_char,
    DW_ATE_boolean,
    DW_ATE_address,
    DW_ATE_UTF,
  ].includes(s.encoding);
}

function isFloat(t: DwarfType): boolean {
  const s = stripType(t);
  return s.kind === 'base' && s.encoding === DW_ATE_float;
}

const SYSV_GP = ['rdi', 'rsi', 'rdx', 'rcx', 'r8', 'r9'];
const AAPCS64_GP = ['x0', 'x1', 'x2', 'x3', 'x4', 'x5', 'x6', 'x7'];

/** Fill {@link DwarfParam.abiRegister} per the calling convention of `machine` (see its docstring). */
function assignAbiRegisters(fn: DwarfFunction, machine: number): void {
  const regs = machine === 62 ? SYSV_GP : machine === 183 ? AAPCS64_GP : undefined;
  if (!regs) return;
  let next = 0;
  const ret = stripType(fn.returnType);
  if (machine === 62 && (ret.kind === 'struct' || ret.kind === 'union' || ret.kind === 'class') && ret.size > 16) {
    next = 1; // the hidden pointer to the return value takes %rdi (psABI §3.2.3 "Returning of Values")
  }
  for (const p of fn.params) {
    if (integerClass(p.type)) {
      if (next < regs.length) p.abiRegister = regs[next++];
      else next++;
    } else if (isFloat(p.type)) {
      continue;
    } else {
      return; // an aggregate or wide scalar: its registers depend on classification; stop here
    }
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

/** Indexes of the line table's file names that are `file` or end in `/file`. */
function fileIndexes(files: readonly string[], file: string): Set<number> {
  const match = new Set<number>();
  files.forEach((f, i) => {
    if (f !== '' && (f === file || f.endsWith(`/${file}`))) match.add(i);
  });
  return match;
}
