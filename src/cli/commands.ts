/**
 * Subcommands of `bpfscope` besides running a bpftrace program (`bpfscope NAME [args...]`). Each entry loads its
 * module lazily (startup time matters) and returns the process exit code. Tools and flame graph utilities register
 * here; anything not listed is treated as a script file name, as bpftrace does.
 */
import { TOOLS } from '../tools/catalog.js';
import type { CommandEntry } from './command-entry.js';
import { FLAME_COMMANDS } from './flame-commands.js';
import { TOOL_COMMANDS } from './tool-commands.js';

export type { CommandEntry, CommandMain } from './command-entry.js';

export const COMMANDS: Record<string, CommandEntry> = {
  ...FLAME_COMMANDS,
  ps: {
    summary: "list the system's BPF programs by process, with attach points and run statistics (bcc's bpflist)",
    load: async () => (await import('../inspect/ps.js')).main,
  },
  exporter: {
    summary: "Prometheus exporter of bpftrace programs with ebpf_exporter's flags and config schema",
    load: async () => (await import('../fleet/exporter/main.js')).main,
  },
  agent: {
    summary: 'continuous CPU profiling: one pprof per period pushed to Pyroscope or Parca',
    load: async () => (await import('../fleet/agent/main.js')).main,
  },
  ui: {
    summary: 'serve the web UI on this host: tools, one-liners, live histograms, heat maps, flame graphs',
    load: async () => (await import('../ui/main.js')).main,
  },
  tools: {
    summary: 'list the bcc tools and the other commands bpfscope provides, one line each',
    load: async () => {
      const { main } = await import('../tools/catalog.js');
      return (argv) => main(argv, otherCommands());
    },
  },
  ...TOOL_COMMANDS,
};

/**
 * The subcommands that are not bcc tools (flame graph utilities, `tools`, ...), in COMMANDS order, as
 * `{ name, summary }`: `bpfscope tools` and `--help` list them, so a command registered above shows up in both.
 */
export function otherCommands(): { name: string; summary: string }[] {
  const tools = new Set(TOOLS.map((t) => t.name));
  return Object.entries(COMMANDS)
    .filter(([name]) => !tools.has(name))
    .map(([name, c]) => ({ name, summary: c.summary }));
}

/**
 * The SUBCOMMANDS section `--help` adds to bpftrace's usage text: one line per command that is not a bcc tool, then
 * the tool names (wrapped at 100 columns). Generated from COMMANDS and the tool catalog.
 */
export function subcommandHelp(): string {
  const others = otherCommands();
  const width = Math.max(...others.map((c) => c.name.length), 'TOOL [args...]'.length);
  const lines = others.map((c) => `    ${c.name.padEnd(width)}  ${c.summary}`);
  lines.push(`    ${'TOOL [args...]'.padEnd(width)}  run a bcc tool (bpfscope TOOL -h shows its flags), TOOL one of:`);
  let line = '       ';
  for (const t of TOOLS) {
    if (line.length + t.name.length + 1 > 100) {
      lines.push(line);
      line = '       ';
    }
    line += ` ${t.name}`;
  }
  lines.push(line);
  return `\nSUBCOMMANDS:\n    bpfscope COMMAND [args...] runs one of these instead of a program:\n${lines.join('\n')}\n`;
}
