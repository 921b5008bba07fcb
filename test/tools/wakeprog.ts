/**
 * The off-wake test program (test/tools/fixtures/wakeprog.c): compiled on first use with
 * `cc -O0 -fno-omit-frame-pointer -g -pthread` by test/helpers/compile.ts. Started gated: its threads start when
 * `go()` is called (once the tool under test is attached); `done` gives its exit status and the time its reader
 * measured itself blocked in read(2) (`blocked_us`), the value the tools' blocked time is compared with.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from '../helpers/cli.js';
import { compileFixture } from '../helpers/compile.js';

export function wakeprogPath(): string {
  const src = join(repoRoot(), 'test', 'tools', 'fixtures', 'wakeprog.c');
  return compileFixture(src, 'bpfs_wakeprog', ['-O0', '-fno-omit-frame-pointer', '-g', '-pthread']);
}

export interface Wakeprog {
  child: ChildProcess;
  pid: number;
  /** Start the threads. */
  go(): void;
  /** The reader's own measure of its time blocked, in microseconds, once the threads are done (still running). */
  measured: Promise<number>;
  /** Let the program exit (it waits for the end of stdin after its measure). */
  finish(): void;
  /** Exit status and the reader's own measure of its time blocked, in microseconds. */
  done: Promise<{ code: number | null; blockedUs: number }>;
}

/** Start `bpfs_wakeprog MODE N USEC` (pipe or chain), waiting for {@link Wakeprog.go}. */
export function startWakeprog(args: string[]): Wakeprog {
  const child = spawn(wakeprogPath(), args, { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  let onMeasure: (us: number) => void = () => {};
  const measured = new Promise<number>((resolve) => (onMeasure = resolve));
  child.stdout!.on('data', (b: Buffer) => {
    out += b.toString();
    const m = /^blocked_us (\d+)$/m.exec(out);
    if (m) onMeasure(Number(m[1]));
  });
  const done = new Promise<{ code: number | null; blockedUs: number }>((resolve) =>
    child.on('close', (code) => resolve({ code, blockedUs: Number(/^blocked_us (\d+)$/m.exec(out)?.[1] ?? NaN) })),
  );
  return {
    child,
    pid: child.pid!,
    go: () => child.stdin!.write('g'),
    measured,
    finish: () => child.stdin!.end(),
    done,
  };
}

/** Whether `us` is within 10% of `expected`. */
export function within10(us: number, expected: number): boolean {
  return Math.abs(us - expected) <= expected * 0.1;
}
