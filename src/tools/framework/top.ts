/**
 * The screen of bcc's top-like tools (biotop, filetop, slabratetop, ...): each interval starts by clearing the
 * terminal (bcc runs `clear`) or, with `-C`, with an empty line, then prints the time and `/proc/loadavg`.
 */
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
