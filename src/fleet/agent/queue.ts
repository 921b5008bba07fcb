/**
 * The bounded send queue of one backend: profiles wait here while the backend is slow or down. At most `maxItems`
 * profiles and `maxBytes` bytes are held (in memory); when a new profile does not fit, the OLDEST are dropped and
 * counted (`dropped`), so a long outage costs the oldest data and never unbounded memory. One profile is in flight
 * at a time; a failure that may pass (no connection, timeout, HTTP 408/429/5xx, gRPC UNAVAILABLE...) is retried
 * with exponential backoff (`minBackoffMs` doubling up to `maxBackoffMs`), other failures (the server refused the
 * profile) drop it, counted in `rejected`.
 */
import type { Backend, OutgoingProfile } from './push.js';
import { PushError } from './push.js';

export interface QueueOptions {
  maxItems: number;
  maxBytes: number;
  /** Timeout of one send, ms. */
  timeoutMs: number;
  minBackoffMs: number;
  maxBackoffMs: number;
  /** Called with each failed attempt's message (the agent logs the first of a series). */
  onError?: (message: string, backend: string) => void;
}

export class SendQueue {
  private items: OutgoingProfile[] = [];
  private bytesHeld = 0;
  private running = false;
  private wake: (() => void) | undefined;
  private closed = false;
  private backoff = 0;
  /** Profiles sent. */
  sent = 0;
  /** Bytes sent (pprof bytes). */
  sentBytes = 0;
  /** Failed attempts (each retry counts). */
  failures = 0;
  /** Profiles dropped because the queue was full (oldest first). */
  dropped = 0;
  /** Profiles the server refused (not retried). */
  rejected = 0;
  /** Consecutive failed attempts now (0 while the backend is healthy). */
  failing = 0;

  constructor(
    readonly backend: Backend,
    private readonly o: QueueOptions,
  ) {}

  get length(): number {
    return this.items.length;
  }

  get bytes(): number {
    return this.bytesHeld;
  }

  /** Queue `p`, dropping the oldest profiles that do not fit, and make sure the sender runs. */
  add(p: OutgoingProfile): void {
    if (this.closed) return;
    this.items.push(p);
    this.bytesHeld += p.pprof.length;
    // The head may be in flight: it is dropped too if it must (its send result is then ignored).
    while (this.items.length > this.o.maxItems || (this.bytesHeld > this.o.maxBytes && this.items.length > 1)) {
      const old = this.items.shift()!;
      this.bytesHeld -= old.pprof.length;
      this.dropped++;
    }
    if (!this.running) void this.run();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(t);
        this.wake = undefined;
        resolve();
      };
    });
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      while (!this.closed && this.items.length > 0) {
        const p = this.items[0]!;
        try {
          await this.backend.send(p, this.o.timeoutMs);
          this.sent++;
          this.sentBytes += p.pprof.length;
          this.failing = 0;
          this.backoff = 0;
          this.remove(p);
        } catch (e) {
          this.failures++;
          this.failing++;
          const err = e instanceof PushError ? e : new PushError((e as Error).message, true);
          this.o.onError?.(err.message, this.backend.name);
          if (!err.retry) {
            this.rejected++;
            this.remove(p);
            continue;
          }
          this.backoff = this.backoff === 0 ? this.o.minBackoffMs : Math.min(this.o.maxBackoffMs, this.backoff * 2);
          await this.sleep(this.backoff);
        }
      }
    } finally {
      this.running = false;
    }
  }

  private remove(p: OutgoingProfile): void {
    const i = this.items.indexOf(p);
    if (i >= 0) {
      this.items.splice(i, 1);
      this.bytesHeld -= p.pprof.length;
    }
  }

  /**
   * Try to send what is queued for up to `ms` (at shutdown), then stop; what is left is counted as dropped.
   * Resolves when done.
   */
  async drain(ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    this.wake?.();
    while (this.items.length > 0 && Date.now() < deadline && this.failing === 0) {
      if (!this.running) void this.run();
      await new Promise((r) => setTimeout(r, 20));
    }
    this.closed = true;
    this.wake?.();
    this.dropped += this.items.length;
    this.items = [];
    this.bytesHeld = 0;
    this.backend.close();
  }
}
