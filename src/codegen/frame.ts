/**
 * Stack frame bookkeeping and memory moves for code generation. The 512-byte BPF stack below r10 holds scratch
 * variables (allocated once per program) and temporaries (keys, values, strings, records) that live for one
 * statement and are reused by the next. Stack accesses must be aligned (the verifier is strict about the stack),
 * so copies pick the widest access both offsets allow.
 */
import * as I from '../bpf/insn.js';
import { FP, MAX_STACK } from '../bpf/opcodes.js';
import { BpfscopeError } from '../errors.js';
import type { IrFunction } from './ir.js';

export class Frame {
  /** Bytes used by per-program storage (variables). */
  private perm = 0;
  /** Bytes used including the current statement's temporaries. */
  private top = 0;
  private high = 0;

  constructor(private readonly fn: IrFunction) {}

  /** Storage living for the whole program. Must be called before any temporaries. */
  permanent(size: number): number {
    this.perm = align8(this.perm + size);
    this.top = Math.max(this.top, this.perm);
    this.bump();
    return -this.perm;
  }

  /** Storage living until the enclosing `scope()` ends. Returns the offset from r10. */
  temp(size: number): number {
    this.top = align8(this.top + Math.max(size, 1));
    this.bump();
    return -this.top;
  }

  /** Run `body`, then release the temporaries it allocated. */
  scope<T>(body: () => T): T {
    const saved = this.top;
    try {
      return body();
    } finally {
      this.top = saved;
    }
  }

  private bump(): void {
    this.high = Math.max(this.high, this.top);
    this.fn.frameSize = this.high;
    if (this.high > MAX_STACK) {
      throw new BpfscopeError(
        `The probe needs ${this.high} bytes of BPF stack, more than the kernel's ${MAX_STACK}: use fewer or shorter strings in one statement`,
      );
    }
  }
}

export function align8(n: number): number {
  return Math.ceil(n / 8) * 8;
}

/** Widest access (8/4/2/1) allowed by both offsets and the remaining length. */
function chunk(a: number, b: number, left: number): 1 | 2 | 4 | 8 {
  for (const c of [8, 4, 2, 1] as const) {
    if (left >= c && a % c === 0 && b % c === 0) return c;
  }
  return 1;
}

/** Zero `size` bytes of stack at r10+off (off 8-aligned, size rounded up to 8 is within the slot). */
export function zeroStack(fn: IrFunction, off: number, size: number): void {
  let done = 0;
  const total = align8(size);
  while (done < total) {
    fn.emit(I.st(8, FP, off + done, 0));
    done += 8;
  }
}

/** Copy `size` bytes from `[srcBase+srcOff]` to `[dstBase+dstOff]` through a scratch register. */
export function copyMem(
  fn: IrFunction,
  dstBase: number,
  dstOff: number,
  srcBase: number,
  srcOff: number,
  size: number,
): void {
  let done = 0;
  const tmp = fn.vreg();
  while (done < size) {
    const c = chunk(dstOff + done, srcOff + done, size - done);
    fn.emit(I.ldx(c, tmp, srcBase, srcOff + done));
    fn.emit(I.stx(c, dstBase, tmp, dstOff + done));
    done += c;
  }
}

/** Write constant bytes (zero padded to `size`) to the stack at r10+off (8-aligned). */
export function storeBytes(fn: IrFunction, off: number, bytes: Uint8Array, size: number): void {
  const buf = Buffer.alloc(align8(size));
  buf.set(bytes.subarray(0, size));
  for (let i = 0; i < buf.length; i += 4) {
    fn.emit(I.st(4, FP, off + i, buf.readInt32LE(i)));
  }
}
