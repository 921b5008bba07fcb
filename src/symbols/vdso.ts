/**
 * Symbols of the vDSO (`[vdso]` in /proc/PID/maps): the kernel maps the same small ELF image into every process of an
 * ABI, so reading our own copy (from /proc/self/mem at the `[vdso]` mapping) serves every 64-bit process. Its
 * `.dynsym` names `__vdso_clock_gettime`, `__vdso_gettimeofday`, ... (x86-64) or `__kernel_clock_gettime`, ...
 * (aarch64).
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { ElfFile, type ElfSymbols } from './elf.js';
import { readMaps } from './procmaps.js';

let cached: ElfSymbols | null | undefined;

/** The vDSO's symbols (read once per process), or `undefined` when it cannot be read. */
export function vdsoSymbols(): ElfSymbols | undefined {
  if (cached === undefined) cached = load() ?? null;
  return cached ?? undefined;
}

function load(): ElfSymbols | undefined {
  const m = readMaps('self')?.find((x) => x.kind === 'vdso');
  if (!m) return undefined;
  let fd: number;
  try {
    fd = openSync('/proc/self/mem', 'r');
  } catch {
    return undefined;
  }
  try {
    const len = m.end - m.start;
    const buf = Buffer.alloc(len);
    let got = 0;
    while (got < len) {
      const n = readSync(fd, buf, got, len - got, m.start + got);
      if (n <= 0) break;
      got += n;
    }
    const elf = ElfFile.fromBuffer(buf.subarray(0, got), '[vdso]');
    return elf.symbols();
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}
