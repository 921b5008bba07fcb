/**
 * The screen of bcc's top-like tools (biotop, filetop, slabratetop, ...): each interval starts by clearing the
 * terminal (bcc runs `clear`) or, with `-C`, with an empty line, then prints the time and `/proc/loadavg`.
 */
import type { Tracer } from '../../runtime/tracer.js';
import { runIntervals } from './interval.js';
import type { ToolWriter } from './output.js';
import { pyFormat } from './pyformat.js';
import { clockTime, loadAvg } from './system.js';

/**
 * What `clear` writes on an xterm-compatible terminal (terminfo `clear` + `E3`): cursor home, erase the display,
 * erase the scrollback. bcc runs the `clear` program; writing its bytes ourselves keeps them in order with the
 * rest of the (buffered) output and needs no terminfo lookup.
 */
export const CLEAR_SCREEN = '\x1b[H\x1b[2J\x1b[3J';

/** The start of one interval's screen: {@link CLEAR_SCREEN}, or `\n` with `-C` (bcc's `print()`). */
export function screenStart(noclear: boolean): string {
  return noclear ? '\n' : CLEAR_SCREEN;
}

/**
 * bcc's `print("%-8s loadavg: %s" % (strftime("%H:%M:%S"), open("/proc/loadavg").read()))`: the file's text keeps
 * its newline, so an empty line follows. `loadavg` is the file's text without the newline.
 */
export function loadavgLine(now: Date = new Date(), loadavg: string = loadAvg()): string {
  return `${clockTime(now).padEnd(8)} loadavg: ${loadavg}\n\n`;
}

/** Options every bcc top-like tool has: `-C` and `-r MAXROWS`. */
export interface TopOptions {
  noclear: boolean;
  maxrows: number;
}

/**
 * One interval's screen of a bcc top-like tool: {@link screenStart}, {@link loadavgLine}, the table heading
 * (`heading`, ending in `\n`) and the already sorted and formatted rows (each ending in `\n`). bcc prints a row
 * before comparing its count with `maxrows`, so a maximum below 1 still prints one row.
 */
export function formatTopScreen(
  heading: string,
  rows: string[],
  o: TopOptions,
  now: Date = new Date(),
  loadavg?: string,
): string {
  return screenStart(o.noclear) + loadavgLine(now, loadavg) + heading + rows.slice(0, Math.max(1, o.maxrows)).join('');
}

/** One interval of a top-like tool (runTool's interval, `--json`'s object): the rows as printed, in order. */
export interface TopTick<R> {
  /** Wall-clock time of the screen, HH:MM:SS. */
  time: string;
  /** `/proc/loadavg` at that time (without its newline). */
  loadavg: string;
  /** The table's rows, sorted as printed and at most `-r MAXROWS` of them (at least one, as bcc). */
  rows: R[];
}

/** The loop of a top-like tool: {@link runIntervals} with bcc's "Tracing..." line, screen and `Detaching...`. */
export interface TopLoop<R> {
  tool: string;
  program: string;
  writer: ToolWriter;
  /** Kernel checks, not run with `--ebpf` (see IntervalLoop.requires in interval.ts). */
  requires?: () => void;
  seconds: number;
  count: number;
  /** `-C` and `-r`. */
  screen: TopOptions;
  /** The table heading (ends in `\n`). */
  heading: string;
  /** One interval's rows from the maps, sorted as bcc prints them. */
  rows: (t: Tracer) => R[];
  /** bcc's text of one row (ends in `\n`). */
  formatRow: (row: R) => string;
  /** Maps cleared after each screen. */
  clear: readonly string[];
}

/** One tick's screen: {@link screenStart}, the loadavg line, the heading and the rows. */
export function formatTopTick<R>(
  tick: TopTick<R>,
  heading: string,
  formatRow: (row: R) => string,
  noclear: boolean,
): string {
  return `${screenStart(noclear)}${tick.time.padEnd(8)} loadavg: ${tick.loadavg}\n\n${heading}${tick.rows.map(formatRow).join('')}`;
}

/** Run a top-like tool; resolves with the exit status. */
export function runTop<R>(loop: TopLoop<R>): Promise<number> {
  return runIntervals<TopTick<R>>({
    tool: loop.tool,
    program: loop.program,
    writer: loop.writer,
    ...(loop.requires ? { requires: loop.requires } : {}),
    seconds: loop.seconds,
    count: loop.count,
    header: `${pyFormat('Tracing... Output every %d secs. Hit Ctrl-C to end', loop.seconds)}\n`,
    read: (t, now) => ({
      time: clockTime(now),
      loadavg: loadAvg(),
      rows: loop.rows(t).slice(0, Math.max(1, loop.screen.maxrows)),
    }),
    format: (tick) => formatTopTick(tick, loop.heading, loop.formatRow, loop.screen.noclear),
    clear: loop.clear,
    detach: 'always',
  });
}
