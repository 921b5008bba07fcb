/**
 * The DWARF reader's name index: the DIE offsets of functions and types by name, built in one pass over
 * `.debug_info` that reads only the names of the DIEs at the top level of each unit and inside C++ namespaces.
 */
import {
  DW_AT_abstract_origin,
  DW_AT_name,
  DW_AT_sibling,
  DW_AT_specification,
  DW_FORM_string,
  DW_TAG_base_type,
  DW_TAG_class_type,
  DW_TAG_enumeration_type,
  DW_TAG_namespace,
  DW_TAG_structure_type,
  DW_TAG_subprogram,
  DW_TAG_typedef,
  DW_TAG_union_type,
} from './constants.js';
import { Cursor } from './cursor.js';
import { DwarfError } from './errors.js';
import type { Unit } from './units.js';

/** Index kinds: functions, and types by their C spelling (`struct foo`, `union u`, `enum e`, typedef and base names). */
export interface NameIndex {
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
 * Build the name index of `units`: one pass over `.debug_info` reading only the names of top-level DIEs (and of
 * the DIEs inside C++ namespaces).
 * @throws DwarfError on a DIE with an unknown abbreviation
 */
export function buildNameIndex(units: readonly Unit[]): NameIndex {
  const idx: NameIndex = { functions: new Map(), types: new Map(), completions: new Map() };
  const add = (m: Map<string | number, number[]>, k: string | number, v: number): void => {
    const l = m.get(k);
    if (l) l.push(v);
    else m.set(k, [v]);
  };
  for (const u of units) {
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

/** The DIEs carrying the code of the DIE at `off` (through chains of completions); empty when it has none. */
export function concreteOf(off: number, idx: NameIndex): number[] {
  const out: number[] = [];
  for (const c of idx.completions.get(off) ?? []) {
    const more = concreteOf(c, idx);
    out.push(...(more.length > 0 ? more : [c]));
  }
  return out;
}
