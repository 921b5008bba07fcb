/**
 * The `usdt` provider (alias `U`): `usdt:BINARY:PROVIDER:NAME` or `usdt:BINARY:NAME`, with wildcards in provider and
 * name (bpftrace `docs/language.md` "usdt"). Probes are read from the binary's `.note.stapsdt` ELF notes (SystemTap
 * SDT v3: `pc, base, semaphore` then `provider\0name\0args\0`; systemtap's `sdt.h` and the "SDT probes" notes
 * format), attached as uprobes at the probe's file offset (pc adjusted by `.stapsdt.base` for prelinked files),
 * with the semaphore's file offset as the uprobe `ref_ctr_offset` so the kernel enables `*_ENABLED()` checks.
 * Arguments are the note's operand specs (`-4@%edi`, `8@-8(%rbp)`, `4@$5`): `arg0..argN` read them from the
 * `struct pt_regs` registers, from user memory, or as constants.
 */
import type { AttachPoint } from '../lang/ast.js';
import { ElfFile, parseNotes, vaddrToFileOffset } from '../symbols/elf.js';
import { openProbeEvent } from '../kernel/perf.js';
import { attachPointError } from './errors.js';
import { globToRegExp, hasWildcard } from './glob.js';
import { attachPerfEvents } from './perf-attach.js';
import {
  type AttachedProbe,
  type AttachOptions,
  BPF_PROG_TYPE,
  type ExpandedProbe,
  type ExpandOptions,
  type ProbeProvider,
  type UsdtArg,
} from './types.js';
import { PT_REGS_X86_64 } from './regs-probe.js';
import { type BinaryTarget, resolveTargets } from './targets.js';

/** x86-64 register names (all widths) → `struct pt_regs` offset. */
const X86_REGS: Record<string, number> = {};
for (const [names, off] of [
  [['rax', 'eax', 'ax', 'al', 'ah'], 80],
  [['rbx', 'ebx', 'bx', 'bl', 'bh'], 40],
  [['rcx', 'ecx', 'cx', 'cl', 'ch'], 88],
  [['rdx', 'edx', 'dx', 'dl', 'dh'], 96],
  [['rsi', 'esi', 'si', 'sil'], 104],
  [['rdi', 'edi', 'di', 'dil'], 112],
  [['rbp', 'ebp', 'bp', 'bpl'], 32],
  [['rsp', 'esp', 'sp', 'spl'], 152],
  [['r8', 'r8d', 'r8w', 'r8b'], 72],
  [['r9', 'r9d', 'r9w', 'r9b'], 64],
  [['r10', 'r10d', 'r10w', 'r10b'], 56],
  [['r11', 'r11d', 'r11w', 'r11b'], 48],
  [['r12', 'r12d', 'r12w', 'r12b'], 24],
  [['r13', 'r13d', 'r13w', 'r13b'], 16],
  [['r14', 'r14d', 'r14w', 'r14b'], 8],
  [['r15', 'r15d', 'r15w', 'r15b'], 0],
  [['rip', 'eip', 'ip'], 128],
] as const) {
  for (const n of names) X86_REGS[n] = off;
}

/** Parse one x86-64 SDT operand (`-4@%edi`, `8@-8(%rbp)`, `4@$5`, `8@(%rax)`). @throws Error for other forms */
export function parseUsdtArg(spec: string): UsdtArg {
  const m = /^(-?)(1|2|4|8)@(.+)$/.exec(spec);
  if (!m) throw new Error(`unsupported USDT argument '${spec}'`);
  const signed = m[1] === '-';
  const size = Number(m[2]);
  const op = m[3]!;
  let r = /^\$(-?(?:0x[0-9a-f]+|\d+))$/i.exec(op);
  if (r) {
    // the assembler writes the constant as a signed 64-bit number (`4@$-202182160`); the argument is its low `size`
    // bytes, read with the operand's sign as bpftrace does (4092785136 here); 8-byte values keep their 64 bits
    const bits = size * 8;
    const v = BigInt(r[1]!);
    return {
      kind: 'const',
      size,
      signed,
      value: signed || size === 8 ? BigInt.asIntN(bits, v) : BigInt.asUintN(bits, v),
    };
  }
  r = /^%(\w+)$/.exec(op);
  if (r && X86_REGS[r[1]!] !== undefined) return { kind: 'reg', size, signed, regOffset: X86_REGS[r[1]!]! };
  r = /^(-?(?:0x[0-9a-f]+|\d+))?\(%(\w+)\)$/i.exec(op);
  if (r && X86_REGS[r[2]!] !== undefined) {
    return { kind: 'mem', size, signed, regOffset: X86_REGS[r[2]!]!, disp: r[1] ? Number(r[1]) : 0 };
  }
  throw new Error(`unsupported USDT argument '${spec}'`);
}

/** One probe site from `.note.stapsdt`. */
export interface UsdtNote {
  provider: string;
  name: string;
  /** Probe address (link-time virtual address, adjusted for `.stapsdt.base`). */
  pc: number;
  /** Semaphore address (0: none). */
  semaphore: number;
  args: string;
}

/** Read the SDT notes of an ELF file. */
export function readUsdtNotes(elf: ElfFile): UsdtNote[] {
  const sec = elf.section('.note.stapsdt');
  if (!sec) return [];
  const base = elf.section('.stapsdt.base');
  const out: UsdtNote[] = [];
  for (const n of parseNotes(elf.sectionData(sec))) {
    if (n.name !== 'stapsdt' || n.type !== 3 || n.desc.length < 24) continue;
    let pc = Number(n.desc.readBigUInt64LE(0));
    const noteBase = Number(n.desc.readBigUInt64LE(8));
    const semaphore = Number(n.desc.readBigUInt64LE(16));
    if (base && noteBase) pc += base.addr - noteBase;
    const strs = n.desc.toString('latin1', 24).split('\0');
    out.push({ provider: strs[0] ?? '', name: strs[1] ?? '', pc, semaphore, args: strs[2] ?? '' });
  }
  return out;
}

export class UsdtProbe implements ExpandedProbe {
  readonly provider = 'usdt';
  readonly progType = BPF_PROG_TYPE.KPROBE;
  readonly args = null;
  readonly name: string;
  readonly regs = PT_REGS_X86_64;

  constructor(
    readonly attachPoint: AttachPoint,
    readonly path: string,
    readonly note: UsdtNote,
    readonly fileOffset: number,
    readonly refCtrOffset: number,
    readonly usdtArgs: UsdtArg[],
    /** The binary as bpftrace prints it (as written for a path: targets.ts); `path` when absent. */
    displayPath: string = path,
    /**
     * A second or later location of the same probe in this binary: attached like the first, but not counted again
     * in `Attached N probes` (bpftrace attaches a probe's locations as one probe).
     */
    readonly extraLocation = false,
  ) {
    this.name = `usdt:${displayPath}:${note.provider}:${note.name}`;
  }

  attach(progFd: number, opts: AttachOptions = {}): AttachedProbe {
    const spec = {
      kind: 'uprobe' as const,
      retprobe: false,
      target: this.path,
      offset: BigInt(this.fileOffset),
      ...(this.refCtrOffset ? { refCtrOffset: BigInt(this.refCtrOffset) } : {}),
    };
    const attached = attachPerfEvents(progFd, [
      () => openProbeEvent(spec, { pid: opts.pid ?? -1, cpu: opts.pid === undefined ? 0 : -1 }),
    ]);
    return this.extraLocation ? { close: () => attached.close(), count: 0 } : attached;
  }
}

export class UsdtProvider implements ProbeProvider {
  readonly names = ['usdt', 'U'] as const;
  readonly supported = true;
  readonly listed = false;

  /**
   * `usdt:BINARY:[PROVIDER:]NAME`. BINARY may be a wildcard or empty with `-p PID` (every file the process maps:
   * `usdt::tracetest:testprobe`, `usdt:*:tracetest:testprobe`), a path with a wildcard file name
   * (`usdt:./testprogs/usdt_test*::*`), a library or `$PATH` name (targets.ts); an empty PROVIDER is any provider.
   */
  expand(ap: AttachPoint, opts: ExpandOptions = {}): ExpandedProbe[] {
    const parts = ap.parts;
    const targetOk = parts[0] !== '' || opts.pid !== undefined;
    if (parts.length < 2 || parts.length > 3 || !targetOk || parts[parts.length - 1] === '') {
      throw attachPointError(ap, 'usdt probe type requires 2 or 3 arguments: usdt:BINARY:[PROVIDER:]NAME');
    }
    const target = parts[0]!;
    const targets = resolveTargets(target, opts.pid);
    if (targets.length === 0) throw attachPointError(ap, `could not find binary or library '${target}'`);
    const provGlob = parts.length === 3 && parts[1] !== '' ? parts[1]! : '*';
    const nameGlob = parts[parts.length - 1]!;
    const out: ExpandedProbe[] = [];
    for (const t of targets) {
      let elf: ElfFile;
      try {
        elf = ElfFile.open(t.path);
      } catch (e) {
        if (targets.length > 1 || target === '' || hasWildcard(target)) continue;
        throw attachPointError(ap, `${t.display}: ${(e as Error).message}`);
      }
      try {
        out.push(...this.expandIn(ap, elf, t, provGlob, nameGlob));
      } finally {
        elf.close();
      }
    }
    if (out.length === 0) {
      throw attachPointError(ap, `No USDT probes found for ${target}:${parts.slice(1).join(':')}`);
    }
    return out;
  }

  private expandIn(ap: AttachPoint, elf: ElfFile, t: BinaryTarget, provGlob: string, nameGlob: string): UsdtProbe[] {
    const loads = elf.loadSegments();
    const pre = globToRegExp(provGlob);
    const nre = globToRegExp(nameGlob);
    const notes = readUsdtNotes(elf).filter((n) => pre.test(n.provider) && nre.test(n.name));
    const seen = new Set<string>();
    return notes.map((n) => {
      const key = `${n.provider}:${n.name}`;
      const extraLocation = seen.has(key);
      seen.add(key);
      const off = vaddrToFileOffset(loads, n.pc);
      if (off === undefined)
        throw attachPointError(ap, `USDT probe ${n.provider}:${n.name} is outside the file's loaded segments`);
      const ref = n.semaphore ? (semaphoreFileOffset(elf, n.semaphore) ?? 0) : 0;
      let args: UsdtArg[];
      try {
        args = n.args.trim() === '' ? [] : n.args.trim().split(/\s+/).map(parseUsdtArg);
      } catch (e) {
        throw attachPointError(ap, `USDT probe ${n.provider}:${n.name}: ${(e as Error).message}`);
      }
      return new UsdtProbe(ap, t.path, n, off, ref, args, t.display, extraLocation);
    });
  }

  /** `-l 'usdt:BINARY[:PROVIDER[:NAME]]'` (with `-p`, BINARY may be a wildcard over the process's mappings). */
  list(search: string, _verbose = false, opts: { pid?: number } = {}): string[] {
    const parts = search.split(':');
    const re = globToRegExp(parts.slice(1).join(':') || '*');
    const out: string[] = [];
    for (const t of resolveTargets(parts[0] ?? '', opts.pid)) {
      let elf: ElfFile;
      try {
        elf = ElfFile.open(t.path);
      } catch {
        continue; // not an ELF file
      }
      try {
        for (const n of readUsdtNotes(elf)) {
          const name = `${n.provider}:${n.name}`;
          if (re.test(name)) out.push(`usdt:${t.display}:${name}`);
        }
      } finally {
        elf.close();
      }
    }
    return out;
  }
}

/** File offset of a semaphore (a data address): through the section that holds it. */
function semaphoreFileOffset(elf: ElfFile, addr: number): number | undefined {
  for (const s of elf.sections) {
    if (s.addr && addr >= s.addr && addr < s.addr + s.size && s.type !== 8 /* SHT_NOBITS */)
      return s.offset + (addr - s.addr);
  }
  return undefined;
}
