/**
 * memleak's test program (test/tools/fixtures/leakprog.c): compiled on first use with
 * `cc -O0 -fno-omit-frame-pointer -g` into `os.tmpdir()/bpfscope-leakprog-<sha256 of the source, 12 hex>/`, so a
 * changed source gets a new binary. Its comm is `bpfs_leakprog`; see the source header for what it allocates.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../helpers/cli.js';

export const LEAKPROG_COMM = 'bpfs_leakprog';

/** Why the program cannot be built here, or undefined. */
export function leakprogSkipReason(): string | undefined {
  try {
    execFileSync('cc', ['--version'], { stdio: 'ignore' });
  } catch {
    return 'no C compiler (cc)';
  }
  return undefined;
}

/** Absolute path of the compiled program. @throws Error with the compiler's stderr when cc fails */
export function leakprogPath(): string {
  const srcPath = join(repoRoot(), 'test', 'tools', 'fixtures', 'leakprog.c');
  const hash = createHash('sha256').update(readFileSync(srcPath)).digest('hex').slice(0, 12);
  const dir = join(tmpdir(), `bpfscope-leakprog-${hash}`);
  const bin = join(dir, LEAKPROG_COMM);
  if (existsSync(bin)) return bin;
  mkdirSync(dir, { recursive: true });
  const tmp = `${bin}.${process.pid}.tmp`;
  try {
    execFileSync('cc', ['-O0', '-fno-omit-frame-pointer', '-g', '-Wall', '-o', tmp, srcPath], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (e) {
    const stderr = (e as { stderr?: Buffer }).stderr?.toString() ?? '';
    throw new Error(`compiling ${srcPath} failed: ${(e as Error).message}\n${stderr}`, { cause: e });
  }
  renameSync(tmp, bin);
  return bin;
}
