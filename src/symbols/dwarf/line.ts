/**
 * Line number programs of `.debug_line` (DWARF 5 §6.2; versions 2-5): the header with its directory and file tables
 * (DWARF 5 entry formats §6.2.4.1, or the DWARF 2-4 string lists), then the state machine (§6.2.2, §6.2.5) run into
 * rows. `op_index` (VLIW) is not modelled: `maximum_operations_per_instruction` is 1 on x86-64 and AArch64.
 */
import {
  DW_FORM_block,
  DW_FORM_data1,
  DW_FORM_data16,
  DW_FORM_data2,
  DW_FORM_data4,
  DW_FORM_data8,
  DW_FORM_line_strp,
  DW_FORM_string,
  DW_FORM_strp,
  DW_FORM_strx,
  DW_FORM_strx1,
  DW_FORM_strx2,
  DW_FORM_strx3,
  DW_FORM_strx4,
  DW_FORM_udata,
  DW_LNCT_directory_index,
  DW_LNCT_path,
  DW_LNE_define_file,
  DW_LNE_end_sequence,
  DW_LNE_set_address,
  DW_LNE_set_discriminator,
  DW_LNS_advance_line,
  DW_LNS_advance_pc,
  DW_LNS_const_add_pc,
  DW_LNS_copy,
  DW_LNS_fixed_advance_pc,
  DW_LNS_negate_stmt,
  DW_LNS_set_basic_block,
  DW_LNS_set_column,
  DW_LNS_set_epilogue_begin,
  DW_LNS_set_file,
  DW_LNS_set_isa,
  DW_LNS_set_prologue_end,
} from './constants.js';
import { Cursor, strAt } from './cursor.js';
import { DwarfError } from './errors.js';
import type { DwarfSections } from './sections.js';

/** One row of the line table. `file` indexes {@link LineTable.files}. */
export interface LineRow {
  address: number;
  file: number;
  line: number;
  column: number;
  isStmt: boolean;
  /** The first address after a sequence: not an instruction of it. */
  endSequence: boolean;
}

/** A decoded line number program. */
export interface LineTable {
  version: number;
  /**
   * Full file paths, by the index the program and `DW_AT_decl_file`/`DW_AT_call_file` use: 0-based in DWARF 5 (entry
   * 0 is the primary source file), 1-based in DWARF 2-4 (entry 0 is then `''`). Relative paths are joined to their
   * directory, and relative directories to the unit's `DW_AT_comp_dir`.
   */
  files: string[];
  /** Rows in program order; each sequence ends with an `endSequence` row. */
  rows: LineRow[];
}

function join(dir: string, file: string): string {
  if (file.startsWith('/') || dir === '') return file;
  return dir.endsWith('/') ? dir + file : `${dir}/${file}`;
}

/** Read the line program at `offset` of `.debug_line` for a unit whose directory is `compDir`. */
export function readLineTable(
  sections: DwarfSections,
  offset: number,
  compDir: string,
  /** Read the header's file table only (`rows` is then empty): what `DW_AT_decl_file` needs. */
  headerOnly = false,
): LineTable {
  const buf = sections.get('line');
  const c = new Cursor(buf, offset, '.debug_line');
  const { length, offsetSize } = c.initialLength();
  const end = c.pos + length;
  if (end > buf.length) throw new DwarfError(`.debug_line program at offset ${offset} runs past the section end`);
  const version = c.u16();
  if (version < 2 || version > 5) {
    throw new DwarfError(`.debug_line program at offset ${offset} has unsupported version ${version}`);
  }
  let addrSize = 8;
  if (version >= 5) {
    addrSize = c.u8();
    c.u8(); // segment_selector_size
  }
  const headerLength = c.uN(offsetSize);
  const programStart = c.pos + headerLength;
  const minInstLength = c.u8();
  if (version >= 4) c.u8(); // maximum_operations_per_instruction
  const defaultIsStmt = c.u8() !== 0;
  const lineBase = c.s8();
  const lineRange = c.u8();
  const opcodeBase = c.u8();
  const stdLengths: number[] = [0];
  for (let i = 1; i < opcodeBase; i++) stdLengths.push(c.u8());
  const dirs: string[] = [];
  const files: string[] = [];
  if (version >= 5) {
    const entries = (): { path: string; dir: number }[] => {
      const fmtCount = c.u8();
      const fmt: [number, number][] = [];
      for (let i = 0; i < fmtCount; i++) fmt.push([c.uleb(), c.uleb()]);
      const n = c.uleb();
      const out: { path: string; dir: number }[] = [];
      for (let i = 0; i < n; i++) {
        let path = '';
        let dir = 0;
        for (const [type, form] of fmt) {
          const v = readLineForm(c, form, offsetSize, sections);
          if (type === DW_LNCT_path) path = String(v);
          else if (type === DW_LNCT_directory_index) dir = Number(v);
        }
        out.push({ path, dir });
      }
      return out;
    };
    for (const d of entries()) dirs.push(d.path);
    // Directory 0 is the unit's own directory; others may be relative to it.
    const base = dirs[0] ? join(compDir, dirs[0]) : compDir;
    const full = dirs.map((d, i) => (i === 0 ? base : join(base, d)));
    for (const f of entries()) files.push(join(full[f.dir] ?? '', f.path));
  } else {
    dirs.push(compDir);
    for (;;) {
      const d = c.cstr();
      if (d === '') break;
      dirs.push(join(compDir, d));
    }
    files.push('');
    for (;;) {
      const f = c.cstr();
      if (f === '') break;
      const dir = c.uleb();
      c.uleb(); // mtime
      c.uleb(); // length
      files.push(join(dirs[dir] ?? '', f));
    }
  }
  c.pos = programStart;
  const rows: LineRow[] = [];
  if (headerOnly) return { version, files, rows };
  let address = 0;
  let file = 1;
  let line = 1;
  let column = 0;
  let isStmt = defaultIsStmt;
  const reset = (): void => {
    address = 0;
    file = 1;
    line = 1;
    column = 0;
    isStmt = defaultIsStmt;
  };
  const emit = (endSequence: boolean): void => {
    rows.push({ address, file, line, column, isStmt, endSequence });
  };
  while (c.pos < end) {
    const op = c.u8();
    if (op >= opcodeBase) {
      const adj = op - opcodeBase;
      address += minInstLength * Math.floor(adj / lineRange);
      line += lineBase + (adj % lineRange);
      emit(false);
      continue;
    }
    switch (op) {
      case 0: {
        const len = c.uleb();
        const next = c.pos + len;
        const sub = len > 0 ? c.u8() : 0;
        if (sub === DW_LNE_end_sequence) {
          emit(true);
          reset();
        } else if (sub === DW_LNE_set_address) {
          address = c.uN(Math.min(len - 1, addrSize === 4 ? 4 : 8));
        } else if (sub === DW_LNE_define_file) {
          const f = c.cstr();
          const dir = c.uleb();
          files.push(join(dirs[dir] ?? '', f));
        } else if (sub === DW_LNE_set_discriminator) {
          // discriminators do not change the row's source position
        }
        c.pos = next;
        break;
      }
      case DW_LNS_copy:
        emit(false);
        break;
      case DW_LNS_advance_pc:
        address += minInstLength * c.uleb();
        break;
      case DW_LNS_advance_line:
        line += c.sleb();
        break;
      case DW_LNS_set_file:
        file = c.uleb();
        break;
      case DW_LNS_set_column:
        column = c.uleb();
        break;
      case DW_LNS_negate_stmt:
        isStmt = !isStmt;
        break;
      case DW_LNS_set_basic_block:
      case DW_LNS_set_prologue_end:
      case DW_LNS_set_epilogue_begin:
        break;
      case DW_LNS_const_add_pc:
        address += minInstLength * Math.floor((255 - opcodeBase) / lineRange);
        break;
      case DW_LNS_fixed_advance_pc:
        address += c.u16();
        break;
      case DW_LNS_set_isa:
        c.uleb();
        break;
      default:
        // An opcode this version does not define: skip its ULEB operands as the header says (§6.2.5.2).
        for (let i = 0; i < (stdLengths[op] ?? 0); i++) c.uleb();
    }
  }
  return { version, files, rows };
}

function readLineForm(c: Cursor, form: number, offsetSize: number, sections: DwarfSections): string | number {
  switch (form) {
    case DW_FORM_string:
      return c.cstr();
    case DW_FORM_line_strp:
      return strAt(sections.get('line_str'), c.uN(offsetSize), '.debug_line_str');
    case DW_FORM_strp:
      return strAt(sections.get('str'), c.uN(offsetSize), '.debug_str');
    case DW_FORM_udata:
      return c.uleb();
    case DW_FORM_data1:
      return c.u8();
    case DW_FORM_data2:
      return c.u16();
    case DW_FORM_data4:
      return c.u32();
    case DW_FORM_data8:
      return c.u64();
    case DW_FORM_data16:
      c.bytes(16);
      return 0;
    case DW_FORM_block:
      c.bytes(c.uleb());
      return 0;
    case DW_FORM_strx:
    case DW_FORM_strx1:
    case DW_FORM_strx2:
    case DW_FORM_strx3:
    case DW_FORM_strx4:
      throw new DwarfError('.debug_line uses strx file names, which need a unit string base (not read yet)');
    default:
      throw new DwarfError(`.debug_line uses unknown entry form 0x${form.toString(16)}`);
  }
}
