/**
 * The interval loop of bcc's counting and histogram tools (vfsstat, syscount, funccount, biolatency, runqlat,
 * hardirqs, ...), once: print a header
 * when the probes are attached, then every `seconds` (and once when the run ends) read one interval from the
 * maps as a typed object (a "tick": `{ time, rows }`, `{ time, counts }`, ...), hand it to the output (bcc's
 * text, `--json`'s one object per line, or runTool's `intervals()`), clear the maps, and after the last one print
 * bcc's `Detaching...`. Every tick goes through `writer.emit`, so a histogram tool's `--heatmap` sees them all. The run ends as {@link runProgram} says (Ctrl-C, a count, a duration, `--exec`).
 *
 * A tool supplies only what is its own: the program, how to read one tick, how bcc prints it, and the maps to
 * clear. Checks that need the kernel (kprobes, a tracepoint's field, BTF) go in `requires`: `--ebpf` prints the
 * program without them.
 */
import type { Tracer } from '../../runtime/tracer.js';
import type { ToolWriter } from './output.js';
import { runProgram, withInterruptNote } from './runner.js';

export interface IntervalLoop<T> {
  /** Tool name: the program's source name in error messages. */
  tool: string;
  /** The generated bpftrace program (printed as is by `--ebpf`). */
  program: string;
  writer: ToolWriter;
  /** Kernel checks run before loading, not with `--ebpf`. @throws BpfscopeError saying what is missing */
  requires?: () => void;
  /** Seconds between ticks (null: one tick, at the end). */
  seconds: number | null;
  /** Stop after this many ticks (null or absent: no limit). */
  count?: number | null;
  /** Stop after this many seconds (counted in whole intervals, as bcc's syscount/funccount `-d`). */
  durationSec?: number | null;
  /** `--exec`: a shell command traced from its first instruction; the run ends when it exits. */
  command?: string;
  /** bcc's text printed once the probes are attached (`Tracing... Hit Ctrl-C to end.`, a table header). */
  header?: string;
  /** Called once the probes are attached, after `header` (a header that depends on the run). */
  onStarted?: () => void;
  /** Read one tick from the maps (`now`: the time of the tick); null when the tick has nothing to show. */
  read: (t: Tracer, now: Date) => T | null;
  /** bcc's text for one tick (`now`: the tick's time, for -T; `last`: the tick at the end of the run). */
  format: (tick: T, now: Date, last: boolean) => string;
  /** Maps to clear after each tick (those the program has). */
  clear?: readonly string[];
  /**
   * `Detaching...` after the last tick: `always` (biotop, syscount, ...), `stopped` only when the run did not end
   * by its count (cachestat), `never` (default).
   */
  detach?: 'always' | 'stopped' | 'never';
  /**
   * The tick of a run ended by Ctrl-C, SIGTERM or close(): `print` (default, bcc's `except KeyboardInterrupt`
   * that prints the last interval), `skip` (pidpersec: bcc exits without the second under way), or
   * `skip-interrupted` (argdist: left out only when a signal cut it short, printed at the end of a count or
   * duration).
   */
  last?: 'print' | 'skip' | 'skip-interrupted';
}

/** Run an interval tool (see the module comment); resolves with the exit status (0). */
export async function runIntervals<T>(loop: IntervalLoop<T>): Promise<number> {
  const { writer } = loop;
  if (writer.mode !== 'ebpf') loop.requires?.();
  const count = loop.count ?? null;
  const body = (interrupted: () => boolean): Promise<number> => {
    let ticks = 0;
    return runProgram({
      tool: loop.tool,
      program: loop.program,
      writer,
      interval: { seconds: loop.seconds, count },
      ...(loop.durationSec !== undefined ? { durationSec: loop.durationSec } : {}),
      ...(loop.command !== undefined ? { command: loop.command } : {}),
      onStarted: () => {
        if (loop.header !== undefined) writer.write(loop.header);
        loop.onStarted?.();
      },
      onTick: (t, last) => {
        ticks++;
        const byCount = count !== null && ticks >= count;
        const skip = last && !byCount && (loop.last === 'skip' || (loop.last === 'skip-interrupted' && interrupted()));
        if (!skip) {
          const now = new Date();
          const tick = loop.read(t, now);
          if (tick !== null) writer.emit(tick, (x) => loop.format(x, now, last));
        }
        if (!last && loop.clear?.length) {
          const names = t.mapNames();
          for (const m of loop.clear) if (names.includes(m)) t.clearMap(m);
        }
        if (last && (loop.detach === 'always' || (loop.detach === 'stopped' && !byCount))) {
          writer.line('Detaching...');
        }
      },
    });
  };
  return loop.last === 'skip-interrupted' ? withInterruptNote(body) : body(() => false);
}
