/**
 * CPU sets from sysfs (`Documentation/ABI/testing/sysfs-devices-system-cpu`): `possible` sizes per-CPU map values
 * (the kernel copies one slot per possible CPU), `online` is where per-CPU perf events can be opened.
 */
import { readFileSync } from 'node:fs';
import { BpfscopeError } from '../errors.js';

/**
 * Parses a kernel CPU list (`cpulist_parse` format): comma-separated CPUs and ranges, e.g. `0-3,8,10-11`; an empty
 * or blank string is the empty set. Returns the CPUs in ascending order without duplicates.
 * @throws BpfscopeError on malformed input.
 */
export function parseCpuList(text: string): number[] {
  const s = text.trim();
  if (s === '') return [];
  const set = new Set<number>();
  for (const part of s.split(',')) {
    // The kernel also accepts `a-b:stride/group`; sysfs never prints it, so it is rejected here.
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) throw new BpfscopeError(`malformed CPU list: ${JSON.stringify(text)}`);
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    if (hi < lo) throw new BpfscopeError(`malformed CPU list: ${JSON.stringify(text)}`);
    for (let c = lo; c <= hi; c++) set.add(c);
  }
  return [...set].sort((a, b) => a - b);
}

function readList(path: string): number[] {
  try {
    return parseCpuList(readFileSync(path, 'utf8'));
  } catch (e) {
    if (e instanceof BpfscopeError) throw e;
    throw new BpfscopeError(`cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`, { cause: e });
  }
}

let possible: number[] | undefined;

/** Possible CPUs (`/sys/devices/system/cpu/possible`), cached: they do not change while the system runs. */
export function possibleCpus(): number[] {
  possible ??= readList('/sys/devices/system/cpu/possible');
  return possible;
}

/**
 * Number of slots in a per-CPU map value: the highest possible CPU + 1 (libbpf's `libbpf_num_possible_cpus`), which
 * equals the count when the list has no holes.
 */
export function numPossibleCpus(): number {
  const p = possibleCpus();
  return p.length === 0 ? 1 : p[p.length - 1]! + 1;
}

/** Online CPUs (`/sys/devices/system/cpu/online`), read fresh on each call (CPUs can go on/offline). */
export function onlineCpus(): number[] {
  return readList('/sys/devices/system/cpu/online');
}
