/**
 * Entry point of dist/bundle/tools.cjs, the bcc tools' CLI bundle (scripts/bundle.mjs): `bpfscope TOOL [args...]`
 * (tool-commands.ts), which the launcher (launch.ts) runs from this file instead of the full cli.cjs: the same tool
 * code without the exporter, agent, web UI and flame commands. Exit status and error reporting: subcommand-main.ts.
 */
import { runSubcommand } from './subcommand-main.js';
import { TOOL_COMMANDS } from './tool-commands.js';

runSubcommand(TOOL_COMMANDS, 'tools.cjs');
