/**
 * What every probe with a `struct pt_regs` context shares: kprobe/kretprobe and uprobe/uretprobe, attached one
 * function at a time (perf events) or many at once (kprobe_multi/uprobe_multi links). All load as
 * BPF_PROG_TYPE_KPROBE programs, read `arg0..arg5` and `retval` from the saved registers, have no `args` record
 * (except a uprobe at a function with DWARF: uprobe-args.ts),
 * and are return probes when their provider is `kretprobe`/`uretprobe`.
 */
import type { AttachPoint } from '../lang/ast.js';
import type { SType } from '../lang/types.js';
import { type AttachedProbe, type AttachOptions, BPF_PROG_TYPE, type ExpandedProbe } from './types.js';

/** `struct pt_regs` byte offsets of the argument registers and the return value (x86-64, KERNEL.md). */
export const PT_REGS_X86_64 = {
  args: [112, 104, 96, 88, 72, 64], // di, si, dx, cx, r8, r9
  ret: 80, // ax
  ip: 128,
  sp: 152,
} as const;

export abstract class PtRegsProbe implements ExpandedProbe {
  readonly progType: number = BPF_PROG_TYPE.KPROBE;
  /** No `args` record (a uprobe on a function with DWARF overrides this: probes/uprobe-args.ts). */
  get args(): SType | null {
    return null;
  }
  /** pt_regs layout for argN/retval. */
  readonly regs = PT_REGS_X86_64;
  abstract readonly name: string;

  constructor(
    readonly attachPoint: AttachPoint,
    readonly provider: 'kprobe' | 'kretprobe' | 'uprobe' | 'uretprobe',
  ) {}

  get retprobe(): boolean {
    return this.provider === 'kretprobe' || this.provider === 'uretprobe';
  }

  abstract attach(progFd: number, opts?: AttachOptions): AttachedProbe;
}
