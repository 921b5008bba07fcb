/**
 * Entry point of dist/bundle/demangle-child.cjs (scripts/bundle.mjs): the agent's short-lived demangling child
 * (fleet/agent/demangle-child.ts), NUL-separated names on stdin, their demangled forms on stdout. The agent runs it
 * with node directly, not through the launcher: it holds the demangler and nothing else, so that a batch costs little
 * more than node's own start. Exit status 0, or 1 when the demangler cannot be loaded (the reason on stderr).
 */
import { runDemangleChild } from '../fleet/agent/demangle-child.js';

// A no-op listener, as the launcher has: libuv then owns the signal, so Node's inspector never starts on SIGUSR1.
process.on('SIGUSR1', () => {});
runDemangleChild().then(
  (code) => process.exit(code),
  (e: Error) => {
    process.stderr.write(`${e.message}\n`);
    process.exit(1);
  },
);
