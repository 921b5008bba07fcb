/**
 * `fentry:bpf:[PROG_ID:]FUNCTION` / `fexit:bpf:...`: fentry/fexit on the functions of BPF programs already loaded
 * in the kernel (bpftrace `docs/language.md` "fentry", its probe name `fentry:bpf:ID:NAME`). The functions are the
 * program's func_info entries named by its own BTF (`bpf_prog_info.func_info`, `btf_id`); a program loaded without
 * BTF has none to offer. The tracing program is loaded with `attach_prog_fd` = the traced program and
 * `attach_btf_id` = the FUNC's id in that program's BTF (uapi `bpf_attr`, kernel `bpf_check_attach_target`).
 */
import { Btf } from '../kernel/btf.js';
import { btfGetFdById, objGetFdById, objGetInfoByFd, objGetNextId } from '../kernel/bpf-info.js';
import { address, close as closeFd } from '../kernel/ffi.js';

/** A function of a loaded BPF program. */
export interface BpfProgramFunction {
  /** The program's id (`bpftool prog` ID). */
  progId: number;
  /** The function's name in the program's BTF. */
  name: string;
  /** Its FUNC type id in `btf`. */
  typeId: number;
  /** The program's BTF. */
  btf: Btf;
}

/** `struct bpf_prog_info` offsets (uapi bpf.h): btf_id, func_info_rec_size, func_info, nr_func_info. */
const PROG_INFO_SIZE = 232;
const OFF_BTF_ID = 128;
const OFF_FUNC_INFO_REC_SIZE = 132;
const OFF_FUNC_INFO = 136;
const OFF_NR_FUNC_INFO = 144;

/** The raw BTF of BTF object `id` (`struct bpf_btf_info`: btf pointer at 0, btf_size at 8). */
function btfBytes(id: number): Buffer {
  const fd = btfGetFdById(id);
  try {
    const info = Buffer.alloc(32);
    objGetInfoByFd(fd, info);
    const size = info.readUInt32LE(8);
    const data = Buffer.alloc(size);
    const again = Buffer.alloc(32);
    again.writeBigUInt64LE(address(data), 0);
    again.writeUInt32LE(size, 8);
    objGetInfoByFd(fd, again);
    return data;
  } finally {
    closeFd(fd);
  }
}

/** The functions of program `fd` (func_info order), or [] when it was loaded without BTF. */
function programFunctions(fd: number, progId: number): BpfProgramFunction[] {
  const info = Buffer.alloc(PROG_INFO_SIZE);
  objGetInfoByFd(fd, info);
  const btfId = info.readUInt32LE(OFF_BTF_ID);
  const n = info.readUInt32LE(OFF_NR_FUNC_INFO);
  if (btfId === 0 || n === 0) return [];
  const recs = Buffer.alloc(n * 8);
  const again = Buffer.alloc(PROG_INFO_SIZE);
  again.writeUInt32LE(8, OFF_FUNC_INFO_REC_SIZE);
  again.writeBigUInt64LE(address(recs), OFF_FUNC_INFO);
  again.writeUInt32LE(n, OFF_NR_FUNC_INFO);
  objGetInfoByFd(fd, again);
  const btf = new Btf(btfBytes(btfId));
  const out: BpfProgramFunction[] = [];
  for (let i = 0; i < n; i++) {
    const typeId = recs.readUInt32LE(i * 8 + 4);
    const name = btf.name(typeId);
    if (name) out.push({ progId, name, typeId, btf });
  }
  return out;
}

/**
 * Every function of every loaded BPF program, by program id then func_info order. Programs that disappear while
 * being read are skipped. Needs CAP_SYS_ADMIN. @throws KernelError (EPERM without it)
 */
export function bpfProgramFunctions(): BpfProgramFunction[] {
  const out: BpfProgramFunction[] = [];
  for (let id = objGetNextId('prog', 0); id !== undefined; id = objGetNextId('prog', id)) {
    const fd = objGetFdById('prog', id);
    if (fd === undefined) continue;
    try {
      out.push(...programFunctions(fd, id));
    } catch {
      // gone or unreadable meanwhile: not offered
    } finally {
      closeFd(fd);
    }
  }
  return out;
}

/** An fd for program `progId` that the tracing program keeps as its target (never closed: the probe's lifetime). */
export function targetProgramFd(progId: number): number | undefined {
  return objGetFdById('prog', progId);
}
