/**
 * The bounded send queue of one backend: profiles wait here while the backend is slow or down. At most `maxItems`
 * profiles and `maxBytes` bytes are held (in memory); when a new profile does not fit, the OLDEST are dropped and
 * counted (`dropped`), so a long outage costs the oldest data and never unbounded memory. One profile is in flight
 * at a time; a failure that may pass (no connection, timeout, HTTP 408/429/5xx, gRPC UNAVAILABLE...) is retried
 * with exponential backoff (`minBackoffMs` doubling up to `maxBackoffMs`), other failures (the server refused the
 * profile) drop it, counted in `rejected`.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
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
  /**
   * Keep the queue on disk too, in a directory of its own under `dir` (see {@link DiskStore}): profiles queued
   * when the agent stops are sent by the next agent started with the same directory.
   */
  dir?: string;
}

/** A queued profile and, with an on-disk queue, its file; `dropped`: dropped while its send was in flight. */
type Item = OutgoingProfile & { file?: string; dropped?: boolean };

/**
 * The on-disk copy of a queue: one file per profile, `DIR/BACKEND-HASH/SEQ.profile` (HASH: of the backend's URL;
 * SEQ: 16 digits, increasing), holding one JSON line (series labels, start, duration, Hz) then the gzip'ed pprof.
 * Written to a temporary name and renamed (a crash leaves a whole file or none); removed when the profile is sent
 * or dropped. The directory is created mode 0700, the files 0600 (profiles name the host's processes).
 */
export class DiskStore {
  readonly dir: string;
  private seq = 0;

  constructor(root: string, backend: Backend) {
    const h = createHash('sha256').update(backend.url).digest('hex').slice(0, 12);
    this.dir = join(root, `${backend.name}-${h}`);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
  }

  /** The profiles a previous agent left, oldest first (unreadable files are removed). */
  load(): Item[] {
    const names = readdirSync(this.dir)
      .filter((n) => /^\d{16}\.profile$/.test(n))
      .sort();
    const out: Item[] = [];
    for (const n of names) {
      const file = join(this.dir, n);
      this.seq = Math.max(this.seq, Number(n.slice(0, 16)) + 1);
      try {
        const buf = readFileSync(file);
        const nl = buf.indexOf(10);
        const head = JSON.parse(buf.subarray(0, nl).toString('utf8')) as Omit<OutgoingProfile, 'pprof'>;
        out.push({ ...head, pprof: new Uint8Array(buf.subarray(nl + 1)), file });
      } catch {
        this.remove(file);
      }
    }
    return out;
  }

  /** Write `p`; returns its file. @throws on a write error (the caller keeps the profile in memory only) */
  save(p: OutgoingProfile): string {
    const file = join(this.dir, `${String(this.seq++).padStart(16, '0')}.profile`);
    const head = JSON.stringify({ labels: p.labels, startNs: p.startNs, durationNs: p.durationNs, hz: p.hz });
    writeFileSync(`${file}.tmp`, Buffer.concat([Buffer.from(`${head}\n`), p.pprof]), { mode: 0o600 });
    renameSync(`${file}.tmp`, file);
    return file;
  }

  remove(file: string): void {
    try {
      unlinkSync(file);
    } catch {
      /* gone already */
    }
  }
}

export class SendQueue {
  private items: Item[] = [];
  private readonly disk: DiskStore | undefined;
  /** Profiles loaded from the on-disk queue at start. */
  loaded = 0;
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

  /** @throws when `o.dir` cannot be created or read (the agent reports it and does not start) */
  constructor(
    readonly backend: Backend,
    private readonly o: QueueOptions,
  ) {
    if (o.dir !== undefined) {
      this.disk = new DiskStore(o.dir, backend);
      const old = this.disk.load();
      this.loaded = old.length;
      for (const p of old) this.enqueue(p);
    }
  }

  get length(): number {
    return this.items.length;
  }

  get bytes(): number {
    return this.bytesHeld;
  }

  /** Queue `p`, dropping the oldest profiles that do not fit, and make sure the sender runs. */
  add(p: OutgoingProfile): void {
    if (this.closed) return;
    let item: Item = p;
    if (this.disk) {
      try {
        item = { ...p, file: this.disk.save(p) };
      } catch (e) {
        this.o.onError?.(`cannot write the on-disk queue: ${(e as Error).message}`, this.backend.name);
      }
    }
    this.enqueue(item);
    if (!this.running) void this.run();
  }

  private enqueue(item: Item): void {
    this.items.push(item);
    this.bytesHeld += item.pprof.length;
    // The head may be in flight: it is dropped too if it must (its send result is then ignored).
    while (this.items.length > this.o.maxItems || (this.bytesHeld > this.o.maxBytes && this.items.length > 1)) {
      const old = this.items.shift()!;
      this.bytesHeld -= old.pprof.length;
      if (old.file) this.disk?.remove(old.file);
      old.dropped = true;
      this.dropped++;
    }
  }

  /** Start sending what was loaded from disk. */
  start(): void {
    if (!this.running && this.items.length > 0) void this.run();
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
          // dropped while in flight, yet delivered: it counts as sent, not dropped
          if (p.dropped) this.dropped--;
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
            if (p.dropped) this.dropped--;
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

  private remove(p: Item): void {
    const i = this.items.indexOf(p);
    if (i >= 0) {
      this.items.splice(i, 1);
      this.bytesHeld -= p.pprof.length;
    }
    if (p.file) this.disk?.remove(p.file);
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
    // on disk, what is left waits for the next agent; in memory it is lost
    if (!this.disk) this.dropped += this.items.length;
    this.items = [];
    this.bytesHeld = 0;
    this.backend.close();
  }
}
