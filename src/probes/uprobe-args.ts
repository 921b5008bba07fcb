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
import { dirname, isAbsolute, resolve } from 'node:path';
import type { RecordField, SType } from '../lang/types.js';
import { type DwarfInfo, openDwarf } from '../symbols/dwarf/dwarf.js';
import { DW_ATE_signed, DW_ATE_signed_char } from '../symbols/dwarf/constants.js';
import { type DwarfMember, stripType, type DwarfType } from '../symbols/dwarf/types.js';
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

/** Extra debug directories (`--debuginfo DIR[:DIR]`), searched before the default places; see {@link useDebugInfoDirs}. */
let debugInfoDirs: readonly string[] = [];

/**
 * Set the directories searched for separate debug files (bpftrace's `--debuginfo DIR[:DIR]`, repeatable), in order,
 * before the binary's own directory, its `.debug/` and `/usr/lib/debug`: a directory holding the `.gnu_debuglink`
 * file itself, `<DIR>/<binary's directory>/`, or a `.build-id/` tree. A relative DIR is tried against the current
 * directory and against the binary's directory (elfutils' `debuginfo_path` rule, which bpftrace uses). Process-wide,
 * like the kernel BTF (lang/btf-types.ts useKernelBtf); the CLI sets it once from its options.
 */
export function useDebugInfoDirs(dirs: readonly string[]): void {
  debugInfoDirs = [...dirs];
  cache.clear();
}

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
    const debugDirs = debugInfoDirs.flatMap((d) => (isAbsolute(d) ? [d] : [resolve(d), resolve(dirname(path), d)]));
    dwarf = openDwarf(path, { debugDirs });
  } catch {
    dwarf = null; // no debug information: `args` stays unavailable
  }
  cache.set(path, { key, dwarf });
  return dwarf;
}

/** The DWARF of `path` and of its split units' `.dwo` files (searched in that order), read once per binary. */
const splitCache = new WeakMap<DwarfInfo, DwarfInfo[]>();

function infosOf(path: string): DwarfInfo[] {
  const dwarf = dwarfOf(path);
  if (!dwarf) return [];
  let split = splitCache.get(dwarf);
  if (!split) {
    try {
      split = dwarf.splitUnits.length > 0 ? dwarf.splitInfos(path) : [];
    } catch {
      split = [];
    }
    splitCache.set(dwarf, split);
  }
  return [dwarf, ...split];
}

/** The first answer of `look` over the binary's DWARF and its `.dwo` files; a malformed one counts as no answer. */
function lookUp<T>(path: string, look: (d: DwarfInfo) => T | undefined): T | undefined {
  for (const d of infosOf(path)) {
    try {
      const r = look(d);
      if (r !== undefined) return r;
    } catch {
      // try the next file
    }
  }
  return undefined;
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

/** Pointer hops followed when converting a type: deeper pointers to structs read as `void *` (never a wrong type). */
const MAX_POINTER_DEPTH = 6;

/**
 * The language type of a DWARF type of user-space data: integers and enums, pointers (into user memory), structs and
 * unions as records (anonymous members flattened, as BTF records are), arrays (`char[N]` as a string, as for BTF).
 * `{ kind: 'none' }` for what the language cannot hold (floating point, 128-bit integers, functions, declarations
 * without a definition): naming such a field is the analyser's "cannot read yet" error, never a value.
 * `depth` counts pointer hops, so a self-referential struct gives a finite type.
 */
export function dwarfSType(t: DwarfType, depth = 0): SType {
  const s = stripType(t);
  switch (s.kind) {
    case 'base':
    case 'enum':
      return intType(s) ?? { kind: 'none' };
    case 'pointer':
    case 'reference':
    case 'rvalue_reference': {
      const to = depth >= MAX_POINTER_DEPTH ? { kind: 'none' as const } : dwarfSType(s.target, depth + 1);
      return { kind: 'pointer', to, space: 'user' };
    }
    case 'struct':
    case 'union':
    case 'class': {
      // a declaration (or an empty struct) has no fields to read; a record without fields would be looked up in
      // the kernel's BTF by name (btf-types.ts withBtf), which is not this binary's type
      if (s.declaration || s.members.length === 0) return { kind: 'none' };
      const fields: RecordField[] = [];
      addMembers(s.members, 0, depth, fields);
      const kw = s.kind === 'union' ? 'union' : 'struct';
      return { kind: 'record', name: `${kw} ${s.name ?? '(anon)'}`, size: s.size, fields };
    }
    case 'array': {
      let elem = dwarfSType(s.element, depth);
      if (elem.kind === 'none') return elem;
      const dims = s.dims.map((d) => Math.max(0, d));
      for (let i = dims.length - 1; i >= 0; i--) {
        elem =
          elem.kind === 'int' && elem.size === 1 && i === dims.length - 1
            ? { kind: 'string', size: Math.max(1, dims[i]!) }
            : { kind: 'array', elem, count: dims[i]! };
      }
      return elem;
    }
    default:
      return { kind: 'none' };
  }
}

function addMembers(members: DwarfMember[], base: number, depth: number, out: RecordField[]): void {
  for (const m of members) {
    const mt = stripType(m.type);
    if (m.name === undefined) {
      // an anonymous struct/union member: its members are reachable by name from the enclosing one
      if (mt.kind === 'struct' || mt.kind === 'union' || mt.kind === 'class') {
        addMembers(mt.members, base + m.offset, depth, out);
      }
      continue;
    }
    const f: RecordField = { name: m.name, type: dwarfSType(m.type, depth), offset: base + m.offset };
    if (m.bitSize !== undefined) {
      const bitOffset = base * 8 + (m.bitOffset ?? m.offset * 8);
      f.bitSize = m.bitSize;
      f.bitOffset = bitOffset;
      f.offset = Math.floor(bitOffset / 8);
    }
    out.push(f);
  }
}

/**
 * The `args` record of a uprobe on `func` of the ELF file `path` placed at file offset `fileOffset`, or `null` when
 * there is none to give (no DWARF, not x86-64, the function unknown to DWARF, or the probe not at its entry).
 */
export function uprobeArgsType(path: string, func: string, fileOffset: number): SType | null {
  const dwarf = dwarfOf(path);
  if (!dwarf || dwarf.machine !== EM_X86_64) return null;
  const fn = lookUp(path, (d) => d.findFunction(func));
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
    const type = dwarfSType(p.type);
    if (p.name === undefined || off === undefined || type.kind === 'none') continue;
    fields.push({ name: p.name, type, offset: off });
  }
  return { kind: 'record', name: 'struct uprobe_args', size: PT_REGS_SIZE_X86_64, fields };
}

/**
 * The type `spec` (`struct Foo`, `union U`, `enum E`, a typedef name) as the binary at `path` declares it in its
 * DWARF, as a language type of user-space data (see {@link dwarfSType}); `undefined` when the binary has no DWARF,
 * no such type, or only a declaration of it. What makes `((struct Foo *)arg0)->a` and `sizeof(struct Foo)` work in a
 * uprobe of that binary (after the program's own C definitions, before the kernel's BTF).
 */
export function uprobeUserType(path: string, spec: string): SType | undefined {
  const t = lookUp(path, (d) => d.findType(spec.trim().replace(/\s+/g, ' ')));
  if (!t) return undefined;
  const st = dwarfSType(t);
  return st.kind === 'none' ? undefined : st;
}

/**
 * A DWARF type spelled as bpftrace's `-lv` prints uprobe arguments (`dwarf_parser.cpp` get_type_name): base types
 * and typedefs by name, `T*` for pointers (`void*` without a target), `struct Foo` / `union U` / `enum E`
 * (`struct <anonymous>`), `const T` (`T* const` for a const pointer), anything else `<unknown type>`.
 */
export function bpftraceTypeName(t: DwarfType): string {
  switch (t.kind) {
    case 'base':
    case 'typedef':
      return t.name;
    case 'void':
      return 'void';
    case 'pointer':
      return t.target.kind === 'void' ? 'void*' : `${bpftraceTypeName(t.target)}*`;
    case 'struct':
    case 'union':
    case 'enum':
      return `${t.kind} ${t.name ?? '<anonymous>'}`;
    case 'const':
      return t.target.kind === 'pointer'
        ? `${bpftraceTypeName(t.target)} const`
        : `const ${bpftraceTypeName(t.target)}`;
    default:
      return '<unknown type>';
  }
}

/**
 * `-lv` lines for a uprobe on `func` of the binary at `path`: one `    TYPE NAME` line per DWARF parameter (four
 * spaces, as bpftrace prints probe arguments; an unnamed parameter as its type alone). Empty without DWARF.
 */
export function uprobeArgLines(path: string, func: string): string[] {
  const fn = lookUp(path, (d) => d.findFunction(func));
  if (!fn) return [];
  return fn.params.map((p) => {
    const type = bpftraceTypeName(p.type);
    return `    ${p.name === undefined ? type : `${type} ${p.name}`}`;
  });
}

/**
 * Where `uprobe:BIN@file:line[:col]` goes (see DwarfInfo.lineAddress): the address in the binary's address space and
 * the function whose code holds it (for `func`), or a sentence saying why there is none (bpftrace's wording).
 */
export function uprobeLineAddress(
  path: string,
  file: string,
  line: number,
  column: number,
): { addr: number; func: string | undefined } | string {
  const dwarf = dwarfOf(path);
  if (!dwarf) return `${path} has no debug information to map '${file}:${line}' to an address`;
  let addr: number | undefined;
  try {
    addr = dwarf.lineAddress(file, line, column);
  } catch (e) {
    return (e as Error).message;
  }
  if (addr === undefined) return `Unable to map '${file}:${line}${column > 0 ? `:${column}` : ''}' to address`;
  let func: string | undefined;
  try {
    func = dwarf.functionAt(addr);
  } catch {
    func = undefined;
  }
  return { addr, func };
}
