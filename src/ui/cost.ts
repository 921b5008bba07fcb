/**
 * What each UI session costs in CPU time: the kernel-side run time of its BPF programs plus the user-space time
 * the server spends on its results.
 *
 * - Kernel side: `run_time_ns` of each of the session's programs (`struct bpf_prog_info`), as the public
 *   {@link listBpfObjects} reports it. The kernel counts it only while statistics are on, so while any session runs
 *   the meter keeps measuring back-to-back intervals of {@link STATS_PERIOD_MS} with `listBpfObjects({pid, stats})`
 *   (a BPF_ENABLE_STATS fd held for the interval, unless `kernel.bpf_stats_enabled` is already 1) and adds each
 *   program's `delta.runTimeNs` to the session that owns it. Which programs a session owns: the programs this
 *   process holds right after the session started that no other running session owns (starts are serialised by
 *   the session manager, so the new ones are that session's).
 * - User side: {@link SessionCost.measure} wraps the session's handlers in this process (converting results to
 *   JSON, keeping the tail, sending them to the watching tabs, reading a program's maps) with
 *   `process.cpuUsage()` (user + system time of the whole process during the handler).
 *
 * Limits (docs/ui.md): runs between two intervals (the few ms of a listing) and the last partial interval of a
 * session that ends are not counted; the time the runtime spends reading the ring buffer and decoding records
 * before a result reaches the session's handlers is not attributed to any session; statistics switched on add a
 * little run time to every BPF program of the system while the UI has a running session.
 */
import { listBpfObjects } from '../inspect/objects.js';

/** Length of one measured interval of the kernel-side meter, ms. */
export const STATS_PERIOD_MS = 1000;

export class SessionCost {
  /** Kernel run time of the session's programs counted so far, ns. */
  bpfNs = 0n;
  /** User-space CPU time spent in the session's handlers, µs. */
  userUs = 0;
  /** The session's BPF program ids. */
  progIds = new Set<number>();

  /** Run `f`, adding the process's CPU time during it to the session's user-space time. */
  measure<T>(f: () => T): T {
    const start = process.cpuUsage();
    try {
      return f();
    } finally {
      const d = process.cpuUsage(start);
      this.userUs += d.user + d.system;
    }
  }

  /** Milliseconds as shown (two decimals). */
  view(): { bpfMs: number; userMs: number; cpuMs: number } {
    const bpfMs = Number(this.bpfNs / 1000n) / 1000;
    const userMs = this.userUs / 1000;
    const r = (x: number) => Math.round(x * 100) / 100;
    return { bpfMs: r(bpfMs), userMs: r(userMs), cpuMs: r(bpfMs + userMs) };
  }
}

/** Measures the kernel-side run time of the sessions' programs (see the module comment). */
export class CostMeter {
  private running = false;
  private closed = false;
  private wake: (() => void) | undefined;
  /** Why the kernel side is not measured (permission, old kernel), once it failed. */
  unavailable: string | undefined;

  /** @param active the costs of the running sessions (read at each interval) */
  constructor(private readonly active: () => SessionCost[]) {}

  /** The ids of the programs this process holds now. */
  async heldPrograms(): Promise<number[]> {
    try {
      return (await listBpfObjects({ pid: process.pid })).programs.map((p) => p.id);
    } catch (e) {
      this.unavailable ??= (e as Error).message;
      return [];
    }
  }

  /** Give `cost` the programs this process holds that no other running session owns. */
  async assign(cost: SessionCost): Promise<void> {
    const owned = new Set(this.active().flatMap((c) => (c === cost ? [] : [...c.progIds])));
    for (const id of await this.heldPrograms()) if (!owned.has(id)) cost.progIds.add(id);
    this.ensureRunning();
  }

  /** Start measuring (if not already) while sessions run. */
  ensureRunning(): void {
    if (this.running || this.closed || this.unavailable) return;
    this.running = true;
    void this.loop();
  }

  private async loop(): Promise<void> {
    try {
      while (!this.closed && this.active().length > 0) {
        const objs = await listBpfObjects({
          pid: process.pid,
          stats: () =>
            new Promise<void>((resolve) => {
              const t = setTimeout(resolve, STATS_PERIOD_MS);
              this.wake = () => {
                clearTimeout(t);
                resolve();
              };
            }),
        });
        this.wake = undefined;
        const byProg = new Map<number, SessionCost>();
        for (const c of this.active()) for (const id of c.progIds) byProg.set(id, c);
        for (const p of objs.programs) {
          const c = byProg.get(p.id);
          if (c && p.delta) c.bpfNs += p.delta.runTimeNs;
        }
      }
    } catch (e) {
      this.unavailable = (e as Error).message;
    } finally {
      this.running = false;
    }
  }

  /** Stop measuring (the current interval ends now). */
  close(): void {
    this.closed = true;
    this.wake?.();
  }
}
