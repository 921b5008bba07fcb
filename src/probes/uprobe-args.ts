/**
 * `args` of a uprobe from the binary's DWARF (bpftrace: `uprobe:BIN:fn { print(args.x) }`): a record whose fields
 * are the function's parameters at the `struct pt_regs` offsets of the registers the x86-64 System V psABI passes
 * them in (§3.2.3: `rdi`, `rsi`, `rdx`, `rcx`, `r8`, `r9`), so `args.x` is one context load, as for a tracepoint.
 *
 * Narrow on purpose: only at the function's entry (not `fn+off`, not uretprobe, where the registers no longer hold
 * the arguments), only x86-64, and only integer, enum, bool and pointer-to-integer parameters passed in a register
 * (a `char *` is readable with `str()`). Other parameters (floating point, aggregates, pointers to structs, stack
 * arguments) are left out of the record, so naming one is the analyser's "Can't find field" error rather than a
 * wrong value. Without debug information `args` stays unavailable, as before.
 */
import { statSync } from 'node:fs';
import type { RecordField, SType } from '../lang/types.js';
import { type DwarfInfo, openDwarf } from '../symbols/dwarf/dwarf.js';
import { DW_ATE_signed, DW_ATE_signed_char } from '../symbols/dwarf/constants.js';
import { stripType, type DwarfType } from '../symbols/dwarf/types.js';
import { ElfFile, EM_X86_64, vaddrToFileOffset } from '../symbols/elf.js';
import { PT_REGS_X86_64 } from './regs-probe.js';

/** `sizeof(struct pt_regs)` on x86-64 (21 u64 slots, arch/x86/include/uapi/asm/ptrace.h). */
const PT_REGS_SIZE_X86_64 = 168;

const REG_OFFSET: Record<string, number> = {
  rdi: PT_REGS_X86_64.args[0],
  rsi: PT_REGS_X86_64.args[1],
  rdx: PT_REGS_X86_64.args[2],
  rcx: PT_REGS_X86_64.args[3],
  r8: PT_REGS_X86_64.args[4],
  r9: PT_REGS_X86_64.args[5],
};

/** Open DWARF per binary (keyed by path, size and mtime; `null`: the binary has none). */
const cache = new Map<string, { key: string; dwarf: DwarfInfo | null }>();

function dwarfOf(path: string): DwarfInfo | null {
  let key: string;
  try {
    const st = statSync(path);
    key = `${st.size}:${st.mtimeMs}`;
  } catch {
    return null;
  }
  const hit = cache.get(path);
  if (hit && hit.key === key) return hit.dwarf;
  let dwarf: DwarfInfo | null;
  try {
    dwarf = openDwarf(path);
  } catch {
    dwarf = null; // no debug information: `args` stays unavailable
  }
  cache.set(path, { key, dwarf });
  return dwarf;
}

function intType(t: DwarfType): SType | undefined {
  const s = stripType(t);
  if (s.kind === 'enum' && [1, 2, 4, 8].includes(s.size)) {
    return { kind: 'int', size: s.size as 1 | 2 | 4 | 8, signed: s.enumerators.some((e) => e.value < 0) };
  }
  if (s.kind !== 'base' || ![1, 2, 4, 8].includes(s.size)) return undefined;
  if (s.encoding === 0x04 || s.encoding === 0x03) return undefined; // float, complex float
  const signed = s.encoding === DW_ATE_signed || s.encoding === DW_ATE_signed_char;
  return { kind: 'int', size: s.size as 1 | 2 | 4 | 8, signed };
}

function fieldType(t: DwarfType): SType | undefined {
  const s = stripType(t);
  if (s.kind === 'pointer') {
    const to = intType(s.target);
    return to ? { kind: 'pointer', to, space: 'user' } : undefined;
  }
  return intType(t);
}

/**
 * The `args` record of a uprobe on `func` of the ELF file `path` placed at file offset `fileOffset`, or `null` when
 * there is none to give (no DWARF, not x86-64, the function unknown to DWARF, or the probe not at its entry).
 */
export function uprobeArgsType(path: string, func: string, fileOffset: number): SType | null {
  const dwarf = dwarfOf(path);
  if (!dwarf || dwarf.machine !== EM_X86_64) return null;
  const fn = dwarf.findFunction(func);
  if (!fn || fn.entry === undefined) return null;
  let entryOffset: number | undefined;
  try {
    const elf = ElfFile.open(path);
    try {
      entryOffset = vaddrToFileOffset(elf.loadSegments(), fn.entry);
    } finally {
      elf.close();
    }
  } catch {
    return null;
  }
  if (entryOffset !== fileOffset) return null;
  const fields: RecordField[] = [];
  for (const p of fn.params) {
    const off = p.abiRegister === undefined ? undefined : REG_OFFSET[p.abiRegister];
    const type = fieldType(p.type);
    if (p.name === undefined || off === undefined || !type) continue;
    fields.push({ name: p.name, type, offset: off });
  }
  return { kind: 'record', name: 'struct uprobe_args', size: PT_REGS_SIZE_X86_64, fields };
}
