/**
 * Range lists and location lists: `.debug_rnglists` (DWARF 5 §2.17.3, §7.25) and `.debug_ranges` (DWARF 2-4
 * §2.17.3), `.debug_loclists` (DWARF 5 §2.6.2, §7.29) and `.debug_loc` (DWARF 2-4), plus the simple location
 * expressions a tracer can use (§2.5, §2.6.1): a register, a register plus offset, the frame base plus offset, or a
 * static address. Anything more elaborate is reported as `{ kind: 'expr' }` with its bytes.
 */
import {
  DW_FORM_loclistx,
  DW_FORM_rnglistx,
  DW_LLE_base_address,
  DW_LLE_base_addressx,
  DW_LLE_default_location,
  DW_LLE_end_of_list,
  DW_LLE_offset_pair,
  DW_LLE_start_end,
  DW_LLE_start_length,
  DW_LLE_startx_endx,
  DW_LLE_startx_length,
  DW_OP_addr,
  DW_OP_breg0,
  DW_OP_breg31,
  DW_OP_bregx,
  DW_OP_call_frame_cfa,
  DW_OP_fbreg,
  DW_OP_reg0,
  DW_OP_reg31,
  DW_OP_regx,
  DW_RLE_base_address,
  DW_RLE_base_addressx,
  DW_RLE_end_of_list,
  DW_RLE_offset_pair,
  DW_RLE_start_end,
  DW_RLE_start_length,
  DW_RLE_startx_endx,
  DW_RLE_startx_length,
} from './constants.js';
import { Cursor } from './cursor.js';
import { DwarfError } from './errors.js';
import type { AttrValue, Unit } from './units.js';

/** A half-open address range [start, end). */
export type Range = [number, number];

/**
 * The ranges of a `DW_AT_ranges` attribute: an offset into `.debug_ranges` (DWARF 2-4), or into `.debug_rnglists`
 * (`DW_FORM_sec_offset`, DWARF 5) or an index into the unit's offset table there (`DW_FORM_rnglistx`).
 * `base` is the base address for offset pairs (the unit's low_pc). Empty ranges are dropped.
 */
export function readRanges(unit: Unit, av: AttrValue, base = unit.lowPc): Range[] {
  const v = av.value as number;
  if (unit.version < 5) return rangesV4(unit, v, base);
  const sec = unit.sections.get('rnglists');
  let off = v;
  if (av.form === DW_FORM_rnglistx) {
    const at = unit.rnglistsBase + v * unit.offsetSize;
    off = unit.rnglistsBase + new Cursor(sec, at, '.debug_rnglists').uN(unit.offsetSize);
  }
  const c = new Cursor(sec, off, '.debug_rnglists');
  const out: Range[] = [];
  for (;;) {
    const kind = c.u8();
    switch (kind) {
      case DW_RLE_end_of_list:
        return out.filter(([s, e]) => e > s);
      case DW_RLE_base_addressx:
        base = unit.addrx(c.uleb());
        break;
      case DW_RLE_startx_endx: {
        const s = unit.addrx(c.uleb());
        out.push([s, unit.addrx(c.uleb())]);
        break;
      }
      case DW_RLE_startx_length: {
        const s = unit.addrx(c.uleb());
        out.push([s, s + c.uleb()]);
        break;
      }
      case DW_RLE_offset_pair: {
        const s = c.uleb();
        out.push([base + s, base + c.uleb()]);
        break;
      }
      case DW_RLE_base_address:
        base = c.uN(unit.addrSize);
        break;
      case DW_RLE_start_end: {
        const s = c.uN(unit.addrSize);
        out.push([s, c.uN(unit.addrSize)]);
        break;
      }
      case DW_RLE_start_length: {
        const s = c.uN(unit.addrSize);
        out.push([s, s + c.uleb()]);
        break;
      }
      default:
        throw new DwarfError(`.debug_rnglists has unknown entry kind ${kind} at offset ${c.pos - 1}`);
    }
  }
}

function rangesV4(unit: Unit, off: number, base: number): Range[] {
  const c = new Cursor(unit.sections.get('ranges'), off, '.debug_ranges');
  const max = unit.addrSize === 8 ? 2 ** 64 - 1 : 2 ** (8 * unit.addrSize) - 1;
  const out: Range[] = [];
  for (;;) {
    const s = c.uN(unit.addrSize);
    const e = c.uN(unit.addrSize);
    if (s === 0 && e === 0) return out.filter(([a, b]) => b > a);
    // A base address selection entry starts with the largest address (its value rounds to 2^64 as a number).
    if (s >= max) base = e;
    else out.push([base + s, base + e]);
  }
}

/**
 * A location description simple enough to use at a probe (§2.6.1.1): in a register (`reg`, the DWARF register
 * number and its name), at register + offset (`breg`), at frame base + offset (`fbreg`), at a static address
 * (`addr`), or an expression this reader does not evaluate (`expr`).
 */
export type DwarfLocation =
  | { kind: 'reg'; reg: number; name: string }
  | { kind: 'breg'; reg: number; name: string; offset: number }
  | { kind: 'fbreg'; offset: number }
  | { kind: 'cfa' }
  | { kind: 'addr'; address: number }
  | { kind: 'expr'; bytes: Buffer };

/** One entry of a location list: where the value is while the pc is in [start, end). */
export interface LocationRange {
  start: number;
  end: number;
  location: DwarfLocation;
}

/**
 * DWARF register numbers to names: x86-64 from the System V psABI (Figure 3.36 "DWARF Register Number Mapping"),
 * AArch64 from ARM's "DWARF for the Arm 64-bit Architecture" (x0-x30, sp).
 */
const X86_64_REGS = [
  'rax',
  'rdx',
  'rcx',
  'rbx',
  'rsi',
  'rdi',
  'rbp',
  'rsp',
  'r8',
  'r9',
  'r10',
  'r11',
  'r12',
  'r13',
  'r14',
  'r15',
  'rip',
];

/** The name of DWARF register `n` for ELF machine `machine` (`EM_X86_64` 62, `EM_AARCH64` 183), else `rN`. */
export function registerName(n: number, machine: number): string {
  if (machine === 62) {
    if (n < X86_64_REGS.length) return X86_64_REGS[n]!;
    if (n >= 17 && n <= 32) return `xmm${n - 17}`;
  } else if (machine === 183) {
    if (n <= 30) return `x${n}`;
    if (n === 31) return 'sp';
    if (n >= 64 && n <= 95) return `v${n - 64}`;
  }
  return `r${n}`;
}

/** Decode a location expression when it is one simple operation (see {@link DwarfLocation}). */
export function decodeLocation(expr: Buffer, machine: number): DwarfLocation {
  if (expr.length === 0) return { kind: 'expr', bytes: expr };
  const c = new Cursor(expr, 0, 'location expression');
  const op = c.u8();
  let loc: DwarfLocation | undefined;
  if (op >= DW_OP_reg0 && op <= DW_OP_reg31) {
    loc = { kind: 'reg', reg: op - DW_OP_reg0, name: registerName(op - DW_OP_reg0, machine) };
  } else if (op === DW_OP_regx) {
    const r = c.uleb();
    loc = { kind: 'reg', reg: r, name: registerName(r, machine) };
  } else if (op >= DW_OP_breg0 && op <= DW_OP_breg31) {
    const r = op - DW_OP_breg0;
    loc = { kind: 'breg', reg: r, name: registerName(r, machine), offset: c.sleb() };
  } else if (op === DW_OP_bregx) {
    const r = c.uleb();
    loc = { kind: 'breg', reg: r, name: registerName(r, machine), offset: c.sleb() };
  } else if (op === DW_OP_fbreg) {
    loc = { kind: 'fbreg', offset: c.sleb() };
  } else if (op === DW_OP_call_frame_cfa) {
    loc = { kind: 'cfa' };
  } else if (op === DW_OP_addr && expr.length === 9) {
    loc = { kind: 'addr', address: c.u64() };
  }
  if (loc && c.atEnd) return loc;
  return { kind: 'expr', bytes: expr };
}

/**
 * The entries of a location list: `DW_FORM_sec_offset` into `.debug_loclists` (DWARF 5) or `.debug_loc` (2-4), or
 * `DW_FORM_loclistx` (an index into the unit's offset table). `base` is the unit's base address.
 */
export function readLocationList(unit: Unit, av: AttrValue, machine: number): LocationRange[] {
  const v = av.value as number;
  const out: LocationRange[] = [];
  let base = unit.lowPc;
  if (unit.version < 5) {
    const c = new Cursor(unit.sections.get('loc'), v, '.debug_loc');
    const max = 2 ** (8 * unit.addrSize) - 1;
    for (;;) {
      const s = c.uN(unit.addrSize);
      const e = c.uN(unit.addrSize);
      if (s === 0 && e === 0) return out;
      if (s >= max) {
        base = e;
        continue;
      }
      const expr = c.bytes(c.u16());
      out.push({ start: base + s, end: base + e, location: decodeLocation(expr, machine) });
    }
  }
  const sec = unit.sections.get('loclists');
  let off = v;
  if (av.form === DW_FORM_loclistx) {
    const at = unit.loclistsBase + v * unit.offsetSize;
    off = unit.loclistsBase + new Cursor(sec, at, '.debug_loclists').uN(unit.offsetSize);
  }
  const c = new Cursor(sec, off, '.debug_loclists');
  const push = (start: number, end: number): void => {
    const expr = c.bytes(c.uleb());
    out.push({ start, end, location: decodeLocation(expr, machine) });
  };
  for (;;) {
    const kind = c.u8();
    switch (kind) {
      case DW_LLE_end_of_list:
        return out;
      case DW_LLE_base_addressx:
        base = unit.addrx(c.uleb());
        break;
      case DW_LLE_startx_endx: {
        const s = unit.addrx(c.uleb());
        push(s, unit.addrx(c.uleb()));
        break;
      }
      case DW_LLE_startx_length: {
        const s = unit.addrx(c.uleb());
        push(s, s + c.uleb());
        break;
      }
      case DW_LLE_offset_pair: {
        const s = c.uleb();
        push(base + s, base + c.uleb());
        break;
      }
      case DW_LLE_default_location:
        push(0, 2 ** 53);
        break;
      case DW_LLE_base_address:
        base = c.uN(unit.addrSize);
        break;
      case DW_LLE_start_end: {
        const s = c.uN(unit.addrSize);
        push(s, c.uN(unit.addrSize));
        break;
      }
      case DW_LLE_start_length: {
        const s = c.uN(unit.addrSize);
        push(s, s + c.uleb());
        break;
      }
      default:
        throw new DwarfError(`.debug_loclists has unknown entry kind ${kind} at offset ${c.pos - 1}`);
    }
  }
}
