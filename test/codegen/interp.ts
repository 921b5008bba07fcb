/**
 * A small BPF interpreter for tests: ALU/ALU64 (incl. sdiv/smod, movsx, endian), LDX/ST/STX (incl. atomics),
 * ld_imm64, JMP/JMP32 and `call` to a fake helper. It runs IR (virtual registers, labels) as well as emitted raw
 * instructions, so the semantics of a program before and after register allocation / emission can be compared.
 *
 * It is strict where the verifier is: reading a register that was never written (or was clobbered by a call:
 * r1-r5 are poisoned after every call), reading uninitialised stack, writing r10, or touching memory outside the
 * stack and the context throws. Shifts mask their count (x86 JIT behaviour); division by zero gives 0 and modulo by
 * zero leaves dst unchanged (instruction-set.rst).
 */
import { helperById } from '../../src/bpf/helpers.js';
import { insnClass, insnMode, insnOp, sizeBytes } from '../../src/bpf/insn.js';
import {
  BPF_ADD,
  BPF_ALU,
  BPF_ALU64,
  BPF_AND,
  BPF_ARSH,
  BPF_ATOMIC,
  BPF_CALL,
  BPF_CMPXCHG,
  BPF_DIV,
  BPF_END,
  BPF_EXIT,
  BPF_FETCH,
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
  BPF_RSH,
  BPF_ST,
  BPF_STX,
  BPF_SUB,
  BPF_X,
  BPF_XCHG,
  BPF_XOR,
  LD_IMM64,
} from '../../src/bpf/opcodes.js';
import { type Insn, type IrInsn, type IrItem, isLabel } from '../../src/codegen/ir.js';

export const STACK_TOP = 0x7fff_0000_0000n;
export const CTX_BASE = 0x1000_0000n;
const STACK_SIZE = 512;
const M64 = (1n << 64n) - 1n;
const M32 = (1n << 32n) - 1n;

export class InterpError extends Error {}

export interface InterpOptions {
  /** Context bytes r1 points at on entry (default 64 zero bytes). */
  ctx?: Buffer;
  /** Fake helper: returns r0 for helper `id` called with r1..rN. Default: a fixed mixing function. */
  helper?: (id: number, args: bigint[]) => bigint;
  /** Value of an ld_imm64 map reference (default a fixed fake pointer per name). */
  mapValue?: (name: string) => bigint;
  /** Executed-instruction limit (default 1e6). */
  maxSteps?: number;
}

export interface InterpResult {
  r0: bigint;
  steps: number;
  calls: number;
}

/** The default fake helper: a deterministic mix of the id and the arguments. */
export function fakeHelper(id: number, args: bigint[]): bigint {
  let h = (BigInt(id) * 0x9e3779b97f4a7c15n) & M64;
  for (const a of args) h = ((h ^ a) * 0x100000001b3n + 0x12345n) & M64;
  return h;
}

function s64(v: bigint): bigint {
  return BigInt.asIntN(64, v);
}
function s32(v: bigint): bigint {
  return BigInt.asIntN(32, v);
}

function alu(op: number, wide: boolean, off: number, a: bigint, b: bigint): bigint {
  const mask = wide ? M64 : M32;
  const bits = wide ? 64 : 32;
  const sx = wide ? s64 : s32;
  a &= mask;
  b &= mask;
  let r: bigint;
  switch (op) {
    case BPF_ADD:
      r = a + b;
      break;
    case BPF_SUB:
      r = a - b;
      break;
    case BPF_MUL:
      r = a * b;
      break;
    case BPF_DIV:
      if (b === 0n) r = 0n;
      else if (off === 1) r = sx(a) / sx(b);
      else r = a / b;
      break;
    case BPF_MOD:
      if (b === 0n) r = a;
      else if (off === 1) r = sx(a) % sx(b);
      else r = a % b;
      break;
    case BPF_OR:
      r = a | b;
      break;
    case BPF_AND:
      r = a & b;
      break;
    case BPF_XOR:
      r = a ^ b;
      break;
    case BPF_LSH:
      r = a << (b & BigInt(bits - 1));
      break;
    case BPF_RSH:
      r = a >> (b & BigInt(bits - 1));
      break;
    case BPF_ARSH:
      r = sx(a) >> (b & BigInt(bits - 1));
      break;
    default:
      throw new InterpError(`unsupported ALU op 0x${op.toString(16)}`);
  }
  return r & mask;
}

function bswap(v: bigint, bits: number): bigint {
  let r = 0n;
  for (let i = 0; i < bits / 8; i++) r = (r << 8n) | ((v >> BigInt(8 * i)) & 0xffn);
  return r;
}

function cond(op: number, wide: boolean, a: bigint, b: bigint): boolean {
  const mask = wide ? M64 : M32;
  const sx = wide ? s64 : s32;
  a &= mask;
  b &= mask;
  switch (op) {
    case BPF_JEQ:
      return a === b;
    case BPF_JNE:
      return a !== b;
    case BPF_JGT:
      return a > b;
    case BPF_JGE:
      return a >= b;
    case BPF_JLT:
      return a < b;
    case BPF_JLE:
      return a <= b;
    case BPF_JSET:
      return (a & b) !== 0n;
    case BPF_JSGT:
      return sx(a) > sx(b);
    case BPF_JSGE:
      return sx(a) >= sx(b);
    case BPF_JSLT:
      return sx(a) < sx(b);
    case BPF_JSLE:
      return sx(a) <= sx(b);
    default:
      throw new InterpError(`unsupported jump op 0x${op.toString(16)}`);
  }
}

/** A decoded program: instructions plus the index each jump goes to. */
interface Prog {
  insns: IrInsn[];
  /** Per instruction: index of the jump target, for jumps. */
  targets: (number | undefined)[];
  /** Per instruction: the full ld_imm64 value when known. */
  imm64: (bigint | undefined)[];
}

function fromIr(items: readonly IrItem[]): Prog {
  const insns: IrInsn[] = [];
  const labels = new Map<string, number>();
  for (const it of items) {
    if (isLabel(it)) labels.set(it.label, insns.length);
    else insns.push(it);
  }
  const targets = insns.map((i) => {
    if (i.target === undefined) return undefined;
    const t = labels.get(i.target);
    if (t === undefined) throw new InterpError(`undefined label ${i.target}`);
    return t;
  });
  return { insns, targets, imm64: insns.map((i) => i.imm64) };
}

function fromRaw(raw: readonly Insn[]): Prog {
  // Map slots to instruction indexes (ld_imm64 takes two slots).
  const insns: IrInsn[] = [];
  const imm64: (bigint | undefined)[] = [];
  const slotToIdx = new Map<number, number>();
  const slotOf: number[] = [];
  for (let pc = 0; pc < raw.length; pc++) {
    const i = raw[pc]!;
    slotToIdx.set(pc, insns.length);
    slotOf.push(pc);
    insns.push({ ...i });
    if (i.code === LD_IMM64) {
      const hi = raw[pc + 1];
      if (!hi) throw new InterpError('truncated ld_imm64');
      imm64.push((BigInt(hi.imm >>> 0) << 32n) | BigInt(i.imm >>> 0));
      pc++;
    } else imm64.push(undefined);
  }
  slotToIdx.set(raw.length, insns.length);
  const targets = insns.map((i, n) => {
    const cls = insnClass(i.code);
    if (cls !== BPF_JMP && cls !== BPF_JMP32) return undefined;
    const op = insnOp(i.code);
    if (op === BPF_CALL || op === BPF_EXIT) return undefined;
    const off = cls === BPF_JMP32 && op === BPF_JA ? i.imm : i.off;
    const t = slotToIdx.get(slotOf[n]! + 1 + off);
    if (t === undefined) throw new InterpError(`jump into the middle of an ld_imm64 at ${slotOf[n]}`);
    return t;
  });
  return { insns, targets, imm64 };
}

/** Runs IR items (virtual registers allowed). */
export function runIr(items: readonly IrItem[], opts: InterpOptions = {}): InterpResult {
  return run(fromIr(items), opts, true);
}

/** Runs emitted raw instructions (ld_imm64 as two slots; map fds are looked up as `fd:<n>` in `mapValue`). */
export function runInsns(insns: readonly Insn[], opts: InterpOptions = {}): InterpResult {
  return run(fromRaw(insns), opts, false);
}

function run(p: Prog, opts: InterpOptions, ir: boolean): InterpResult {
  const regs = new Map<number, bigint>();
  const ctx = opts.ctx ?? Buffer.alloc(64);
  const stack = Buffer.alloc(STACK_SIZE);
  const stackInit = new Uint8Array(STACK_SIZE);
  const helper = opts.helper ?? fakeHelper;
  const mapValue = opts.mapValue ?? ((name: string) => 0xffff_8880_0000_0000n + BigInt(name.length) * 0x1000n);
  const maxSteps = opts.maxSteps ?? 1_000_000;
  regs.set(1, CTX_BASE);
  regs.set(10, STACK_TOP);
  const get = (r: number): bigint => {
    const v = regs.get(r);
    if (v === undefined) throw new InterpError(`read of uninitialised register ${r}`);
    return v;
  };
  const set = (r: number, v: bigint) => {
    if (r === 10) throw new InterpError('write to r10');
    regs.set(r, v & M64);
  };
  const region = (addr: bigint, size: number): { buf: Buffer; off: number; stack: boolean } => {
    if (addr >= STACK_TOP - BigInt(STACK_SIZE) && addr + BigInt(size) <= STACK_TOP) {
      const off = Number(addr - (STACK_TOP - BigInt(STACK_SIZE)));
      if (off % size !== 0) throw new InterpError(`misaligned stack access at ${off - STACK_SIZE}`);
      return { buf: stack, off, stack: true };
    }
    if (addr >= CTX_BASE && addr + BigInt(size) <= CTX_BASE + BigInt(ctx.length)) {
      return { buf: ctx, off: Number(addr - CTX_BASE), stack: false };
    }
    throw new InterpError(`memory access outside stack and ctx: 0x${addr.toString(16)} size ${size}`);
  };
  const load = (addr: bigint, size: number): bigint => {
    const m = region(addr, size);
    if (m.stack)
      for (let i = 0; i < size; i++) if (!stackInit[m.off + i]) throw new InterpError('read of uninitialised stack');
    const b = Buffer.alloc(8);
    m.buf.copy(b, 0, m.off, m.off + size);
    return b.readBigUInt64LE(0);
  };
  const store = (addr: bigint, size: number, v: bigint) => {
    const m = region(addr, size);
    if (!m.stack) throw new InterpError('write to ctx');
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(v & M64);
    b.copy(m.buf, m.off, 0, size);
    for (let i = 0; i < size; i++) stackInit[m.off + i] = 1;
  };
  let pc = 0;
  let steps = 0;
  let calls = 0;
  for (;;) {
    if (pc < 0 || pc >= p.insns.length) throw new InterpError(`fell off the program at ${pc}`);
    if (++steps > maxSteps) throw new InterpError('step limit exceeded');
    const i = p.insns[pc]!;
    const cls = insnClass(i.code);
    const op = insnOp(i.code);
    const x = (i.code & BPF_X) !== 0;
    let next = pc + 1;
    switch (cls) {
      case BPF_ALU:
      case BPF_ALU64: {
        const wide = cls === BPF_ALU64;
        const mask = wide ? M64 : M32;
        if (op === BPF_MOV) {
          let v = x ? get(i.src) : BigInt(i.imm);
          if (x && i.off !== 0) v = BigInt.asIntN(i.off, v);
          set(i.dst, v & mask);
        } else if (op === BPF_NEG) {
          set(i.dst, -get(i.dst) & mask);
        } else if (op === BPF_END) {
          const v = get(i.dst) & ((1n << BigInt(i.imm)) - 1n);
          set(i.dst, wide || x ? bswap(v, i.imm) : v);
        } else {
          const b = x ? get(i.src) : BigInt(i.imm);
          set(i.dst, alu(op, wide, i.off, get(i.dst), b));
        }
        break;
      }
      case BPF_LDX: {
        const size = sizeBytes(i.code);
        let v = load(get(i.src) + BigInt(i.off), size);
        if (insnMode(i.code) === BPF_MEMSX) v = BigInt.asIntN(size * 8, v);
        else if (insnMode(i.code) !== BPF_MEM) throw new InterpError('unsupported LDX mode');
        set(i.dst, v);
        break;
      }
      case BPF_ST:
        store(get(i.dst) + BigInt(i.off), sizeBytes(i.code), BigInt(i.imm));
        break;
      case BPF_STX: {
        const size = sizeBytes(i.code);
        const addr = get(i.dst) + BigInt(i.off);
        if (insnMode(i.code) === BPF_MEM) {
          store(addr, size, get(i.src));
          break;
        }
        if (insnMode(i.code) !== BPF_ATOMIC) throw new InterpError('unsupported STX mode');
        const mask = size === 8 ? M64 : M32;
        const old = load(addr, size);
        const sv = get(i.src) & mask;
        if (i.imm === BPF_CMPXCHG) {
          if (old === (get(0) & mask)) store(addr, size, sv);
          set(0, old);
        } else if (i.imm === BPF_XCHG) {
          store(addr, size, sv);
          set(i.src, old);
        } else {
          store(addr, size, alu(i.imm & ~BPF_FETCH, size === 8, 0, old, sv));
          if (i.imm & BPF_FETCH) set(i.src, old);
        }
        break;
      }
      case BPF_LD:
        if (i.code !== LD_IMM64) throw new InterpError('unsupported LD mode');
        if (i.src === 1 || i.src === 2) {
          const name = ir ? (i.mapRef ?? '?') : `fd:${i.imm}`;
          const off = ir ? (i.imm64 ?? 0n) >> 32n : (p.imm64[pc] ?? 0n) >> 32n;
          set(i.dst, mapValue(name) + (i.src === 2 ? off : 0n));
        } else {
          set(i.dst, p.imm64[pc] ?? BigInt(i.imm));
        }
        break;
      case BPF_JMP:
      case BPF_JMP32: {
        if (op === BPF_CALL && cls === BPF_JMP) {
          const n = i.callArgs ?? helperById(i.imm)?.args ?? 5;
          const args: bigint[] = [];
          for (let r = 1; r <= n; r++) args.push(get(r));
          calls++;
          const r0 = helper(i.imm, args);
          for (let r = 1; r <= 5; r++) regs.delete(r);
          set(0, r0);
          break;
        }
        if (op === BPF_EXIT && cls === BPF_JMP) return { r0: get(0), steps, calls };
        if (op === BPF_JA) {
          next = p.targets[pc]!;
          break;
        }
        const b = x ? get(i.src) : BigInt(i.imm);
        if (cond(op, cls === BPF_JMP, get(i.dst), b)) next = p.targets[pc]!;
        break;
      }
      default:
        throw new InterpError(`unsupported class ${cls}`);
    }
    pc = next;
  }
}
