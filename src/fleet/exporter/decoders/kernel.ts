/** Kernel decoders: ksym, kstack, cgroup, majorminor (ebpf_exporter's decoder/ksym.go, kstack.go, cgroup.go, majorminor.go). */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { kallsyms } from '../../../symbols/kallsyms.js';
import { DecodeError, type Decoder, describe, integer } from './types.js';

/** ksym: the kernel symbol an address lies in (no offset), `unknown_addr:0xADDR`; text (ksym() output) passes. */
export const ksym: Decoder = (input) => {
  if (typeof input === 'string') return input.replace(/\+\d+$/, '');
  const addr = BigInt.asUintN(64, integer(input, 'ksym'));
  return kallsyms().resolve(addr)?.name ?? `unknown_addr:0x${addr.toString(16)}`;
};

/** kstack: a kstack key's frames, innermost first, one per line, symbol names without offsets. */
export const kstack: Decoder = (input) => {
  if (typeof input === 'object' && input !== null && 'stack' in input && Array.isArray(input.frames)) {
    return (input.frames as string[]).map((f) => f.replace(/\+\d+$/, '')).join('\n');
  }
  if (typeof input === 'string') return input;
  throw new DecodeError(`decoder kstack needs a kstack key, got ${describe(input)}`);
};

const CGROUP_ROOT = '/sys/fs/cgroup';
let cgroups: Map<bigint, string> | undefined;

/**
 * Mount points of the cgroup v2 file system (/proc/self/mountinfo, proc(5): field 5 the mount point, the file
 * system type after the ` - ` separator): /sys/fs/cgroup on a v2 host, /sys/fs/cgroup/unified on a hybrid one.
 * Only these hold cgroup v2 ids: a v1 hierarchy's directories have inode numbers of their own file system, which
 * may equal a v2 id and would name the wrong cgroup.
 */
function cgroup2Mounts(): string[] {
  const out: string[] = [];
  try {
    for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
      const sep = line.indexOf(' - ');
      if (sep < 0 || !line.slice(sep + 3).startsWith('cgroup2 ')) continue;
      const mnt = line.slice(0, sep).split(' ')[4];
      if (mnt) out.push(mnt.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))));
    }
  } catch {
    /* no procfs: the default place */
  }
  return out.length > 0 ? out : [CGROUP_ROOT];
}

function walkCgroups(): Map<bigint, string> {
  const out = new Map<bigint, string>();
  const stack = cgroup2Mounts();
  while (stack.length) {
    const dir = stack.pop()!;
    try {
      out.set(BigInt(statSync(dir, { bigint: true }).ino), dir);
      for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) stack.push(join(dir, e.name));
    } catch {
      /* removed while walking */
    }
  }
  return out;
}

/**
 * cgroup: a cgroup v2 id (`cgroup`, the directory's inode number) as its path under the cgroup v2 mount
 * (/sys/fs/cgroup/..., on a hybrid host /sys/fs/cgroup/unified/...), as ebpf_exporter prints it;
 * `unknown_cgroup_id:N` for an id no directory has (the tree is walked again on a miss).
 */
export const cgroup: Decoder = (input) => {
  const id = integer(input, 'cgroup');
  let path = cgroups?.get(id);
  if (path === undefined) {
    cgroups = walkCgroups();
    path = cgroups.get(id);
  }
  return path ?? `unknown_cgroup_id:${id}`;
};

const partitions = new Map<string, string>();

/**
 * majorminor: a block device number as its name in /proc/partitions (`sda`, `nvme0n1p1`), `unknown:MAJ:MIN`
 * otherwise. The number is the kernel's dev_t (MKDEV: major << 20 | minor), which block tracepoints (`args.dev`)
 * and `disk_devt()` give.
 */
export const majorminor: Decoder = (input) => {
  const dev = integer(input, 'majorminor');
  const major = dev >> 20n;
  const minor = dev & 0xfffffn;
  const key = `${major}:${minor}`;
  let name = partitions.get(key);
  if (name === undefined) {
    try {
      for (const line of readFileSync('/proc/partitions', 'utf8').split('\n')) {
        const f = line.trim().split(/\s+/);
        if (f.length === 4 && /^\d+$/.test(f[0]!)) partitions.set(`${f[0]}:${f[1]}`, f[3]!);
      }
    } catch {
      /* no procfs */
    }
    name = partitions.get(key);
  }
  return name ?? `unknown:${key}`;
};
