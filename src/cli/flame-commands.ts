/**
 * The flame graph and heat map subcommands (FlameGraph's and HeatMap's scripts). They are part of COMMANDS
 * (commands.ts) and are also the whole of the small second CLI bundle, dist/bundle/flame.cjs (flame-main.ts), which
 * the `bpfscope` launcher runs for these names instead of the full cli.cjs: they are run on large files where a
 * tenth of a second counts (issue 14's speed targets), and they need nothing of the compiler, loader or tools.
 */
import type { CommandEntry } from './command-entry.js';

/** The names the launcher sends to flame.cjs: FLAME_COMMANDS's keys (a test checks that the two agree). */
export const FLAME_COMMAND_NAMES: readonly string[] = [
  'stackcollapse-perf',
  'stackcollapse-bpftrace',
  'flamegraph',
  'heatmap',
  'difffolded',
];

export const FLAME_COMMANDS: Record<string, CommandEntry> = {
  'stackcollapse-perf': {
    summary: 'fold "perf script" output into stacks (FlameGraph stackcollapse-perf.pl)',
    load: async () => (await import('../flame/commands/stackcollapse-perf.js')).main,
  },
  'stackcollapse-bpftrace': {
    summary: 'fold bpftrace/bpfscope stack map output into stacks (FlameGraph stackcollapse-bpftrace.pl)',
    load: async () => (await import('../flame/commands/stackcollapse-bpftrace.js')).main,
  },
  flamegraph: {
    summary: 'render folded stacks as an interactive SVG flame graph (FlameGraph flamegraph.pl)',
    load: async () => (await import('../flame/commands/flamegraph.js')).main,
  },
  heatmap: {
    summary: 'render "time latency" events as an interactive SVG latency heat map (HeatMap trace2heatmap.pl)',
    load: async () => (await import('../flame/commands/heatmap.js')).main,
  },
  difffolded: {
    summary: 'merge two folded profiles into differential flame graph input (FlameGraph difffolded.pl)',
    load: async () => (await import('../flame/commands/difffolded.js')).main,
  },
};
