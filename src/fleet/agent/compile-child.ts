/**
 * The agent's program compiled in a short-lived child process (runtime/precompiled.ts), so that the long-lived
 * agent never runs the compiler and keeps none of its memory (bench/results/agent-issue15.md section 12).
 *
 * The child is this node (`process.execPath`, with the agent's V8 flags but `--max-opt`) running the same entry
 * script in an internal mode, `SCRIPT agent --internal-compile-child` (`SCRIPT` is the launcher, which runs
 * dist/bundle/agent-compile.cjs for it: src/cli/agent-main.ts with the compiler; the agent's own agent.cjs has none,
 * scripts/bundle.mjs). It reads the program text on stdin until EOF, writes the serialized
 * program on stdout and exits 0; on an error it writes the message on stderr and exits 1. It never creates a kernel
 * object (maps and programs are created by the agent), so nothing is left behind whatever happens to either
 * process: a parent that dies closes the pipes, and the child's write fails and it exits.
 */
import { COMPILE_CHILD_ARG } from './child-arg.js';
import { readStdin, runChild, writeStdout } from './child-process.js';
import { type Precompiled, revivePrecompiled } from '../../runtime/precompiled.js';

/** How long the child may take, ms (a compile takes 0.1-1 s; a loaded machine several times that). */
const CHILD_TIMEOUT_MS = 120_000;

/** The child's side: stdin's program text compiled to stdout. Resolves with the exit status. */
export async function runCompileChild(): Promise<number> {
  const text = (await readStdin()).toString('utf8');
  try {
    // imported here: the agent's own process (compileInChild) never loads the compiler's code
    const { precompile } = await import('../../runtime/precompile.js');
    await writeStdout(precompile({ name: 'agent', text }));
    return 0;
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n`);
    return 1;
  }
}

/**
 * The agent's side: `text` compiled and linked by a child running `script` (see the module comment).
 * @throws BpfscopeError with the child's message when it fails, is killed or takes over two minutes
 */
export async function compileInChild(text: string, script: string): Promise<Precompiled> {
  // the agent's V8 flags but its optimizing compiler: the compiler's work is short and hot (`--max-opt=1`, which
  // saves the long-lived agent memory, made the start ~0.3 s of CPU longer)
  const flags = process.execArgv.filter((a) => !a.startsWith('--max-opt'));
  const out = await runChild({
    args: [...flags, script, 'agent', COMPILE_CHILD_ARG],
    input: text,
    what: 'the compiling process',
    context: "compiling the agent's program: ",
    timeoutMs: CHILD_TIMEOUT_MS,
  });
  return revivePrecompiled(out);
}
