/**
 * Entry point of dist/bundle/heatmap.cjs (scripts/bundle.mjs): `bpfscope heatmap [args...]` alone, which the launcher
 * (launch.ts) runs from this file instead of flame.cjs: ~70 KB of JavaScript instead of ~175 KB to read and to load
 * from the code cache (the heat map is timed against trace2heatmap.pl, where node's start is half of our time).
 * The same entry as FLAME_COMMANDS.heatmap, imported statically. Exit status and error reporting:
 * subcommand-main.ts.
 */
import { main } from '../flame/commands/heatmap.js';
import { runSubcommand } from './subcommand-main.js';

runSubcommand({ heatmap: { summary: '', load: () => Promise.resolve(main) } }, 'heatmap.cjs');
