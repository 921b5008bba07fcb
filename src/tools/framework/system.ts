/**
 * Facts about the running system that bcc's tools read in user space: system call and errno names, disk names
 * by device number (`/proc/diskstats`), a process's comm (`/proc/PID/comm`), `pid_max`, the load averages, local
 * time stamps, and whether a tracepoint exists.
 */
import { readFileSync } from 'node:fs';
import { endianness } from 'node:os';
import { childProcess } from '../../builtins.js';
import { systemTracefs } from '../../kernel/tracefs.js';
import { ERRNO } from '../data/errno.js';
import { syscallTable } from '../../runtime/names.js';

/** System call table of this machine's architecture (see runtime/names.ts). */
export { syscallTable };

/** bcc's `syscall_name(nr)`: the name, or `[unknown: N]`. */
export function syscallName(nr: number | bigint, table = syscallTable()): string {
  return table[Number(nr)] ?? `[unknown: ${nr}]`;
}

/** The number of system call `name`, or undefined. */
export function syscallNumber(name: string, table = syscallTable()): number | undefined {
  for (const [nr, n] of Object.entries(table)) if (n === name) return Number(nr);
  return undefined;
}

/**
 * syscount's `handle_errno`: a number (sign ignored) or an errno name (`ENOENT`). Returns the positive errno, or
 * undefined when the name is unknown.
 */
export function parseErrno(text: string): number | undefined {
  const t = text.trim();
  if (/^[+-]?\d+$/.test(t)) return Math.abs(Number(t));
  return ERRNO[t];
}

/** Kernel-internal dev_t (`major << 20 | minor`, what block tracepoints report) → `major,minor`. */
export function devKey(dev: number): string {
  return `${Math.floor(dev / 2 ** 20)},${dev % 2 ** 20}`;
}

/**
 * bcc's disk lookup: `/proc/diskstats` lines → map from `major,minor` to the device name (read once per run, as
 * bcc does at start-up).
 */
export function readDiskNames(path = '/proc/diskstats'): Map<string, string> {
  const out = new Map<string, string>();
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length >= 3) out.set(`${f[0]},${f[1]}`, f[2]!);
  }
  return out;
}

/** The raw contents of `/proc/PID/comm` (with its trailing newline), or null when the process is gone. */
export function readComm(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8');
  } catch {
    return null;
  }
}

/** `/proc/sys/kernel/pid_max` as text without the newline (bcc sizes PID columns by its length), or null. */
export function pidMaxText(): string | null {
  try {
    return readFileSync('/proc/sys/kernel/pid_max', 'utf8').trim();
  } catch {
    return null;
  }
}

/** `/proc/loadavg` without its trailing newline. */
export function loadAvg(): string {
  try {
    return readFileSync('/proc/loadavg', 'utf8').trimEnd();
  } catch {
    return '';
  }
}

/** Number of online CPUs the kernel reports (`/sys/devices/system/cpu/online`), at least 1. */
export function onlineCpus(): number {
  try {
    let n = 0;
    for (const part of readFileSync('/sys/devices/system/cpu/online', 'utf8').trim().split(',')) {
      const [a, b] = part.split('-').map(Number);
      n += b !== undefined ? b - a! + 1 : 1;
    }
    return Math.max(1, n);
  } catch {
    return 1;
  }
}

/** Whether tracepoint `category:event` exists (tracefs is located or mounted as the probes need). */
export function tracepointExists(category: string, event: string): boolean {
  try {
    return systemTracefs().hasEvent(category, event);
  } catch {
    return false;
  }
}

function two(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

/** Python's `strftime("%H:%M:%S")` (local time). */
export function clockTime(d: Date = new Date()): string {
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

/** Python's `strftime("%Y-%m-%d %H:%M:%S")` (local time). */
export function dateTime(d: Date = new Date()): string {
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${clockTime(d)}`;
}

/** Quote `words` for `/bin/sh` (for `--exec CMD ARGS...`). */
export function shellQuote(words: string[]): string {
  return words.map((w) => (/^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`)).join(' ');
}

/** `AT_PAGESZ`, the auxiliary vector's page size entry (linux/auxvec.h). */
const AT_PAGESZ = 6n;

/**
 * The kernel's page size in kB: `AT_PAGESZ` of /proc/self/auxv (what `getconf PAGESIZE` returns; native-endian
 * 64-bit type/value pairs on the 64-bit machines bpfscope runs on, ended by type 0), 4 when unreadable. A few hundred
 * bytes, where the first `KernelPageSize:` of /proc/self/smaps (the same number) meant reading all its ~70 kB.
 * `auxvPath` is for tests.
 */
export function pageSizeKb(auxvPath = '/proc/self/auxv'): number {
  try {
    const auxv = readFileSync(auxvPath);
    const le = endianness() === 'LE';
    for (let off = 0; off + 16 <= auxv.length; off += 16) {
      const type = le ? auxv.readBigUInt64LE(off) : auxv.readBigUInt64BE(off);
      if (type === 0n) break;
      if (type === AT_PAGESZ) return Number(le ? auxv.readBigUInt64LE(off + 8) : auxv.readBigUInt64BE(off + 8)) / 1024;
    }
  } catch {
    // not Linux's /proc: the common size
  }
  return 4;
}

/**
 * The uid of user `name` from /etc/passwd (Python's `pwd.getpwnam(name).pw_uid`, which bcc's `-u USER` options
 * use), or undefined when there is no such entry.
 */
export function uidOfUser(name: string, path = '/etc/passwd'): number | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  for (const line of text.split('\n')) {
    const f = line.split(':');
    if (f.length > 2 && f[0] === name && /^\d+$/.test(f[2]!)) return Number(f[2]);
  }
  return undefined;
}

/** The `PPid:` of `/proc/PID/status` (bcc execsnoop's `get_ppid` fallback), or 0 when the process is gone. */
export function readPpid(pid: number): number {
  try {
    const m = /^PPid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/**
 * The local time zone's abbreviation now (Python's `strftime("%Z")`, e.g. `UTC`, `CEST`): asked of `date +%Z`,
 * which uses the same C library rules; Intl's short name when `date` cannot run.
 */
export function timeZoneAbbreviation(): string {
  try {
    return childProcess()
      .execFileSync('date', ['+%Z'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
      .trim();
  } catch {
    const part = new Intl.DateTimeFormat('en-US', { timeZoneName: 'short' })
      .formatToParts(new Date())
      .find((p) => p.type === 'timeZoneName');
    return part?.value ?? '';
  }
}
