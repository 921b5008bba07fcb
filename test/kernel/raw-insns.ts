/**
 * Hand-assembled BPF instructions for the kernel-boundary tests (only tests hand-assemble; the compiler uses
 * src/bpf/insn.ts). Encoding: 8 bytes, `code`, `(src << 4) | dst`, `off` s16 LE, `imm` s32 LE
 * (Documentation/bpf/standardization/instruction-set.rst).
 */
import { execFileSync } from 'node:child_process';

export function ins(code: number, dst: number, src: number, off: number, imm: number): Buffer {
  const b = Buffer.alloc(8);
  b[0] = code;
  b[1] = ((src & 0xf) << 4) | (dst & 0xf);
  b.writeInt16LE(off, 2);
  b.writeInt32LE(imm | 0, 4);
  return b;
}

/** r_dst = imm (64-bit mov of a sign-extended imm32). */
export const movImm = (dst: number, imm: number) => ins(0xb7, dst, 0, 0, imm);
/** r_dst = r_src. */
export const movReg = (dst: number, src: number) => ins(0xbf, dst, src, 0, 0);
/** r_dst += imm. */
export const addImm = (dst: number, imm: number) => ins(0x07, dst, 0, 0, imm);
/** r_dst &= imm. */
export const andImm = (dst: number, imm: number) => ins(0x57, dst, 0, 0, imm);
/** r_dst >>= imm (logical, 64-bit). */
export const rshImm = (dst: number, imm: number) => ins(0x77, dst, 0, 0, imm);
/** r_dst = *(u64 *)(r_src + off). */
export const ldxDw = (dst: number, src: number, off: number) => ins(0x79, dst, src, off, 0);
/** *(u64 *)(r_dst + off) = r_src. */
export const stxDw = (dst: number, off: number, src: number) => ins(0x7b, dst, src, off, 0);
/** *(u64 *)(r_dst + off) = imm. */
export const stDw = (dst: number, off: number, imm: number) => ins(0x7a, dst, 0, off, imm);
/** *(u32 *)(r_dst + off) = imm. */
export const stW = (dst: number, off: number, imm: number) => ins(0x62, dst, 0, off, imm);
/** lock *(u64 *)(r_dst + off) += r_src. */
export const atomicAddDw = (dst: number, off: number, src: number) => ins(0xdb, dst, src, off, 0);
/** r_src = atomic_fetch_add((u64 *)(r_dst + off), r_src): BPF_ATOMIC with imm BPF_ADD | BPF_FETCH. */
export const atomicFetchAddDw = (dst: number, off: number, src: number) => ins(0xdb, dst, src, off, 0x01);
/** if r_dst == imm goto pc+1+off. */
export const jeqImm = (dst: number, imm: number, off: number) => ins(0x15, dst, 0, off, imm);
/** if r_dst != imm goto pc+1+off. */
export const jneImm = (dst: number, imm: number, off: number) => ins(0x55, dst, 0, off, imm);
/** if r_dst s>= imm goto pc+1+off. */
export const jsgeImm = (dst: number, imm: number, off: number) => ins(0x75, dst, 0, off, imm);
/** goto pc+1+off. */
export const ja = (off: number) => ins(0x05, 0, 0, off, 0);
/** call helper `id`. */
export const call = (id: number) => ins(0x85, 0, 0, 0, id);
export const exit = () => ins(0x95, 0, 0, 0, 0);

/** ld_imm64 r_dst = map fd (BPF_PSEUDO_MAP_FD): two slots. */
export function ldMapFd(dst: number, fd: number): Buffer {
  return Buffer.concat([ins(0x18, dst, 1, 0, fd), ins(0, 0, 0, 0, 0)]);
}

/** ld_imm64 r_dst = imm64: two slots. */
export function ldImm64(dst: number, v: bigint): Buffer {
  const lo = Number(BigInt.asIntN(32, v));
  const hi = Number(BigInt.asIntN(32, v >> 32n));
  return Buffer.concat([ins(0x18, dst, 0, 0, lo), ins(0, 0, 0, 0, hi)]);
}

export const prog = (...parts: Buffer[]) => Buffer.concat(parts);

/** Helper ids (KERNEL.md / uapi bpf.h). */
export const H = {
  mapLookupElem: 1,
  getCurrentPidTgid: 14,
  ringbufOutput: 130,
  ringbufReserve: 131,
  ringbufSubmit: 132,
  ringbufDiscard: 133,
} as const;

/**
 * `*counter_map[0] += 1` on an ARRAY map with one u64 value; clobbers r0-r5. 9 instructions (ld_imm64 is two).
 * Uses the stack slot at fp-4 for the key.
 */
export function incrementArray0(mapFd: number): Buffer {
  return prog(
    stW(10, -4, 0), // key = 0
    ldMapFd(1, mapFd),
    movReg(2, 10),
    addImm(2, -4),
    call(H.mapLookupElem),
    jeqImm(0, 0, 2), // NULL -> skip
    movImm(1, 1),
    atomicAddDw(0, 0, 1),
  );
}

/** Ids of BPF programs and maps currently loaded (bpftool -j prog/map show). */
export function loadedIds(): { progs: Set<number>; maps: Set<number> } {
  const j = (what: string) =>
    JSON.parse(execFileSync('bpftool', ['-j', what, 'show'], { encoding: 'utf8' }) || '[]') as { id: number }[];
  return { progs: new Set(j('prog').map((p) => p.id)), maps: new Set(j('map').map((m) => m.id)) };
}
