/**
 * perf_event_open(2) for the events BPF programs attach to: tracepoints, software events (cpu-clock, page-faults,
 * ...), and the kprobe/uprobe PMUs (no tracefs `*_events` entries, nothing left behind). Layout of
 * `struct perf_event_attr` and the ioctl numbers: include/uapi/linux/perf_event.h; PMU formats from
 * `/sys/bus/event_source/devices/<pmu>/{type,format/*}` (Documentation/ABI/testing/sysfs-bus-event_source-devices-format).
 */
import { readFileSync } from 'node:fs';
import { BpfscopeError, KernelError, PermissionError } from '../errors.js';
import { linkCreate } from './bpf.js';
import { address, close as closeFd, Errno, ioctl, kernelError, strerror, sysPerfEventOpen } from './ffi.js';
import { privilegeMessage } from './privileges.js';

/** `perf_event_attr.type` values (`enum perf_type_id`). */
export const PerfType = {
  HARDWARE: 0,
  SOFTWARE: 1,
  TRACEPOINT: 2,
  HW_CACHE: 3,
  RAW: 4,
  BREAKPOINT: 5,
} as const;

/** Software event configs (`enum perf_sw_ids`). */
export const SwEvent = {
  CPU_CLOCK: 0,
  TASK_CLOCK: 1,
  PAGE_FAULTS: 2,
  CONTEXT_SWITCHES: 3,
  CPU_MIGRATIONS: 4,
  PAGE_FAULTS_MIN: 5,
  PAGE_FAULTS_MAJ: 6,
  ALIGNMENT_FAULTS: 7,
  EMULATION_FAULTS: 8,
  DUMMY: 9,
  BPF_OUTPUT: 10,
  CGROUP_SWITCHES: 11,
} as const;

/** `perf_event_attr` size we pass (PERF_ATTR_SIZE_VER8 + config3... as in 6.x headers); the tail is zero. */
export const PERF_ATTR_SIZE = 144;

/** Bits of the `perf_event_attr` flags word at offset 40. */
export const PerfFlag = {
  DISABLED: 1n << 0n,
  INHERIT: 1n << 1n,
  EXCLUDE_USER: 1n << 4n,
  EXCLUDE_KERNEL: 1n << 5n,
  EXCLUDE_HV: 1n << 6n,
  FREQ: 1n << 10n,
  WATERMARK: 1n << 14n,
} as const;

/** ioctl requests (`_IO('$', 0)`, `_IO('$', 1)`, `_IOW('$', 8, __u32)`). */
export const PERF_EVENT_IOC_ENABLE = 0x2400;
export const PERF_EVENT_IOC_DISABLE = 0x2401;
export const PERF_EVENT_IOC_SET_BPF = 0x40042408;
/** perf_event_open flag: close the fd on exec. */
export const PERF_FLAG_FD_CLOEXEC = 8;

/** BPF attach type BPF_PERF_EVENT for LINK_CREATE on a perf event fd. */
const ATTACH_PERF_EVENT = 41;

/** The fields of `perf_event_attr` bpfscope sets; everything else is zero. */
export interface PerfEventSpec {
  type: number;
  config: bigint;
  /** Sample every N events (or N ns for cpu/task-clock). Mutually exclusive with sampleFreq. */
  samplePeriod?: bigint;
  /** Samples per second (sets the `freq` bit). */
  sampleFreq?: bigint;
  /** `PerfFlag` bits (besides FREQ, which sampleFreq sets). */
  flags?: bigint;
  wakeupEvents?: number;
  config1?: bigint;
  config2?: bigint;
}

/** Encodes `spec` into a zeroed 144-byte `perf_event_attr`. */
export function encodePerfEventAttr(spec: PerfEventSpec): Buffer {
  const a = Buffer.alloc(PERF_ATTR_SIZE);
  a.writeUInt32LE(spec.type, 0);
  a.writeUInt32LE(PERF_ATTR_SIZE, 4);
  a.writeBigUInt64LE(BigInt.asUintN(64, spec.config), 8);
  let flags = spec.flags ?? 0n;
  if (spec.sampleFreq !== undefined) {
    a.writeBigUInt64LE(spec.sampleFreq, 16);
    flags |= PerfFlag.FREQ;
  } else {
    a.writeBigUInt64LE(spec.samplePeriod ?? 0n, 16);
  }
  a.writeBigUInt64LE(flags, 40);
  a.writeUInt32LE(spec.wakeupEvents ?? 0, 48);
  a.writeBigUInt64LE(spec.config1 ?? 0n, 56);
  a.writeBigUInt64LE(spec.config2 ?? 0n, 64);
  return a;
}

/** Who an event counts: one task (`pid`, any CPU) or one CPU (all tasks, `pid` -1). */
export interface PerfTarget {
  /** Task id, or -1 for all tasks on `cpu`. Default -1. */
  pid?: number;
  /** CPU number, or -1 for any CPU (then `pid` must be >= 0). Default 0 when pid is -1, else -1. */
  cpu?: number;
}

/**
 * perf_event_open(2) with `attr`. Returns the event fd (close-on-exec).
 * @throws KernelError naming the event; ENOENT/ENODEV as "event not supported"; EACCES/EPERM as the privilege
 * sentence of kernel/privileges.ts when we lack CAP_PERFMON, else as "the kernel refused to open WHAT: ERROR".
 */
export function perfEventOpenRaw(attr: Buffer, target: PerfTarget, what: string, keep?: unknown): number {
  const pid = target.pid ?? -1;
  const cpu = target.cpu ?? (pid === -1 ? 0 : -1);
  const r = sysPerfEventOpen(attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
  void keep; // buffers referenced by pointers in attr stay alive until here
  if (r >= 0) return r;
  const err = -r;
  const name = `perf_event_open(${what})`;
  if (err === Errno.EACCES || err === Errno.EPERM) {
    // without CAP_PERFMON that is why; with it, the kernel refuses this event to everyone (e.g. a tracepoint it
    // keeps to itself), and "run as root" would be wrong
    const unprivileged = privilegeMessage();
    if (unprivileged) throw new PermissionError(name, err, unprivileged);
    throw new KernelError(name, err, `the kernel refused to open ${what}: ${strerror(err)}`);
  }
  if (err === Errno.ENOENT || err === Errno.ENODEV || err === Errno.EOPNOTSUPP) {
    throw kernelError(name, err, 'this kernel or machine does not support the event');
  }
  throw kernelError(name, err);
}

/** A perf event owning its fd and, once a program is attached, the BPF link (if LINK_CREATE was used). */
export class PerfEvent {
  private _fd: number;
  private linkFd = -1;
  /** How the program was attached: a BPF link (carries a cookie) or the legacy ioctl. */
  attachMode: 'link' | 'ioctl' | undefined;

  constructor(
    fd: number,
    readonly description: string,
  ) {
    this._fd = fd;
  }

  get fd(): number {
    if (this._fd < 0) throw new BpfscopeError(`internal error: perf event ${this.description} used after close()`);
    return this._fd;
  }

  get closed(): boolean {
    return this._fd < 0;
  }

  /**
   * Attaches BPF program `progFd`: BPF_LINK_CREATE (attach type PERF_EVENT 41, with `cookie` for
   * bpf_get_attach_cookie), falling back to ioctl PERF_EVENT_IOC_SET_BPF + PERF_EVENT_IOC_ENABLE on kernels
   * without perf links (the cookie is then lost). @throws KernelError
   */
  attach(progFd: number, cookie = 0n, opts: { forceIoctl?: boolean } = {}): void {
    if (this.attachMode) throw new BpfscopeError(`internal error: perf event ${this.description} attached twice`);
    if (!opts.forceIoctl) {
      try {
        this.linkFd = linkCreate(progFd, this.fd, ATTACH_PERF_EVENT, { kind: 'perf_event', cookie });
        this.attachMode = 'link';
        // A link enables the event itself only for some event kinds; enabling twice is harmless.
        this.enable();
        return;
      } catch (e) {
        const errno = (e as KernelError).errno;
        if (!(e instanceof KernelError) || (errno !== Errno.EINVAL && errno !== Errno.ENOTSUPP)) throw e;
      }
    }
    const r = ioctl(this.fd, PERF_EVENT_IOC_SET_BPF, progFd);
    if (r < 0) throw kernelError(`ioctl(PERF_EVENT_IOC_SET_BPF) on ${this.description}`, -r);
    this.attachMode = 'ioctl';
    this.enable();
  }

  /** PERF_EVENT_IOC_ENABLE. @throws KernelError */
  enable(): void {
    const r = ioctl(this.fd, PERF_EVENT_IOC_ENABLE, 0);
    if (r < 0) throw kernelError(`ioctl(PERF_EVENT_IOC_ENABLE) on ${this.description}`, -r);
  }

  /** PERF_EVENT_IOC_DISABLE. @throws KernelError */
  disable(): void {
    const r = ioctl(this.fd, PERF_EVENT_IOC_DISABLE, 0);
    if (r < 0) throw kernelError(`ioctl(PERF_EVENT_IOC_DISABLE) on ${this.description}`, -r);
  }

  /** Closes the link (detaching the program) and the event. Idempotent. */
  close(): void {
    if (this.linkFd >= 0) {
      closeFd(this.linkFd);
      this.linkFd = -1;
    }
    if (this._fd >= 0) {
      closeFd(this._fd);
      this._fd = -1;
    }
  }
}

/**
 * A tracepoint event (type TRACEPOINT, config = the id from tracefs `events/<cat>/<name>/id`, sample_period 1).
 * BPF programs attached to it run for every hit on every CPU, whatever the target (filter in the program). `name`
 * (`category:event`) names it in errors. @throws KernelError
 */
export function openTracepoint(id: number, target: PerfTarget = {}, name?: string): PerfEvent {
  const attr = encodePerfEventAttr({
    type: PerfType.TRACEPOINT,
    config: BigInt(id),
    samplePeriod: 1n,
    wakeupEvents: 1,
  });
  const what = name ? `tracepoint ${name} (id ${id})` : `tracepoint id ${id}`;
  const fd = perfEventOpenRaw(attr, target, what);
  return new PerfEvent(fd, what);
}

/**
 * A software event (`SwEvent` config), sampling every `samplePeriod` events (ns for cpu-clock/task-clock) or at
 * `sampleFreq` Hz, on one CPU (`{cpu: n}`, all tasks) or one task (`{pid, cpu: -1}`). Created disabled; attaching a
 * program enables it. @throws KernelError
 */
export function openSoftwareEvent(
  config: number,
  sampling: { samplePeriod: bigint } | { sampleFreq: bigint },
  target: PerfTarget,
): PerfEvent {
  const attr = encodePerfEventAttr({
    type: PerfType.SOFTWARE,
    config: BigInt(config),
    flags: PerfFlag.DISABLED,
    ...sampling,
  });
  const what = `software event ${config} ${target.pid !== undefined && target.pid >= 0 ? `pid ${target.pid}` : `cpu ${target.cpu ?? 0}`}`;
  return new PerfEvent(perfEventOpenRaw(attr, target, what), what);
}

/** A dynamic PMU's type and format bits, from `/sys/bus/event_source/devices/<pmu>/`. */
export interface ProbePmu {
  type: number;
  /** Config bit that makes a return probe (format/retprobe: `config:N`). */
  retprobeBit: number;
  /** First config bit of the uprobe reference counter offset (format/ref_ctr_offset: `config:32-63`), if any. */
  refCtrShift?: number;
}

const pmuCache = new Map<string, ProbePmu | null>();

/** Parses a PMU format file such as `config:0` or `config:32-63`; returns the first bit. */
export function parsePmuFormatBit(text: string): number {
  const m = /^config:(\d+)(?:-\d+)?\s*$/.exec(text.trim());
  if (!m) throw new BpfscopeError(`unexpected PMU format ${JSON.stringify(text.trim())}`);
  return Number(m[1]);
}

/** The kprobe or uprobe PMU, or null when this kernel lacks it (kprobes disabled here). Cached. */
export function probePmu(kind: 'kprobe' | 'uprobe'): ProbePmu | null {
  const cached = pmuCache.get(kind);
  if (cached !== undefined) return cached;
  const dir = `/sys/bus/event_source/devices/${kind}`;
  let pmu: ProbePmu | null = null;
  try {
    const type = Number.parseInt(readFileSync(`${dir}/type`, 'utf8'), 10);
    const retprobeBit = parsePmuFormatBit(readFileSync(`${dir}/format/retprobe`, 'utf8'));
    pmu = { type, retprobeBit };
    try {
      pmu.refCtrShift = parsePmuFormatBit(readFileSync(`${dir}/format/ref_ctr_offset`, 'utf8'));
    } catch {
      // kprobe PMU and old kernels: no reference counters
    }
  } catch {
    pmu = null;
  }
  pmuCache.set(kind, pmu);
  return pmu;
}

/** A probe on the kprobe/uprobe PMU. */
export interface ProbeEventSpec {
  kind: 'kprobe' | 'uprobe';
  retprobe?: boolean;
  /** uprobe: path of the ELF file; kprobe: function name (omit and give `addr` for an address). */
  target?: string;
  /** uprobe: file offset of the instruction; kprobe: offset into the function. Bytes. */
  offset?: bigint;
  /** kprobe by absolute kernel address (target omitted). */
  addr?: bigint;
  /** uprobe: file offset of the USDT semaphore (reference counter). */
  refCtrOffset?: bigint;
}

/**
 * Opens a kprobe/uprobe PMU event: type from sysfs, retprobe bit from `format/retprobe`, path/function pointer in
 * config1, offset/address in config2, ref_ctr_offset in config bits 32-63. `target` defaults to all tasks on CPU 0
 * (the BPF program then runs for every task on every CPU, like tracepoints); pass `{pid, cpu: -1}` for one process.
 * @throws BpfscopeError when the PMU is missing (no kprobes here); KernelError
 */
export function openProbeEvent(spec: ProbeEventSpec, target: PerfTarget = {}): PerfEvent {
  const pmu = probePmu(spec.kind);
  if (!pmu) {
    throw new BpfscopeError(`this kernel has no ${spec.kind} PMU (/sys/bus/event_source/devices/${spec.kind})`, {
      hint: spec.kind === 'kprobe' ? 'the kernel was built without CONFIG_KPROBES; use tracepoints instead' : undefined,
    });
  }
  let config = 0n;
  if (spec.retprobe) config |= 1n << BigInt(pmu.retprobeBit);
  if (spec.refCtrOffset) {
    if (pmu.refCtrShift === undefined) throw new BpfscopeError(`the ${spec.kind} PMU has no ref_ctr_offset field`);
    config |= BigInt.asUintN(32, spec.refCtrOffset) << BigInt(pmu.refCtrShift);
  }
  const name = spec.target !== undefined ? Buffer.from(`${spec.target}\0`) : null;
  // config1 holds a user pointer to `name`; `name` stays referenced until perfEventOpenRaw returns.
  const attr = encodePerfEventAttr({
    type: pmu.type,
    config,
    samplePeriod: 1n,
    wakeupEvents: 1,
    config1: name ? address(name) : 0n,
    config2: spec.addr ?? spec.offset ?? 0n,
  });
  const what = `${spec.retprobe ? spec.kind.replace('probe', 'retprobe') : spec.kind} ${spec.target ?? `0x${(spec.addr ?? 0n).toString(16)}`}${spec.offset ? `+0x${spec.offset.toString(16)}` : ''}`;
  try {
    return new PerfEvent(perfEventOpenRaw(attr, target, what, name), what);
  } catch (e) {
    if (e instanceof KernelError && e.errno === Errno.ENOENT && spec.target !== undefined) {
      const msg =
        spec.kind === 'uprobe'
          ? `cannot attach ${what}: ${spec.target} does not exist`
          : `cannot attach ${what}: no kernel function ${spec.target}`;
      throw new KernelError(e.syscall, e.errno, msg);
    }
    throw e;
  }
}
