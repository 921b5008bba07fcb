/**
 * x86-64 `struct pt_regs` (uapi asm/ptrace.h): the register offsets `reg()`, `argN` and `retval` read, and the
 * providers whose context begins with it.
 */

/** x86-64 `struct pt_regs` byte offsets by register name (uapi asm/ptrace.h; KERNEL.md). */
export const PT_REGS_OFFSETS: Record<string, number> = {
  r15: 0,
  r14: 8,
  r13: 16,
  r12: 24,
  bp: 32,
  bx: 40,
  r11: 48,
  r10: 56,
  r9: 64,
  r8: 72,
  ax: 80,
  cx: 88,
  dx: 96,
  si: 104,
  di: 112,
  orig_ax: 120,
  ip: 128,
  pc: 128, // bpftrace's alias of ip (arch/x86_64.cpp)
  cs: 136,
  flags: 144,
  sp: 152,
  ss: 160,
};

/**
 * Probe providers whose program context starts with the traced task's `struct pt_regs` (kprobe/uprobe programs, and
 * perf_event programs, whose `struct bpf_perf_event_data` begins with the registers): `usermode` reads `cs` there.
 */
export const PT_REGS_CONTEXTS: ReadonlySet<string> = new Set([
  'kprobe',
  'kretprobe',
  'uprobe',
  'uretprobe',
  'usdt',
  'profile',
  'interval',
  'software',
  'hardware',
]);
