/**
 * Entry point of dist/bundle/flame.cjs, the flame commands' CLI bundle (scripts/bundle.mjs): `bpfscope NAME
 * [args...]` for the flame graph and heat map subcommands (flame-commands.ts), which the launcher (launch.ts) runs
 * from this small file instead of the full cli.cjs. Exit status and error reporting: subcommand-main.ts.
 */
import { FLAME_COMMANDS } from './flame-commands.js';
import { runSubcommand } from './subcommand-main.js';

runSubcommand(FLAME_COMMANDS, 'flame.cjs');
