/**
 * User-space consumer of a BPF ring buffer map (BPF_MAP_TYPE_RINGBUF). Layout and protocol: kernel
 * `kernel/bpf/ringbuf.c`, `Documentation/bpf/ringbuf.rst`, libbpf `src/ringbuf.c`, and the measurements in KERNEL.md:
 *
 * - mmap offset 0, one page, read-write: `consumer_pos` (u64), which only we write.
 * - mmap offset page_size, read-only, `page_size + 2 * size`: `producer_pos` (u64) on the first page, then the data
 *   area mapped twice back to back, so a record that wraps around is still contiguous.
 * - A record is an 8-byte header `{u32 len; u32 pg_off}` followed by the sample. `len` bit 31 (BUSY): reserved but
 *   not committed yet, stop there; bit 30 (DISCARD): skip it. Records advance by `round_up(len + 8, 8)`.
 *
 * Wake strategy (KERNEL.md "hybrid"): while idle, wait for readability of the map fd (0% CPU); once data flows,
 * poll every ~1 ms with a timer (the producer then rarely has to wake us, which costs ~9 us per wakeup on the traced
 * CPU); after a few empty polls go back to waiting. The wait uses koffi's libuv poll handle on the Node event loop
 * when available ('uv'), else an `epoll_wait` on a libuv worker thread ('thread', bounded by a timeout and woken by
 * an eventfd on close and at process exit, so it never holds up exit).
 */
import { BpfscopeError } from '../errors.js';
import {
  close as closeFd,
  EFD_CLOEXEC,
  EFD_NONBLOCK,
  EPOLL_CLOEXEC,
  EPOLL_CTL_ADD,
  EPOLL_EVENT_SIZE,
  EPOLLIN,
  epollCreate1,
  epollCtl,
  epollEventData,
  epollWaitAsync,
  eventfd,
  type FdPoller,
  kernelError,
  MAP_SHARED,
  mmap,
  munmap,
  type NativePointer,
  PROT_READ,
  PROT_WRITE,
  pageSize,
  pollReadable,
  view,
  write,
} from '../kernel/ffi.js';

const BUSY = 0x80000000;
const DISCARD = 0x40000000;
const HDR_SIZE = 8;
/** 'thread' waiter: pause between two bounded epoll_waits when idle and not keeping the process alive, in ms. */
const REARM_DELAY_MS = 10;

/** Called once per record; `data` is a view into the ring, valid only during the call (copy it to keep it). */
export type RecordCallback = (data: Buffer) => void;

/** Options of {@link RingBufConsumer}. */
export interface RingBufOptions {
  /** Timer period while data flows, in ms. Default 1. */
  pollIntervalMs?: number;
  /** Consecutive empty polls before going back to waiting for a wakeup. Default 4. */
  idlePolls?: number;
  /** Keep the Node event loop alive while the consumer is open. Default false: the session owns liveness. */
  keepAlive?: boolean;
  /** How to wait while idle: 'uv' (libuv poll handle), 'thread' (async epoll_wait), 'auto' (uv if available). */
  waiter?: 'auto' | 'uv' | 'thread';
  /** 'thread' waiter: epoll_wait timeout in ms (bounds how long a pending wait delays exit). Default 100. */
  waitTimeoutMs?: number;
  /** Store consumer_pos at least every N records during a long drain. Default 2048. */
  commitEvery?: number;
  /** Receives errors thrown by the record callback during background consumption (default: rethrown). */
  onError?: (err: unknown) => void;
  /** Called after each background poll that delivered records (e.g. to flush buffered output). */
  onBatch?: () => void;
  /**
   * Records the next background poll may deliver at most (asked before each poll; default
   * {@link DEFAULT_BATCH_RECORDS}). A poll cut
   * short by it is followed by the next one at once (`setImmediate`, after the promise jobs the delivered records
   * started), not after `pollIntervalMs`: how an asynchronous reader downstream gets to run between batches
   * instead of after the ring is empty, which at full rate is never.
   */
  batchLimit?: () => number;
  /**
   * Zero-allocation delivery for hot paths: called instead of the record callback with the Buffer over the whole
   * producer mapping and the record's byte offset and length in it (valid only during the call). Saves creating a
   * Buffer view per record (roughly half the per-record cost).
   */
  rawRecord?: RawRecordCallback;
  /**
   * A 1-entry BPF_F_MMAPABLE ARRAY map whose u64 the BPF programs pass as ringbuf_output's flags. The consumer
   * keeps BPF_RB_NO_WAKEUP there while it polls and 0 while it waits, so the producer only pays for a wakeup (an
   * irq_work interrupt on the traced CPU) when somebody sleeps waiting for one.
   */
  wakeControl?: { readonly fd: number };
}

/**
 * Records one background poll delivers at most when the caller sets no {@link RingBufOptions.batchLimit}. Without a
 * bound, a producer faster than the consumer (a flood: the ring refills while it is read) kept one drain going for as
 * long as the flood lasted, and nothing else ran on the event loop meanwhile: not Ctrl-C's handler (a SIGINT at
 * 160k events/s was obeyed only seconds later, when the traced workload stopped), not the lost-events check. A
 * batch of 16,384 records takes tens of ms to decode and print; the next poll follows at once (setImmediate).
 */
export const DEFAULT_BATCH_RECORDS = 16384;

/** `BPF_RB_NO_WAKEUP` (uapi linux/bpf.h): commit a ring buffer record without waking the consumer. */
export const BPF_RB_NO_WAKEUP = 1n;

/** See {@link RingBufOptions.rawRecord}. */
export type RawRecordCallback = (ring: Buffer, offset: number, length: number) => void;

/** Counters of a consumer's work since it was created. */
export interface RingBufStats {
  /** Records delivered to the callback. */
  records: number;
  /** Records skipped because the producer discarded them. */
  discarded: number;
  /** Times the idle wait returned with data (wakeups seen by user space). */
  wakeups: number;
  /** Timer polls made while data flowed. */
  polls: number;
}

type State = 'new' | 'waiting' | 'polling' | 'closed';

const liveThreadWaiters = new Set<RingBufConsumer>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Node joins the libuv worker threads at exit: wake any thread blocked in epoll_wait so exit is immediate.
  process.on('exit', () => {
    for (const c of liveThreadWaiters) c.wakeWaiter();
  });
}

/**
 * Consumes a ring buffer map. Construct it, call {@link start} for background consumption (or only {@link drain}
 * synchronously), and {@link close} it before closing the map.
 */
export class RingBufConsumer {
  readonly stats: RingBufStats = { records: 0, discarded: 0, wakeups: 0, polls: 0 };
  private readonly size: number;
  private readonly page: number;
  private consPtr: NativePointer;
  private prodPtr: NativePointer;
  private consPos: BigUint64Array;
  private prodPos: BigUint64Array;
  private words: Uint32Array;
  private bytes: Buffer;
  private cons: number;
  private state: State = 'new';
  private inDrain = false;
  private closeRequested = false;
  private timer: NodeJS.Timeout | undefined;
  private emptyPolls = 0;
  private readonly opt: Required<
    Omit<RingBufOptions, 'onError' | 'rawRecord' | 'onBatch' | 'wakeControl' | 'batchLimit'>
  > &
    Pick<RingBufOptions, 'onError' | 'rawRecord' | 'onBatch' | 'batchLimit'>;
  /** The last drain stopped at its limit with records left. */
  private cutShort = false;
  private immediate: NodeJS.Immediate | undefined;
  private waiterKind: 'uv' | 'thread' | undefined;
  private poller: FdPoller | undefined;
  private pollerActive = false;
  private epfd = -1;
  private evfd = -1;
  private waitInFlight = false;
  private readonly events = Buffer.alloc(EPOLL_EVENT_SIZE * 2);
  /** The wake-control map's value (see {@link RingBufOptions.wakeControl}), mapped; absent without one. */
  private wakePtr: NativePointer | undefined;
  private wakeFlag: BigUint64Array | undefined;

  /**
   * Maps the ring of `map` (a RINGBUF map: `fd`, and `maxEntries` = data size in bytes, a power-of-2 multiple of
   * the page size). @throws KernelError when mmap fails
   */
  constructor(
    private readonly map: { readonly fd: number; readonly maxEntries: number },
    private readonly cb: RecordCallback,
    opts: RingBufOptions = {},
  ) {
    this.opt = {
      pollIntervalMs: opts.pollIntervalMs ?? 1,
      idlePolls: opts.idlePolls ?? 4,
      keepAlive: opts.keepAlive ?? false,
      waiter: opts.waiter ?? 'auto',
      waitTimeoutMs: opts.waitTimeoutMs ?? 100,
      commitEvery: opts.commitEvery ?? 2048,
      onError: opts.onError,
      onBatch: opts.onBatch,
      rawRecord: opts.rawRecord,
      batchLimit: opts.batchLimit,
    };
    this.size = map.maxEntries;
    this.page = pageSize();
    if (!Number.isInteger(Math.log2(this.size)) || this.size % this.page !== 0) {
      throw new BpfscopeError(`internal error: ring buffer size ${this.size} is not a power-of-2 multiple of the page`);
    }
    const c = mmap(this.page, PROT_READ | PROT_WRITE, MAP_SHARED, map.fd, 0);
    if (typeof c === 'number') throw kernelError('mmap(ring buffer consumer page)', -c);
    const plen = this.page + 2 * this.size;
    const p = mmap(plen, PROT_READ, MAP_SHARED, map.fd, this.page);
    if (typeof p === 'number') {
      munmap(c, this.page);
      throw kernelError('mmap(ring buffer producer pages)', -p);
    }
    this.consPtr = c;
    this.prodPtr = p;
    const cab = view(c, this.page);
    const pab = view(p, plen);
    this.consPos = new BigUint64Array(cab, 0, 1);
    this.prodPos = new BigUint64Array(pab, 0, 1);
    this.words = new Uint32Array(pab);
    this.bytes = Buffer.from(pab);
    this.cons = Number(Atomics.load(this.consPos, 0));
    if (opts.wakeControl) {
      const w = mmap(this.page, PROT_READ | PROT_WRITE, MAP_SHARED, opts.wakeControl.fd, 0);
      if (typeof w === 'number') {
        munmap(c, this.page);
        munmap(p, plen);
        throw kernelError('mmap(ring buffer wake-control map)', -w);
      }
      this.wakePtr = w;
      this.wakeFlag = new BigUint64Array(view(w, this.page), 0, 1);
      Atomics.store(this.wakeFlag, 0, 0n);
    }
  }

  /** Tell the producers whether to wake us: `wake` while we sleep, not while we poll. */
  private setWake(wake: boolean): void {
    if (this.wakeFlag) Atomics.store(this.wakeFlag, 0, wake ? 0n : BPF_RB_NO_WAKEUP);
  }

  /**
   * While waiting: if records are pending (one committed in the window between the last poll and the wait, whose
   * producer saw "no wakeup"), start polling. The session calls this from its periodic timer as a safety net.
   */
  nudge(): void {
    if (this.state === 'waiting' && this.pending() > 0) this.enterPolling();
  }

  /** Bytes produced but not consumed yet (including records still being written). */
  pending(): number {
    if (this.state === 'closed') return 0;
    return Number(Atomics.load(this.prodPos, 0)) - this.cons;
  }

  /** Which idle wait is in use once started ('uv' or 'thread'). */
  get waiter(): 'uv' | 'thread' | undefined {
    return this.waiterKind;
  }

  get closed(): boolean {
    return this.state === 'closed';
  }

  /**
   * Consumes every committed record now (at most `limit` delivered ones), synchronously (also used at exit). Returns
   * the number of records delivered. Exceptions from the callback propagate after consumer_pos is stored (the
   * throwing record counts as consumed).
   */
  drain(limit = Infinity): number {
    this.cutShort = false;
    if (this.state === 'closed' || this.inDrain || !(limit > 0)) return 0;
    this.inDrain = true;
    const start = this.stats.records;
    const stopAt = start + limit;
    const dataOff = this.page;
    const commitEvery = this.opt.commitEvery;
    const commitBytes = this.size >>> 2;
    let cons = this.cons;
    let sinceCommit = 0;
    let lastCommitPos = cons;
    const raw = this.opt.rawRecord;
    try {
      outer: for (;;) {
        const prod = Number(Atomics.load(this.prodPos, 0));
        if (cons >= prod) break;
        while (cons < prod) {
          const off = cons % this.size;
          const hdr = dataOff + off;
          const len = Atomics.load(this.words, hdr >>> 2);
          if (len & BUSY) break outer;
          const n = len & ~(BUSY | DISCARD) & 0x3fffffff;
          cons += (n + HDR_SIZE + 7) & ~7;
          if (len & DISCARD) {
            this.stats.discarded++;
          } else {
            this.stats.records++;
            this.cons = cons;
            if (raw) raw(this.bytes, hdr + HDR_SIZE, n);
            else this.cb(this.bytes.subarray(hdr + HDR_SIZE, hdr + HDR_SIZE + n));
            if (this.closeRequested) break outer;
            if (this.stats.records >= stopAt) {
              this.cutShort = cons < Number(Atomics.load(this.prodPos, 0));
              break outer;
            }
          }
          if (++sinceCommit >= commitEvery || cons - lastCommitPos >= commitBytes) {
            Atomics.store(this.consPos, 0, BigInt(cons));
            sinceCommit = 0;
            lastCommitPos = cons;
          }
        }
      }
    } finally {
      this.cons = cons;
      if (!this.closed) Atomics.store(this.consPos, 0, BigInt(cons));
      this.inDrain = false;
      if (this.closeRequested) this.finishClose();
    }
    return this.stats.records - start;
  }

  /**
   * Starts background consumption with the hybrid wake strategy. Records are delivered from the event loop.
   * @throws KernelError when the wait cannot be set up
   */
  start(): void {
    if (this.state !== 'new') return;
    const want = this.opt.waiter;
    if (want !== 'thread') {
      this.poller = pollReadable(this.map.fd, () => this.onReadable());
      if (this.poller) {
        this.waiterKind = 'uv';
        this.pollerActive = true;
        if (!this.opt.keepAlive) this.poller.unref();
      } else if (want === 'uv') {
        throw new BpfscopeError('internal error: this koffi has no libuv poll handle (koffi.node.poll)');
      }
    }
    if (!this.poller) {
      this.waiterKind = 'thread';
      const ep = epollCreate1(EPOLL_CLOEXEC);
      if (ep < 0) throw kernelError('epoll_create1', -ep);
      const ev = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
      if (ev < 0) {
        closeFd(ep);
        throw kernelError('eventfd', -ev);
      }
      this.epfd = ep;
      this.evfd = ev;
      let r = epollCtl(ep, EPOLL_CTL_ADD, this.map.fd, EPOLLIN, 1);
      if (r === 0) r = epollCtl(ep, EPOLL_CTL_ADD, ev, EPOLLIN, 2);
      if (r < 0) {
        closeFd(ep);
        closeFd(ev);
        this.epfd = this.evfd = -1;
        throw kernelError('epoll_ctl(ring buffer)', -r);
      }
      liveThreadWaiters.add(this);
      installExitHook();
    }
    this.state = 'waiting';
    // Records may already be there: consume them and start in polling mode if there were any.
    this.pollTick();
    if (this.state === 'waiting') this.armWait();
  }

  private onReadable(): void {
    if (this.state !== 'waiting') return;
    this.stats.wakeups++;
    this.enterPolling();
  }

  private enterPolling(): void {
    this.state = 'polling';
    this.setWake(false);
    this.emptyPolls = 0;
    if (this.poller && this.pollerActive) {
      this.poller.stop();
      this.pollerActive = false;
    }
    this.pollTick();
  }

  /** One poll: drain, then schedule the next poll or go back to waiting. */
  private pollTick(): void {
    if (this.state === 'closed') return;
    this.stats.polls++;
    let got = 0;
    let err: unknown;
    let failed = false;
    try {
      got = this.drain(this.opt.batchLimit?.() ?? DEFAULT_BATCH_RECORDS);
      if (got > 0) this.opt.onBatch?.();
    } catch (e) {
      failed = true;
      err = e;
      got = 1;
    }
    if (!this.closed) {
      if (got > 0) this.emptyPolls = 0;
      else this.emptyPolls++;
      let idle = this.state === 'polling' && this.emptyPolls >= this.opt.idlePolls;
      if (idle) {
        // ask for wakeups again, then look once more: a record committed before the flag changed woke nobody
        this.setWake(true);
        if (this.pending() > 0) {
          this.setWake(false);
          this.emptyPolls = 0;
          idle = false;
        }
      }
      if (idle) {
        this.state = 'waiting';
        this.armWait();
      } else if (this.state === 'polling' || got > 0) {
        if (this.state !== 'polling') this.setWake(false);
        this.state = 'polling';
        if (this.cutShort && got > 0) {
          this.immediate = setImmediate(() => {
            this.immediate = undefined;
            this.pollTick();
          });
          if (!this.opt.keepAlive) this.immediate.unref();
        } else {
          this.schedulePoll();
        }
      }
    }
    if (failed) {
      if (this.opt.onError) this.opt.onError(err);
      else throw err;
    }
  }

  private schedulePoll(): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.pollTick();
    }, this.opt.pollIntervalMs);
    if (!this.opt.keepAlive) this.timer.unref();
  }

  private armWait(): void {
    if (this.state !== 'waiting') return;
    if (this.poller) {
      if (!this.pollerActive) {
        this.poller.start(() => this.onReadable());
        this.pollerActive = true;
      }
      return;
    }
    if (this.waitInFlight) return;
    this.waitInFlight = true;
    epollWaitAsync(this.epfd, this.events, this.opt.waitTimeoutMs, (n) => this.onWaitDone(n));
  }

  private onWaitDone(n: number): void {
    this.waitInFlight = false;
    if (this.state === 'closed') {
      this.closeWaitFds();
      return;
    }
    let dataReady = false;
    for (let i = 0; i < n; i++) if (epollEventData(this.events, i) === 1) dataReady = true;
    if (dataReady && this.state === 'waiting') {
      this.stats.wakeups++;
      this.enterPolling();
      return;
    }
    if (this.state !== 'waiting') return;
    if (this.opt.keepAlive) {
      this.armWait();
    } else {
      // Re-arm from an unref'd timer: between two waits nothing holds the loop, so an otherwise idle process exits
      // (after at most waitTimeoutMs). The delay must not expire within this loop iteration, or the timer would
      // re-arm before libuv checks whether the loop is still alive; data arriving meanwhile is seen by the next wait.
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.armWait();
      }, REARM_DELAY_MS);
      this.timer.unref();
    }
  }

  /** Wakes a pending epoll_wait ('thread' waiter); used by close() and at process exit. */
  wakeWaiter(): void {
    if (this.evfd >= 0) {
      const one = Buffer.alloc(8);
      one.writeBigUInt64LE(1n, 0);
      write(this.evfd, one);
    }
  }

  private closeWaitFds(): void {
    closeFd(this.epfd);
    closeFd(this.evfd);
    this.epfd = this.evfd = -1;
  }

  /**
   * Stops consumption and unmaps the ring (records not drained yet are dropped: call {@link drain} first to keep
   * them). Safe to call from inside the record callback. Afterwards nothing of this consumer keeps the process
   * alive. Idempotent.
   */
  close(): void {
    if (this.state === 'closed' || this.closeRequested) return;
    if (this.inDrain) {
      this.closeRequested = true;
      return;
    }
    this.finishClose();
  }

  private finishClose(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.closeRequested = false;
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.immediate) {
      clearImmediate(this.immediate);
      this.immediate = undefined;
    }
    if (this.poller) {
      this.poller.close();
      this.poller = undefined;
      this.pollerActive = false;
    }
    if (this.waiterKind === 'thread') {
      liveThreadWaiters.delete(this);
      if (this.waitInFlight) {
        // The worker thread still uses the epoll fd: wake it; onWaitDone closes the fds.
        this.wakeWaiter();
      } else {
        this.closeWaitFds();
      }
    }
    munmap(this.consPtr, this.page);
    munmap(this.prodPtr, this.page + 2 * this.size);
    if (this.wakePtr) {
      munmap(this.wakePtr, this.page);
      this.wakePtr = undefined;
      this.wakeFlag = undefined;
    }
    // Drop the views: touching them now would fault.
    this.consPos = new BigUint64Array(1);
    this.prodPos = new BigUint64Array(1);
    this.words = new Uint32Array(0);
    this.bytes = Buffer.alloc(0);
  }
}
