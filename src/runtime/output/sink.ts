/**
 * A buffered, synchronous writer to a file descriptor (stdout, stderr, or the `-o FILE` file). Output is
 * collected in a buffer (64 KiB by default) and written with `fs.writeSync` when the buffer fills and on
 * `flush()`; the runtime flushes after each batch of ring buffer events and at exit.
 *
 * - EAGAIN (a non-blocking pipe or terminal that is full): wait for the reader (1 ms naps) and retry; partial
 *   writes continue where they stopped.
 * - EPIPE (the reader went away, e.g. `| head`): stop quietly; later writes are dropped, `broken` becomes true and
 *   `onBrokenPipe` (if given) is called once so the runtime can end the session.
 * Any other write error is thrown as a BpfscopeError.
 */
import * as fs from 'node:fs';
import { BpfscopeError } from '../../errors.js';

/** Characters of small writes joined before they are encoded into the buffer (see {@link OutputSink.write}). */
const PENDING_CHARS = 8192;

/** Default buffer size in bytes. */
export const DEFAULT_SINK_BUFFER = 64 * 1024;

export interface OutputSinkOptions {
  /** Buffer size in bytes; 0 writes every string immediately (stderr). Default 64 KiB. */
  bufferSize?: number;
  /** Called once when a write fails with EPIPE. */
  onBrokenPipe?: () => void;
  /** Close the descriptor in `close()` (true for files this class opened). */
  ownsFd?: boolean;
}

const napCell = new Int32Array(new SharedArrayBuffer(4));

function nap(ms: number): void {
  Atomics.wait(napCell, 0, 0, ms);
}

export class OutputSink {
  /** True once a write failed with EPIPE; later writes are dropped. */
  broken = false;
  private readonly buf: Buffer;
  private used = 0;
  private pending = '';
  private closed = false;
  private readonly onBrokenPipe: (() => void) | undefined;
  private readonly ownsFd: boolean;

  constructor(
    readonly fd: number,
    opts: OutputSinkOptions = {},
  ) {
    const size = opts.bufferSize ?? DEFAULT_SINK_BUFFER;
    this.buf = Buffer.allocUnsafe(Math.max(0, size));
    this.onBrokenPipe = opts.onBrokenPipe;
    this.ownsFd = opts.ownsFd ?? false;
  }

  /**
   * Open `path` for writing (created or truncated, mode 0644) as bpftrace's `-o FILE` does.
   * Throws BpfscopeError when the file cannot be opened.
   */
  static openFile(path: string, opts: Omit<OutputSinkOptions, 'ownsFd'> = {}): OutputSink {
    let fd: number;
    try {
      fd = fs.openSync(path, 'w', 0o644);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      throw new BpfscopeError(`failed to open output file '${path}': ${err.message}`, { cause: e });
    }
    return new OutputSink(fd, { ...opts, ownsFd: true });
  }

  /**
   * Append `s` (encoded as UTF-8) to the buffer, writing the buffer out when it is full. Short strings are first
   * joined into a pending string of up to PENDING_CHARS characters, encoded in one call: one call into the
   * encoder per event costs more than the encoding when events are small lines.
   */
  write(s: string): void {
    if (this.broken || this.closed || s.length === 0) return;
    this.pending += s;
    if (this.pending.length >= PENDING_CHARS || this.buf.length === 0) this.commit();
  }

  /** Encode the pending string into the buffer. */
  private commit(): void {
    const s = this.pending;
    if (s.length === 0) return;
    this.pending = '';
    const cap = this.buf.length;
    // A UTF-16 code unit is at most 3 UTF-8 bytes: if 3 * length fits, the string fits.
    if (s.length * 3 > cap - this.used) {
      this.flush();
      if (s.length * 3 > cap) {
        this.writeAll(Buffer.from(s, 'utf8'));
        return;
      }
    }
    this.used += this.buf.write(s, this.used, 'utf8');
  }

  /** Write out everything buffered. */
  flush(): void {
    this.commit();
    if (this.used === 0) return;
    const n = this.used;
    this.used = 0;
    if (this.broken || this.closed) return;
    this.writeAll(this.buf.subarray(0, n));
  }

  /** Flush, and close the descriptor if this sink opened it. */
  close(): void {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    if (this.ownsFd) fs.closeSync(this.fd);
  }

  private writeAll(data: Buffer): void {
    let off = 0;
    while (off < data.length) {
      try {
        off += fs.writeSync(this.fd, data, off, data.length - off);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'EAGAIN') {
          nap(1);
          continue;
        }
        if (code === 'EPIPE') {
          this.broken = true;
          this.used = 0;
          this.onBrokenPipe?.();
          return;
        }
        throw new BpfscopeError(`write to output failed: ${(e as Error).message}`, { cause: e });
      }
    }
  }
}
