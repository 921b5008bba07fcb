/**
 * The interface every stack collapser implements (one module per input format, as FlameGraph has one
 * stackcollapse-*.pl script per profiler): text goes in as it is read, folded stacks come out at the end.
 *
 * Folded stacks are FlameGraph's interchange format: one line per distinct stack, frames from root to leaf joined
 * by ";", then a space and the count ("java;start_thread;run;work 42").
 *
 * Input and output are bytes, so that arbitrary bytes, valid UTF-8 or not, pass through unchanged and sort in byte
 * order as the Perl scripts do.
 */
export interface StackCollapser {
  /** Feeds the next piece of input; pieces may split lines anywhere. The bytes are not kept after the call. */
  push(chunk: Uint8Array): void;
  /** Marks the end of one input file (a last line without "\n" ends there, as with Perl's `<>`). */
  endFile(): void;
  /**
   * Ends the input; yields the folded stacks as bytes, in pieces of whole lines ending in "\n". A piece is only
   * valid until the next one is requested (collapsers may reuse its memory).
   */
  finish(): Iterable<Uint8Array>;
}

/** Receives the warnings a collapser would print to stderr (one line each, without "\n"). */
export type WarnFn = (message: string) => void;

/**
 * Collapses a whole input held in memory; input and output strings are latin1 (one character per byte), so
 * `Buffer.from(result, 'latin1')` gives the exact output bytes.
 */
export function collapseText(collapser: StackCollapser, input: string | Uint8Array): string {
  collapser.push(typeof input === 'string' ? Buffer.from(input, 'latin1') : input);
  collapser.endFile();
  const pieces: Buffer[] = [];
  for (const piece of collapser.finish()) pieces.push(Buffer.from(piece));
  return Buffer.concat(pieces).toString('latin1');
}
