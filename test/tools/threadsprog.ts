/**
 * The thread test program (test/tools/fixtures/threads.c), built by {@link compileFixture}: `bpfs_threads N`
 * creates and joins N threads running `bpfs_thread_fn`, then waits until its stdin closes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from '../helpers/cli.js';
import { compileFixture } from '../helpers/compile.js';

export const THREADS_COMM = 'bpfs_threads';
export const THREAD_FUNCTION = 'bpfs_thread_fn';

/** Absolute path of the compiled program (-O1, with its symbol table). */
export function threadsProgPath(): string {
  return compileFixture(join(repoRoot(), 'test', 'tools', 'fixtures', 'threads.c'), THREADS_COMM);
}

/** Start the program with `n` threads; it stays alive until `child.stdin` is closed. */
export function startThreadsProg(n: number): ChildProcess {
  return spawn(threadsProgPath(), [String(n)], { stdio: ['pipe', 'ignore', 'inherit'] });
}
