/**
 * Input plumbing shared by the flame graph commands: read the files named on the command line one after another
 * (standard input when none is named, or for "-"), in large chunks, and split text into lines the way Perl's `<>`
 * does (lines end at "\n", which is removed; a last line without "\n" still counts, and lines never run across two
 * files).
 */
import { isAscii } from 'node:buffer';
import { closeSync, openSync, readSync } from 'node:fs';
import { BpfscopeError } from '../errors.js';

/** Bytes read per `read(2)`; large enough that per-chunk overhead disappears, small enough to stay cache-friendly. */
export const CHUNK_BYTES = 1 << 20;

/**
 * Calls `onChunk` with successive pieces of each input (the Buffer is reused: copy or decode it before returning),
 * and `onFileEnd` after each file. Reads standard input when `files` is empty or holds "-".
 * Throws BpfscopeError when a file cannot be opened or read.
 */
export async function readInputs(
  files: readonly string[],
  onChunk: (chunk: Buffer) => void,
  onFileEnd: () => void = () => {},
): Promise<void> {
  const names = files.length ? files : ['-'];
  const buf = Buffer.allocUnsafe(CHUNK_BYTES);
  for (const name of names) {
    if (name === '-') await readStdin(buf, onChunk);
    else readFile(name, buf, onChunk);
    onFileEnd();
  }
}

function readFile(name: string, buf: Buffer, onChunk: (chunk: Buffer) => void): void {
  const fd = openInput(name);
  try {
    for (;;) {
      const n = readInput(fd, name, buf, 0, buf.length, null);
      if (n === 0) break;
      onChunk(n === buf.length ? buf : buf.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * Calls `onChunk` with successive pieces of the bytes [start, end) of the file `name` (the Buffer is reused, as in
 * readInputs); stops early when `onChunk` returns false. Throws BpfscopeError when the file cannot be read.
 */
export function readRange(name: string, start: number, end: number, onChunk: (chunk: Buffer) => boolean | void): void {
  const fd = openInput(name);
  try {
    const buf = Buffer.allocUnsafe(CHUNK_BYTES);
    for (let at = start; at < end;) {
      const n = readInput(fd, name, buf, 0, Math.min(buf.length, end - at), at);
      if (n === 0) break;
      at += n;
      if (onChunk(n === buf.length ? buf : buf.subarray(0, n)) === false) break;
    }
  } finally {
    closeSync(fd);
  }
}

/** The file `name` opened for reading (close it with closeSync). Throws BpfscopeError naming the file. */
export function openInput(name: string): number {
  try {
    return openSync(name, 'r');
  } catch (err) {
    throw new BpfscopeError(`cannot open ${name}: ${describe(err)}`);
  }
}

/**
 * readSync of up to `length` bytes of the file `name` (open as `fd`) into `buf` at `offset`, from `position` (null:
 * the file position); returns the bytes read, 0 at the end. Throws BpfscopeError naming the file.
 */
export function readInput(
  fd: number,
  name: string,
  buf: Buffer,
  offset: number,
  length: number,
  position: number | null,
): number {
  try {
    return readSync(fd, buf, offset, length, position);
  } catch (err) {
    throw new BpfscopeError(`cannot read ${name}: ${describe(err)}`);
  }
}

async function readStdin(buf: Buffer, onChunk: (chunk: Buffer) => void): Promise<void> {
  // Blocking reads on fd 0 are fastest; when stdin is non-blocking (EAGAIN) fall back to the stream API.
  for (;;) {
    let n: number;
    try {
      n = readSync(0, buf, 0, buf.length, null);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EAGAIN') break;
      if (code === 'EOF') return;
      throw new BpfscopeError(`cannot read standard input: ${describe(err)}`);
    }
    if (n === 0) return;
    onChunk(n === buf.length ? buf : buf.subarray(0, n));
  }
  for await (const chunk of process.stdin) onChunk(chunk as Buffer);
}

function describe(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  if (e.code === 'ENOENT') return 'no such file or directory';
  if (e.code === 'EACCES') return 'permission denied';
  if (e.code === 'EISDIR') return 'is a directory';
  return e.message ?? String(err);
}

/**
 * Splits decoded text chunks into lines without copying: `onLine(text, start, end)` receives the chunk (or, for a
 * line spanning two chunks, the joined line) and the line's bounds, "\n" excluded.
 */
export class LineSplitter {
  private carry = '';
  constructor(private readonly onLine: (text: string, start: number, end: number) => void) {}

  /** Feeds the next piece of text. */
  push(chunk: string): void {
    let pos = 0;
    if (this.carry !== '') {
      const nl = chunk.indexOf('\n');
      if (nl < 0) {
        this.carry += chunk;
        return;
      }
      const line = this.carry + chunk.slice(0, nl);
      this.carry = '';
      this.onLine(line, 0, line.length);
      pos = nl + 1;
    }
    const onLine = this.onLine;
    for (;;) {
      const nl = chunk.indexOf('\n', pos);
      if (nl < 0) break;
      onLine(chunk, pos, nl);
      pos = nl + 1;
    }
    if (pos < chunk.length) this.carry = chunk.slice(pos);
  }

  /** End of one input: a last line without "\n" is delivered now. */
  end(): void {
    if (this.carry !== '') {
      const line = this.carry;
      this.carry = '';
      this.onLine(line, 0, line.length);
    }
  }
}

/**
 * Splits UTF-8 input bytes into text lines as `LineSplitter` over a streaming `TextDecoder('utf-8')` would (a
 * byte-order mark at the start of each input removed, malformed bytes as U+FFFD), but decodes whole lines at a
 * time: a run of complete lines that is plain ASCII (checked natively) becomes one Latin-1 string, the cheapest
 * decoding V8 has; other runs go through the decoder. Lines cut by the end of a chunk wait for the next one.
 * `onLine(text, start, end)` receives a decoded run and a line's bounds in it, "\n" excluded.
 */
export class Utf8LineReader {
  private carry: Buffer | null = null;
  private fileStart = true;
  /** Whether some input byte was a lead byte of a 4-byte UTF-8 sequence (0xF0-0xF4). */
  astral = false;
  /** Whether every line so far was ASCII (a byte-order mark aside). */
  ascii = true;
  private readonly decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  constructor(private readonly onLine: (text: string, start: number, end: number) => void) {}

  /** Feeds the next bytes of the current input (copied where kept: the caller may reuse the buffer). */
  push(chunk: Buffer): void {
    const ascii = isAscii(chunk);
    // native memchr per candidate lead byte
    if (!ascii) for (let b = 0xf0; b <= 0xf4 && !this.astral; b++) this.astral = chunk.includes(b);
    const nl = chunk.lastIndexOf(10);
    if (nl < 0) {
      this.carry = this.carry ? Buffer.concat([this.carry, chunk]) : Buffer.from(chunk);
      return;
    }
    if (this.carry) {
      const run = Buffer.concat([this.carry, chunk.subarray(0, nl)]);
      this.carry = null;
      this.run(run, isAscii(run));
    } else {
      this.run(chunk.subarray(0, nl), ascii);
    }
    this.carry = nl + 1 < chunk.length ? Buffer.from(chunk.subarray(nl + 1)) : null;
  }

  /** End of one input: a last line without "\n" is delivered now. */
  end(): void {
    const c = this.carry;
    this.carry = null;
    if (c && c.length > 0) this.run(c, isAscii(c));
    this.fileStart = true;
  }

  /** Complete lines (the last one's "\n" not included). */
  private run(bytes: Buffer, ascii: boolean): void {
    let b = bytes;
    if (this.fileStart) {
      this.fileStart = false;
      if (b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) b = b.subarray(3);
    }
    // (a chunk that is not ASCII may still have ASCII lines: only the bytes after its last "\n" were not)
    const plain = ascii || isAscii(b);
    if (!plain) this.ascii = false;
    const text = plain ? b.toString('latin1') : this.decoder.decode(b);
    const onLine = this.onLine;
    let pos = 0;
    for (;;) {
      const e = text.indexOf('\n', pos);
      if (e < 0) break;
      onLine(text, pos, e);
      pos = e + 1;
    }
    onLine(text, pos, text.length);
  }
}
