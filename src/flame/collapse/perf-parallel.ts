/**
 * stackcollapse-perf on both (or more) CPUs: one large file is cut into parts of about PART_BYTES at blank lines
 * (where stackcollapse-perf.pl's per-sample state is reset, so a part can be read from its start as by a fresh
 * collapser), and this thread and the worker threads (perf-worker.ts) take the parts one at a time from a shared
 * counter until none is left, each counting into its own collapser. The worker threads' stacks are then added to
 * this thread's table, which writes the output. Taking parts as they come keeps both CPUs busy to the end whatever
 * each thread's speed (a worker starts ~70-120 ms after this thread, and other processes may take a CPU for a
 * while). The output is the same bytes as one collapser reading the whole file
 * (test/flame/collapse-perf-parallel.test.ts).
 *
 * State that does cross the cuts: the default event filter (the first event of the file), found here before the
 * threads start and given to all of them; and the "Filtering for events of type" warning, given once, by the first
 * part (in file order) that drops a sample. Warnings come out in file order, after all parts are read.
 *
 * Used for one regular file of at least PARALLEL_MIN_BYTES when more than one CPU is available; otherwise, or
 * when no blank line is found near a cut, the caller reads the input on one thread as before
 * (`collapsePerfParallel` returns null).
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { BpfscopeError } from '../../errors.js';
import { CHUNK_BYTES, openInput, readInput, readRange } from '../input.js';
import { firstEvent, type PerfCollapseOptions, PerfCollapser } from './perf.js';
import type { ExportedStacks } from './stack-table.js';

/** Smallest file collapsed in parts (below it a worker's start-up costs more than it saves). */
export const PARALLEL_MIN_BYTES = 8 << 20;
/** Most threads used (this one included). */
const MAX_THREADS = 4;
/**
 * Planned size of a part. The last part a thread takes decides when it ends: with 4 MiB (~15 ms of one thread's
 * time on synth-200M) the threads end within that of each other.
 */
const PART_BYTES = 4 << 20;
/** How far past a planned cut a blank line is looked for. */
const CUT_SEARCH_BYTES = 4 << 20;

/** What a worker is given (workerData). */
export interface PerfWorkerTask {
  path: string;
  /** Part k is the bytes [cuts[k], cuts[k + 1]). */
  cuts: number[];
  /** One int32: the next part to take (Atomics.add), shared by all the threads. */
  next: SharedArrayBuffer;
  options: Omit<PerfCollapseOptions, 'warn'>;
}

/** The warnings of one part, in order. */
export interface PartWarnings {
  part: number;
  warnings: string[];
  /** Index in `warnings` of the "Filtering for events of type" warning, -1 when none. */
  filterWarning: number;
}

/** What a worker posts back: its stacks and its parts' warnings, or the error that stopped it. */
export type PerfWorkerResult = { stacks: ExportedStacks; parts: PartWarnings[] } | { error: string; bpfscope: boolean };

/** The message of the warning stackcollapse-perf.pl gives once when it starts dropping other events. */
export const FILTER_WARNING_PREFIX = 'Filtering for events of type: ';

/**
 * Reads parts of the file with `collapser` until the shared counter `next` passes the last part; returns each part's
 * warnings (the collapser's `warn` must push to `sink.warnings`). Used by this thread and by each worker.
 */
export function collapseParts(
  collapser: PerfCollapser,
  sink: { warnings: string[] },
  path: string,
  cuts: number[],
  next: Int32Array,
): PartWarnings[] {
  const done: PartWarnings[] = [];
  const fd = openInput(path);
  try {
    for (;;) {
      const part = Atomics.add(next, 0, 1);
      if (part >= cuts.length - 1) return done;
      sink.warnings = [];
      collapser.beginPart();
      const end = cuts[part + 1]!;
      // Read straight into the collapser's input area, CHUNK_BYTES at a time.
      for (let at = cuts[part]!; at < end;) {
        const n = collapser.pushRead((b, o, l) => readInput(fd, path, b, o, l, at), Math.min(CHUNK_BYTES, end - at));
        if (n === 0) break;
        at += n;
      }
      collapser.endFile();
      const filterWarning = sink.warnings.findIndex((w) => w.startsWith(FILTER_WARNING_PREFIX));
      done.push({ part, warnings: sink.warnings, filterWarning });
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * Collapses the file `path` in parts on several threads; returns the collapser holding all the stacks (call its
 * `finish()` for the output), or null when the file should be read on one thread (see the module comment).
 * `tuning.parts` sets the number of threads (tests), `minBytes` the size threshold, `partBytes` the planned size
 * of a part (there are at least as many parts as threads).
 * Throws BpfscopeError when the file cannot be read.
 */
export async function collapsePerfParallel(
  path: string,
  opts: PerfCollapseOptions,
  tuning: { parts?: number; minBytes?: number; partBytes?: number } = {},
): Promise<PerfCollapser | null> {
  let size: number;
  try {
    const st = statSync(path);
    if (!st.isFile()) return null;
    size = st.size;
  } catch {
    return null; // the one-thread reader gives the error
  }
  const minBytes = tuning.minBytes ?? PARALLEL_MIN_BYTES;
  const threads = tuning.parts ?? Math.min(MAX_THREADS, availableParallelism());
  if (threads < 2 || size < minBytes) return null;
  const cuts = findCuts(path, size, Math.max(threads, Math.ceil(size / (tuning.partBytes ?? PART_BYTES))));
  if (cuts === null) return null;

  // The default event filter: the first event of the file, as one collapser reading it in order would take it.
  const options: Omit<PerfCollapseOptions, 'warn'> = { ...opts };
  delete (options as PerfCollapseOptions).warn;
  if (!opts.eventFilter) {
    const first = firstEventIn(path, 0, size);
    if (first !== undefined) {
      options.eventFilter = first;
      options.eventDefaulted = true;
    }
  }

  const next = new SharedArrayBuffer(4);
  const results: Promise<PerfWorkerResult>[] = [];
  const workers: Worker[] = [];
  try {
    for (let k = 1; k < threads; k++) {
      const task: PerfWorkerTask = { path, cuts, next, options };
      const w = new Worker(workerUrl(), {
        workerData: task,
        stdout: false,
        stderr: false,
        // A small young generation: ~5 MiB less peak RSS, no measurable change in speed.
        resourceLimits: { maxYoungGenerationSizeMb: 1 },
      });
      workers.push(w);
      results.push(
        new Promise((resolve) => {
          // The result is taken as it arrives: the worker's exit (its isolate torn down, ~10-20 ms) goes on beside
          // the output.
          w.once('message', (m: PerfWorkerResult) => resolve(m));
          w.once('error', (err) => resolve({ error: err.message, bpfscope: false }));
          w.once('exit', (code) => resolve({ error: `worker exited with status ${code}`, bpfscope: false }));
        }),
      );
    }
    const sink = { warnings: [] as string[] };
    const collapser = new PerfCollapser({ ...options, warn: (m) => sink.warnings.push(m) });
    const parts = collapseParts(collapser, sink, path, cuts, new Int32Array(next));
    for (const pending of results) {
      const r = await pending;
      if ('error' in r) {
        throw r.bpfscope ? new BpfscopeError(r.error) : new Error(`stackcollapse-perf worker: ${r.error}`);
      }
      parts.push(...r.parts);
      collapser.addStacks(r.stacks);
    }
    // Warnings in file order; the filter warning only from the first part that gave one.
    parts.sort((a, b) => a.part - b.part);
    const warn = opts.warn ?? (() => {});
    let filterWarned = false;
    for (const p of parts) {
      p.warnings.forEach((w, i) => {
        if (i === p.filterWarning) {
          if (filterWarned) return;
          filterWarned = true;
        }
        warn(w);
      });
    }
    return collapser;
  } finally {
    for (const w of workers) void w.terminate();
  }
}

/** The worker script next to this module: perf-worker.js (tsc's output) or perf-worker.cjs (the CLI bundle). */
function workerUrl(): URL {
  const here = import.meta.url;
  return new URL(here.endsWith('.cjs') ? './perf-worker.cjs' : './perf-worker.js', here);
}

/**
 * (Exported for tests.) Offsets [0, c1, ..., size] cutting the file into `parts` parts of about equal size, each cut
 * just after a blank line ("\n\n"); null when some planned cut has no blank line within CUT_SEARCH_BYTES after it.
 */
export function findCuts(path: string, size: number, parts: number): number[] | null {
  const cuts = [0];
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 16);
    for (let k = 1; k < parts; k++) {
      // Look from one byte before the planned cut, so that a "\n\n" straddling it is found.
      const planned = Math.floor((size * k) / parts);
      let at = Math.max(cuts[k - 1]!, planned - 1);
      const stop = Math.min(size, at + CUT_SEARCH_BYTES);
      let cut = -1;
      while (at < stop && cut < 0) {
        const n = readSync(fd, buf, 0, Math.min(buf.length, stop - at), at);
        if (n <= 0) break;
        let i = buf.indexOf(10, 0);
        while (i >= 0 && i + 1 < n) {
          if (buf[i + 1] === 10) {
            cut = at + i + 2;
            break;
          }
          i = buf.indexOf(10, i + 1);
        }
        // The last byte may be the first "\n" of a pair: read on from it.
        at += n > 1 ? n - 1 : n;
      }
      if (cut < 0 || cut >= size || cut <= cuts[k - 1]!) return null;
      cuts.push(cut);
    }
  } finally {
    closeSync(fd);
  }
  cuts.push(size);
  return cuts;
}

/** The first event (see `firstEvent`) in the file's bytes [start, end). */
function firstEventIn(path: string, start: number, end: number): string | undefined {
  let carry: Buffer | null = null;
  let found: string | undefined;
  // Whole lines only: a line cut by a read waits for the next one.
  readRange(path, start, end, (chunk) => {
    const b: Buffer = carry ? Buffer.concat([carry, chunk]) : chunk;
    const last = b.lastIndexOf(10);
    if (last < 0) {
      carry = Buffer.from(b);
      return;
    }
    found = firstEvent(b, 0, last);
    carry = Buffer.from(b.subarray(last + 1));
    return found === undefined;
  });
  if (found === undefined && carry !== null && (carry as Buffer).length > 0) {
    const c = carry as Buffer;
    found = firstEvent(c, 0, c.length);
  }
  return found;
}
