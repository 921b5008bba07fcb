/**
 * bpf(2) object info and listing (see bpf.ts): OBJ_GET_INFO_BY_FD for programs, maps, BTF and links, BTF objects,
 * the system's object ids (bpftool prog/map/link show), TASK_FD_QUERY (bpftool perf), ENABLE_STATS.
 */
import { address, Errno, sysBpf } from './ffi.js';
import { attr, BpfCmd, bpfError, call, logText } from './bpf-attr.js';

// ---------------------------------------------------------------------------------------------------------------
// Object info and BTF objects

/** BPF_OBJ_GET_INFO_BY_FD into `info` (its length is `info_len`); returns the length the kernel filled. */
export function objGetInfoByFd(fd: number, info: Buffer): number {
  const a = attr();
  a.writeUInt32LE(fd, 0);
  a.writeUInt32LE(info.length, 4);
  a.writeBigUInt64LE(address(info), 8);
  call(BpfCmd.OBJ_GET_INFO_BY_FD, a);
  return a.readUInt32LE(4);
}

/** `struct bpf_prog_info` fields bpfscope uses (offsets from uapi bpf.h, 232-byte struct). */
export interface ProgInfo {
  type: number;
  id: number;
  /** The 8-byte program tag as 16 hex digits (as bpftool prints it). */
  tag: string;
  jitedProgLen: number;
  /** Length in bytes of the translated (post-verifier) instructions. */
  xlatedProgLen: number;
  name: string;
  /** Map ids the program uses. */
  mapIds: number[];
  btfId: number;
  /** Cumulative run time in ns and run count (only counted while `kernel.bpf_stats_enabled` is 1). */
  runTimeNs: bigint;
  runCnt: bigint;
  /** Instructions the verifier processed. */
  verifiedInsns: number;
  /** When the program was loaded: ns since boot (CLOCK_BOOTTIME). */
  loadTimeNs: bigint;
  /** uid of the process that loaded it. */
  createdByUid: number;
  /** Whether its license is GPL-compatible. */
  gplCompatible: boolean;
  /** Times the program was not run because it was already running on that CPU (kernel >= 5.12). */
  recursionMisses: bigint;
  /** BTF object id and type id of the attach target (fentry, tp_btf, ...; 0 for others). */
  attachBtfObjId: number;
  attachBtfId: number;
  /** The translated instructions, when requested. */
  xlated?: Buffer;
}

const PROG_INFO_SIZE = 232;

function cStr(b: Buffer, off: number, len: number): string {
  const s = b.subarray(off, off + len);
  const end = s.indexOf(0);
  return s.toString('utf8', 0, end < 0 ? len : end);
}

/** Program info by fd; `xlated` also fetches the translated instructions. @throws KernelError */
export function progInfo(fd: number, opts: { xlated?: boolean } = {}): ProgInfo {
  let info = Buffer.alloc(PROG_INFO_SIZE);
  objGetInfoByFd(fd, info);
  const nrMaps = info.readUInt32LE(52);
  const xlatedLen = info.readUInt32LE(20);
  let maps: Buffer | null = null;
  let xlated: Buffer | null = null;
  if (nrMaps > 0 || (opts.xlated && xlatedLen > 0)) {
    // Second call with arrays: only the array pointers and counts may be non-zero in the input.
    const again = Buffer.alloc(PROG_INFO_SIZE);
    if (nrMaps > 0) {
      maps = Buffer.alloc(nrMaps * 4);
      again.writeUInt32LE(nrMaps, 52);
      again.writeBigUInt64LE(address(maps), 56);
    }
    if (opts.xlated && xlatedLen > 0) {
      xlated = Buffer.alloc(xlatedLen);
      again.writeUInt32LE(xlatedLen, 20);
      again.writeBigUInt64LE(address(xlated), 32);
    }
    objGetInfoByFd(fd, again);
    info = again;
  }
  const mapIds: number[] = [];
  if (maps) for (let i = 0; i < nrMaps; i++) mapIds.push(maps.readUInt32LE(i * 4));
  const out: ProgInfo = {
    type: info.readUInt32LE(0),
    id: info.readUInt32LE(4),
    tag: info.subarray(8, 16).toString('hex'),
    jitedProgLen: info.readUInt32LE(16),
    xlatedProgLen: xlatedLen,
    name: cStr(info, 64, 16),
    mapIds,
    btfId: info.readUInt32LE(128),
    runTimeNs: info.readBigUInt64LE(192),
    runCnt: info.readBigUInt64LE(200),
    verifiedInsns: info.readUInt32LE(216),
    loadTimeNs: info.readBigUInt64LE(40),
    createdByUid: info.readUInt32LE(48),
    gplCompatible: (info.readUInt32LE(84) & 1) !== 0,
    recursionMisses: info.readBigUInt64LE(208),
    attachBtfObjId: info.readUInt32LE(220),
    attachBtfId: info.readUInt32LE(224),
  };
  if (xlated) out.xlated = xlated;
  return out;
}

/** `struct bpf_map_info` fields (uapi bpf.h). */
export interface MapInfo {
  type: number;
  id: number;
  keySize: number;
  valueSize: number;
  maxEntries: number;
  flags: number;
  name: string;
  mapExtra: bigint;
  /** BTF object describing key and value (0: none). */
  btfId: number;
}

/** Map info by fd. @throws KernelError */
export function mapInfo(fd: number): MapInfo {
  const info = Buffer.alloc(88);
  objGetInfoByFd(fd, info);
  return {
    type: info.readUInt32LE(0),
    id: info.readUInt32LE(4),
    keySize: info.readUInt32LE(8),
    valueSize: info.readUInt32LE(12),
    maxEntries: info.readUInt32LE(16),
    flags: info.readUInt32LE(20),
    name: cStr(info, 24, 16),
    mapExtra: info.readBigUInt64LE(80),
    btfId: info.readUInt32LE(64),
  };
}

/** `struct bpf_btf_info`: id, name (module name for module BTF, "vmlinux"), whether it is kernel BTF. */
export interface BtfInfo {
  id: number;
  name: string;
  kernelBtf: boolean;
  size: number;
}

/** BTF object info by fd (name via a second buffer). @throws KernelError */
export function btfInfo(fd: number): BtfInfo {
  const name = Buffer.alloc(64);
  const info = Buffer.alloc(32);
  info.writeBigUInt64LE(address(name), 16);
  info.writeUInt32LE(name.length, 24);
  objGetInfoByFd(fd, info);
  return {
    size: info.readUInt32LE(8),
    id: info.readUInt32LE(12),
    name: cStr(name, 0, name.length),
    kernelBtf: info.readUInt32LE(28) !== 0,
  };
}

/**
 * BPF_BTF_LOAD: load a BTF blob (`Documentation/bpf/btf.rst` layout) and return its fd. On failure the kernel's BTF
 * log is in the error's message. @throws KernelError
 */
export function btfLoad(btf: Buffer): number {
  const log = Buffer.alloc(64 * 1024);
  const a = attr();
  a.writeBigUInt64LE(address(btf), 0);
  a.writeBigUInt64LE(address(log), 8);
  a.writeUInt32LE(btf.length, 16);
  a.writeUInt32LE(log.length, 20);
  a.writeUInt32LE(1, 24);
  const r = sysBpf(BpfCmd.BTF_LOAD, a);
  if (r < 0) throw bpfError(BpfCmd.BTF_LOAD, -r, logText(log).trim().split('\n').slice(-3).join('; '));
  return r;
}

/** BPF_BTF_GET_FD_BY_ID: an fd for a loaded BTF object (vmlinux, a module). @throws KernelError */
export function btfGetFdById(id: number): number {
  const a = attr();
  a.writeUInt32LE(id, 0);
  return call(BpfCmd.BTF_GET_FD_BY_ID, a, `id ${id}`);
}

/** BPF_BTF_GET_NEXT_ID: the next loaded BTF object id after `id` (0: the first), or undefined at the end. */
export function btfGetNextId(id: number): number | undefined {
  const a = attr();
  a.writeUInt32LE(id, 0);
  const r = sysBpf(BpfCmd.BTF_GET_NEXT_ID, a);
  if (r === -Errno.ENOENT) return undefined;
  if (r < 0) throw bpfError(BpfCmd.BTF_GET_NEXT_ID, -r);
  return a.readUInt32LE(4);
}

// ---------------------------------------------------------------------------------------------------------------
// Listing the system's objects (bpftool prog/map/link show, bpftool perf)

/** The kinds of BPF objects with ids. */
export type BpfObjectKind = 'prog' | 'map' | 'link';

const NEXT_ID_CMD: Record<BpfObjectKind, number> = {
  prog: BpfCmd.PROG_GET_NEXT_ID,
  map: BpfCmd.MAP_GET_NEXT_ID,
  link: BpfCmd.LINK_GET_NEXT_ID,
};
const FD_BY_ID_CMD: Record<BpfObjectKind, number> = {
  prog: BpfCmd.PROG_GET_FD_BY_ID,
  map: BpfCmd.MAP_GET_FD_BY_ID,
  link: BpfCmd.LINK_GET_FD_BY_ID,
};

/**
 * BPF_{PROG,MAP,LINK}_GET_NEXT_ID: the id of the next object of `kind` after `id` (0: the first), or undefined at the
 * end. Needs CAP_SYS_ADMIN. @throws KernelError (EPERM without it)
 */
export function objGetNextId(kind: BpfObjectKind, id: number): number | undefined {
  const a = attr();
  a.writeUInt32LE(id, 0);
  const r = sysBpf(NEXT_ID_CMD[kind], a);
  if (r === -Errno.ENOENT) return undefined;
  if (r < 0) throw bpfError(NEXT_ID_CMD[kind], -r);
  return a.readUInt32LE(4);
}

/**
 * BPF_{PROG,MAP,LINK}_GET_FD_BY_ID: a new fd for object `id` (the caller closes it), or undefined when the object
 * is gone (ENOENT). @throws KernelError
 */
export function objGetFdById(kind: BpfObjectKind, id: number): number | undefined {
  const a = attr();
  a.writeUInt32LE(id, 0);
  const r = sysBpf(FD_BY_ID_CMD[kind], a);
  if (r === -Errno.ENOENT) return undefined;
  if (r < 0) throw bpfError(FD_BY_ID_CMD[kind], -r, `id ${id}`);
  return r;
}

/** `enum bpf_link_type` values used by {@link linkInfo}. */
export const LinkType = {
  RAW_TRACEPOINT: 1,
  TRACING: 2,
  CGROUP: 3,
  ITER: 4,
  NETNS: 5,
  XDP: 6,
  PERF_EVENT: 7,
  KPROBE_MULTI: 8,
  STRUCT_OPS: 9,
  NETFILTER: 10,
  TCX: 11,
  UPROBE_MULTI: 12,
  NETKIT: 13,
  SOCKMAP: 14,
} as const;

/** `enum bpf_perf_event_type` (kernel >= 6.6): what a perf_event link is attached to. */
export const PerfEventType = {
  UNSPEC: 0,
  UPROBE: 1,
  URETPROBE: 2,
  KPROBE: 3,
  KRETPROBE: 4,
  TRACEPOINT: 5,
  EVENT: 6,
} as const;

/**
 * `struct bpf_link_info` (uapi bpf.h): common fields and the type-specific part bpfscope shows. Fields of a part the
 * running kernel does not fill stay undefined (perf_event details need 6.6, uprobe_multi 6.8).
 */
export interface LinkInfo {
  /** `enum bpf_link_type` ({@link LinkType}). */
  type: number;
  id: number;
  progId: number;
  /** raw_tracepoint: the tracepoint name (`sched_switch`). */
  tpName?: string;
  /** tracing (fentry, fexit, tp_btf, lsm...): `enum bpf_attach_type` and the target's BTF object/type ids. */
  attachType?: number;
  targetObjId?: number;
  targetBtfId?: number;
  /** cgroup, netns, tcx, netkit, sockmap: attach type; cgroup: its id. */
  cgroupId?: bigint;
  /** xdp, tcx, netkit: interface index. */
  ifindex?: number;
  /** iter: the iterator's target name. */
  iterTarget?: string;
  /** kprobe_multi / uprobe_multi: number of probed addresses, flags (1: return probes); kprobe_multi: misses. */
  count?: number;
  flags?: number;
  missed?: bigint;
  /** uprobe_multi: the probed file and the process it is limited to (0: all). */
  path?: string;
  pid?: number;
  /** perf_event: `enum bpf_perf_event_type` ({@link PerfEventType}); 0 when the kernel does not report it. */
  perfEventType?: number;
  /** perf_event uprobe: file name; kprobe: function name; tracepoint: tracepoint name. */
  perfName?: string;
  /** perf_event uprobe/kprobe: offset (bytes) from the file start / the function. */
  perfOffset?: number;
  /** perf_event kprobe: address; event: config. */
  perfAddr?: bigint;
  /** perf_event event: `perf_event_attr.type`. */
  perfEventAttrType?: number;
  cookie?: bigint;
}

const LINK_INFO_SIZE = 72;
const NAME_BUF = 4096;

/** BPF_OBJ_GET_INFO_BY_FD on a link fd, names included (a second call with name buffers). @throws KernelError */
export function linkInfo(fd: number): LinkInfo {
  const first = Buffer.alloc(LINK_INFO_SIZE);
  objGetInfoByFd(fd, first);
  const type = first.readUInt32LE(0);
  const out: LinkInfo = { type, id: first.readUInt32LE(4), progId: first.readUInt32LE(8) };
  const name = Buffer.alloc(NAME_BUF);
  const again = (ptrOff: number, lenOff: number): Buffer => {
    const b = Buffer.alloc(LINK_INFO_SIZE);
    b.writeBigUInt64LE(address(name), ptrOff);
    b.writeUInt32LE(name.length, lenOff);
    objGetInfoByFd(fd, b);
    return b;
  };
  switch (type) {
    case LinkType.RAW_TRACEPOINT: {
      again(16, 24);
      out.tpName = cStr(name, 0, name.length);
      break;
    }
    case LinkType.TRACING:
      out.attachType = first.readUInt32LE(16);
      out.targetObjId = first.readUInt32LE(20);
      out.targetBtfId = first.readUInt32LE(24);
      break;
    case LinkType.CGROUP:
      out.cgroupId = first.readBigUInt64LE(16);
      out.attachType = first.readUInt32LE(24);
      break;
    case LinkType.ITER: {
      again(16, 24);
      out.iterTarget = cStr(name, 0, name.length);
      break;
    }
    case LinkType.NETNS:
      out.attachType = first.readUInt32LE(20);
      break;
    case LinkType.XDP:
      out.ifindex = first.readUInt32LE(16);
      break;
    case LinkType.TCX:
    case LinkType.NETKIT:
      out.ifindex = first.readUInt32LE(16);
      out.attachType = first.readUInt32LE(20);
      break;
    case LinkType.KPROBE_MULTI:
      out.count = first.readUInt32LE(24);
      out.flags = first.readUInt32LE(28);
      out.missed = first.readBigUInt64LE(32);
      break;
    case LinkType.UPROBE_MULTI: {
      const b = again(16, 48);
      out.path = cStr(name, 0, name.length);
      out.count = b.readUInt32LE(52);
      out.flags = b.readUInt32LE(56);
      out.pid = b.readUInt32LE(60);
      break;
    }
    case LinkType.PERF_EVENT: {
      const pt = first.readUInt32LE(16);
      out.perfEventType = pt;
      if (pt === PerfEventType.EVENT) {
        out.perfAddr = first.readBigUInt64LE(24);
        out.perfEventAttrType = first.readUInt32LE(32);
        out.cookie = first.readBigUInt64LE(40);
      } else if (pt !== PerfEventType.UNSPEC) {
        const b = again(24, 32);
        out.perfName = cStr(name, 0, name.length);
        out.perfOffset = b.readUInt32LE(36);
        if (pt === PerfEventType.KPROBE || pt === PerfEventType.KRETPROBE) {
          out.perfAddr = b.readBigUInt64LE(40);
          out.missed = b.readBigUInt64LE(48);
          out.cookie = b.readBigUInt64LE(56);
        } else out.cookie = b.readBigUInt64LE(40);
      }
      break;
    }
  }
  return out;
}

/** `enum bpf_task_fd_type`: what kind of perf event (or raw tracepoint) a task's fd is. */
export const TaskFdType = {
  RAW_TRACEPOINT: 0,
  TRACEPOINT: 1,
  KPROBE: 2,
  KRETPROBE: 3,
  UPROBE: 4,
  URETPROBE: 5,
} as const;

/** The answer of BPF_TASK_FD_QUERY (`bpftool perf`): the program on a task's fd and where it is attached. */
export interface TaskFdInfo {
  progId: number;
  /** A {@link TaskFdType}. */
  fdType: number;
  /** Tracepoint name (`sys_enter_openat`), kprobe function, or uprobe file name; '' for a kprobe by address. */
  name: string;
  /** uprobe: offset in the file; kprobe: offset from the function (bytes). */
  probeOffset: bigint;
  /** kprobe by address: the address (0 otherwise). */
  probeAddr: bigint;
}

/**
 * BPF_TASK_FD_QUERY: which BPF program is attached through fd `fd` of process `pid` (a perf event fd:
 * tracepoint, kprobe or uprobe; or a raw tracepoint fd). Undefined when the fd has no program (ENOENT), is not such
 * an fd (ENOTSUPP, EINVAL) or is gone (EBADF, ESRCH). @throws KernelError (EPERM without CAP_SYS_ADMIN)
 */
export function taskFdQuery(pid: number, fd: number): TaskFdInfo | undefined {
  const name = Buffer.alloc(NAME_BUF);
  const a = attr();
  a.writeUInt32LE(pid, 0);
  a.writeUInt32LE(fd, 4);
  a.writeUInt32LE(name.length, 12);
  a.writeBigUInt64LE(address(name), 16);
  const r = sysBpf(BpfCmd.TASK_FD_QUERY, a);
  if (r < 0) {
    const err = -r;
    if (err === Errno.EPERM || err === Errno.EACCES) throw bpfError(BpfCmd.TASK_FD_QUERY, err);
    if (err === Errno.ENOSPC) throw bpfError(BpfCmd.TASK_FD_QUERY, err, `pid ${pid} fd ${fd}`);
    return undefined;
  }
  return {
    progId: a.readUInt32LE(24),
    fdType: a.readUInt32LE(28),
    name: cStr(name, 0, name.length),
    probeOffset: a.readBigUInt64LE(32),
    probeAddr: a.readBigUInt64LE(40),
  };
}

/**
 * BPF_ENABLE_STATS with BPF_STATS_RUN_TIME: programs count run_cnt and run_time_ns while the returned fd is open
 * (close it to turn them off again, unless `kernel.bpf_stats_enabled` is set). @throws KernelError (EPERM
 * without CAP_SYS_ADMIN, EBUSY never: the kernel counts holders)
 */
export function enableStats(): number {
  const a = attr();
  a.writeUInt32LE(0, 0); // BPF_STATS_RUN_TIME
  return call(BpfCmd.ENABLE_STATS, a);
}
