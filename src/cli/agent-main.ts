/**
 * Entry point of dist/bundle/agent.cjs, the agent's own bundle (scripts/bundle.mjs): `bpfscope agent [args...]`,
 * which the launcher (launch.ts) runs from this file instead of the full cli.cjs. The agent is a long-running
 * process: the ~1.2 MB of the CLI's other code (tools, flame graphs, exporter, UI) would be parsed and held for its
 * whole life (measured: parsing cli.cjs alone costs ~7 MB of RSS). agent.cjs is built without the compiler; the
 * same entry with it is dist/bundle/agent-compile.cjs, which runs the compile child (`agent
 * --internal-compile-child`, fleet/agent/compile-child.ts). C++/Rust names are demangled by children running
 * dist/bundle/demangle-child.cjs (demangle-child-main.ts). Exit status and error reporting are main.ts's:
 * the command's status, or on an error report.ts's one sentence (BPFSCOPE_DEBUG=1: the stack) and its status.
 */
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { COMPILE_CHILD_ARG } from '../fleet/agent/child-arg.js';
import { compileInChild, runCompileChild } from '../fleet/agent/compile-child.js';
import { demangleInChild } from '../fleet/agent/demangle-child.js';
import { main } from '../fleet/agent/main.js';

/** Prints `err` as report.ts does and exits with its status (report.ts is loaded only on failure, as in main.ts). */
async function fail(err: unknown): Promise<never> {
  const { reportError } = await import('./report.js');
  process.exit(reportError(err));
}

process.on('uncaughtException', (err) => void fail(err));
process.on('unhandledRejection', (err) => void fail(err));

const argv = process.argv.slice(2);
if (argv[0] !== 'agent') throw new Error(`agent.cjs runs only the agent subcommand, not ${argv[0]}`);
// The profiler's program is compiled by a short-lived child running this script in its internal mode
// (fleet/agent/compile-child.ts), so that the agent never runs the compiler (docs/fleet-agent.md "Overhead").
// (the launcher, which runs agent-compile.cjs for that mode; run directly, agent.cjs has no compiler: its sibling)
const entry = process.argv[1]!;
const script = basename(entry) === 'agent.cjs' ? join(dirname(entry), 'agent-compile.cjs') : entry;
// C++ and Rust names are demangled by short-lived children, for the same reason (fleet/agent/demangle-child.ts),
// running the small script beside this one: demangle-child.cjs beside agent.cjs (this file's real path, not the
// launcher's, which may be a symlink), demangle-child-main.js beside agent-main.js when run from dist/src.
const here = fileURLToPath(import.meta.url);
const demangler = join(dirname(here), basename(here) === 'agent.cjs' ? 'demangle-child.cjs' : 'demangle-child-main.js');
const run =
  argv[1] === COMPILE_CHILD_ARG
    ? runCompileChild()
    : main(argv.slice(1), {
        compile: (text) => compileInChild(text, script),
        demangle: (names, spawned) => demangleInChild(names, demangler, spawned),
      });
run.then(
  (code) => {
    process.exitCode = code;
    // As main.ts: nothing else should keep us alive; exit explicitly so a stray handle cannot hang the tool.
    setImmediate(() => process.exit(code));
  },
  (err) => fail(err),
);
