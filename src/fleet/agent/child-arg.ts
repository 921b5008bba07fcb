/**
 * The argument after `agent` that runs the agent's compile child (fleet/agent/compile-child.ts), in a module of its
 * own so that the launcher (cli/launch.ts) can pick the child's bundle, dist/bundle/agent-compile.cjs, without
 * loading the agent. Not a user option: not in the agent's usage.
 */
export const COMPILE_CHILD_ARG = '--internal-compile-child';
