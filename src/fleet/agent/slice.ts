/**
 * Cooperative time slicing for the agent's per-period work (symbolizing and encoding a period can take hundreds of
 * ms on a busy host): loops call {@link Slicer.pause} every few iterations and await the promise it returns once
 * the current slice (default 10 ms) is used up, so that timers, pushes and the metrics server run between slices
 * instead of waiting for the whole period to be processed.
 */
export class Slicer {
  private start = performance.now();
  private n = 0;

  constructor(private readonly sliceMs = 10) {}

  /**
   * undefined while the slice lasts (checked every 32 calls: the clock is not free), else a promise resolved on the
   * next turn of the event loop (setImmediate: after pending I/O callbacks), which starts a new slice.
   */
  pause(): Promise<void> | undefined {
    if ((++this.n & 31) !== 0 || performance.now() - this.start < this.sliceMs) return undefined;
    return new Promise((resolve) =>
      setImmediate(() => {
        this.start = performance.now();
        resolve();
      }),
    );
  }
}
