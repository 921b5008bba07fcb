/**
 * Worker thread of perf-parallel.ts: takes parts of a `perf script` file (each starting after a blank line) from
 * the counter it shares with the other threads until none is left, collapses them, and posts back its stacks (typed
 * arrays transferred, not copied) and each part's warnings in order. Run only by perf-parallel.ts with a
 * PerfWorkerTask as workerData.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { BpfscopeError } from '../../errors.js';
import { collapseParts, type PerfWorkerResult, type PerfWorkerTask } from './perf-parallel.js';
import { PerfCollapser } from './perf.js';

function run(task: PerfWorkerTask): PerfWorkerResult {
  const sink = { warnings: [] as string[] };
  const collapser = new PerfCollapser(
    { ...task.options, warn: (msg) => sink.warnings.push(msg) },
    { transferable: true },
  );
  const parts = collapseParts(collapser, sink, task.path, task.cuts, new Int32Array(task.next));
  return { stacks: collapser.exportStacks(), parts };
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
