/**
 * Functions from DWARF: a `DW_TAG_subprogram` (§3.3) merged with its abstract instance or declaration, its formal
 * parameters with their types and locations, and the registers the calling convention passes them in.
 */
import {
  DW_ATE_UTF,
  DW_ATE_address,
  DW_ATE_boolean,
  DW_ATE_float,
  DW_ATE_signed,
  DW_ATE_signed_char,
  DW_ATE_unsigned,
  DW_ATE_unsigned_char,
  DW_AT_MIPS_linkage_name,
  DW_AT_abstract_origin,
  DW_AT_decl_file,
  DW_AT_decl_line,
  DW_AT_external,
  DW_AT_inline,
  DW_AT_linkage_name,
  DW_AT_location,
  DW_AT_low_pc,
  DW_AT_name,
  DW_AT_specification,
  DW_AT_type,
  DW_INL_declared_inlined,
  DW_INL_inlined,
  DW_TAG_formal_parameter,
  DW_TAG_unspecified_parameters,
} from './constants.js';
import { type DwarfLocation, decodeLocation, type LocationRange, type Range, readLocationList } from './lists.js';
import type { DieStore } from './store.js';
import type { TypeBuilder } from './type-builder.js';
import { type DwarfType, stripType } from './types.js';

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

/**
 * The function whose (concrete) DIE is at `off`, named `name`: merged with its abstract origin or declaration, with
 * its parameters, their locations and (where simple) the registers the calling convention of `machine` (ELF
 * `e_machine`) passes them in.
 */
export function buildFunction(
  store: DieStore,
  types: TypeBuilder,
  machine: number,
  off: number,
  name: string,
): DwarfFunction {
  const die = store.dieAt(off);
  const u = die.unit;
  const a = store.merged(die);
  const str = (at: number): string | undefined => {
    const v = a.get(at);
    return v ? v.unit.string(v) : undefined;
  };
  const num = (at: number): number | undefined => {
    const v = a.get(at);
    return v && typeof v.value === 'number' ? v.value : undefined;
  };
  const ranges = store.dieRanges(die);
  const fn: DwarfFunction = {
    name,
    dieOffset: off,
    unit: u.name,
    ranges,
    external: num(DW_AT_external) !== undefined && num(DW_AT_external) !== 0,
    inline: num(DW_AT_inline) === DW_INL_inlined || num(DW_AT_inline) === DW_INL_declared_inlined,
    returnType: types.typeRef(a.get(DW_AT_type)),
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
    const f = store.fileName(df.unit, df.value);
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
      const od = store.dieAt(ref);
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
    const pa = store.merged(c);
    const nv = pa.get(DW_AT_name);
    const p: DwarfParam = { name: nv ? nv.unit.string(nv) : undefined, type: types.typeRef(pa.get(DW_AT_type)) };
    const loc = c.attrs.get(DW_AT_location);
    if (loc) {
      if (loc.value instanceof Buffer) {
        p.location = decodeLocation(loc.value, machine);
        p.entryLocation = p.location;
      } else if (typeof loc.value === 'number') {
        p.locations = readLocationList(c.unit, loc, machine);
        const e = fn.entry;
        const hit = e === undefined ? undefined : p.locations.find((l) => l.start <= e && e < l.end);
        if (hit) p.entryLocation = hit.location;
      }
    }
    fn.params.push(p);
  }
  assignAbiRegisters(fn, machine);
  return fn;
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
