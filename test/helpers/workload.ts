/**
 * The controlled test workload (test/fixtures/workload.c): compiled on first use with `cc -O1` into
 * `os.tmpdir()/bpfscope-test-<sha256 of the source, 12 hex>/bpfs_workload`, so a changed source gets a new
 * directory and an unchanged one is reused across test files and runs. The compile writes a temporary file and
 * renames it into place, so concurrent test processes never see a half-written binary.
 *
 * The binary's name gives it the comm `bpfs_workload`; its steps (see the header of workload.c) each make an
 * exact number of system calls, e.g. `bpfs_workload comm bpfs_wl getppid 100` makes 100 getppid calls under the
 * comm `bpfs_wl`.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from './cli.js';

/** The comm a freshly exec'd workload runs under (its file name; TASK_COMM_LEN keeps 15 characters). */
export const WORKLOAD_COMM = 'bpfs_workload';

/** Absolute path of the C source. */
export function workloadSource(): string {
  return join(repoRoot(), 'test', 'fixtures', 'workload.c');
}

let cached: string | undefined;

/**
 * Absolute path of the compiled workload, compiling it first when the cache has no binary for the current source.
 * Throws (with the compiler's stderr) if `cc` is missing or fails.
 */
export function workloadPath(): string {
  if (cached && existsSync(cached)) return cached;
  const src = readFileSync(workloadSource());
  const hash = createHash('sha256').update(src).digest('hex').slice(0, 12);
  const dir = join(tmpdir(), `bpfscope-test-${hash}`);
  const bin = join(dir, WORKLOAD_COMM);
  if (!existsSync(bin)) {
    mkdirSync(dir, { recursive: true });
    const tmp = `${bin}.${process.pid}.tmp`;
    try {
      execFileSync('cc', ['-O1', '-Wall', '-o', tmp, workloadSource()], { stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      const stderr = (e as { stderr?: Buffer }).stderr?.toString() ?? '';
      throw new Error(`compiling ${workloadSource()} with cc failed: ${(e as Error).message}\n${stderr}`);
    }
    renameSync(tmp, bin);
  }
  cached = bin;
  return bin;
}

/** A shell-free command line for `-c`: the workload path followed by `steps` (none may contain spaces). */
export function workloadCommand(...steps: (string | number)[]): string {
  const words = steps.map(String);
  for (const w of words) if (/\s/.test(w) || w === '') throw new Error(`workload step word ${JSON.stringify(w)}`);
  return [workloadPath(), ...words].join(' ');
}

/** Runs the workload synchronously; returns its exit status and stderr. */
export function runWorkload(...steps: (string | number)[]): { status: number | null; stderr: string } {
  const r = spawnSync(workloadPath(), steps.map(String), { encoding: 'utf8' });
  return { status: r.status, stderr: r.stderr };
}

/**
 * Starts `n` workload processes named `comm` spinning on CPU `cpu` for 60 s, pushing each into `into` at once (so
 * the caller's cleanup kills them even if this fails), and resolves once each one's affinity is that CPU alone
 * (`Cpus_allowed_list` in /proc/PID/status): the handshake that they are pinned. Fails after 10 s.
 */
export async function startPinnedSpinners(comm: string, cpu: number, n: number, into: ChildProcess[]): Promise<void> {
  const mine: ChildProcess[] = [];
  for (let i = 0; i < n; i++) {
    const c = spawn(workloadPath(), ['comm', comm, 'cpu', String(cpu), 'spin', '60000'], { stdio: 'ignore' });
    mine.push(c);
    into.push(c);
  }
  const pinned = (c: ChildProcess): boolean => {
    try {
      return /^Cpus_allowed_list:\s+(\S+)$/m.exec(readFileSync(`/proc/${c.pid}/status`, 'utf8'))?.[1] === String(cpu);
    } catch {
      return false;
    }
  };
  const end = Date.now() + 10_000;
  while (!mine.every(pinned)) {
    assert.ok(Date.now() < end, 'the spinners did not pin themselves');
    await new Promise((r) => setTimeout(r, 20));
  }
}
