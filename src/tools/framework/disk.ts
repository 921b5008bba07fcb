/**
 * Disk options shared by the block I/O tools: bcc's `-d DISK` (a device under /dev, turned into the kernel's
 * dev_t encoding `major << 20 | minor` that block tracepoints report) and device-number → name lookups.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { ToolWriter } from './output.js';
import { devKey, readDiskNames } from './system.js';

/** Major and minor numbers of a Linux `st_rdev` (glibc's gnu_dev_major/gnu_dev_minor). */
export function majorMinor(rdev: number): { major: number; minor: number } {
  const r = BigInt(rdev);
  const major = Number(((r >> 8n) & 0xfffn) | ((r >> 32n) & ~0xfffn));
  const minor = Number((r & 0xffn) | ((r >> 12n) & ~0xffn));
  return { major, minor };
}

/** bcc's `-d DISK`: the kernel dev_t of `/dev/<disk>`, or null when that path does not exist. */
export function diskDevT(disk: string): number | null {
  try {
    const st = statSync(join('/dev', disk));
    const { major, minor } = majorMinor(st.rdev);
    return major * 2 ** 20 + minor;
  } catch {
    return null;
  }
}

/**
 * bcc's `-d DISK` option as biolatency, biosnoop and biopattern handle it: null without `-d` (all disks), else the
 * disk's dev_t ({@link diskDevT}). When `/dev/<disk>` does not exist, writes bcc's `no such disk '<disk>'` to
 * `writer`'s stdout and returns undefined (the tool exits 1).
 */
export function diskOption(disk: string | null, writer: ToolWriter): number | null | undefined {
  if (disk === null) return null;
  const dev = diskDevT(disk);
  if (dev === null) {
    writer.line(`no such disk '${disk}'`);
    return undefined;
  }
  return dev;
}

/** A dev_t → disk name function over `/proc/diskstats` (read once), with `unknown` for devices not listed. */
export function diskNamer(unknown: string): (dev: number) => string {
  const names = readDiskNames();
  return (dev: number) => names.get(devKey(dev)) ?? unknown;
}

/**
 * A dev_t → name function over `/proc/partitions` (read once: bcc's biopattern reads it at start; lines after
 * the two header lines are `major minor #blocks name`), with `unknown` for devices not listed.
 */
export function partitionNamer(unknown: string, path = '/proc/partitions'): (dev: number) => string {
  const names = new Map<number, string>();
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    /* no names */
  }
  for (const line of text.split('\n').slice(2)) {
    const w = line.trim().split(/\s+/);
    if (w.length >= 4) names.set(Number(w[0]) * 2 ** 20 + Number(w[1]), w[3]!);
  }
  return (dev: number) => names.get(dev) ?? unknown;
}
