/**
 * The dynamic linker's cache, `/etc/ld.so.cache`, read directly (what `ldconfig -p` prints, without spawning it):
 * library soname → path for this machine's architecture. Format: glibc's `cache_file_new` (elf/cache.c,
 * sysdeps/generic/dl-cache.h): the 17-byte magic `glibc-ld.so.cache`, version `1.1`, `nlibs`, `len_strings`, flags,
 * an extension offset and 3 unused words (48 bytes), then `nlibs` 24-byte entries `{i32 flags, u32 key, u32 value,
 * u32 osversion, u64 hwcap}` whose key (soname) and value (path) are offsets of NUL-terminated strings from the
 * start of the file.
 */
import { readFileSync } from 'node:fs';

const MAGIC = 'glibc-ld.so.cache1.1';
const HEADER = 48;
const ENTRY = 24;
/** `FLAG_ELF_LIBC6` (the entry type), and the architecture bits of `FLAG_REQUIRED_MASK` per Node arch. */
const FLAG_TYPE_MASK = 0x00ff;
const FLAG_ELF_LIBC6 = 0x0003;
const FLAG_REQUIRED_MASK = 0xff00;
const ARCH_FLAGS: Record<string, number> = { x64: 0x0300, arm64: 0x0a00 };

/**
 * Soname → path of every libc6 library of architecture `arch` in the cache at `path` (first entry wins, as in
 * `ldconfig -p` order). Returns undefined when the file is missing or not in the 1.1 format (the caller then falls
 * back to `ldconfig -p`).
 */
export function readLdCache(path = '/etc/ld.so.cache', arch: string = process.arch): Map<string, string> | undefined {
  let buf: Buffer;
  try {
    buf = readFileSync(path);
  } catch {
    return undefined;
  }
  if (buf.length < HEADER || buf.toString('latin1', 0, MAGIC.length) !== MAGIC) return undefined;
  const nlibs = buf.readUInt32LE(20);
  if (HEADER + nlibs * ENTRY > buf.length) return undefined;
  const want = ARCH_FLAGS[arch];
  const str = (off: number): string | undefined => {
    if (off >= buf.length) return undefined;
    const end = buf.indexOf(0, off);
    return buf.toString('utf8', off, end < 0 ? buf.length : end);
  };
  const out = new Map<string, string>();
  for (let i = 0; i < nlibs; i++) {
    const e = HEADER + i * ENTRY;
    const flags = buf.readInt32LE(e);
    if ((flags & FLAG_TYPE_MASK) !== FLAG_ELF_LIBC6) continue;
    if (want !== undefined && (flags & FLAG_REQUIRED_MASK) !== want) continue;
    const key = str(buf.readUInt32LE(e + 4));
    const value = str(buf.readUInt32LE(e + 8));
    if (key && value && !out.has(key)) out.set(key, value);
  }
  return out;
}
