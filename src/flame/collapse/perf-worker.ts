/**
 * Worker thread of perf-parallel.ts: collapses the bytes [start, end) of a `perf script` file (a part that starts
 * after a blank line) and posts back its stacks (typed arrays transferred, not copied) and its warnings in order.
 * Run only by perf-parallel.ts with a PerfWorkerTask as workerData.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { BpfscopeError } from '../../errors.js';
import { readRange } from '../input.js';
import { FILTER_WARNING_PREFIX, type PerfWorkerResult, type PerfWorkerTask } from './perf-parallel.js';
import { PerfCollapser } from './perf.js';

function run(task: PerfWorkerTask): PerfWorkerResult {
  const warnings: string[] = [];
  let filterWarning = -1;
  const collapser = new PerfCollapser({
    ...task.options,
    warn: (msg) => {
      if (filterWarning < 0 && msg.startsWith(FILTER_WARNING_PREFIX)) filterWarning = warnings.length;
      warnings.push(msg);
    },
  });
  readRange(task.path, task.start, task.end, (chunk) => collapser.push(chunk));
  collapser.endFile();
  return { stacks: collapser.exportStacks(), warnings, filterWarning, event: collapser.event };
}

if (parentPort) {
  let result: PerfWorkerResult;
  try {
    result = run(workerData as PerfWorkerTask);
  } catch (err) {
    result = { error: (err as Error).message, bpfscope: err instanceof BpfscopeError };
  }
  const transfer =
    'stacks' in result
      ? [result.stacks.arena.buffer, result.stacks.off.buffer, result.stacks.len.buffer, result.stacks.count.buffer]
      : [];
  parentPort.postMessage(result, transfer as ArrayBuffer[]);
}
