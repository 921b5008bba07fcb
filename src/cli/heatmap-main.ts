/**
 * Entry point of dist/bundle/heatmap.cjs (scripts/bundle.mjs): `bpfscope heatmap [args...]` alone, which the launcher
 * (launch.ts) runs from this file instead of flame.cjs: ~70 KB of JavaScript instead of ~175 KB to read and to load
 * from the code cache (the heat map is timed against trace2heatmap.pl, where node's start is half of our time).
 * The same entry as FLAME_COMMANDS.heatmap, imported statically. Exit status and error reporting:
 * subcommand-main.ts.
 */
import { main } from '../flame/commands/heatmap.js';
import type { CommandMain } from './command-entry.js';
import { runSubcommand } from './subcommand-main.js';

/**
 * `main`, then exit at once with its status, not from a later turn of the event loop as runSubcommand does: the
 * output is written by then (write(2), or through process.stdout up to its write callback), and that turn ran V8's
 * pending work (a young-generation collection, compiler jobs) for nothing: ~5-14 ms of CPU and ~130-200 page faults
 * a run on the 1,000,000-line bench trace (bench/results/flame-issue14.md, section heat11).
 */
const mainThenExit: CommandMain = async (argv) => process.exit(await main(argv));

runSubcommand({ heatmap: { summary: '', load: () => Promise.resolve(mainThenExit) } }, 'heatmap.cjs');
