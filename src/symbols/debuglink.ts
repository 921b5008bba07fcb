/**
 * Finding the separate debug file of a stripped ELF file, in the places gdb's manual ("Separate Debug Files") lists:
 *
 * 1. by build-id: `<debugdir>/.build-id/NN/NNNNNNNN.debug` (first byte as directory, the rest as file name; this is
 *    what Debian's `-dbgsym` packages install);
 * 2. by `.gnu_debuglink` name, in order: the file's own directory, its `.debug/` subdirectory, and
 *    `<debugdir>/<the file's directory>/` (and `<debugdir>/` itself for a directory other than the default one, as
 *    elfutils' `debuginfo_path` does for bpftrace's `--debuginfo DIR`); without a `.gnu_debuglink`, such a directory's
 *    `<file name>.debug` whose build-id matches (elfutils' default link name). A candidate found this way must match the link's CRC-32 (gdb and bcc check
 *    it too: a stale debug file gives wrong names).
 *
 * `<debugdir>` is `/usr/lib/debug`. A `root` prefix (e.g. `/proc/PID/root`) looks inside another process's mount
 * namespace. Build-id candidates are accepted when their own build-id note matches.
 */
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { zlib } from '../builtins.js';
import { ElfFile } from './elf.js';

/** Global debug directory searched (gdb's default `debug-file-directory`). */
export const DEBUG_DIR = '/usr/lib/debug';

/** A located debug file and how it was found. */
export interface DebugFileMatch {
  /** Path to open (with the `root` prefix applied). */
  path: string;
  via: 'build-id' | 'debuglink';
}

let crcTable: Uint32Array | undefined;

/** CRC-32 (IEEE 802.3, reflected, as zlib's `crc32` and `.gnu_debuglink`) continuing from `crc`. */
export function crc32(data: Uint8Array, crc = 0): number {
  const zlibCrc32 = zlib().crc32;
  if (typeof zlibCrc32 === 'function') return zlibCrc32(data, crc);
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let c = ~crc >>> 0;
  for (let i = 0; i < data.length; i++) c = crcTable[(c ^ data[i]!) & 255]! ^ (c >>> 8);
  return ~c >>> 0;
}

/** CRC-32 of a whole file, read in 1 MiB chunks; `undefined` when it cannot be read. */
export function fileCrc32(path: string): number | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return undefined;
  }
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    let crc = 0;
    let pos = 0;
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, pos);
      if (n <= 0) break;
      crc = crc32(buf.subarray(0, n), crc);
      pos += n;
    }
    return crc;
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

function buildIdOf(path: string): string | undefined {
  try {
    const e = ElfFile.open(path);
    try {
      return e.buildId();
    } finally {
      e.close();
    }
  } catch {
    return undefined;
  }
}

/**
 * Locate the debug file for `elf`, whose path in its own mount namespace is `path` (`elf.path` when absent).
 * Returns `undefined` when the file has neither a build-id with an installed debug file nor a `.gnu_debuglink` whose
 * target exists with the right CRC.
 */
export function findDebugFile(
  elf: ElfFile,
  opts: { path?: string; root?: string; debugDir?: string } = {},
): DebugFileMatch | undefined {
  const root = opts.root ?? '';
  const debugDir = opts.debugDir ?? DEBUG_DIR;
  const path = opts.path ?? elf.path;
  const id = elf.buildId();
  if (id && id.length > 2) {
    const p = root + join(debugDir, '.build-id', id.slice(0, 2), `${id.slice(2)}.debug`);
    if (isFile(p) && buildIdOf(p) === id) return { path: p, via: 'build-id' };
  }
  const link = elf.debugLink();
  if (!link && id && debugDir !== DEBUG_DIR && path.startsWith('/')) {
    // no .gnu_debuglink: a user's debug directory may hold `<file name>.debug` with the same build-id (elfutils'
    // default debuglink name, which bpftrace --debuginfo relies on)
    const p = root + join(debugDir, `${basename(path)}.debug`);
    if (isFile(p) && buildIdOf(p) === id) return { path: p, via: 'build-id' };
  }
  if (!link || !path.startsWith('/')) return undefined;
  const dir = dirname(path);
  const self = root + path;
  const cands = [join(dir, link.file), join(dir, '.debug', link.file), join(debugDir, dir, link.file)];
  // a debug directory given by the user (bpftrace --debuginfo) may hold the file itself
  if (debugDir !== DEBUG_DIR) cands.push(join(debugDir, link.file));
  for (const cand of cands) {
    const p = root + cand;
    if (p === self || !existsSync(p) || !isFile(p)) continue;
    if (fileCrc32(p) === link.crc) return { path: p, via: 'debuglink' };
  }
  return undefined;
}
