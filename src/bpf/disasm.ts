/**
 * BPF disassembler producing the kernel verifier log / `bpftool prog dump xlated` text (the printer is
 * `kernel/bpf/disasm.c`; every format below was checked against the verifier log of programs loaded on the
 * development kernel, 6.18): `r1 = *(u64 *)(r10 -8)`, `w2 s/= w3`, `if r0 == 0x0 goto pc+3`,
 * `call bpf_map_lookup_elem#1`, `lock *(u64 *)(r1 +0) += r2`, `r5 = atomic64_fetch_and((u64 *)(r10 -8), r5)`,
 * `r6 = 0x123456789abcdef`. The kernel prints ld_imm64 map references as an address; we print bpftool's
 * `map[id:N]` form with the fd (or a caller-chosen name) inside the brackets.
 *
 * `disassembleIr` prints the IR the same way, with virtual registers as `v<n>` (`n` = register - VREG_BASE; the
 * 32-bit half as `wv<n>`), labels on their own line as `L3:` and jump targets as label names.
 */
import { helperDisplayName } from './helpers.js';
import {
  imm64Of,
  type Insn,
  insnClass,
  insnMode,
  insnOp,
  isLabel,
  sizeBytes,
  type SymInsn,
  type SymItem,
  VREG_BASE,
} from './insn.js';
import {
  BPF_ABS,
  BPF_ADD,
  BPF_ALU,
  BPF_ALU64,
  BPF_AND,
  BPF_ARSH,
  BPF_ATOMIC,
  BPF_CALL,
  BPF_CMPXCHG,
  BPF_DIV,
  BPF_DW,
  BPF_END,
  BPF_EXIT,
  BPF_FETCH,
  BPF_IMM,
  BPF_IND,
  BPF_JA,
  BPF_JEQ,
  BPF_JGE,
  BPF_JGT,
  BPF_JLE,
  BPF_JLT,
  BPF_JMP,
  BPF_JMP32,
  BPF_JNE,
  BPF_JSET,
  BPF_JSGE,
  BPF_JSGT,
  BPF_JSLE,
  BPF_JSLT,
  BPF_LD,
  BPF_LDX,
  BPF_LSH,
  BPF_MEM,
  BPF_MEMSX,
  BPF_MOD,
  BPF_MOV,
  BPF_MUL,
  BPF_NEG,
  BPF_OR,
  BPF_PSEUDO_CALL,
  BPF_PSEUDO_MAP_FD,
  BPF_PSEUDO_MAP_VALUE,
  BPF_RSH,
  BPF_ST,
  BPF_STX,
  BPF_SUB,
  BPF_X,
  BPF_XCHG,
  BPF_XOR,
  LD_IMM64,
} from './opcodes.js';

const ALU_STR: Record<number, string> = {
  [BPF_ADD]: '+=',
  [BPF_SUB]: '-=',
  [BPF_MUL]: '*=',
  [BPF_DIV]: '/=',
  [BPF_OR]: '|=',
  [BPF_AND]: '&=',
  [BPF_LSH]: '<<=',
  [BPF_RSH]: '>>=',
  [BPF_MOD]: '%=',
  [BPF_XOR]: '^=',
  [BPF_MOV]: '=',
  [BPF_ARSH]: 's>>=',
};

const ATOMIC_NAME: Record<number, string> = { [BPF_ADD]: 'add', [BPF_AND]: 'and', [BPF_OR]: 'or', [BPF_XOR]: 'xor' };

const JMP_STR: Record<number, string> = {
  [BPF_JEQ]: '==',
  [BPF_JGT]: '>',
  [BPF_JGE]: '>=',
  [BPF_JSET]: '&',
  [BPF_JNE]: '!=',
  [BPF_JSGT]: 's>',
  [BPF_JSGE]: 's>=',
  [BPF_JLT]: '<',
  [BPF_JLE]: '<=',
  [BPF_JSLT]: 's<',
  [BPF_JSLE]: 's<=',
};

/** Options for {@link disassemble}. */
export interface DisasmOptions {
  /** Prefix each line with the instruction's slot index, `27: ` (verifier log style). Default false. */
  pc?: boolean;
  /** Print the opcode byte in parentheses before the text, `(bf) r2 = r10`. Default false. */
  opcodes?: boolean;
  /**
   * Text inside `map[...]` for an ld_imm64 map reference (src 1 or 2); `imm` is the fd (or, in `bpftool prog dump
   * xlated` output, the map id). Default `fd:<imm>`.
   */
  mapRef?: (insn: Insn, pc: number) => string;
}

/** How registers, jump targets and map references are named: differs between raw instructions and IR. */
interface Namer {
  reg(r: number, wide: boolean): string;
  target(insn: Insn, pc: number): string;
  /** Text inside `map[...]`, or undefined when the instruction is not a map reference. */
  map(insn: Insn, pc: number): string;
}

function sign(n: number): string {
  return n < 0 ? `${n}` : `+${n}`;
}

function hex32(n: number): string {
  return `0x${(n >>> 0).toString(16)}`;
}

function mem(n: Namer, size: string, base: number, off: number): string {
  return `*(${size} *)(${n.reg(base, true)} ${sign(off)})`;
}

function aluText(insn: Insn, n: Namer): string {
  const wide = insnClass(insn.code) === BPF_ALU64;
  const op = insnOp(insn.code);
  const x = (insn.code & BPF_X) !== 0;
  const d = n.reg(insn.dst, wide);
  if (op === BPF_END) {
    const r = n.reg(insn.dst, true);
    if (wide) return `${r} = bswap${insn.imm} ${r}`;
    return `${r} = ${x ? 'be' : 'le'}${insn.imm} ${r}`;
  }
  if (op === BPF_NEG) return `${d} = -${d}`;
  if (op === BPF_MOV && x && insn.off !== 0) {
    if (wide && insn.off === -1) return `${d} = &(void __percpu *)(${n.reg(insn.src, true)})`;
    return `${d} = (s${insn.off})${n.reg(insn.src, wide)}`;
  }
  let s = ALU_STR[op];
  if (s === undefined) return `unknown opcode ${insn.code.toString(16).padStart(2, '0')}`;
  if ((op === BPF_DIV || op === BPF_MOD) && insn.off === 1) s = `s${s}`;
  return `${d} ${s} ${x ? n.reg(insn.src, wide) : insn.imm}`;
}

function atomicText(insn: Insn, n: Namer, sizeName: string): string {
  const dw = (insn.code & 0x18) === BPF_DW;
  const addr = `(${sizeName} *)(${n.reg(insn.dst, true)} ${sign(insn.off)})`;
  const s = n.reg(insn.src, true);
  const a = dw ? 'atomic64' : 'atomic';
  const imm = insn.imm;
  if (imm === BPF_XCHG) return `${s} = ${a}_xchg(${addr}, ${s})`;
  if (imm === BPF_CMPXCHG) return `${n.reg(0, true)} = ${a}_cmpxchg(${addr}, ${n.reg(0, true)}, ${s})`;
  const name = ATOMIC_NAME[imm & ~BPF_FETCH];
  if (name === undefined) return `unknown atomic operation 0x${(imm >>> 0).toString(16)}`;
  if (imm & BPF_FETCH) return `${s} = ${a}_fetch_${name}(${addr}, ${s})`;
  return `lock *${addr} ${ALU_STR[imm]} ${s}`;
}

function jmpText(insn: Insn, pc: number, n: Namer): string {
  const cls = insnClass(insn.code);
  const op = insnOp(insn.code);
  if (op === BPF_CALL && cls === BPF_JMP) {
    if (insn.src === BPF_PSEUDO_CALL) return `call pc${sign(insn.imm)}`;
    if (insn.src === 0) return `call ${helperDisplayName(insn.imm) ?? 'unknown'}#${insn.imm}`;
    return `call kernel-function#${insn.imm}`;
  }
  if (op === BPF_EXIT && cls === BPF_JMP) return 'exit';
  if (op === BPF_JA) return `${cls === BPF_JMP32 ? 'gotol' : 'goto'} ${n.target(insn, pc)}`;
  const s = JMP_STR[op];
  if (s === undefined) return `unknown opcode ${insn.code.toString(16).padStart(2, '0')}`;
  const wide = cls === BPF_JMP;
  const rhs = insn.code & BPF_X ? n.reg(insn.src, wide) : hex32(insn.imm);
  return `if ${n.reg(insn.dst, wide)} ${s} ${rhs} goto ${n.target(insn, pc)}`;
}

/** Text of one instruction; `next` is the second slot of an ld_imm64. */
function insnText(insn: Insn, next: Insn | undefined, pc: number, n: Namer, imm64?: bigint): string {
  const cls = insnClass(insn.code);
  const sz = sizeBytes(insn.code);
  const mode = insnMode(insn.code);
  switch (cls) {
    case BPF_ALU:
    case BPF_ALU64:
      return aluText(insn, n);
    case BPF_JMP:
    case BPF_JMP32:
      return jmpText(insn, pc, n);
    case BPF_LDX:
      if (mode === BPF_MEM) return `${n.reg(insn.dst, true)} = ${mem(n, `u${sz * 8}`, insn.src, insn.off)}`;
      if (mode === BPF_MEMSX) return `${n.reg(insn.dst, true)} = ${mem(n, `s${sz * 8}`, insn.src, insn.off)}`;
      break;
    case BPF_STX:
      if (mode === BPF_MEM) return `${mem(n, `u${sz * 8}`, insn.dst, insn.off)} = ${n.reg(insn.src, true)}`;
      if (mode === BPF_ATOMIC) return atomicText(insn, n, `u${sz * 8}`);
      break;
    case BPF_ST:
      if (mode === BPF_MEM) return `${mem(n, `u${sz * 8}`, insn.dst, insn.off)} = ${insn.imm}`;
      break;
    case BPF_LD:
      if (insn.code === LD_IMM64) {
        const d = n.reg(insn.dst, true);
        if (insn.src === BPF_PSEUDO_MAP_FD) return `${d} = map[${n.map(insn, pc)}]`;
        const full = imm64 ?? imm64Of(insn, next);
        if (insn.src === BPF_PSEUDO_MAP_VALUE) return `${d} = map[${n.map(insn, pc)}][0]+${full >> 32n}`;
        return `${d} = 0x${full.toString(16)}`;
      }
      if (mode === BPF_ABS) return `r0 = *(u${sz * 8} *)skb[${insn.imm}]`;
      if (mode === BPF_IND) return `r0 = *(u${sz * 8} *)skb[${n.reg(insn.src, true)} + ${insn.imm}]`;
      break;
  }
  if (insn.code === 0 && mode === BPF_IMM) return '(second slot of ld_imm64)';
  return `unknown opcode ${insn.code.toString(16).padStart(2, '0')}`;
}

function physReg(r: number, wide: boolean): string {
  return `${wide ? 'r' : 'w'}${r}`;
}

function prefix(code: number, pc: number, opts: { pc?: boolean; opcodes?: boolean }): string {
  let p = '';
  if (opts.pc) p += `${pc}: `;
  if (opts.opcodes) p += `(${code.toString(16).padStart(2, '0')}) `;
  return p;
}

/**
 * Formats one raw instruction as the kernel prints it (no pc, no opcode). `next` is the following slot, needed for
 * an ld_imm64's upper half; `pc` its slot index (only used by `mapRef`).
 */
export function formatInsn(insn: Insn, next?: Insn, opts: DisasmOptions = {}, pc = 0): string {
  const namer: Namer = {
    reg: physReg,
    target: (i) => `pc${sign(insnClass(i.code) === BPF_JMP32 && insnOp(i.code) === BPF_JA ? i.imm : i.off)}`,
    map: (i, p) => (opts.mapRef ? opts.mapRef(i, p) : `fd:${i.imm}`),
  };
  return insnText(insn, next, pc, namer);
}

/**
 * Disassembles a raw instruction array (ld_imm64 as two slots, as loaded into the kernel) into one line per
 * instruction. With `pc`, lines are numbered by slot like the verifier log (`27: (18) r6 = 0x1` then `29: ...`).
 */
export function disassemble(insns: readonly Insn[], opts: DisasmOptions = {}): string[] {
  const out: string[] = [];
  for (let pc = 0; pc < insns.length; pc++) {
    const i = insns[pc]!;
    const wide = i.code === LD_IMM64;
    out.push(prefix(i.code, pc, opts) + formatInsn(i, wide ? insns[pc + 1] : undefined, opts, pc));
    if (wide) pc++;
  }
  return out;
}

/** Options for {@link disassembleIr}. */
export interface IrDisasmOptions {
  /** Append the source position of each instruction as `  ; line:col`. Default false. */
  positions?: boolean;
  /** Indentation before instructions (labels are not indented). Default two spaces. */
  indent?: string;
}

/** Name of register `r` in IR listings: `r3`/`w3` for physical registers, `v5`/`wv5` for virtual ones. */
export function irRegName(r: number, wide = true): string {
  if (r >= VREG_BASE) return `${wide ? '' : 'w'}v${r - VREG_BASE}`;
  return physReg(r, wide);
}

const IR_NAMER: Namer = {
  reg: irRegName,
  target: (i) => (i as SymInsn).target ?? `pc${sign(i.off)}`,
  map: (i) => (i as SymInsn).mapRef ?? `fd:${i.imm}`,
};

/** Formats one IR instruction (virtual registers, label targets, map names). */
export function formatIrInsn(insn: SymInsn): string {
  return insnText(insn, undefined, 0, IR_NAMER, insn.imm64 ?? BigInt(insn.imm >>> 0));
}

/**
 * Disassembles IR items for `bpfscope -d ir`: one line per item, labels as `L3:`, instructions indented
 * (`  if v3 == 0x0 goto L3`, `  v1 = map[@counts]`, `  call bpf_ktime_get_ns#5`).
 */
export function disassembleIr(items: readonly SymItem[], opts: IrDisasmOptions = {}): string[] {
  const indent = opts.indent ?? '  ';
  return items.map((it) => {
    if (isLabel(it)) return `${it.label}:`;
    let line = indent + formatIrInsn(it);
    if (opts.positions && it.pos) line += `  ; ${it.pos.line}:${it.pos.col}`;
    return line;
  });
}
