/**
 * The interval loop of the histogram tools, once: at each tick (every `interval` seconds and once at the end) the
 * tool's maps are read into one typed interval object, which goes to `writer.emit` (bcc's text, `--json`, runTool's
 * `intervals()`, `--heatmap`), and the maps are cleared for the next interval.
 */
import type { Tracer } from '../../runtime/tracer.js';
import { type RunOptions, runProgram } from './runner.js';

export interface IntervalRunOptions<I> extends Omit<RunOptions, 'onTick'> {
  /** One interval from the maps; `now` is the tick's time (for -T and JSON timestamps). */
  read(tracer: Tracer, now: Date): I;
  /** The interval's text (bcc's loop body after the sleep); `last`: the tick at the end of the run. */
  format(interval: I, now: Date, last: boolean): string;
  /** Maps cleared after each tick but the last. */
  clear: readonly string[];
}

/** Run a histogram tool's program with its interval loop; resolves with the exit status (see runProgram). */
export function runIntervals<I>(o: IntervalRunOptions<I>): Promise<number> {
  const { read, format, clear, ...run } = o;
  return runProgram({
    ...run,
    onTick: (tracer, last) => {
      const now = new Date();
      o.writer.emit(read(tracer, now), (i) => format(i, now, last));
      if (!last) for (const m of clear) tracer.clearMap(m);
    },
  });
}
