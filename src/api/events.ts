/**
 * The typed event stream of a run: the records a program sends (printf, print, time, cat, system, join), loss
 * notices and the end of the run, as {@link TraceEvent} objects in a bounded queue read by `TraceHandle.events()`.
 *
 * Backpressure: the queue holds at most `capacity` events. An event arriving while it is full is dropped and
 * counted; the count is delivered as a `{ kind: 'lost', source: 'consumer' }` event in the dropped events' place,
 * as soon as there is room again (or at the end of the run). Nothing else is buffered, so memory stays bounded
 * whatever the event rate.
 */
import type { CompiledProgram } from '../codegen/plan.js';
import type { SType } from '../lang/types.js';
import type { Output } from '../runtime/output/index.js';
import type { AggValue, MapDump, Value } from '../runtime/output/model.js';
import { type CompiledPrintf, compilePrintf, renderPrintf } from '../runtime/output/printf.js';
import { formatMap, toDisplay } from '../runtime/output/format.js';
import { displayText, mapText } from '../runtime/output/text.js';
import type { PrintfHook } from '../runtime/session.js';
import { dumpToMap, mapValueToJs, type MapValue, type TraceMap, type TraceValue, toJs } from './values.js';

/** A `printf()` record: its arguments as typed values (see {@link TraceValue} for the integer rule). */
export interface PrintfEvent {
  readonly kind: 'printf';
  /** Which printf() call of the program sent it (0-based, in source order; the same id has the same format). */
  readonly id: number;
  /** The format string as written in the program. */
  readonly format: string;
  /** The arguments, one per conversion, in order. */
  readonly values: readonly TraceValue[];
  /** The line as bpftrace (and the CLI) prints it, formatted on demand. */
  text(): string;
}

/** `print(@map)` / `print(@map, top, div)`: a snapshot of the map when the record was read. */
export interface PrintMapEvent {
  readonly kind: 'print';
  readonly map: TraceMap;
  /** `top` (0: all entries) and `div` (1: none) as the call gave them. */
  readonly top: number;
  readonly div: number;
  /** The map as bpftrace's text output prints it for this print() call. */
  text(): string;
}

/** `print(expr)` of a value that is not a map. */
export interface PrintValueEvent {
  readonly kind: 'value';
  readonly value: MapValue;
  text(): string;
}

/** `time()`, `cat()`, `system()` (the command's output), `join()`: the text bpftrace prints. */
export interface TextEvent {
  readonly kind: 'time' | 'cat' | 'system' | 'join';
  readonly text: string;
}

/**
 * Events that were not delivered. `source: 'kernel'`: the BPF program found the ring buffer full (bpftrace's
 * `Lost N events`); `'consumer'`: the `events()` queue was full because its reader fell behind.
 */
export interface LostEvent {
  readonly kind: 'lost';
  readonly source: 'kernel' | 'consumer';
  readonly count: number;
}

/**
 * The run ended; always the last event. `code` is the status `exit(code)` asked for (0 without one). `reason`:
 * `'exit'` the program called exit() or had only BEGIN/END probes, `'command'` the `command`/`pid` process ended,
 * `'stopped'` `stop()`/`close()`/the abort signal ended it.
 */
export interface ExitEvent {
  readonly kind: 'exit';
  readonly code: number;
  readonly reason: 'exit' | 'command' | 'stopped';
}

/** One record of a run's event stream (narrow on `kind`). */
export type TraceEvent = PrintfEvent | PrintMapEvent | PrintValueEvent | TextEvent | LostEvent | ExitEvent;

/**
 * The printf event: a class so that `text()` lives on the prototype and costs nothing per event until called. Its
 * public fields are assigned in the constructor, not declared as class fields: a class field is defined on each
 * new object before the constructor runs (useDefineForClassFields): about a fifth of the reader's CPU per
 * event in bench/api/reader.mjs (bench/results/perf-issue13.md). Own keys stay `id`, `values`, `kind`, in that
 * order, as JSON shows them.
 */
class Printf implements PrintfEvent {
  declare readonly id: number;
  declare readonly values: readonly TraceValue[];
  declare readonly kind: 'printf';
  readonly #ctx: PrintfContext;
  readonly #args: Value[] | undefined;
  constructor(ctx: PrintfContext, id: number, values: readonly TraceValue[], args?: Value[]) {
    this.id = id;
    this.values = values;
    this.kind = 'printf';
    this.#ctx = ctx;
    this.#args = args;
  }

  get format(): string {
    return this.#ctx.compiled.format;
  }

  text(): string {
    return renderPrintf(this.#ctx.compiled, this.#args ?? this.#ctx.toModel(this.values));
  }
}

interface PrintfContext {
  compiled: CompiledPrintf;
  /** Typed values back to the output model, for text() of an event decoded by the fast path. */
  toModel(values: readonly TraceValue[]): Value[];
  /** The fast decoder: integer-only printfs read straight from the record; null when not integer-only. */
  fast: ((buf: Buffer, off: number) => TraceValue[]) | null;
  /** Bytes of the record's arguments (the end of the last one), as the fast decoder reads them. */
  argBytes: number;
  /** The fast decoder's event maker, made by the sink at the first record (it knows the printf id). */
  make?: (buf: Buffer, off: number) => TraceEvent;
}

type IntType = Extract<SType, { kind: 'int' }>;
type IntReader = (buf: Buffer, base: number) => number | bigint;

/** A reader of an integer argument at byte `off` of the record's arguments through Buffer's methods. */
function intReader(t: IntType, off: number): IntReader {
  switch (t.size) {
    case 1:
      return t.signed ? (b, o) => b.readInt8(o + off) : (b, o) => b[o + off]!;
    case 2:
      return t.signed ? (b, o) => b.readInt16LE(o + off) : (b, o) => b.readUInt16LE(o + off);
    case 4:
      return t.signed ? (b, o) => b.readInt32LE(o + off) : (b, o) => b.readUInt32LE(o + off);
    default:
      return t.signed ? (b, o) => b.readBigInt64LE(o + off) : (b, o) => b.readBigUInt64LE(o + off);
  }
}

/**
 * The decoder of an integer-only printf's arguments. 64-bit arguments at 8-aligned offsets (the codegen's layout)
 * are read through BigInt64/BigUint64Array views of the memory under the Buffer, one BigInt per value
 * (readBig*64LE builds it from two halves, with three more BigInts on the way: most of the per-event cost). The
 * views are made for the last Buffer read, which is the ring buffer's mapping for the whole run; a record at an
 * unaligned address (not from the ring) is read with Buffer's methods.
 */
function intDecoder(plan: CompiledProgram['printfs'][number]): (buf: Buffer, off: number) => TraceValue[] {
  const types = plan.argTypes as IntType[];
  const slow = types.map((t, i) => intReader(t, plan.offsets[i]!));
  let vb: Buffer | undefined;
  let base = 0;
  let u64 = new BigUint64Array(0);
  let i64 = new BigInt64Array(0);
  const setViews = (b: Buffer): void => {
    vb = b;
    base = b.byteOffset;
    const n = b.buffer.byteLength >>> 3;
    u64 = new BigUint64Array(b.buffer as ArrayBuffer, 0, n);
    i64 = new BigInt64Array(b.buffer as ArrayBuffer, 0, n);
  };
  const aligned: IntReader[] = types.map((t, i) => {
    const off = plan.offsets[i]!;
    if (t.size !== 8 || off % 8 !== 0) return slow[i]!;
    return t.signed ? (_b, o) => i64[(base + o + off) >>> 3]! : (_b, o) => u64[(base + o + off) >>> 3]!;
  });
  const n = types.length;
  if (n === 1) {
    const [s0, a0] = [slow[0]!, aligned[0]!];
    return (b, o) => {
      if (b !== vb) setViews(b);
      return ((base + o) & 7) === 0 ? [a0(b, o)] : [s0(b, o)];
    };
  }
  if (n === 2) {
    const [s0, s1, a0, a1] = [slow[0]!, slow[1]!, aligned[0]!, aligned[1]!];
    return (b, o) => {
      if (b !== vb) setViews(b);
      return ((base + o) & 7) === 0 ? [a0(b, o), a1(b, o)] : [s0(b, o), s1(b, o)];
    };
  }
  return (b, o) => {
    if (b !== vb) setViews(b);
    const readers = ((base + o) & 7) === 0 ? aligned : slow;
    const out = new Array<TraceValue>(n);
    for (let i = 0; i < n; i++) out[i] = readers[i]!(b, o);
    return out;
  };
}

function printfContext(plan: CompiledProgram['printfs'][number]): PrintfContext {
  const compiled = compilePrintf(plan.format);
  const ints = plan.argTypes.every((t) => t.kind === 'int' && !t.enum);
  const fast: PrintfContext['fast'] = ints ? intDecoder(plan) : null;
  // the fast decoder's arguments are all integers: the end of the last one is the record's argument bytes
  const argBytes = ints
    ? (plan.argTypes as IntType[]).reduce((end, t, i) => Math.max(end, plan.offsets[i]! + t.size), 0)
    : Infinity;
  return {
    compiled,
    fast,
    argBytes,
    toModel: (values) =>
      values.map((v, i) => {
        const t = plan.argTypes[i]!;
        if (t.kind === 'int')
          return { kind: 'int', value: BigInt(v as number | bigint), signed: t.signed, size: t.size };
        return { kind: 'string', value: String(v) };
      }),
  };
}

/** Bytes of a printf record's arguments that {@link EventQueue.pushRaw} keeps undecoded (longer ones are decoded). */
export const RAW_SLOT = 64;

/**
 * Events one batch of `batches()` holds at most: its events become objects when the batch is made, and a reader
 * working through a whole queue's worth at once (65,536) kept them all alive across its own allocations.
 */
export const MAX_BATCH_EVENTS = 4096;

/**
 * The bounded queue between the session (producer, synchronous, in the ring buffer's callbacks) and one async
 * iterator (consumer).
 */
export class EventQueue {
  /** Queued events; a number is a printf event still in {@link raw} (its printf id). */
  private buf: (TraceEvent | number | undefined)[];
  private head = 0;
  private size = 0;
  private dropped = 0;
  private ended = false;
  private failure: unknown = undefined;
  private waiter: ((r: IteratorResult<TraceEvent>) => void) | null = null;
  /** A reader of whole batches (nextBatch) waiting, and whether its wake-up is already scheduled. */
  private batchWaiter: { resolve: (r: IteratorResult<TraceEvent[]>) => void; reject: (e: unknown) => void } | null =
    null;
  private batchScheduled = false;
  /**
   * Record bytes of the printf events queued undecoded ({@link pushRaw}): {@link RAW_SLOT} bytes per queue slot,
   * allocated at the first such push. A queue slot holding a number (the printf id) has its event's bytes here and
   * becomes an event only when it is taken, so the events a reader has not reached yet are not objects the garbage
   * collector copies on every scavenge (with a full queue of 65,536 events that copying was most of the reader's
   * time: bench/results/perf-issue13.md, Part 7).
   */
  private raw: Buffer | null = null;
  private raw32: Int32Array | null = null;
  /** The decoder of each printf id queued raw. */
  private readonly rawMakers: ((buf: Buffer, off: number) => TraceEvent)[] = [];
  /** The last source Buffer of {@link pushRaw} and its Int32Array view (the ring's mapping, for the whole run). */
  private srcBuf: Buffer | null = null;
  private src32: Int32Array | null = null;
  /** Events dropped because the queue was full, over the whole run. */
  droppedTotal = 0;

  constructor(readonly capacity: number) {
    // a push into the last free slot may add a loss notice before its event (capacity + 1), and end() a loss notice
    // and the exit event, which are never dropped: capacity + 3 at most
    this.buf = new Array(capacity + 3);
  }

  /**
   * How many events the next synchronous run of pushes should bring at most: the free room, so that a reader that
   * keeps up loses nothing; unlimited when there is none (the reader is behind: drop and count as before).
   */
  room(): number {
    const free = this.capacity - this.size;
    return free > 0 ? free : Infinity;
  }

  /** Whether the stream has ended and every event was taken. */
  get over(): boolean {
    return this.ended && this.size === 0;
  }

  /** Add an event (dropped and counted when the queue is full or nobody will read it any more). */
  push(ev: TraceEvent): void {
    if (this.ended) return;
    const w = this.waiter;
    if (w !== null && this.size === 0 && this.dropped === 0) {
      this.waiter = null;
      w({ value: ev, done: false });
      return;
    }
    if (this.size >= this.capacity) {
      this.dropOne();
      return;
    }
    if (this.dropped > 0) this.flushDropped();
    this.put(ev);
    this.wake();
  }

  /** Count an event that found the queue full (a batch reader still gets the loss notice). */
  private dropOne(): void {
    this.dropped++;
    this.droppedTotal++;
    if (this.batchWaiter !== null) this.wake();
  }

  /**
   * Add a printf event as its record's `n` argument bytes at `src[off]`, decoded by `make` (from a copy) only when
   * it is taken. Returns false, queueing nothing, when the record is longer than {@link RAW_SLOT}: decode it and
   * {@link push} the event instead. A full queue drops and counts it without decoding it.
   */
  pushRaw(id: number, make: (buf: Buffer, off: number) => TraceEvent, src: Buffer, off: number, n: number): boolean {
    if (n > RAW_SLOT) return false;
    if (this.ended) return true;
    if (this.size >= this.capacity) {
      this.dropOne();
      return true;
    }
    if (this.waiter !== null && this.size === 0 && this.dropped === 0) {
      // a reader waits for exactly this event: hand it over decoded, as push() does
      this.push(make(src, off));
      return true;
    }
    if (this.dropped > 0) this.flushDropped();
    if (this.raw === null) {
      this.raw = Buffer.alloc(this.buf.length * RAW_SLOT);
      this.raw32 = new Int32Array(this.raw.buffer, this.raw.byteOffset, this.raw.length >>> 2);
    }
    const slot = (this.head + this.size) % this.buf.length;
    const start = src.byteOffset + off;
    if ((start & 3) === 0) {
      if (src !== this.srcBuf) {
        this.srcBuf = src;
        this.src32 = new Int32Array(src.buffer, 0, src.buffer.byteLength >>> 2);
      }
      const from = this.src32!;
      const to = this.raw32!;
      const words = (n + 3) >>> 2;
      for (let i = 0, s = start >>> 2, d = (slot * RAW_SLOT) >>> 2; i < words; i++) to[d + i] = from[s + i]!;
    } else {
      src.copy(this.raw, slot * RAW_SLOT, off, off + n);
    }
    this.rawMakers[id] = make;
    this.buf[slot] = id;
    this.size++;
    this.wake();
    return true;
  }

  /** The last event: deliver pending loss notices, then `ev`, then end the stream. */
  end(ev: ExitEvent, failure?: unknown): void {
    if (this.ended) return;
    if (this.dropped > 0) this.flushDropped();
    this.put(ev);
    this.ended = true;
    if (failure !== undefined) this.failure = failure;
    this.wake();
  }

  /** End the stream at once (the run was closed): queued events are discarded. */
  discard(): void {
    this.ended = true;
    this.size = 0;
    this.dropped = 0;
    this.failure = undefined;
    this.buf.fill(undefined);
    this.release();
  }

  private flushDropped(): void {
    this.put({ kind: 'lost', source: 'consumer', count: this.dropped });
    this.dropped = 0;
  }

  private put(ev: TraceEvent): void {
    this.buf[(this.head + this.size) % this.buf.length] = ev;
    this.size++;
  }

  private take(): TraceEvent {
    const v = this.buf[this.head]!;
    const ev = typeof v === 'number' ? this.rawMakers[v]!(this.raw!, this.head * RAW_SLOT) : v;
    this.buf[this.head] = undefined;
    this.head = (this.head + 1) % this.buf.length;
    this.size--;
    return ev;
  }

  private wake(): void {
    if (this.batchWaiter !== null) {
      // after the producer's synchronous run of pushes (one ring buffer batch), hand over everything at once
      if (!this.batchScheduled) {
        this.batchScheduled = true;
        queueMicrotask(() => {
          this.batchScheduled = false;
          const bw = this.batchWaiter;
          if (bw === null) return;
          const r = this.nextBatchNow();
          if (r === null) return;
          this.batchWaiter = null;
          if ('error' in r) bw.reject(r.error);
          else bw.resolve(r);
        });
      }
      return;
    }
    const w = this.waiter;
    if (w === null || this.size === 0) return;
    this.waiter = null;
    w({ value: this.take(), done: false });
  }

  /** The next event, or done once the exit event was taken (rejects then with a failure of the run, if any). */
  next(): Promise<IteratorResult<TraceEvent>> {
    if (this.size > 0) {
      return Promise.resolve({ value: this.take(), done: false });
    }
    if (this.ended) {
      if (this.failure !== undefined) {
        const f = this.failure;
        this.failure = undefined;
        return Promise.reject(f);
      }
      return Promise.resolve({ value: undefined, done: true });
    }
    if (this.dropped > 0) {
      this.flushDropped();
      return Promise.resolve({ value: this.take(), done: false });
    }
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }

  /** A reader stopped waiting (its loop ended): a pending next() or nextBatch() resolves as done. */
  release(): void {
    const w = this.waiter;
    this.waiter = null;
    w?.({ value: undefined, done: true });
    const bw = this.batchWaiter;
    this.batchWaiter = null;
    bw?.resolve({ value: undefined, done: true });
  }

  /**
   * The events queued, at most {@link MAX_BATCH_EVENTS} (a loss notice last when events were dropped since and
   * the queue is empty after the batch), or done once the exit event was taken; waits while there is none. Rejects after the end with a failure of the run, as next().
   */
  nextBatch(): Promise<IteratorResult<TraceEvent[]>> {
    const r = this.nextBatchNow();
    if (r !== null) return 'error' in r ? Promise.reject(r.error) : Promise.resolve(r);
    return new Promise((resolve, reject) => {
      this.batchWaiter = { resolve, reject };
    });
  }

  private nextBatchNow(): IteratorResult<TraceEvent[]> | { error: unknown } | null {
    if (this.size > 0 || this.dropped > 0) {
      const out = new Array<TraceEvent>(Math.min(this.size, MAX_BATCH_EVENTS));
      for (let i = 0; i < out.length; i++) out[i] = this.take();
      if (this.dropped > 0 && this.size === 0) {
        out.push({ kind: 'lost', source: 'consumer', count: this.dropped });
        this.dropped = 0;
      }
      return { value: out, done: false };
    }
    if (this.ended) {
      if (this.failure !== undefined) {
        const error = this.failure;
        this.failure = undefined;
        return { error };
      }
      return { value: undefined, done: true };
    }
    return null;
  }
}

/**
 * The printf hook of a run: typed values straight from the ring buffer where the arguments are integers, else from
 * the decoded output model. `bind()` it to the compiled program before the first event.
 */
export class PrintfSink implements PrintfHook {
  private compiled: CompiledProgram | undefined;
  private readonly ctxs: (PrintfContext | undefined)[] = [];

  constructor(private readonly queue: EventQueue) {}

  bind(compiled: CompiledProgram): void {
    this.compiled = compiled;
  }

  private ctx(id: number): PrintfContext {
    return (this.ctxs[id] ??= printfContext(this.compiled!.printfs[id]!));
  }

  batchLimit(): number {
    return this.queue.room();
  }

  raw(id: number, buf: Buffer, off: number): boolean {
    const c = this.ctxs[id] ?? this.ctx(id);
    const fast = c.fast;
    if (fast === null) return false;
    const make = (c.make ??= (b, o) => new Printf(c, id, fast(b, o)));
    if (!this.queue.pushRaw(id, make, buf, off, c.argBytes)) this.queue.push(make(buf, off));
    return true;
  }

  values(id: number, args: Value[]): void {
    const types = this.compiled!.printfs[id]!.argTypes;
    this.queue.push(
      new Printf(
        this.ctx(id),
        id,
        args.map((a, i) => toJs(a, types[i])),
        args,
      ),
    );
  }
}

/** An {@link Output} turning the run's records other than printf into events of `queue`. */
export function eventOutput(queue: EventQueue): Output {
  const text = (kind: TextEvent['kind']) => (t: string) => queue.push({ kind, text: t });
  return {
    printf: () => {
      /* printf records go through the PrintfSink */
    },
    printMap(dump: MapDump, opts?: { top?: number | bigint; div?: number | bigint }) {
      const top = Number(opts?.top ?? 0);
      const div = Number(opts?.div ?? 1) || 1;
      const map = dumpToMap(dump);
      queue.push({ kind: 'print', map, top, div, text: () => mapText(formatMap(dump, opts)) });
    },
    printValue(v: Value | AggValue) {
      const value = mapValueToJs(v);
      queue.push({ kind: 'value', value, text: () => `${displayText(toDisplay(v))}\n` });
    },
    time: text('time'),
    cat: text('cat'),
    join: text('join'),
    syscall: text('system'),
    lostEvents(n: number | bigint) {
      queue.push({ kind: 'lost', source: 'kernel', count: Number(n) });
    },
    attachedProbes() {},
    end() {},
    benchmarkResult() {},
    testStart() {},
    testResult() {},
    exitMaps() {},
    // API runs do not print maps on SIGUSR1 (trace() sets printMapsAtExit: false); maps are read with map()/maps()
    signalMaps() {},
    flush() {},
  };
}
