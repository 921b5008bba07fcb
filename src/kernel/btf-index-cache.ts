/**
 * A per-boot file of the vmlinux BTF type index (where each type starts and its name's string offset: what
 * kernel/btf.ts `indexTypes` computes in one pass over ~126k types at every start of a tool that reads BTF, 12-17
 * ms of CPU in cold code here at load ~29, measured alone), for the CLI bundle only.
 *
 * Why it cannot give a wrong index: `/sys/kernel/btf/vmlinux` is the running kernel's own BTF, built into the
 * image, so it cannot change until the next boot. The file is named and headed by the boot (`boot_id`,
 * proc(5)) and the BTF's size and 24-byte header; a file is used only when all of these equal this boot's and this
 * BTF's, its length is exactly what its count needs, and spot checks against the BTF hold (the first type starts
 * at the type section, the last type ends at its end, and every 512th type's name offset is the word its entry
 * points at). Anything else is a miss: the index is computed as before and the file rewritten.
 *
 * Where and who: `dist/bundle/cache/btf/` next to the code, created 0700, beside the V8 code cache and the cache of
 * linked programs (runtime/link-cache.ts), under the same rules: read only when it and its directory belong to
 * this effective user and are not group/other-writable, opened with O_NOFOLLOW; one file (older boots' files are
 * removed on a write); any failure to read or write is a miss, never an error. Outside the bundle (dist/src: the
 * library and the tests) there is no file.
 *
 * File layout (little-endian u32 words): `magic 0x58444942` ("BIDX"), format 1, count, 6 header words of the BTF
 * (its 24 bytes), BTF size, then offs[0..count] and nameOffs[0..count] (count + 1 words each, index 0 unused).
 */
import { readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readTrustedFile, trustedDir, writeTrustedFile } from './cache-file.js';

/** The type index of a BTF blob (kernel/btf.ts). */
export interface BtfIndex {
  offs: Uint32Array;
  nameOffs: Uint32Array;
}

const MAGIC = 0x58444942;
const FORMAT = 1;
const HEAD_WORDS = 10;

/** The bundle's directory for the file, or null outside the two CLI bundles (as runtime/link-cache.ts decides). */
function cacheDir(): string | null {
  try {
    const file = fileURLToPath(import.meta.url);
    const name = basename(file);
    if (name !== 'cli.cjs' && name !== 'tools.cjs') return null;
    return join(dirname(file), 'cache', 'btf');
  } catch {
    return null;
  }
}

function bootId(): string | null {
  try {
    const id = readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim();
    return /^[0-9a-f-]{36}$/.test(id) ? id : null;
  } catch {
    return null;
  }
}

let where: { dir: string; file: string } | null | undefined;
let dirOverride: string | null | undefined;

/**
 * Uses `dir` instead of the bundle's directory (null: no file at all; undefined: the bundle's again), for tests
 * that run the library from dist/src, where there is no file by default. Call before the first `Btf.vmlinux()`.
 */
export function setVmlinuxIndexDir(dir: string | null | undefined): void {
  dirOverride = dir;
  where = undefined;
}

function location(btfSize: number): { dir: string; file: string } | null {
  if (where === undefined) {
    const dir = dirOverride === undefined ? cacheDir() : dirOverride;
    const boot = dir ? bootId() : null;
    where = dir && boot ? { dir, file: join(dir, `vmlinux-${boot}-${btfSize}.idx`) } : null;
  }
  return where;
}

/**
 * The stored index of the running kernel's vmlinux BTF `u32` (the whole file as words, `bytes` long), or null (no
 * file, not trusted, or not this BTF's: see the module comment). `typeStart`/`typeEnd` are word indexes of the type
 * section; `typeWords(p)` the length in words of the type starting at word `p`.
 */
export function readVmlinuxIndex(
  u32: Uint32Array,
  bytes: number,
  typeStart: number,
  typeEnd: number,
  typeWords: (p: number) => number,
): BtfIndex | null {
  const loc = location(bytes);
  if (!loc) return null;
  const buf = readTrustedFile(loc.dir, loc.file);
  if (!buf || buf.length < HEAD_WORDS * 4 || buf.length % 4 !== 0) return null;
  const aligned = buf.byteOffset % 4 === 0 ? buf : Buffer.from(buf);
  const w = new Uint32Array(aligned.buffer, aligned.byteOffset, aligned.length >>> 2);
  const count = w[2]!;
  if (w[0] !== MAGIC || w[1] !== FORMAT || w[9] !== bytes || w.length !== HEAD_WORDS + 2 * (count + 1)) return null;
  for (let i = 0; i < 6; i++) if (w[3 + i] !== u32[i]) return null;
  const offs = w.subarray(HEAD_WORDS, HEAD_WORDS + count + 1);
  const nameOffs = w.subarray(HEAD_WORDS + count + 1);
  if (count < 1 || offs[1] !== typeStart || offs[count]! + typeWords(offs[count]!) !== typeEnd) return null;
  for (let id = 1; id <= count; id += 512) {
    const p = offs[id]!;
    if (p < typeStart || p >= typeEnd || nameOffs[id] !== u32[p]) return null;
  }
  return { offs, nameOffs };
}

/** Stores `index` for {@link readVmlinuxIndex} (see the module comment); failures are ignored. */
export function writeVmlinuxIndex(u32: Uint32Array, bytes: number, index: BtfIndex): void {
  const loc = location(bytes);
  if (!loc) return;
  if (!trustedDir(loc.dir)) return;
  try {
    const count = index.offs.length - 1;
    const w = new Uint32Array(HEAD_WORDS + 2 * (count + 1));
    w[0] = MAGIC;
    w[1] = FORMAT;
    w[2] = count;
    for (let i = 0; i < 6; i++) w[3 + i] = u32[i]!;
    w[9] = bytes;
    w.set(index.offs, HEAD_WORDS);
    w.set(index.nameOffs, HEAD_WORDS + count + 1);
    for (const n of readdirSync(loc.dir)) {
      if (n.startsWith('vmlinux-') && join(loc.dir, n) !== loc.file) unlinkSync(join(loc.dir, n));
    }
    writeTrustedFile(loc.file, w);
  } catch {
    // read-only install or not our directory: the next start indexes again
  }
}
