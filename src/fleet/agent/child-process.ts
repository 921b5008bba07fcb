/**
 * A short-lived child process of the agent (the compile child, compile-child.ts; the demangling child,
 * demangle-child.ts), both sides: the agent runs this node (`process.execPath`) with the given arguments, writes its
 * input whole to its stdin and collects its stdout until it exits ({@link runChild}); the child reads its stdin to
 * the end and writes its answer ({@link readStdin}, {@link writeStdout}). Neither child creates a kernel object or keeps a file: a parent that dies
 * closes the pipes, and the child's read or write fails and it exits.
 */
import { spawn } from 'node:child_process';
import { BpfscopeError } from '../../errors.js';

/** How to run one child. */
export interface ChildRun {
  /** node's arguments: V8 flags, the script, its arguments. */
  args: readonly string[];
  /** Written to the child's stdin, which is then closed. */
  input: string;
  /** How messages name the child ("the compiling process"). */
  what: string;
  /** Prefix of the message when the child fails ("compiling the agent's program: "). */
  context?: string;
  /** Killed with SIGKILL after this many ms. */
  timeoutMs: number;
  /** Told the child's pid once it is started. */
  spawned?: (pid: number) => void;
}

/**
 * Runs a child (see the module comment); resolves with its stdout when it exits 0.
 * @throws BpfscopeError `cannot start WHAT: ...` when it cannot start; `CONTEXT WHAT failed (status N): LAST LINE OF
 * STDERR` or `... was killed by SIGNAL` (after `timeoutMs`) otherwise
 */
export function runChild(run: ChildRun): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...run.args], { stdio: ['pipe', 'pipe', 'pipe'] });
    if (child.pid !== undefined) run.spawned?.(child.pid);
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    const timer = setTimeout(() => child.kill('SIGKILL'), run.timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new BpfscopeError(`cannot start ${run.what}: ${e.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolve(Buffer.concat(out));
      const msg = Buffer.concat(err).toString('utf8').trim().split('\n').pop();
      const how = signal ? `was killed by ${signal}` : `failed (status ${code})`;
      reject(new BpfscopeError(`${run.context ?? ''}${run.what} ${how}${msg ? `: ${msg}` : ''}`));
    });
    child.stdin.on('error', () => {
      /* the child died first: reported by 'close' */
    });
    child.stdin.end(run.input);
  });
}

/** The child's side: all of stdin, until EOF. */
export async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** The child's side: `data` written to stdout; resolves once written. */
export function writeStdout(data: string | Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => process.stdout.write(data, (e) => (e ? reject(e) : resolve())));
}
