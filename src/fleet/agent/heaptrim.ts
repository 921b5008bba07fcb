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
 * So it runs only when mallinfo2(3) shows that the free bytes grew by `thresholdBytes` above the least seen since
 * the last trim (after a trim the free chunks keep counting as free, their pages gone: only new frees count).
 */
import { mallocFreeBytes, mallocTrim } from '../../kernel/ffi.js';

/** Default growth of free malloc bytes that triggers a trim: 4 MiB. */
export const TRIM_THRESHOLD_BYTES = 4 << 20;

export interface HeapTrimmerOptions {
  /** Growth of free malloc bytes (since the least seen after the last trim) that triggers a trim, bytes. */
  thresholdBytes?: number;
  /** Free bytes in the malloc arenas, or undefined where unknown (default: kernel/ffi.ts mallocFreeBytes). */
  freeBytes?: () => number | undefined;
  /** Release free pages; true if any were (default: kernel/ffi.ts mallocTrim). */
  trim?: () => boolean;
}

/** Decides when to call malloc_trim(3); {@link HeapTrimmer.check} after each burst of work (each period). */
export class HeapTrimmer {
  /** Trims done. */
  trims = 0;
  /** Least free bytes seen since the last trim (0 before the first: the first check trims above the threshold). */
  private low = 0;
  private readonly threshold: number;
  private readonly freeBytes: () => number | undefined;
  private readonly trim: () => boolean;

  constructor(o: HeapTrimmerOptions = {}) {
    this.threshold = o.thresholdBytes ?? TRIM_THRESHOLD_BYTES;
    this.freeBytes = o.freeBytes ?? mallocFreeBytes;
    this.trim = o.trim ?? mallocTrim;
  }

  /** Trims if the free bytes grew by the threshold; returns whether it trimmed (never where mallinfo2 is missing). */
  check(): boolean {
    const free = this.freeBytes();
    if (free === undefined) return false;
    if (free < this.low) this.low = free;
    if (free - this.low < this.threshold) return false;
    this.trim();
    this.trims++;
    this.low = this.freeBytes() ?? free;
    return true;
  }
}
