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
import { spawn } from 'node:child_process';
import { BpfscopeError } from '../../errors.js';
import { COMPILE_CHILD_ARG } from './child-arg.js';
import { type Precompiled, revivePrecompiled } from '../../runtime/precompiled.js';

/** How long the child may take, ms (a compile takes 0.1-1 s; a loaded machine several times that). */
const CHILD_TIMEOUT_MS = 120_000;

/** The child's side: stdin's program text compiled to stdout. Resolves with the exit status. */
export async function runCompileChild(): Promise<number> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  try {
    // imported here: the agent's own process (compileInChild) never loads the compiler's code
    const { precompile } = await import('../../runtime/precompile.js');
    const bytes = precompile({ name: 'agent', text: Buffer.concat(chunks).toString('utf8') });
    await new Promise<void>((resolve, reject) => process.stdout.write(bytes, (e) => (e ? reject(e) : resolve())));
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
export function compileInChild(text: string, script: string): Promise<Precompiled> {
  return new Promise((resolve, reject) => {
    // the agent's V8 flags but its optimizing compiler: the compiler's work is short and hot (`--max-opt=1`, which
    // saves the long-lived agent memory, made the start ~0.3 s of CPU longer)
    const flags = process.execArgv.filter((a) => !a.startsWith('--max-opt'));
    const child = spawn(process.execPath, [...flags, script, 'agent', COMPILE_CHILD_ARG], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    const timer = setTimeout(() => child.kill('SIGKILL'), CHILD_TIMEOUT_MS);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new BpfscopeError(`cannot start the compiling process: ${e.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) {
        try {
          resolve(revivePrecompiled(Buffer.concat(out)));
        } catch (e) {
          reject(e);
        }
        return;
      }
      const msg = Buffer.concat(err).toString('utf8').trim().split('\n').pop();
      const how = signal ? `was killed by ${signal}` : `failed (status ${code})`;
      reject(new BpfscopeError(`compiling the agent's program: the compiling process ${how}${msg ? `: ${msg}` : ''}`));
    });
    child.stdin.on('error', () => {
      /* the child died first: reported by 'close' */
    });
    child.stdin.end(text);
  });
}
