/** What a `bpfscope NAME` subcommand is (commands.ts, flame-commands.ts). */

/** A subcommand's entry point: its arguments after NAME in, the process exit status out. */
export type CommandMain = (argv: string[]) => Promise<number>;

export interface CommandEntry {
  /** One line for `bpfscope tools` / `--help`. */
  summary: string;
  load: () => Promise<CommandMain>;
}
