/**
 * memleak's test program (test/tools/fixtures/leakprog.c): compiled on first use with
 * `cc -O0 -fno-omit-frame-pointer -g` by test/helpers/compile.ts (a changed source gets a new binary).
 * Its comm is `bpfs_leakprog`; see the source header for what it allocates.
 */
import { join } from 'node:path';
import { repoRoot } from '../helpers/cli.js';
import { ccSkipReason, compileFixture } from '../helpers/compile.js';

export const LEAKPROG_COMM = 'bpfs_leakprog';

/** Why the program cannot be built here, or undefined. */
export function leakprogSkipReason(): string | undefined {
  return ccSkipReason();
}

/** Absolute path of the compiled program. @throws Error with the compiler's stderr when cc fails */
export function leakprogPath(): string {
  const srcPath = join(repoRoot(), 'test', 'tools', 'fixtures', 'leakprog.c');
  return compileFixture(srcPath, LEAKPROG_COMM, ['-O0', '-fno-omit-frame-pointer', '-g']);
}
