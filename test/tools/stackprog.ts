/**
 * The stack tools' test program (test/tools/fixtures/stackprog.c): compiled on first use with
 * `cc -O0 -fno-omit-frame-pointer -g` into `os.tmpdir()/bpfscope-stackprog-<sha256 of the source, 12 hex>/`, so a
 * changed source gets a new binary. Its comm is `bpfs_stackprog`; see the source header for its steps.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { arch, tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../helpers/cli.js';

export const STACKPROG_COMM = 'bpfs_stackprog';

/** Why the program cannot be used here (it makes system calls with x86-64 inline assembly), or undefined. */
export function stackprogSkipReason(): string | undefined {
  if (arch() !== 'x64') return 'the stack test program uses x86-64 system call assembly';
  try {
    execFileSync('cc', ['--version'], { stdio: 'ignore' });
  } catch {
    return 'no C compiler (cc)';
  }
  return undefined;
}

let cached: string | undefined;

/** Absolute path of the compiled program. @throws Error with the compiler's stderr when cc fails */
export function stackprogPath(): string {
  if (cached && existsSync(cached)) return cached;
  const srcPath = join(repoRoot(), 'test', 'tools', 'fixtures', 'stackprog.c');
  const src = readFileSync(srcPath);
  const hash = createHash('sha256').update(src).digest('hex').slice(0, 12);
  const dir = join(tmpdir(), `bpfscope-stackprog-${hash}`);
  const bin = join(dir, STACKPROG_COMM);
  if (!existsSync(bin)) {
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
  }
  cached = bin;
  return bin;
}

/** Folded lines (`stack count`) of a tool's stdout, as [stack, count] pairs. */
export function foldedLines(stdout: string): [string, number][] {
  return stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const i = l.lastIndexOf(' ');
      return [l.slice(0, i), Number(l.slice(i + 1))];
    });
}

/** One block of bcc's multi-line stack output: the frame lines, comm, id and value. */
export interface StackBlock {
  frames: string[];
  comm: string;
  id: number;
  value: number;
}

/** Parse bcc's multi-line stack output (after the header and its blank line). */
export function stackBlocks(stdout: string): StackBlock[] {
  const out: StackBlock[] = [];
  let frames: string[] = [];
  const lines = stdout.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    const m = /^ {4}- {16}(.*) \((\d+)\)$/.exec(l);
    if (m) {
      const v = /^ {8}(\d+)$/.exec(lines[i + 1] ?? '');
      if (!v) throw new Error(`no value line after ${JSON.stringify(l)}`);
      out.push({ frames, comm: m[1]!, id: Number(m[2]), value: Number(v[1]) });
      frames = [];
      i++;
    } else if (l.startsWith('    ')) frames.push(l.slice(4));
  }
  return out;
}
