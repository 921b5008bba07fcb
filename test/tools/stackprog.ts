/**
 * The stack tools' test program (test/tools/fixtures/stackprog.c): compiled on first use with
 * `cc -O0 -fno-omit-frame-pointer -g` by test/helpers/compile.ts (a changed source gets a new binary).
 * Its comm is `bpfs_stackprog`; see the source header for its steps.
 */
import { arch } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../helpers/cli.js';
import { ccSkipReason, compileFixture } from '../helpers/compile.js';

export const STACKPROG_COMM = 'bpfs_stackprog';

/** Why the program cannot be used here (it makes system calls with x86-64 inline assembly), or undefined. */
export function stackprogSkipReason(): string | undefined {
  if (arch() !== 'x64') return 'the stack test program uses x86-64 system call assembly';
  return ccSkipReason();
}

/** Absolute path of the compiled program. @throws Error with the compiler's stderr when cc fails */
export function stackprogPath(): string {
  const srcPath = join(repoRoot(), 'test', 'tools', 'fixtures', 'stackprog.c');
  return compileFixture(srcPath, STACKPROG_COMM, ['-O0', '-fno-omit-frame-pointer', '-g']);
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
