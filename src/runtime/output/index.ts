/**
 * Output formatting for the runtime: bpftrace's text format and its `-f json` NDJSON format, printf, time and
 * histogram rendering, and the buffered file-descriptor sink they write to.
 *
 * Typical use:
 * ```ts
 * const out = createOutput('text', new OutputSink(1));
 * out.attachedProbes(3);
 * out.printf(renderPrintf(compiled, args));
 * out.flush();                 // after each batch of ring buffer events
 * out.exitMaps(dumps);         // at exit (or out.end() when maps are not printed)
 * out.flush();
 * ```
 */

import { JsonOutput } from './json.js';
import type { AggValue, MapDump, Value } from './model.js';
import { OutputSink } from './sink.js';
import { TextOutput } from './text.js';

/** What the runtime prints through; one implementation per output format. */
export interface Output {
  /** printf() output (already rendered by `renderPrintf`). */
  printf(text: string): void;
  /** print(@m) / print(@m, top, div); `top` 0 = all entries, `div` 0 or absent = 1. */
  printMap(dump: MapDump, opts?: { top?: number | bigint; div?: number | bigint }): void;
  /** print(expr) of a non-map value. */
  printValue(v: Value | AggValue): void;
  /** time() output (already formatted, see `formatTimeBuiltin`). */
  time(text: string): void;
  cat(text: string): void;
  join(text: string): void;
  syscall(text: string): void;
  /** After attaching: text prints `Attached N probe(s)` to stderr, JSON an attached_probes record to the output. */
  attachedProbes(n: number): void;
  /** `Detaching N probes...` before a detach that will take long (text output only; optional). */
  detachingProbes?(n: number): void;
  /** Ring buffer records lost since the last report: text `Lost N events` on stderr, JSON a lost_events record. */
  lostEvents(n: number | bigint): void;
  /** End of the run without printing maps: text prints two newlines, JSON nothing. */
  end(): void;
  /**
   * `--mode bench`: the result of benchmark `names[index]` (average ns per run, repeat count). Text prints a table
   * (its header before the first result), JSON a benchmark_result record.
   */
  benchmarkResult(names: string[], index: number, averageNs: number, iters: number): void;
  /** `--mode test`: test `names[index]` starts (text: the `[ RUN      ]` line, with the header before the first). */
  testStart(names: string[], index: number): void;
  /**
   * `--mode test`: test `names[index]` ended (`passed` has the results so far). Text: `[       OK ]` or
   * `[  FAILED  ]` and, after the last, the summary; JSON a test_result record.
   */
  testResult(names: string[], index: number, durationNs: number, passed: boolean[]): void;
  /** End of the run and the maps printed at exit (sorted by name here; empty maps print nothing). */
  exitMaps(dumps: MapDump[]): void;
  /**
   * The maps printed on SIGUSR1 (a program without `self:signal:SIGUSR1` probes): as exitMaps without the end's
   * blank lines, i.e. print(@map) of each map sorted by name (bpftrace 0.17-0.21's print_maps on SIGUSR1).
   */
  signalMaps(dumps: MapDump[]): void;
  /** Write out buffered output. */
  flush(): void;
}

/**
 * Create the output for `format`, writing to `sink`. Text mode writes its notices (`Attached N probes`,
 * `Lost N events`) to `err` (default: an unbuffered sink on fd 2).
 */
export function createOutput(format: 'text' | 'json', sink: OutputSink, err?: OutputSink): Output {
  if (format === 'json') return new JsonOutput(sink);
  return new TextOutput(sink, err ?? new OutputSink(2, { bufferSize: 0 }));
}

export type { Display, DisplayMap, MapMessageType } from './format.js';
export { compareKeys, formatMap, toDisplay } from './format.js';
export type { HistLabel, Histogram } from './hist.js';
export {
  buildLinearHistogram,
  buildLog2Histogram,
  linearBucketBounds,
  linearBucketIndex,
  log2BucketBounds,
  log2BucketIndex,
} from './hist.js';
export { jsonHist, jsonInt, jsonString, jsonValue, mapJson } from './json.js';
export type { AggValue, MapDump, MapEntry, Value } from './model.js';
export type { CompiledPrintf, PrintfSpec } from './printf.js';
export { checkPrintfArgs, compilePrintf, renderPrintf } from './printf.js';
export { OutputSink, type OutputSinkOptions } from './sink.js';
export {
  type BrokenDownTime,
  breakDown,
  DEFAULT_TIME_FORMAT,
  formatStrftimeBuiltin,
  formatTimeBuiltin,
  strftime,
} from './strftime.js';
export { histText, mapText, valueText } from './text.js';
export { JsonOutput, TextOutput };
