/**
 * The user-space halves of bpftrace's name functions, applied when a value is printed: `syscall_name(n)`,
 * `signal_name(n)` and `cgroup_path(id[, filter])`. The BPF program stores the number; these turn it into text.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { arch } from 'node:os';
import { basename, join } from 'node:path';
import { globToRegExp } from '../probes/glob.js';
import { strsignal } from '../kernel/ffi.js';
import { SYSCALLS_AARCH64, SYSCALLS_X86_64 } from '../kernel/syscalls.js';

/**
 * System call table of an architecture (Node's `os.arch()` name): x86-64 or aarch64 from the uapi unistd headers
 * (kernel/syscalls.ts); others get an empty table. Shared with the bcc tools (tools/framework/system.ts).
 */
export function syscallTable(machine: string = arch()): Readonly<Record<number, string>> {
  if (machine === 'x64') return SYSCALLS_X86_64;
  if (machine === 'arm64') return SYSCALLS_AARCH64;
  return {};
}

/** `syscall_name(n)`: this architecture's name for system call `n`, else `Unknown syscall` (bpftrace's text). */
export function syscallName(n: bigint): string {
  return (n >= 0n && n < 1024n ? syscallTable()[Number(n)] : undefined) ?? 'Unknown syscall';
}

/** Highest signal number in bpftrace's table (SIGRTMAX on Linux). */
const SIGRTMAX = 64;

/** `signal_name(n)`: strsignal(3) text for 0..SIGRTMAX (bpftrace's table is glibc's text), `N/A` otherwise. */
export function signalName(n: bigint): string {
  return n >= 0n && n <= BigInt(SIGRTMAX) ? strsignal(Number(n)) : 'N/A';
}

/** Mounted cgroup hierarchies from /proc/mounts: v2 ones named `unified`, v1 ones by their mount directory. */
function cgroupRoots(): { name: string; root: string; v2: boolean }[] {
  const out: { name: string; root: string; v2: boolean }[] = [];
  let text: string;
  try {
    text = readFileSync('/proc/mounts', 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    if (f[2] === 'cgroup2') out.push({ name: 'unified', root: f[1]!, v2: true });
    else if (f[2] === 'cgroup') out.push({ name: basename(f[1]!), root: f[1]!, v2: false });
  }
  return out;
}

/** The directory under `root` whose inode number is `id` (a cgroup's id), as a path from `root`; '' if none. */
function findCgroup(root: string, id: bigint): string {
  const stack = [''];
  while (stack.length > 0) {
    const rel = stack.pop()!;
    const dir = join(root, rel);
    try {
      if (BigInt(statSync(dir, { bigint: true }).ino) === id) return rel === '' ? '/' : `/${rel}`;
      for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) stack.push(join(rel, e.name));
    } catch {
      // a cgroup removed while walking
    }
  }
  return '';
}

/**
 * `cgroup_path(id, filter)` as bpftrace prints it (`src/util/cgroup.cpp`): for each mounted hierarchy whose name
 * matches the `filter` glob (cgroup v2 ones first, then v1 ones by name), `NAME:/path` where a directory with inode
 * `id` exists, joined with `,`. The lookup happens at print time, so a reused id may resolve to a newer cgroup.
 */
export function cgroupPath(id: bigint, filter: string): string {
  const key = `${id}\0${filter}`;
  let text = cgroupPathCache.get(key);
  if (text === undefined) {
    text = lookupCgroupPath(id, filter);
    cgroupPathCache.set(key, text);
  }
  return text;
}

/** Resolved paths by id and filter: a long run walks the hierarchies once per cgroup (as bpftrace caches them). */
const cgroupPathCache = new Map<string, string>();

function lookupCgroupPath(id: bigint, filter: string): string {
  const re = globToRegExp(filter);
  const roots = cgroupRoots().filter((r) => re.test(r.name));
  roots.sort((a, b) => (a.v2 === b.v2 ? a.name.localeCompare(b.name) : a.v2 ? -1 : 1));
  const parts: string[] = [];
  for (const r of roots) {
    const p = findCgroup(r.root, id);
    if (p !== '') parts.push(`${r.name}:${p}`);
  }
  return parts.join(',');
}
