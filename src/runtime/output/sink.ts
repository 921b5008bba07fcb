/**
 * A buffered, synchronous writer to a file descriptor (stdout, stderr, or the `-o FILE` file). Output is
 * collected in a buffer (64 KiB by default) and written with `fs.writeSync` when the buffer fills and on
 * `flush()`; the runtime flushes after each batch of ring buffer events and at exit.
 *
 * - A full pipe or socket (a reader slower than the output): wait for the reader, as bpftrace does (events the
 *   kernel cannot queue meanwhile are counted as lost). The wait never blocks in write(2): a pipe (FIFO) is written
 *   through its own non-blocking open file description (`/proc/self/fd/N` opened O_NONBLOCK, so the flag does not
 *   reach the `-c` command or the shell sharing the pipe), a socket with send(MSG_DONTWAIT); the wait itself is
 *   poll(2), which a signal interrupts. Then the sink stops waiting, keeps what it could not write (in order) and
 *   lets the event loop run, so SIGINT/SIGTERM handlers run even while the reader is stalled; {@link abandonIfStalled}
 *   then drops what is left and every later write, counting the bytes in {@link dropped}. Other descriptors (files,
 *   terminals) are written with write(2) as they come (EAGAIN on a non-blocking one: the same poll wait).
 * - EPIPE (the reader went away, e.g. `| head`): stop quietly; later writes are dropped, `broken` becomes true and
 *   `onBrokenPipe` (if given) is called once so the runtime can end the session.
 * Any other write error (ENOSPC: a full disk) is thrown as a BpfscopeError, `Failed to write to NAME: <strerror>`.
 */
import * as fs from 'node:fs';
import { BpfscopeError } from '../../errors.js';
import { Errno, POLLOUT, pollFd, sendNoWait, strerror } from '../../kernel/ffi.js';

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
  /** What the descriptor is, for error messages (`stdout`, `output file: "PATH"`). Default `output`. */
  name?: string;
}

export class OutputSink {
  /** True once a write failed with EPIPE; later writes are dropped. */
  broken = false;
  /** Bytes dropped because the reader had stalled when the run was ended ({@link abandonIfStalled}). */
  dropped = 0;
  /** How writes go out: see the module comment. Decided on the first write. */
  private mode: 'plain' | 'fifo' | 'socket' | undefined;
  /** The non-blocking descriptor of a FIFO (mode 'fifo'). */
  private wfd = -1;
  /** Output that could not be written yet, oldest first (only after a signal interrupted a wait). */
  private backlog: Buffer[] = [];
  /** False from a signal interrupting a wait until the event loop has run its handlers. */
  private mayWait = true;
  private abandoned = false;
  private readonly buf: Buffer;
  private used = 0;
  private pending = '';
  private closed = false;
  private readonly onBrokenPipe: (() => void) | undefined;
  private readonly ownsFd: boolean;
  private readonly name: string;

  constructor(
    readonly fd: number,
    opts: OutputSinkOptions = {},
  ) {
    const size = opts.bufferSize ?? DEFAULT_SINK_BUFFER;
    this.buf = Buffer.allocUnsafe(Math.max(0, size));
    this.onBrokenPipe = opts.onBrokenPipe;
    this.ownsFd = opts.ownsFd ?? false;
    this.name = opts.name ?? 'output';
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
    if (this.wfd >= 0) fs.closeSync(this.wfd);
    this.wfd = -1;
    if (this.ownsFd) fs.closeSync(this.fd);
  }

  /** Whether output is waiting for a reader that has not taken it (a signal interrupted the wait). */
  get stalled(): boolean {
    return this.backlog.length > 0;
  }

  /**
   * The run is ending on a signal: when the reader has stalled ({@link stalled}), drop what it did not take and
   * every later write (counted in {@link dropped}) instead of waiting for it. Returns whether it had stalled.
   */
  abandonIfStalled(): boolean {
    if (!this.stalled) return false;
    this.abandoned = true;
    for (const b of this.backlog) this.dropped += b.length;
    this.backlog = [];
    this.dropped += this.used + Buffer.byteLength(this.pending);
    this.used = 0;
    this.pending = '';
    return true;
  }

  /**
   * At the end of a run: write out everything, waiting for the reader; a signal during that wait drops the rest
   * (counted in {@link dropped}).
   */
  settle(): void {
    this.flush();
    if (this.backlog.length === 0 || this.abandoned || this.broken) return;
    this.mayWait = true;
    this.pumpBacklog();
    this.abandonIfStalled();
  }

  private writeAll(data: Buffer): void {
    if (this.abandoned) {
      this.dropped += data.length;
      return;
    }
    if (this.backlog.length > 0) {
      // keep the order: older output first
      this.backlog.push(Buffer.from(data));
      this.pumpBacklog();
      return;
    }
    const off = this.writeSome(data, 0);
    if (off < data.length && !this.broken) this.backlog.push(Buffer.from(data.subarray(off)));
  }

  private pumpBacklog(): void {
    while (this.backlog.length > 0 && !this.broken) {
      const b = this.backlog[0]!;
      const off = this.writeSome(b, 0);
      if (off < b.length) {
        this.backlog[0] = b.subarray(off);
        return;
      }
      this.backlog.shift();
    }
  }

  /** Write `data` from `off`, waiting for the reader while allowed; returns how far it got. */
  private writeSome(data: Buffer, off: number): number {
    while (off < data.length) {
      const n = this.writeOnce(data, off);
      if (n === null) return data.length; // EPIPE: dropped
      if (n > 0) {
        off += n;
        continue;
      }
      if (!this.mayWait) return off;
      const r = pollFd(this.fd, POLLOUT, -1);
      if (r === -Errno.EINTR) {
        // a signal: let the event loop run its handlers before waiting again (two turns: the loop may be in its
        // poll phase now, and signals are dispatched in the next one)
        this.mayWait = false;
        setImmediate(() => setImmediate(() => (this.mayWait = true)));
        return off;
      }
    }
    return off;
  }

  /** One write without blocking: bytes written (0 when it would block), or null after EPIPE. */
  private writeOnce(data: Buffer, off: number): number | null {
    this.mode ??= this.pickMode();
    if (this.mode === 'socket') {
      const r = sendNoWait(this.fd, data.subarray(off));
      if (r >= 0) return r;
      if (r === -Errno.EAGAIN) return 0;
      if (r === -Errno.EPIPE) return this.brokenPipe();
      if (r !== -Errno.EINTR) throw this.writeFailed(-r);
      return 0;
    }
    try {
      return fs.writeSync(this.mode === 'fifo' ? this.wfd : this.fd, data, off, data.length - off);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EAGAIN') return 0;
      if (code === 'EPIPE') return this.brokenPipe();
      const errno = (e as NodeJS.ErrnoException).errno;
      throw this.writeFailed(errno !== undefined ? Math.abs(errno) : undefined, e);
    }
  }

  /** `Failed to write to output file: "PATH": No space left on device` (disk full), one sentence. */
  private writeFailed(errno: number | undefined, cause?: unknown): BpfscopeError {
    const why = errno !== undefined ? strerror(errno) : String((cause as Error | undefined)?.message);
    return new BpfscopeError(`Failed to write to ${this.name}: ${why}`, cause ? { cause } : {});
  }

  private brokenPipe(): null {
    this.broken = true;
    this.used = 0;
    this.backlog = [];
    this.onBrokenPipe?.();
    return null;
  }

  private pickMode(): 'plain' | 'fifo' | 'socket' {
    let st: fs.Stats;
    try {
      st = fs.fstatSync(this.fd);
    } catch {
      return 'plain';
    }
    if (st.isSocket()) return 'socket';
    if (!st.isFIFO()) return 'plain';
    try {
      // a new open file description of the same pipe: O_NONBLOCK here leaves the shared one (and its users) alone
      this.wfd = fs.openSync(`/proc/self/fd/${this.fd}`, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
      return 'fifo';
    } catch {
      return 'plain';
    }
  }
}
