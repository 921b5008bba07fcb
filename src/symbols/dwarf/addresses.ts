/**
 * The DWARF reader's address lookups: line table rows by address and by source line, and inline chains from the
 * `DW_TAG_inlined_subroutine` tree of each unit.
 */
import {
  DW_AT_abstract_origin,
  DW_AT_call_file,
  DW_AT_call_line,
  DW_AT_low_pc,
  DW_AT_name,
  DW_AT_ranges,
  DW_AT_specification,
  DW_TAG_class_type,
  DW_TAG_inlined_subroutine,
  DW_TAG_lexical_block,
  DW_TAG_namespace,
  DW_TAG_structure_type,
  DW_TAG_subprogram,
} from './constants.js';
import type { Range } from './lists.js';
import type { DieStore } from './store.js';
import type { Die, Unit } from './units.js';

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

/** A function, inlined copy or lexical block with its code ranges and the scopes inside it. */
interface Scope {
  kind: 'function' | 'inlined' | 'block';
  /** Offset of the subprogram DIE naming it (abstract origin followed). */
  origin: number;
  ranges: Range[];
  callFile?: number;
  callLine?: number;
  children: Scope[];
}

/**
 * Lookups by address in one file's DWARF: the source line of an instruction, the addresses of a source line, and
 * the inline chain at an address (the unit's subprogram, inlined-subroutine and lexical-block scopes, read once per
 * unit).
 */
export class AddressLookup {
  private addrIndex: { start: number; end: number; unit: number }[] | undefined;
  private readonly scopeCache: (Scope[] | undefined)[] = [];

  constructor(private readonly store: DieStore) {}

  private get units(): readonly Unit[] {
    return this.store.units;
  }

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

  /** The source position of the instruction at `addr` (file address space), from the line table; `undefined`
   * outside every sequence. */
  lineAt(addr: number): SourceLine | undefined {
    const ui = this.unitIndexAt(addr);
    const candidates = ui === undefined ? this.units : [this.units[ui]!];
    for (const u of candidates) {
      const t = this.store.lineTable(u);
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
      const t = this.store.lineTable(u);
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
      const t = this.store.lineTable(u);
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
    const cached = this.scopeCache[ui];
    if (cached) return cached;
    const u = this.units[ui]!;
    const build = (die: Die, kind: Scope['kind']): Scope | undefined => {
      const ranges = this.store.dieRanges(die);
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
    this.scopeCache[ui] = out;
    return out;
  }

  /** The name of the subprogram DIE at `off` (following abstract origins and specifications). */
  private nameOf(off: number): string {
    const a = this.store.merged(this.store.dieAt(off));
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
        file = s.callFile !== undefined ? (this.store.fileName(unit, s.callFile) ?? '') : '';
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

/** Indexes of the line table's file names that are `file` or end in `/file`. */
function fileIndexes(files: readonly string[], file: string): Set<number> {
  const match = new Set<number>();
  files.forEach((f, i) => {
    if (f !== '' && (f === file || f.endsWith(`/${file}`))) match.add(i);
  });
  return match;
}
