/** bpf(2) attach commands (see bpf.ts): RAW_TRACEPOINT_OPEN and LINK_CREATE with each link type's target. */
import { address } from './ffi.js';
import { attr, BpfCmd, call, cString, ptr } from './bpf-attr.js';

/**
 * BPF_RAW_TRACEPOINT_OPEN: attaches a raw_tp program to tracepoint `name` (no category: `sched_switch`), or a
 * tracing program (tp_btf/fentry, whose target came from attach_btf_id at load) with `name` null. Returns the link
 * fd; closing it detaches. @throws KernelError (ENOENT for an unknown tracepoint)
 */
export function rawTracepointOpen(name: string | null, progFd: number, cookie = 0n): number {
  const a = attr();
  const nameBuf = name === null ? null : cString(name);
  a.writeBigUInt64LE(ptr(nameBuf), 0);
  a.writeUInt32LE(progFd, 8);
  a.writeBigUInt64LE(cookie, 16);
  return call(BpfCmd.RAW_TRACEPOINT_OPEN, a, name ? `'${name}'` : undefined);
}

/** The attach-type-specific part of LINK_CREATE. */
export type LinkTarget =
  | { kind: 'perf_event'; cookie?: bigint }
  | { kind: 'tracing'; targetBtfId?: number; cookie?: bigint }
  | {
      kind: 'kprobe_multi';
      /** BPF_F_KPROBE_MULTI_RETURN (1) for kretprobes. */
      flags?: number;
      syms?: string[];
      addrs?: bigint[];
      cookies?: bigint[];
    }
  | {
      kind: 'uprobe_multi';
      path: string;
      /** File offsets of the probed instructions (bytes). */
      offsets: bigint[];
      refCtrOffsets?: bigint[];
      cookies?: bigint[];
      /** BPF_F_UPROBE_MULTI_RETURN (1) for uretprobes. */
      flags?: number;
      /** Only this process (0: all). */
      pid?: number;
    }
  /** A BPF iterator (attach type BPF_TRACE_ITER 28): `pid` limits task iterators to one process (0: all). */
  | { kind: 'iter'; pid?: number }
  | { kind: 'none' };

function u64Array(vals: bigint[] | undefined): Buffer | null {
  if (!vals || vals.length === 0) return null;
  const b = Buffer.alloc(vals.length * 8);
  vals.forEach((v, i) => b.writeBigUInt64LE(v, i * 8));
  return b;
}

/**
 * BPF_LINK_CREATE: attaches `progFd` to `targetFd` (a perf event fd for attach type PERF_EVENT 41, 0 for tracing /
 * multi links) with `attachType`. Returns the link fd; closing it detaches. @throws KernelError
 */
export function linkCreate(
  progFd: number,
  targetFd: number,
  attachType: number,
  target: LinkTarget,
  flags = 0,
): number {
  const a = attr();
  a.writeUInt32LE(progFd, 0);
  a.writeUInt32LE(targetFd, 4);
  a.writeUInt32LE(attachType, 8);
  a.writeUInt32LE(flags, 12);
  // Buffers referenced by pointer must stay alive until the call returns: keep them in `keep`.
  const keep: (Buffer | null)[] = [];
  switch (target.kind) {
    case 'perf_event':
      a.writeBigUInt64LE(target.cookie ?? 0n, 16);
      break;
    case 'tracing':
      a.writeUInt32LE(target.targetBtfId ?? 0, 16);
      a.writeBigUInt64LE(target.cookie ?? 0n, 24);
      break;
    case 'kprobe_multi': {
      const n = target.syms?.length ?? target.addrs?.length ?? 0;
      let symsBuf: Buffer | null = null;
      if (target.syms && target.syms.length > 0) {
        const strs = target.syms.map(cString);
        symsBuf = Buffer.alloc(strs.length * 8);
        strs.forEach((s, i) => symsBuf!.writeBigUInt64LE(address(s), i * 8));
        for (const s of strs) keep.push(s);
      }
      const addrs = u64Array(target.addrs);
      const cookies = u64Array(target.cookies);
      keep.push(symsBuf, addrs, cookies);
      a.writeUInt32LE(target.flags ?? 0, 16);
      a.writeUInt32LE(n, 20);
      a.writeBigUInt64LE(ptr(symsBuf), 24);
      a.writeBigUInt64LE(ptr(addrs), 32);
      a.writeBigUInt64LE(ptr(cookies), 40);
      break;
    }
    case 'uprobe_multi': {
      const path = cString(target.path);
      const offsets = u64Array(target.offsets);
      const refs = u64Array(target.refCtrOffsets);
      const cookies = u64Array(target.cookies);
      keep.push(path, offsets, refs, cookies);
      a.writeBigUInt64LE(ptr(path), 16);
      a.writeBigUInt64LE(ptr(offsets), 24);
      a.writeBigUInt64LE(ptr(refs), 32);
      a.writeBigUInt64LE(ptr(cookies), 40);
      a.writeUInt32LE(target.offsets.length, 48);
      a.writeUInt32LE(target.flags ?? 0, 52);
      a.writeUInt32LE(target.pid ?? 0, 56);
      break;
    }
    case 'iter': {
      // union bpf_iter_link_info (16 bytes): task = { u32 tid; u32 pid; u32 pid_fd }
      const info = Buffer.alloc(16);
      info.writeUInt32LE(target.pid ?? 0, 4);
      keep.push(info);
      a.writeBigUInt64LE(ptr(info), 16);
      a.writeUInt32LE(info.length, 24);
      break;
    }
    case 'none':
      break;
  }
  const fd = call(BpfCmd.LINK_CREATE, a, `attach_type ${attachType}`);
  keep.length = 0;
  return fd;
}

/**
 * BPF_ITER_CREATE: a new iterator on an iter link (`linkFd` from LINK_CREATE with attach type BPF_TRACE_ITER).
 * Returns its fd: read(2) runs the program over the kernel objects and returns what it wrote with bpf_seq_printf /
 * bpf_seq_write; read returns 0 at the end. @throws KernelError
 */
export function iterCreate(linkFd: number): number {
  const a = attr();
  a.writeUInt32LE(linkFd, 0);
  return call(BpfCmd.ITER_CREATE, a, `link ${linkFd}`);
}

/**
 * BPF_OBJ_PIN: pins a BPF object (program, map or link fd) at `path` in a bpffs mount (`/sys/fs/bpf/NAME`), where it
 * outlives the process until the file is removed. @throws KernelError (EEXIST when the path exists)
 */
export function objPin(fd: number, path: string): void {
  const a = attr();
  const p = cString(path);
  a.writeBigUInt64LE(ptr(p), 0);
  a.writeUInt32LE(fd, 8);
  call(BpfCmd.OBJ_PIN, a, `'${path}'`);
}
