/**
 * Gives the C heap's freed pages back to the kernel after the agent's bursts of native allocation.
 *
 * Buffers and typed arrays (symbol tables read whole, /proc files, the compiler's and the loader's work at start,
 * each period's batch reads and gzip) are malloc'ed; glibc returns the top of its main arena to the kernel only
 * when the free space is at its very end, so a freed table in the middle of the arena stays resident. Measured in a
 * busy agent (bench/results/agent-issue15.md, section 9): the main arena (`[heap]` in /proc/PID/smaps) stayed at
 * 24.5 MB from 15 s on while array buffers fell from 18 to 11 MB; one malloc_trim(3) brought it to 16 MB.
 * malloc_trim costs what it releases (each release is a madvise, and the pages are faulted in again when reused): a
 * call with nothing new to give back took 0.1-0.2 ms there, one releasing ~8 MB 30-90 ms of wall time at load ~10.
 * It runs after start and after every period whenever mallinfo2(3) counts at least `thresholdBytes` in free chunks.
 * A first version trimmed only when the free bytes had grown by 4 MiB since the last trim: it trimmed once in six
 * periods, since freed pages reused and freed again within a period (resident again) leave the count where it was;
 * trimming every period gave 8 MB less RSS than that version in the same run, at the same CPU (section 9).
 *
 * Before that, a full V8 garbage collection when the process was started with `--expose-gc` (the installed agent is:
 * scripts/bundle.mjs PRELUDE) and V8's heap plus the memory of its buffers grew by `collectAfterBytes` since the last
 * one: buffers are freed only when V8 collects their objects, and V8 collects its old generation when its own heap
 * grows, which the agent's small heap rarely does. Measured (section 14): the array
 * buffers of the first period (the /proc/kallsyms text, ELF tables read whole) stayed 8-29 MB above the live ones for
 * 10-30 s and longer, in some agents for the whole run (RSS ~92 MB against ~66 MB), until a collection came; with a
 * collection after each period every agent was back at its live size after each period.
 */
import { getHeapStatistics } from 'node:v8';
import { mallocFreeBytes, mallocTrim } from '../../kernel/ffi.js';

/**
 * V8's full collection, where node was started with `--expose-gc`; else undefined. A young-generation collection
 * follows it: the full one frees the dead buffers' memory on a background thread (V8's array buffer sweeper), and
 * the next collection waits for that to finish at its start, so the free bytes are counted after it (measured:
 * after one full collection the ~20 MB of test/fleet/agent-heaptrim.test.ts's buffers were still allocated in 3 of 12
 * runs, never with the young collection after it).
 */
function exposedGc(): (() => void) | undefined {
  const gc = (globalThis as { gc?: unknown }).gc;
  if (typeof gc !== 'function') return undefined;
  const collect = gc as (opts?: { type: 'major' | 'minor' }) => void;
  return () => {
    collect();
    collect({ type: 'minor' });
  };
}

/** Default free malloc bytes below which no trim is done: 1 MiB (less is not worth a system call). */
export const TRIM_THRESHOLD_BYTES = 1 << 20;
/** Default growth of V8's heap and buffers since the last collection that makes a check collect: 2 MiB. */
export const COLLECT_AFTER_BYTES = 2 << 20;

/** Bytes of V8's heap in use (garbage not collected yet included) plus its buffers' memory (node:v8). */
function v8HeapBytes(): number {
  const h = getHeapStatistics();
  return h.used_heap_size + h.external_memory;
}

export interface HeapTrimmerOptions {
  /** Free malloc bytes (mallinfo2's fordblks: resident or not) below which no trim is done, bytes. */
  thresholdBytes?: number;
  /** Free bytes in the malloc arenas, or undefined where unknown (default: kernel/ffi.ts mallocFreeBytes). */
  freeBytes?: () => number | undefined;
  /** Release free pages; true if any were (default: kernel/ffi.ts mallocTrim). */
  trim?: () => boolean;
  /**
   * Collect garbage first, so that the buffers no longer used are freed before the free bytes are counted (default:
   * V8's full collection where `--expose-gc` exposes it, else none).
   */
  collect?: () => void;
  /** Growth of `heapBytes` since the last collection (or since start) that makes a check collect, bytes. */
  collectAfterBytes?: number;
  /** V8's heap in use plus its buffers' memory, bytes (default: node:v8 getHeapStatistics). */
  heapBytes?: () => number;
}

/** Decides when to call malloc_trim(3); {@link HeapTrimmer.check} after each burst of work (each period). */
export class HeapTrimmer {
  /** Trims done. */
  trims = 0;
  private readonly threshold: number;
  private readonly freeBytes: () => number | undefined;
  private readonly trim: () => boolean;
  /** Collections done. */
  collections = 0;
  private readonly collect: (() => void) | undefined;
  private readonly collectAfter: number;
  private readonly heapBytes: () => number;
  private collectedAt = 0;

  constructor(o: HeapTrimmerOptions = {}) {
    this.threshold = o.thresholdBytes ?? TRIM_THRESHOLD_BYTES;
    this.freeBytes = o.freeBytes ?? mallocFreeBytes;
    this.trim = o.trim ?? mallocTrim;
    this.collect = o.collect ?? exposedGc();
    this.collectAfter = o.collectAfterBytes ?? COLLECT_AFTER_BYTES;
    this.heapBytes = o.heapBytes ?? v8HeapBytes;
  }

  /**
   * Collects garbage when V8's heap and buffers grew by `collectAfterBytes` since the last collection (see
   * `collect`), then trims if the free bytes reach the threshold; returns whether it trimmed (never where mallinfo2
   * is missing).
   */
  check(): boolean {
    if (this.collect && this.heapBytes() - this.collectedAt >= this.collectAfter) {
      this.collect();
      this.collections++;
      this.collectedAt = this.heapBytes();
    }
    const free = this.freeBytes();
    if (free === undefined || free < this.threshold) return false;
    this.trim();
    this.trims++;
    return true;
  }
}
