/**
 * Writing a command's whole output to stdout with write(2) on file descriptor 1, without `process.stdout`: making
 * that stream loads and starts Node's stream modules, which cost the heat map command ~10-20 ms of CPU and ~100-200
 * page faults a run on this VM (bench/results/flame-issue14.md, section heat10) to write one buffer.
 */
import { writeSync } from 'node:fs';
import { BpfscopeError } from '../../errors.js';
import { writeOut } from './common.js';

/**
 * Writes `data` to stdout with write(2) on descriptor 1 (a loop over partial writes). As common.ts's `writeOut`: a
 * reader that went away (EPIPE, e.g. `| head`) is not an error, the rest is dropped; other write errors become a
 * BpfscopeError "cannot write output: ...". A non-blocking stdout that is full (EAGAIN: a descriptor another program
 * made non-blocking) gets the rest through `writeOut`, which waits for it.
 */
export async function writeOutDirect(data: Uint8Array): Promise<void> {
  let at = 0;
  while (at < data.length) {
    try {
      at += writeSync(1, data, at, data.length - at);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EPIPE') return;
      if (code === 'EAGAIN') return writeOut(data.subarray(at));
      throw new BpfscopeError(`cannot write output: ${(err as Error).message}`);
    }
  }
}
