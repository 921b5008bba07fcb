/**
 * stackcollapse-perf on both (or more) CPUs: one large file is cut into parts at blank lines (where
 * stackcollapse-perf.pl's per-sample state is reset, so a part can be read from its start by a fresh collapser),
 * the first part is collapsed on this thread and the others by worker threads (perf-worker.ts), and their stacks
 * are added to this thread's table, which writes the output. The output is the same bytes as one collapser reading
 * the whole file (test/flame/collapse-perf-parallel.test.ts).
 *
 * State that does cross the cuts: the default event filter (the first event seen in the file), found here before
 * the workers start and given to them; and the "Filtering for events of type" warning, given once, by the first
 * part (in file order) that drops a sample. Warnings come out in file order: this thread's as it reads, the
 * workers' after it (collected by them).
 *
 * When the first part has no event line, the parts start without a filter, each defaulting to its own first
 * event; that gives the same result unless a later part's first event differs from an earlier part's, which is
 * checked at the end (then the file is read again on one thread).
 *
 * Used for one regular file of at least PARALLEL_MIN_BYTES when more than one CPU is available; otherwise, or
 * when no blank line is found near a cut, the caller reads the input on one thread as before
 * (`collapsePerfParallel` returns null).
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { BpfscopeError } from '../../errors.js';
import { readRange } from '../input.js';
import { firstEvent, type PerfCollapseOptions, PerfCollapser } from './perf.js';
import type { ExportedStacks } from './stack-table.js';

/** Smallest file collapsed in parts (below it a worker's start-up costs more than it saves). */
export const PARALLEL_MIN_BYTES = 8 << 20;
/** Most parts (threads) used. */
const MAX_PARTS = 4;
/**
 * The first part's size relative to each other part's. This thread starts first but also starts the process,
 * finds the cuts and the first event, and (with Node's default young generation, where the workers have 1 MiB)
 * spent ~20 % more CPU time on an equal half of synth-200M than the worker (per-thread CPU from
 * /proc/thread-self/stat, 4 runs: 103-112 against 85-95 ticks); 0.88 evens them out, so neither waits for the other.
 */
const FIRST_PART_WEIGHT = 0.88;
/** How far past a planned cut a blank line is looked for. */
const CUT_SEARCH_BYTES = 4 << 20;

/** What a worker is given (workerData). */
export interface PerfWorkerTask {
  path: string;
  start: number;
  end: number;
  options: Omit<PerfCollapseOptions, 'warn'>;
}

/** What a worker posts back: its stacks and warnings, or the error that stopped it. */
export type PerfWorkerResult =
  | {
      stacks: ExportedStacks;
      warnings: string[];
      /** Index in `warnings` of the "Filtering for events of type" warning, -1 when none. */
      filterWarning: number;
      /** The event filter at the end of the part ("" when none was given and the part had no event). */
      event: string;
    }
  | { error: string; bpfscope: boolean };

/** The message of the warning stackcollapse-perf.pl gives once when it starts dropping other events. */
export const FILTER_WARNING_PREFIX = 'Filtering for events of type: ';

/**
 * Collapses the file `path` in parts on several threads; returns the collapser holding all the stacks (call its
 * `finish()` for the output), or null when the file should be read on one thread (see the module comment).
 * `parts` overrides the number of parts (tests); `minBytes` the size threshold.
 * Throws BpfscopeError when the file cannot be read.
 */
export async function collapsePerfParallel(
  path: string,
  opts: PerfCollapseOptions,
  tuning: { parts?: number; minBytes?: number } = {},
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
  const parts = tuning.parts ?? Math.min(MAX_PARTS, availableParallelism(), Math.floor(size / minBytes));
  if (parts < 2 || size < minBytes) return null;
  const cuts = findCuts(path, size, parts);
  if (cuts === null) return null;

  // The default event filter: the first event of the file. When the first part has none, the parts start without
  // one, each taking its own first event, and are checked afterwards (see below).
  const options: Omit<PerfCollapseOptions, 'warn'> = { ...opts };
  delete (options as PerfCollapseOptions).warn;
  if (!opts.eventFilter) {
    const first = firstEventIn(path, 0, cuts[1]!);
    if (first !== undefined) {
      options.eventFilter = first;
      options.eventDefaulted = true;
    }
  }

  const results: Promise<PerfWorkerResult>[] = [];
  const workers: Worker[] = [];
  try {
    for (let k = 1; k < cuts.length - 1; k++) {
      const task: PerfWorkerTask = { path, start: cuts[k]!, end: cuts[k + 1]!, options };
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
          // The result is taken once the worker has exited, so that its memory is freed before the merge.
          let result: PerfWorkerResult | undefined;
          w.once('message', (m: PerfWorkerResult) => (result = m));
          w.once('error', (err) => (result ??= { error: err.message, bpfscope: false }));
          w.once('exit', (code) => resolve(result ?? { error: `worker exited with status ${code}`, bpfscope: false }));
        }),
      );
    }
    // The first part here, with the same options as the others. Its warnings wait with theirs (the parts may yet
    // have to be read again in order, see below).
    const warnings: string[] = [];
    const collapser = new PerfCollapser({ ...options, warn: (m) => warnings.push(m) });
    readRange(path, cuts[0]!, cuts[1]!, (chunk) => collapser.push(chunk));
    collapser.endFile();
    let filterWarned = collapser.warnedEventFilter;
    // The filter in force at the end of the parts so far, as one collapser reading them in order would have it.
    let event = collapser.event;
    const done: Extract<PerfWorkerResult, { stacks: ExportedStacks }>[] = [];
    for (const pending of results) {
      const r = await pending;
      if ('error' in r) {
        throw r.bpfscope ? new BpfscopeError(r.error) : new Error(`stackcollapse-perf worker: ${r.error}`);
      }
      // A part that started without a filter is right if none was set yet at its start, or if it saw no event, or
      // if its first event is the filter; otherwise (the first event is in a later part, and then another event
      // follows) the file has to be read in order.
      if (!options.eventFilter && event !== '' && r.event !== '' && r.event !== event) return null;
      if (event === '') event = r.event;
      done.push(r);
    }
    for (const r of done) {
      r.warnings.forEach((w, i) => {
        if (i === r.filterWarning) {
          if (filterWarned) return;
          filterWarned = true;
        }
        warnings.push(w);
      });
      collapser.addStacks(r.stacks);
    }
    const warn = opts.warn ?? (() => {});
    for (const w of warnings) warn(w);
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
 * (Exported for tests.) Offsets [0, c1, ..., size] cutting the file into `parts` parts, the first FIRST_PART_WEIGHT
 * times the size of each other one, each cut just after a blank line ("\n\n"); null when some planned cut has no
 * blank line within CUT_SEARCH_BYTES after it.
 */
export function findCuts(path: string, size: number, parts: number): number[] | null {
  const cuts = [0];
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 16);
    for (let k = 1; k < parts; k++) {
      // Look from one byte before the planned cut, so that a "\n\n" straddling it is found.
      const planned = Math.floor((size * (k - 1 + FIRST_PART_WEIGHT)) / (parts - 1 + FIRST_PART_WEIGHT));
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
