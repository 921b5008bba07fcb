/**
 * A member stored uncompressed inside a ZIP archive (`uprobe:"APP.zip!/lib/x.so":fn`, as bcc and bpftrace accept
 * for Android APKs): where its bytes start in the archive, so that the archive itself can be probed at that offset
 * plus the member's own file offset. Only the classic format (no ZIP64) and method 0 (stored) are read; the layout is
 * PKWARE's APPNOTE.TXT: the end-of-central-directory record, central directory entries, local file headers.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/** A stored member: `offset` (bytes from the archive's start to its data) and `size` (bytes). */
export interface ZipMember {
  readonly offset: number;
  readonly size: number;
}

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

/**
 * Find `name` (as stored: no leading `/`) in the archive at `path`.
 *
 * @returns the member, or an error text (not a ZIP archive, no such member, member compressed)
 * @throws the fs error when the file cannot be read
 */
export function zipStoredMember(path: string, name: string): ZipMember | string {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const read = (off: number, len: number): Buffer => {
      const b = Buffer.alloc(len);
      const n = readSync(fd, b, 0, len, off);
      return b.subarray(0, n);
    };
    // the end record is the last 22 bytes plus a comment of up to 65535 bytes
    const tailLen = Math.min(size, 22 + 0xffff);
    const tail = read(size - tailLen, tailLen);
    let eocd = -1;
    for (let i = tail.length - 22; i >= 0; i--) {
      if (tail.readUInt32LE(i) === EOCD) {
        eocd = i;
        break;
      }
    }
    if (eocd < 0) return `${path}: not a ZIP archive`;
    const entries = tail.readUInt16LE(eocd + 10);
    const cdSize = tail.readUInt32LE(eocd + 12);
    const cdOff = tail.readUInt32LE(eocd + 16);
    const cd = read(cdOff, cdSize);
    for (let p = 0, i = 0; i < entries && p + 46 <= cd.length; i++) {
      if (cd.readUInt32LE(p) !== CENTRAL) return `${path}: corrupt ZIP central directory`;
      const method = cd.readUInt16LE(p + 10);
      const compressed = cd.readUInt32LE(p + 20);
      const nameLen = cd.readUInt16LE(p + 28);
      const extraLen = cd.readUInt16LE(p + 30);
      const commentLen = cd.readUInt16LE(p + 32);
      const local = cd.readUInt32LE(p + 42);
      const entryName = cd.toString('utf8', p + 46, p + 46 + nameLen);
      p += 46 + nameLen + extraLen + commentLen;
      if (entryName !== name) continue;
      if (method !== 0) return `${path}: member '${name}' is compressed (only stored members can be probed)`;
      const lh = read(local, 30);
      if (lh.length < 30 || lh.readUInt32LE(0) !== LOCAL) return `${path}: corrupt ZIP local header of '${name}'`;
      return { offset: local + 30 + lh.readUInt16LE(26) + lh.readUInt16LE(28), size: compressed };
    }
    return `${path}: no member '${name}' in the archive`;
  } finally {
    closeSync(fd);
  }
}
