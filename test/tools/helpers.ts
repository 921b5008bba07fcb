/**
 * Helpers for the live tool tests: run `bpfscope <tool>` as a user would (a child process, Ctrl-C as SIGINT), the
 * workload, a loop device for block I/O, and a memory-limited cgroup for the OOM killer.
 *
 * The CLI comes from the same tree as the test: the built bundle `dist/bundle/bpfscope.cjs` (what users run) when
 * the test runs from `dist/` (npm test), `src/cli/main.ts` through tsx when it runs from source (`npx tsx --test`).
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';
import { repoRoot } from '../helpers/cli.js';

const fromDist = fileURLToPath(import.meta.url).includes(`${join('/dist', 'test')}/`);

/** Why the live tool tests cannot run here, or undefined. */
export function liveSkipReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'the tools need root to load BPF programs';
  if (fromDist && !existsSync(join(repoRoot(), 'dist', 'bundle', 'bpfscope.cjs')))
    return 'dist/bundle/bpfscope.cjs not built';
  return undefined;
}

function cliCommand(args: string[]): [string, string[]] {
  const root = repoRoot();
  // the bin itself, as users run it (its sh prelude starts node)
  if (fromDist) return [join(root, 'dist', 'bundle', 'bpfscope.cjs'), args];
  return [process.execPath, ['--import', 'tsx', join(root, 'src', 'cli', 'main.ts'), ...args]];
}

export interface ToolRun {
  child: ChildProcess;
  pid: number;
  stdout(): string;
  stderr(): string;
  /** Resolves true once `pattern` matches stdout, false on exit or after `ms`. */
  waitFor(pattern: RegExp, ms: number): Promise<boolean>;
  /** Settles with the exit code and signal once the process is gone (killed with SIGKILL after `timeoutMs`). */
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

/** Start `bpfscope <args>` (stdin closed); killed after `timeoutMs` (default 30 s). */
export function startBpfscope(
  args: string[],
  opts: { timeoutMs?: number; env?: Record<string, string> } = {},
): ToolRun {
  const [file, argv] = cliCommand(args);
  const child = spawn(file, argv, {
    cwd: repoRoot(),
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, COLUMNS: '80', ...opts.env },
  });
  let out = '';
  let err = '';
  const listeners = new Set<() => void>();
  child.stdout!.on('data', (b: Buffer) => {
    out += b.toString('utf8');
    for (const l of listeners) l();
  });
  child.stderr!.on('data', (b: Buffer) => {
    err += b.toString('utf8');
  });
  let exited = false;
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>(
    (resolve) => {
      child.on('close', (code, signal) => {
        exited = true;
        clearTimeout(timer);
        for (const l of listeners) l();
        resolve({ code, signal, stdout: out, stderr: err });
      });
    },
  );
  return {
    child,
    pid: child.pid ?? -1,
    stdout: () => out,
    stderr: () => err,
    done,
    waitFor(pattern, ms) {
      return new Promise((resolve) => {
        const check = (): void => {
          if (pattern.test(out)) settle(true);
          else if (exited) settle(false);
        };
        const t = setTimeout(() => settle(false), ms);
        const settle = (v: boolean): void => {
          clearTimeout(t);
          listeners.delete(check);
          resolve(v);
        };
        listeners.add(check);
        check();
      });
    },
  };
}

/** Run `bpfscope <args>` to completion. */
export function runBpfscope(args: string[], opts: { timeoutMs?: number } = {}): ToolRun['done'] {
  return startBpfscope(args, opts).done;
}

/** A scratch directory in /var/tmp, normally on a disk (O_DIRECT reads need a block device, not tmpfs). */
export function scratchDir(): string {
  return mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'bpfscope-tools-'));
}

/** Remove a scratch directory. */
export function removeScratch(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export interface LoopDevice {
  /** `/dev/loopN` */
  path: string;
  /** `loopN` */
  name: string;
  detach(): void;
}

/** Why a loop device cannot be created here, or undefined. */
export function loopSkipReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'losetup needs root';
  if (spawnSync('losetup', ['--version']).status !== 0) return 'losetup (util-linux) is not installed';
  if (
    !existsSync('/sys/kernel/tracing/events/block/block_rq_issue') &&
    !existsSync('/sys/kernel/debug/tracing/events/block/block_rq_issue')
  ) {
    return 'this kernel has no block:block_rq_issue tracepoint';
  }
  return undefined;
}

/** Attach a loop device to a new `mb` MiB file of random data in `dir`. */
export function createLoop(dir: string, mb = 16): LoopDevice {
  const file = join(dir, 'loop.img');
  const buf = Buffer.alloc(mb << 20);
  for (let i = 0; i < buf.length; i += 4096) buf.writeUInt32LE(i, i);
  writeFileSync(file, buf);
  const path = execFileSync('losetup', ['--find', '--show', file], { encoding: 'utf8' }).trim();
  const name = path.replace('/dev/', '');
  return {
    path,
    name,
    detach: () => {
      spawnSync('losetup', ['-d', path]);
    },
  };
}

/**
 * A 16 MiB loop device for the live tests of the calling `describe` block (call it in the block's body): its
 * `before` hook attaches the device to a file in a new scratch directory, its `after` hook detaches it and removes
 * the directory. `skip` is why the live block I/O tests cannot run here ({@link liveSkipReason}, then
 * {@link loopSkipReason}), and then no device is made.
 * @returns `device()` for use inside the tests; it throws when called before the hook ran or when skipped
 */
export function liveLoopDevice(): { skip: string | undefined; device(): LoopDevice } {
  const skip = liveSkipReason() ?? loopSkipReason();
  let dir = '';
  let loop: LoopDevice | undefined;
  before(() => {
    if (skip) return;
    dir = tempDir();
    loop = createLoop(dir);
  });
  after(() => {
    loop?.detach();
    if (dir) removeScratch(dir);
  });
  return {
    skip,
    device: () => {
      if (!loop) throw new Error('no loop device (skipped, or used outside a test)');
      return loop;
    },
  };
}

/** A memory cgroup with a hard limit, v2 (memory.max) or v1 (memory.limit_in_bytes). */
export interface MemoryCgroup {
  version: 1 | 2;
  dir: string;
  /** Shell prefix that moves the shell into the cgroup: `echo $$ > .../cgroup.procs; ` */
  enterCommand: string;
  remove(): void;
}

/** Why no memory cgroup can be made here, or undefined. */
export function memoryCgroupSkipReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'creating cgroups needs root';
  if (v2Root()) return undefined;
  if (existsSync('/sys/fs/cgroup/memory/memory.limit_in_bytes')) return undefined;
  return 'no memory cgroup controller (cgroup v2 with "memory" in cgroup.controllers, or a v1 memory hierarchy)';
}

function v2Root(): string | undefined {
  for (const dir of ['/sys/fs/cgroup', '/sys/fs/cgroup/unified']) {
    try {
      if (readFileSync(join(dir, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('memory')) return dir;
    } catch {
      /* not a cgroup2 root */
    }
  }
  return undefined;
}

/** Create a cgroup limited to `limitMb` MiB of memory and no swap. */
export function createMemoryCgroup(limitMb: number): MemoryCgroup {
  const name = `bpfscope-oom-${process.pid}-${Date.now()}`;
  const v2 = v2Root();
  let dir: string;
  if (v2) {
    try {
      writeFileSync(join(v2, 'cgroup.subtree_control'), '+memory');
    } catch {
      /* already enabled, or only settable at a level that has it */
    }
    dir = join(v2, name);
    mkdirSync(dir);
    writeFileSync(join(dir, 'memory.max'), `${limitMb << 20}`);
    try {
      writeFileSync(join(dir, 'memory.swap.max'), '0');
    } catch {
      /* no swap accounting */
    }
  } else {
    dir = join('/sys/fs/cgroup/memory', name);
    mkdirSync(dir);
    writeFileSync(join(dir, 'memory.limit_in_bytes'), `${limitMb << 20}`);
    try {
      writeFileSync(join(dir, 'memory.swappiness'), '0');
    } catch {
      /* not settable */
    }
  }
  return {
    version: v2 ? 2 : 1,
    dir,
    enterCommand: `echo $$ > ${join(dir, 'cgroup.procs')}; `,
    remove: () => {
      for (let i = 0; i < 50; i++) {
        try {
          rmdirSync(dir);
          return;
        } catch {
          spawnSync('sleep', ['0.1']);
        }
      }
    },
  };
}

/** Directory for temporary files of a test (under the OS temp dir). */
export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'bpfscope-tools-'));
}

/**
 * Number of BPF links process `pid` holds (fds whose target is `anon_inode:bpf_link`: one per attached probe
 * here). Note: the kernel names the inode `bpf_link`, with an underscore, unlike `bpf-prog` and `bpf-map`.
 */
export function linkCount(pid: number): number {
  let n = 0;
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return 0;
  }
  for (const fd of fds) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`) === 'anon_inode:bpf_link') n++;
    } catch {
      /* closed meanwhile */
    }
  }
  return n;
}

/** Wait until process `pid` holds at least `n` BPF links (its probes are attached); false after `ms`. */
export async function waitForLinks(pid: number, n: number, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (linkCount(pid) >= n) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}
