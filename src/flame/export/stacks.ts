/**
 * Folded stacks ("root;...;leaf count" lines, flamegraph.pl's input) read for conversion to other profile formats
 * (pprof.ts, speedscope.ts). Identical stacks are merged (counts added) in first-seen order; lines without a count
 * are counted as invalid and left out, as flamegraph.pl does; differential lines (two counts) cannot be converted.
 */
import { parseFoldedLine } from '../folded.js';

/** One distinct stack: frame names from the root to the leaf, and its count (samples, or time in some unit). */
export interface FoldedStack {
  frames: string[];
  count: number;
}

export interface FoldedStacks {
  stacks: FoldedStack[];
  /** Sum of the counts. */
  total: number;
  /** Non-empty lines without a count (ignored). */
  invalidLines: number;
}

/** A profile that cannot be converted: `message` is one sentence for the user. */
export class ExportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ExportError';
  }
}

/** Reads folded lines (without "\n"). Throws ExportError for differential input. */
export function readFoldedStacks(lines: Iterable<string>): FoldedStacks {
  const byStack = new Map<string, FoldedStack>();
  let total = 0;
  let invalidLines = 0;
  let n = 0;
  for (const line of lines) {
    n++;
    if (line === '') continue;
    const f = parseFoldedLine(line);
    if (!f) {
      invalidLines++;
      continue;
    }
    if (f.samples2 !== undefined) {
      throw new ExportError(`line ${n} has two counts (differential input), which only the SVG format can show`);
    }
    const s = byStack.get(f.stack);
    if (s) s.count += f.samples;
    else byStack.set(f.stack, { frames: f.stack === '' ? [] : f.stack.split(';'), count: f.samples });
    total += f.samples;
  }
  return { stacks: [...byStack.values()], total, invalidLines };
}
