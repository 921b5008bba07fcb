/**
 * The body of the subcommand-only CLI bundles (scripts/bundle.mjs): dist/bundle/flame.cjs (flame-main.ts),
 * heatmap.cjs (heatmap-main.ts) and tools.cjs (tools-main.ts), which the launcher (launch.ts) runs instead of the
 * full cli.cjs for their names. Exit status and error reporting are main.ts's for a subcommand: the command's status, or on an error
 * report.ts's one sentence (BPFSCOPE_DEBUG=1: the stack) and its status.
 */
import type { CommandEntry } from './command-entry.js';

/** Prints `err` as report.ts does and exits with its status (report.ts is loaded only on failure, as in main.ts). */
async function fail(err: unknown): Promise<never> {
  const { reportError } = await import('./report.js');
  process.exit(reportError(err));
}

/**
 * Runs `commands[process.argv[2]]` with the arguments after its name and exits with its status. `bundle` names the
 * file for the error a name outside `commands` gets (the launcher never sends one: a bug, reported as such).
 */
export function runSubcommand(commands: Record<string, CommandEntry>, bundle: string): void {
  process.on('uncaughtException', (err) => void fail(err));
  process.on('unhandledRejection', (err) => void fail(err));
  const argv = process.argv.slice(2);
  const command = commands[argv[0] ?? ''];
  if (!command) throw new Error(`${bundle} runs only ${Object.keys(commands).join(', ')}, not ${argv[0]}`);
  command
    .load()
    .then((main) => main(argv.slice(1)))
    .then(
      (code) => {
        process.exitCode = code;
        // As main.ts: nothing else should keep us alive; exit explicitly so a stray handle cannot hang the tool.
        setImmediate(() => process.exit(code));
      },
      (err) => fail(err),
    );
}
