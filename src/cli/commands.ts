/**
 * Subcommands of `bpfscope` besides running a bpftrace program (`bpfscope NAME [args...]`). Each entry loads its
 * module lazily (startup time matters) and returns the process exit code. Tools and flame graph utilities register
 * here; anything not listed is treated as a script file name, as bpftrace does.
 */
export type CommandMain = (argv: string[]) => Promise<number>;

export interface CommandEntry {
  /** One line for `bpfscope tools` / `--help`. */
  summary: string;
  load: () => Promise<CommandMain>;
}

export const COMMANDS: Record<string, CommandEntry> = {};
