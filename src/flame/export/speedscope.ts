/**
 * Folded stacks to speedscope's JSON file format (github.com/jlfwong/speedscope, src/lib/file-format-spec.ts; schema
 * https://www.speedscope.app/file-format-schema.json): one "sampled" profile whose samples are the distinct stacks
 * (frame indices root first, into `shared.frames`) and whose weights are their counts; startValue 0, endValue the
 * total.
 */
import type { FoldedStacks } from './stacks.js';

/** speedscope's value units. */
export const SPEEDSCOPE_UNITS = ['none', 'nanoseconds', 'microseconds', 'milliseconds', 'seconds', 'bytes'] as const;
export type SpeedscopeUnit = (typeof SPEEDSCOPE_UNITS)[number];

export interface SpeedscopeOptions {
  /** Profile name (shown by speedscope). */
  name: string;
  /** Unit of the counts: "none" for samples. */
  unit: SpeedscopeUnit;
  /** "name@version" of the program writing the file. */
  exporter: string;
}

/** The speedscope document (serialise with JSON.stringify). */
export function stacksToSpeedscope(folded: FoldedStacks, opts: SpeedscopeOptions): Record<string, unknown> {
  const frames: { name: string }[] = [];
  const index = new Map<string, number>();
  const samples: number[][] = [];
  const weights: number[] = [];
  for (const s of folded.stacks) {
    samples.push(
      s.frames.map((name) => {
        let i = index.get(name);
        if (i === undefined) {
          i = frames.length;
          frames.push({ name });
          index.set(name, i);
        }
        return i;
      }),
    );
    weights.push(s.count);
  }
  return {
    $schema: 'https://www.speedscope.app/file-format-schema.json',
    shared: { frames },
    profiles: [
      {
        type: 'sampled',
        name: opts.name,
        unit: opts.unit,
        startValue: 0,
        endValue: folded.total,
        samples,
        weights,
      },
    ],
    name: opts.name,
    activeProfileIndex: 0,
    exporter: opts.exporter,
  };
}
