/**
 * Syscall tracepoint wildcards as one program (issue 19): `tracepoint:syscalls:sys_enter_*` matches ~360 events,
 * and attaching or detaching one perf event per event costs the kernel a tracepoint synchronisation each (35-41 s
 * for the whole set here, bpftrace 0.17 alike). The `syscalls:sys_enter_NAME` / `sys_exit_NAME` events are the
 * kernel's own probes on the `raw_syscalls:sys_enter` / `sys_exit` tracepoints that fire for the syscall numbers
 * enabled (kernel/trace/trace_syscalls.c, `ftrace_syscall_enter`/`perf_syscall_enter`), so a wildcard whose body
 * does not read `args` (the only thing that differs between the events) is attached here as ONE program on
 * `raw_syscalls:sys_*` that looks the syscall number up in a table of the matched events (an ARRAY map, number →
 * probe name; empty = not matched) and returns for the others; `probe` reads its name from the same table.
 *
 * The numbers come from the UAPI syscall table (src/tools/data/syscalls.ts, `unistd_64.h`) by the event's name,
 * with the kernel's `SYSCALL_DEFINE` names that differ from the table's (`newuname` is `uname`, ...): an event
 * whose name is in neither keeps its own tracepoint program (newer syscalls than the headers, for instance), so
 * the rewrite never guesses a number. x86-64 only (its syscall tracepoints ignore 32-bit compat syscalls, and so
 * does this program, by `thread_info.status & TS_COMPAT` as `in_ia32_syscall()`; the offset comes from BTF); other
 * architectures, or no BTF, keep one program per event.
 */
import { openTracepoint } from '../kernel/perf.js';
import { Btf, BtfKind } from '../kernel/btf.js';
import type { Tracefs } from '../kernel/tracefs.js';
import type { AttachPoint } from '../lang/ast.js';
import { SYSCALLS_X86_64 } from '../kernel/syscalls.js';
import { attachPerfEvents } from './perf-attach.js';
import type { TracepointProbe } from './tracepoint.js';
import { parseTracepointFormat } from './tracepoint-format.js';
import { type AttachedProbe, BPF_PROG_TYPE, type ExpandedProbe, type SyscallTable } from './types.js';

/** Fewer matches than this keep one program per event (their attach cost is small, and nothing changes). */
export const SYSCALL_REWRITE_MIN = 8;

/** x86-64 `TS_COMPAT` (arch/x86/include/asm/thread_info.h): the task is in a 32-bit compat syscall. */
export const TS_COMPAT = 0x0002;

/**
 * Kernel `SYSCALL_DEFINE` names (the `syscalls:sys_enter_NAME` event names) that differ from the UAPI table's name
 * for the same number on x86-64 (arch/x86/entry/syscalls/syscall_64.tbl's entry points).
 */
const EVENT_ALIASES_X86_64: Readonly<Record<string, string>> = {
  newstat: 'stat',
  newfstat: 'fstat',
  newlstat: 'lstat',
  newuname: 'uname',
  sendfile64: 'sendfile',
  umount: 'umount2',
};

/**
 * x86-64 syscalls newer than the UAPI headers the table was generated from (syscall_64.tbl, Linux 6.6-6.18), each
 * checked on this project's 6.18 machine: `syscall(N)` fires `syscalls:sys_enter_NAME` with `__syscall_nr` N
 * (test/kernel/syscall-wildcard.test.ts repeats the check).
 */
const NEWER_X86_64: Readonly<Record<string, number>> = {
  cachestat: 451,
  fchmodat2: 452,
  futex_wake: 454,
  futex_wait: 455,
  futex_requeue: 456,
  statmount: 457,
  listmount: 458,
  lsm_get_self_attr: 459,
  lsm_set_self_attr: 460,
  lsm_list_modules: 461,
  mseal: 462,
  setxattrat: 463,
  getxattrat: 464,
  listxattrat: 465,
  removexattrat: 466,
  open_tree_attr: 467,
  file_getattr: 468,
  file_setattr: 469,
};

let numbers: Map<string, number> | undefined;

/** Syscall number by `SYSCALL_DEFINE` name (the event's NAME), x86-64's table plus its aliases. */
export function syscallNumbersX86_64(): ReadonlyMap<string, number> {
  if (!numbers) {
    numbers = new Map();
    for (const [nr, name] of Object.entries(SYSCALLS_X86_64)) numbers.set(name, Number(nr));
    for (const [name, nr] of Object.entries(NEWER_X86_64)) if (!numbers.has(name)) numbers.set(name, nr);
    for (const [event, name] of Object.entries(EVENT_ALIASES_X86_64)) {
      const nr = numbers.get(name);
      if (nr !== undefined) numbers.set(event, nr);
    }
  }
  return numbers;
}

/** `task_struct.thread_info.status`'s byte offset from BTF, or undefined when BTF or the members are missing. */
function compatStatusOffset(): number | undefined {
  let btf: Btf;
  try {
    btf = Btf.vmlinux();
  } catch {
    return undefined;
  }
  const task = btf.findType('task_struct', BtfKind.STRUCT);
  if (task === undefined) return undefined;
  const ti = btf.member(task, 'thread_info');
  if (!ti) return undefined;
  const status = btf.member(btf.resolve(ti.typeId), 'status');
  if (!status) return undefined;
  if (ti.bitOffset % 8 !== 0 || status.bitOffset % 8 !== 0) return undefined;
  return (ti.bitOffset + status.bitOffset) / 8;
}

/** The raw_syscalls program standing for many `syscalls:sys_{enter,exit}_*` events. */
export class SyscallsProbe implements ExpandedProbe {
  readonly provider = 'tracepoint';
  readonly progType = BPF_PROG_TYPE.TRACEPOINT;
  readonly args = null;
  readonly name: string;
  /** The matched events' probe names (for the `probe` string's size), in name order. */
  readonly probeNames: readonly string[];

  constructor(
    readonly attachPoint: AttachPoint,
    /** `sys_enter` or `sys_exit`. */
    readonly event: 'sys_enter' | 'sys_exit',
    readonly syscalls: SyscallTable,
    private readonly fs: Tracefs,
  ) {
    this.name = `tracepoint:raw_syscalls:${event}`;
    this.probeNames = syscalls.names.filter((n) => n !== '').sort();
  }

  /** One PERF_TYPE_TRACEPOINT event for `raw_syscalls:EVENT`; `count` is the number of syscall events it stands for. */
  attach(progFd: number): AttachedProbe {
    const id = this.fs.eventId('raw_syscalls', this.event);
    const handle = attachPerfEvents(progFd, [
      () => openTracepoint(id, { pid: -1, cpu: 0 }, `raw_syscalls:${this.event}`),
    ]);
    return { close: () => handle.close(), count: this.probeNames.length };
  }
}

/**
 * Replace the syscall events among `probes` (one attach point's expansion, sorted) with one {@link SyscallsProbe}
 * per direction when at least {@link SYSCALL_REWRITE_MIN} of them have a known number; the rest are returned as
 * they are. The caller has checked that the probe's body does not read `args` (or `ctx`).
 */
export function rewriteSyscallEvents(ap: AttachPoint, probes: readonly ExpandedProbe[], fs: Tracefs): ExpandedProbe[] {
  if (process.arch !== 'x64') return [...probes];
  const byDir = { sys_enter: [] as TracepointProbe[], sys_exit: [] as TracepointProbe[] };
  const nrs = syscallNumbersX86_64();
  for (const p of probes) {
    const tp = p as Partial<TracepointProbe>;
    if (p.provider !== 'tracepoint' || tp.category !== 'syscalls' || tp.event === undefined) continue;
    const m = /^(sys_enter|sys_exit)_(.+)$/.exec(tp.event);
    if (m && nrs.has(m[2]!)) byDir[m[1] as 'sys_enter' | 'sys_exit'].push(p as TracepointProbe);
  }
  const replaced = new Set<ExpandedProbe>();
  const out: ExpandedProbe[] = [];
  for (const dir of ['sys_enter', 'sys_exit'] as const) {
    const group = byDir[dir];
    if (group.length < SYSCALL_REWRITE_MIN) continue;
    const statusOffset = compatStatusOffset();
    if (statusOffset === undefined || !fs.hasEvent('raw_syscalls', dir)) continue;
    const id = parseTracepointFormat(fs.eventFormat('raw_syscalls', dir)).fields.find((f) => f.name === 'id');
    if (!id || id.size !== 8) continue;
    const names: string[] = [];
    for (const p of group) {
      const nr = nrs.get(p.event.slice(dir.length + 1))!;
      while (names.length <= nr) names.push('');
      names[nr] = p.name;
      replaced.add(p);
    }
    out.push(
      new SyscallsProbe(
        ap,
        dir,
        { names, idOffset: id.offset, compatStatusOffset: statusOffset, compatMask: TS_COMPAT },
        fs,
      ),
    );
  }
  if (replaced.size === 0) return [...probes];
  return [...out, ...probes.filter((p) => !replaced.has(p))];
}
