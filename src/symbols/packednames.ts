/**
 * A list of names kept deflated: blocks of {@link NAMES_PER_BLOCK} consecutive names, each block the names' bytes
 * joined by `\n` and compressed on its own with raw deflate (RFC 1951, `node:zlib` `deflateRawSync`), so that one
 * name costs the inflation of its block only. Used by {@link Kallsyms} for the code symbols' names: in address order,
 * neighbouring names share much (`__pfx_foo` then `foo`, `__x64_sys_*`, a module's prefix), and 121,851 names of
 * 2.96 MB (10^6 bytes) take 0.67 MB in blocks of 64 (0.77 MB in blocks of 32, 0.62 MB in blocks of 128; a preset
 * dictionary sampled from the names saved under 10% and was left out).
 *
 * A name is decoded from its bytes with the `utf8` decoder exactly as from the original text, so it is the same
 * string. Names must not contain the separator byte `\n` (kallsyms names end at a tab, space or newline).
 */
import { zlib } from '../builtins.js';

/** Names per deflated block: measured on /proc/kallsyms (see the module comment); also the cost of one lookup. */
export const NAMES_PER_BLOCK = 64;

const SEP = 10;

/**
 * Deflate options: a 1 KiB window and small hash tables (~6 KB of zlib state per call instead of ~270 KB) compress
 * these ~1.5 KB blocks as well as the defaults (0.677 against 0.674 MB) and keep the allocations per call small.
 */
const DEFLATE = { level: 9, windowBits: 10, memLevel: 4 };

/** Names `0 .. count-1`, stored as deflated blocks; see the module comment. */
export class PackedNames {
  /** Compressed block `b` is `data[off[b] .. off[b + 1])`. */
  private readonly data: Buffer;
  private readonly off: Uint32Array;
  /** Uncompressed byte length of each block (names and separators), to size and check its inflation. */
  private readonly rawLen: Uint32Array;
  /** The last block inflated (one, ~1.5 KB for kallsyms): consecutive lookups often fall in one block. */
  private lastBlock = -1;
  private lastRaw: Buffer | undefined;

  private constructor(
    readonly count: number,
    data: Buffer,
    off: Uint32Array,
    rawLen: Uint32Array,
  ) {
    this.data = data;
    this.off = off;
    this.rawLen = rawLen;
  }

  /**
   * Pack names `src[start[j] .. end[j])` for `j = 0 .. start.length-1` (byte ranges of `src`, which is not kept: the
   * result holds memory of its own only).
   * @throws Error when a name contains `\n`.
   */
  static build(src: Buffer, start: Uint32Array, end: Uint32Array): PackedNames {
    const n = start.length;
    const blocks = Math.ceil(n / NAMES_PER_BLOCK);
    const rawLen = new Uint32Array(blocks);
    const parts: Buffer[] = [];
    let scratch = Buffer.allocUnsafe(0);
    let total = 0;
    const z = zlib();
    for (let b = 0; b < blocks; b++) {
      const j0 = b * NAMES_PER_BLOCK;
      const j1 = Math.min(n, j0 + NAMES_PER_BLOCK);
      let len = j1 - j0 - 1;
      for (let j = j0; j < j1; j++) len += end[j]! - start[j]!;
      if (scratch.length < len) scratch = Buffer.allocUnsafe(Math.max(len, 2 * scratch.length));
      let o = 0;
      for (let j = j0; j < j1; j++) {
        if (j > j0) scratch[o++] = SEP;
        o += src.copy(scratch, o, start[j]!, end[j]!);
      }
      const raw = scratch.subarray(0, o);
      let seps = 0;
      for (let i = raw.indexOf(SEP); i >= 0; i = raw.indexOf(SEP, i + 1)) seps++;
      if (seps !== j1 - j0 - 1) throw new Error('a packed name contains \\n');
      rawLen[b] = o;
      // The output buffer sized near the input: zlib's result is a view of it, copied out below.
      const c = z.deflateRawSync(raw, { ...DEFLATE, chunkSize: Math.max(64, o + 64) });
      parts.push(c);
      total += c.length;
    }
    // Own memory, exactly sized (not the zlib output chunks the parts are views of).
    const data = Buffer.allocUnsafeSlow(total);
    const off = new Uint32Array(blocks + 1);
    let p = 0;
    for (let b = 0; b < blocks; b++) {
      off[b] = p;
      p += parts[b]!.copy(data, p);
    }
    off[blocks] = p;
    return new PackedNames(n, data, off, rawLen);
  }

  /** Bytes held (compressed blocks and their offsets and lengths; not the one inflated block). */
  get byteLength(): number {
    return this.data.byteLength + this.off.byteLength + this.rawLen.byteLength;
  }

  /** Name `j` (`0 <= j < count`), decoded as UTF-8. */
  get(j: number): string {
    const b = Math.floor(j / NAMES_PER_BLOCK);
    const raw = this.block(b);
    let s = 0;
    for (let k = b * NAMES_PER_BLOCK; k < j; k++) s = raw.indexOf(SEP, s) + 1;
    const e = raw.indexOf(SEP, s);
    return raw.toString('utf8', s, e < 0 ? raw.length : e);
  }

  private block(b: number): Buffer {
    if (b === this.lastBlock) return this.lastRaw!;
    const len = this.rawLen[b]!;
    const raw = zlib().inflateRawSync(this.data.subarray(this.off[b]!, this.off[b + 1]!), {
      windowBits: DEFLATE.windowBits,
      chunkSize: Math.max(64, len),
    });
    if (raw.length !== len) throw new Error(`packed names: block ${b} inflated to ${raw.length} bytes, not ${len}`);
    this.lastBlock = b;
    this.lastRaw = raw;
    return raw;
  }
}
