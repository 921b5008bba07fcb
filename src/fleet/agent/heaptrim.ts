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
 */
import { mallocFreeBytes, mallocTrim } from '../../kernel/ffi.js';

/** Default free malloc bytes below which no trim is done: 1 MiB (less is not worth a system call). */
export const TRIM_THRESHOLD_BYTES = 1 << 20;

export interface HeapTrimmerOptions {
  /** Free malloc bytes (mallinfo2's fordblks: resident or not) below which no trim is done, bytes. */
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
  private readonly threshold: number;
  private readonly freeBytes: () => number | undefined;
  private readonly trim: () => boolean;

  constructor(o: HeapTrimmerOptions = {}) {
    this.threshold = o.thresholdBytes ?? TRIM_THRESHOLD_BYTES;
    this.freeBytes = o.freeBytes ?? mallocFreeBytes;
    this.trim = o.trim ?? mallocTrim;
  }

  /** Trims if the free bytes reach the threshold; returns whether it trimmed (never where mallinfo2 is missing). */
  check(): boolean {
    const free = this.freeBytes();
    if (free === undefined || free < this.threshold) return false;
    this.trim();
    this.trims++;
    return true;
  }
}
