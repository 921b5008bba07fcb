/**
 * The DIEs of one file's DWARF: its compilation units, a DIE by `.debug_info` offset, a DIE's attributes merged with
 * those of the DIEs it completes, its code's address ranges, and each unit's line table (read once, on first use).
 */
import { DW_AT_abstract_origin, DW_AT_high_pc, DW_AT_low_pc, DW_AT_ranges, DW_AT_specification } from './constants.js';
import { DwarfError } from './errors.js';
import { type LineTable, readLineTable } from './line.js';
import { type Range, readRanges } from './lists.js';
import type { AttrValue, Die, Unit } from './units.js';

/** What is read of one unit beyond its DIEs, on first use. */
interface UnitData {
  lines?: LineTable;
  /** The line table's file names, when only its header was read. */
  files?: string[];
}

/**
 * The compilation units of one file's `.debug_info`, their DIEs by offset (with the attributes of the DIEs they
 * complete), their address ranges and their line tables, each read once on first use.
 */
export class DieStore {
  private readonly unitData: UnitData[];
  private readonly starts: number[];

  constructor(readonly units: readonly Unit[]) {
    this.unitData = units.map(() => ({}));
    this.starts = units.map((u) => u.offset);
  }

  /** The unit containing `.debug_info` offset `off`. @throws DwarfError when it is in none */
  unitByOffset(off: number): Unit {
    const starts = this.starts;
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
  }

  /** The DIE at `.debug_info` offset `off`. @throws DwarfError */
  dieAt(off: number): Die {
    const d = this.unitByOffset(off).die(off);
    if (!d) throw new DwarfError(`.debug_info offset ${off} is a null entry, not a DIE`);
    return d;
  }

  /** Attributes of a DIE merged with those of the DIEs it completes (abstract origin, specification), own first. */
  merged(die: Die): Map<number, AttrValue & { unit: Unit }> {
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

  /** The [start, end) address ranges of `die`'s code (`DW_AT_low_pc`/`DW_AT_high_pc` or `DW_AT_ranges`). */
  dieRanges(die: Die): Range[] {
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
  fileName(unit: Unit, i: number): string | undefined {
    const d = this.unitData[this.units.indexOf(unit)];
    if (!d || unit.lineOffset < 0) return undefined;
    d.files ??= d.lines?.files ?? readLineTable(unit.sections, unit.lineOffset, unit.compDir, true).files;
    return d.files[i];
  }

  /** The decoded line program of `unit`, read once; `undefined` when it has none. */
  lineTable(unit: Unit): LineTable | undefined {
    const d = this.unitData[this.units.indexOf(unit)];
    if (!d || unit.lineOffset < 0) return undefined;
    d.lines ??= readLineTable(unit.sections, unit.lineOffset, unit.compDir);
    return d.lines;
  }
}
