/**
 * Entry point of dist/bundle/flame.cjs, the second CLI bundle (scripts/bundle.mjs): `bpfscope NAME [args...]` for
 * the flame graph and heat map subcommands (flame-commands.ts), which the launcher (launch.ts) runs from this small
 * file instead of the full cli.cjs. Exit status and error reporting are main.ts's: the command's status, or on an
 * error report.ts's one sentence (BPFSCOPE_DEBUG=1: the stack) and its status.
 */
import { FLAME_COMMANDS } from './flame-commands.js';

/** Prints `err` as report.ts does and exits with its status (report.ts is loaded only on failure, as in main.ts). */
async function fail(err: unknown): Promise<never> {
  const { reportError } = await import('./report.js');
  process.exit(reportError(err));
}

process.on('uncaughtException', (err) => void fail(err));
process.on('unhandledRejection', (err) => void fail(err));

const argv = process.argv.slice(2);
const command = FLAME_COMMANDS[argv[0] ?? ''];
if (!command) throw new Error(`flame.cjs runs only ${Object.keys(FLAME_COMMANDS).join(', ')}, not ${argv[0]}`);
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
