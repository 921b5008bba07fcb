/**
 * Stack frame bookkeeping and memory moves for code generation. The 512-byte BPF stack below r10 holds scratch
 * variables (allocated once per program) and temporaries (keys, values, strings, records) that live for one
 * statement and are reused by the next. A frame that does not fit (long strings, `max_strlen` above ~200) lives in
 * a *frame map* instead: an ARRAY map with one value per CPU, looked up at program entry; `fn.frameBase` (r9) then
 * points MAP_FRAME_BIAS bytes into this CPU's value and slots are handed out upwards from -MAP_FRAME_BIAS (as
 * bpftrace keeps large values in scratch maps). A program does not run twice at once on one CPU (the kernel's recursion guard for tracing
 * programs), so the slot is its own. Stack accesses must be aligned (the verifier is strict about the stack),
 * so copies pick the widest access both offsets allow.
 */
import * as I from '../bpf/insn.js';
import { FP, MAX_STACK } from '../bpf/opcodes.js';
import { BpfscopeError } from '../errors.js';
import type { IrFunction } from './ir.js';

/**
 * A frame on the BPF stack outgrew its 512 bytes. For a probe's main program this is a bug of the resource pass
 * (codegen/resources.ts sized it to fit; compiler.ts reports it as internal); a loop callback's frame, which is not
 * sized ahead, reports it to the user.
 */
export class FrameOverflow extends BpfscopeError {
  constructor(
    message: string,
    /** The IR function (program or callback subprogram) whose frame overflowed. */
    readonly program: string,
  ) {
    super(message);
  }
}

/**
 * In a frame map the base register points MAP_FRAME_BIAS bytes into the value and slots grow upwards from offset
 * -MAP_FRAME_BIAS, so every slot is reachable with an instruction's signed 16-bit offset: at most MAX_MAP_FRAME
 * bytes (several strings of up to ~10 KB).
 */
export const MAP_FRAME_BIAS = 32768;
export const MAX_MAP_FRAME = 2 * MAP_FRAME_BIAS - 8;

export class Frame {
  /** Bytes used by per-program storage (variables). */
  private perm = 0;
  /** Bytes used including the current statement's temporaries. */
  private top = 0;
  private high = 0;

  /**
   * @param inMap the frame lives in a frame map (`fn.frameBase` is not r10): it may grow to MAX_MAP_FRAME bytes and
   *   leaves `fn.frameSize` (the real stack, for spills and stack-only helper arguments) alone.
   */
  constructor(
    private readonly fn: IrFunction,
    private readonly inMap = false,
  ) {}

  /** Bytes the frame needs (its map value size when in a frame map). */
  get size(): number {
    return this.high;
  }

  /** Storage living for the whole program. Must be called before any temporaries. */
  permanent(size: number): number {
    const start = this.perm;
    this.perm = align8(this.perm + size);
    this.top = Math.max(this.top, this.perm);
    this.bump();
    return this.inMap ? start - MAP_FRAME_BIAS : -this.perm;
  }

  /** Storage living until the enclosing `scope()` ends. Returns the offset from the frame base. */
  temp(size: number): number {
    const start = this.top;
    this.top = align8(this.top + Math.max(size, 1));
    this.bump();
    return this.inMap ? start - MAP_FRAME_BIAS : -this.top;
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
    if (this.inMap) {
      if (this.high > MAX_MAP_FRAME) {
        throw new BpfscopeError(
          `The probe needs ${this.high} bytes of scratch memory, more than bpfscope's ${MAX_MAP_FRAME}: use shorter strings (max_strlen)`,
        );
      }
      return;
    }
    this.fn.frameSize = this.high;
    if (this.high > MAX_STACK) {
      throw new FrameOverflow(
        `The probe needs ${this.high} bytes of BPF stack, more than the kernel's ${MAX_STACK}: use fewer or shorter strings in one statement`,
        this.fn.name,
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

/** Zero `size` bytes of frame at frameBase+off (off 8-aligned, size rounded up to 8 is within the slot). */
export function zeroStack(fn: IrFunction, off: number, size: number): void {
  let done = 0;
  const total = align8(size);
  while (done < total) {
    fn.emit(I.st(8, fn.frameBase, off + done, 0));
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
  // The verifier insists on aligned accesses to the stack only (on x86-64 and arm64, whose kernels have efficient
  // unaligned access): between two other memories (a frame map, a ring buffer record) a copy goes 8 bytes at a
  // time whatever the offsets (tuples pack strings at any offset).
  const anyOffset = dstBase !== FP && srcBase !== FP;
  while (done < size) {
    const c = anyOffset ? chunk(0, 0, size - done) : chunk(dstOff + done, srcOff + done, size - done);
    fn.emit(I.ldx(c, tmp, srcBase, srcOff + done));
    fn.emit(I.stx(c, dstBase, tmp, dstOff + done));
    done += c;
  }
}

/** Write constant bytes (zero padded to `size`) to the frame at frameBase+off (8-aligned). */
export function storeBytes(fn: IrFunction, off: number, bytes: Uint8Array, size: number): void {
  const buf = Buffer.alloc(align8(size));
  buf.set(bytes.subarray(0, size));
  for (let i = 0; i < buf.length; i += 4) {
    fn.emit(I.st(4, fn.frameBase, off + i, buf.readInt32LE(i)));
  }
}
