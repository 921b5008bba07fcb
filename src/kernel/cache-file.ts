/**
 * Files of the bundle's on-disk caches (dist/bundle/cache/: runtime/link-cache.ts's linked programs,
 * kernel/btf-index-cache.ts's vmlinux type index), read and written under one rule: a cache file is code-adjacent
 * data that a root process trusts, so it is used only when it and its directory belong to this effective user and
 * are not writable by group or others, it is opened without following a symlink, and it is replaced atomically
 * (written to `FILE.PID`, mode 0600, then renamed). Directories are created 0700. Any failure is reported as a miss
 * (null / false), never thrown: a cache that cannot be read or written only costs the work it would have saved.
 */
import {
  closeSync,
  fstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
  constants as fsConstants,
} from 'node:fs';

/** An owned, not group/other-writable directory or file of this effective user. */
export function trustedStat(st: { uid: number; mode: number }): boolean {
  return st.uid === process.geteuid?.() && (st.mode & 0o022) === 0;
}

/**
 * The bytes of `file` in `dir`, or null when the directory or the file is not trusted ({@link trustedStat}), the
 * file is not a regular file (a symlink is refused by O_NOFOLLOW) or cannot be read.
 */
export function readTrustedFile(dir: string, file: string): Buffer | null {
  let fd: number | undefined;
  try {
    if (!trustedStat(statSync(dir))) return null;
    fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
    const st = fstatSync(fd);
    if (!st.isFile() || !trustedStat(st)) return null;
    return readFileSync(fd);
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Creates `dir` (0700) if needed and checks it is trusted; false when it cannot be made or is not ours (then nothing
 * may be written there).
 */
export function trustedDir(dir: string): boolean {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return trustedStat(statSync(dir));
  } catch {
    return false;
  }
}

/**
 * Replaces `file` (inside a directory {@link trustedDir} accepted) with `data` atomically, mode 0600; false when it
 * could not be written (a read-only install).
 */
export function writeTrustedFile(file: string, data: string | NodeJS.ArrayBufferView): boolean {
  const tmp = `${file}.${process.pid}`;
  try {
    writeFileSync(tmp, data, { mode: 0o600 });
    renameSync(tmp, file);
    return true;
  } catch {
    return false;
  }
}
