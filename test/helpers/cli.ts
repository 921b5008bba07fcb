/**
 * Runs the two command-line tools the kernel-level tests compare: our `bpfscope` (dist/bundle/bpfscope.cjs run as a
 * command, as package.json's `bin` is: its /bin/sh prelude clears Node's environment variables and starts node on
 * it; built by `npm run build`) and the oracle `bpftrace` (Debian's 0.17 at /usr/bin/bpftrace), with a timeout,
 * capturing stdout, stderr, the exit code and the terminating signal.
 *
 * Where the "attached probes" message goes (it is not part of the compared output):
 * - bpftrace 0.17 prints `Attaching N probes...` (`probe...` for 1) as the first line of STDOUT
 *   (0.17 src/output.cpp TextOutput::attached_probes), and `{"type": "attached_probes", "data": {"probes": N}}`
 *   on stdout with `-f json`.
 * - current bpftrace (v0.26, our target) prints `Attached N probes` (`probe` for 1) on STDERR
 *   (src/output/text.cpp), and `{"type": "attached_probes", "count": N, "data": {"probes": N}}` on stdout with
 *   `-f json`. `-q` suppresses both.
 * {@link stripOracleAttach} removes the 0.17 text line from the oracle's stdout before comparing;
 * {@link ourAttachCount} reads our stderr line so tests assert it separately. Our stdout is compared as is.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type Tool = 'bpfscope' | 'bpftrace';

/** What one run of a tool produced. `code` is null when a signal ended it (`signal` is then set). */
export interface ToolResult {
  tool: Tool;
  args: string[];
  stdout: string;
  stderr: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** True when the run hit `timeoutMs` and was killed by the harness (SIGTERM, then SIGKILL after 1 s). */
  timedOut: boolean;
  /** Wall time from spawn to exit, ms. */
  durationMs: number;
}

export interface RunOptions {
  /** Kill the run after this many ms (default 20000). */
  timeoutMs?: number;
  /** Extra environment variables (merged over process.env). */
  env?: Record<string, string>;
}

const DEFAULT_TIMEOUT_MS = 20_000;
/** The oracle binary; override with BPFSCOPE_ORACLE=/path/to/bpftrace. */
export const BPFTRACE = process.env.BPFSCOPE_ORACLE ?? '/usr/bin/bpftrace';

let root: string | undefined;
/** Absolute path of the repository root (the nearest ancestor holding a package.json named "bpfscope"). */
export function repoRoot(): string {
  if (root) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && JSON.parse(readFileSync(pkg, 'utf8')).name === 'bpfscope') {
      root = dir;
      return dir;
    }
    const up = dirname(dir);
    if (up === dir) throw new Error('repoRoot: no package.json named bpfscope above ' + import.meta.url);
    dir = up;
  }
}

/**
 * Absolute path of the built CLI entry point, dist/bundle/bpfscope.cjs (what users run; may not exist yet), or
 * `BPFSCOPE_CLI` when set (test/matrix/diff.test.ts runs a one-file bundle of it inside the guest).
 */
export function bpfscopeEntry(): string {
  return process.env.BPFSCOPE_CLI ?? join(repoRoot(), 'dist', 'bundle', 'bpfscope.cjs');
}

/** Why bpfscope cannot be run here (for `t.skip(reason)`), or undefined when it can. */
export function bpfscopeSkipReason(): string | undefined {
  if (!existsSync(bpfscopeEntry())) {
    return `bpfscope CLI not built: ${bpfscopeEntry()} does not exist (run npm run build)`;
  }
  if (process.getuid?.() !== 0) return 'bpfscope needs root to load BPF programs';
  return undefined;
}

/** Why the bpftrace oracle cannot be run here, or undefined when it can. */
export function bpftraceSkipReason(): string | undefined {
  if (!existsSync(BPFTRACE)) return `bpftrace oracle not installed at ${BPFTRACE} (apt-get install bpftrace)`;
  if (process.getuid?.() !== 0) return 'bpftrace needs root';
  return undefined;
}

/** Version line of the oracle, e.g. "bpftrace v0.17.0" (empty string if it cannot run). */
export function bpftraceVersion(): string {
  const r = spawnSync(BPFTRACE, ['--version'], { encoding: 'utf8' });
  return (r.stdout ?? '').trim();
}

/** The command line of a run: bpfscope's bin is executed itself (through its sh prelude); a BPFSCOPE_CLI by node. */
export function command(tool: Tool, args: string[]): [string, string[]] {
  if (tool === 'bpftrace') return [BPFTRACE, args];
  return process.env.BPFSCOPE_CLI ? [process.execPath, [bpfscopeEntry(), ...args]] : [bpfscopeEntry(), args];
}

/** A tool started in its own process group (so its `-c` child can be reached), still running or finished. */
export interface RunningTool {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Settles once the process has exited (after a timeout kill too); never rejects. */
  readonly done: Promise<ToolResult>;
  /** Output so far. */
  stdout(): string;
  stderr(): string;
  /** Sends a signal to the tool's process only (not to its process group). */
  signal(sig: NodeJS.Signals): void;
  /** Resolves true once `pattern` matches stdout or stderr, false if the process exits or `timeoutMs` passes. */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<boolean>;
}

/**
 * Starts `tool args` with stdin closed, in a new process group. The harness sends SIGTERM to the whole group at
 * `timeoutMs` and SIGKILL one second later.
 */
export function startTool(tool: Tool, args: string[], opts: RunOptions = {}): RunningTool {
  const [file, argv] = command(tool, args);
  const t0 = Date.now();
  const child = spawn(file, argv, {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
    env: { ...process.env, ...opts.env },
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const l of listeners) l();
  };
  child.stdout!.on('data', (b: Buffer) => {
    out.push(b);
    notify();
  });
  child.stderr!.on('data', (b: Buffer) => {
    err.push(b);
    notify();
  });
  let timedOut = false;
  let killTimer: NodeJS.Timeout | undefined;
  const killGroup = (sig: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, sig);
    } catch {
      // already gone
    }
  };
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup('SIGTERM');
    killTimer = setTimeout(() => killGroup('SIGKILL'), 1000);
  }, opts.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  let exited = false;
  const done = new Promise<ToolResult>((resolve) => {
    const finish = (code: number | null, signal: NodeJS.Signals | null) => {
      exited = true;
      clearTimeout(timer);
      if (killTimer) clearTimeout(killTimer);
      notify();
      resolve({
        tool,
        args,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        code,
        signal,
        timedOut,
        durationMs: Date.now() - t0,
      });
    };
    child.on('error', (e) => {
      err.push(Buffer.from(`spawn ${file}: ${e.message}\n`));
      finish(null, null);
    });
    // 'close' fires after the stdio streams are drained.
    child.on('close', finish);
  });
  const stdout = () => Buffer.concat(out).toString('utf8');
  const stderr = () => Buffer.concat(err).toString('utf8');
  return {
    child,
    pid: child.pid ?? -1,
    done,
    stdout,
    stderr,
    signal(sig) {
      if (!exited) child.kill(sig);
    },
    waitFor(pattern, timeoutMs) {
      return new Promise((resolve) => {
        const check = () => {
          if (pattern.test(stdout()) || pattern.test(stderr())) return settle(true);
          if (exited) settle(false);
        };
        const t = setTimeout(() => settle(false), timeoutMs);
        const settle = (v: boolean) => {
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

/** Runs `tool args` to completion (see {@link startTool}). */
export function runTool(tool: Tool, args: string[], opts: RunOptions = {}): Promise<ToolResult> {
  return startTool(tool, args, opts).done;
}

/** bpftrace 0.17's text attach line, `Attaching N probes...` / `Attaching 1 probe...`, on stdout. */
const ORACLE_ATTACH = /^Attaching (\d+) probes?\.\.\.\n/m;
/** Current bpftrace's (and our) text attach line, `Attached N probes` / `Attached 1 probe`, on stderr. */
const OUR_ATTACH = /^Attached (\d+) probes?$/m;
/** Matches either tool's "probes are attached" message, text or JSON (for waiting until a run is live). */
export const ATTACHED_PATTERN = /^(Attaching \d+ probes?\.\.\.|Attached \d+ probes?)$|"type": ?"attached_probes"/m;

/**
 * Removes bpftrace 0.17's `Attaching N probes...` line from its stdout.
 * Returns the remaining stdout and N (undefined when the line is absent, e.g. with -q or -f json).
 */
export function stripOracleAttach(stdout: string): { stdout: string; attached: number | undefined } {
  const m = ORACLE_ATTACH.exec(stdout);
  if (!m) return { stdout, attached: undefined };
  return { stdout: stdout.slice(0, m.index) + stdout.slice(m.index + m[0].length), attached: Number(m[1]) };
}

/** N from our stderr's `Attached N probes` line, or undefined when there is none. */
export function ourAttachCount(stderr: string): number | undefined {
  const m = OUR_ATTACH.exec(stderr);
  return m ? Number(m[1]) : undefined;
}

/** One line describing a result for assertion messages: exit status, timing and both streams. */
export function describe(r: ToolResult): string {
  const status = r.timedOut ? 'TIMED OUT' : r.signal ? `signal ${r.signal}` : `exit ${r.code}`;
  return `${r.tool} ${JSON.stringify(r.args)}: ${status} after ${r.durationMs} ms\n--- stdout ---\n${r.stdout}--- stderr ---\n${r.stderr}`;
}

/**
 * Pids of `pid` and all its live descendants (read from /proc/PID/task/TID/children; needs
 * CONFIG_PROC_CHILDREN, present here). A pid that is gone yields an empty list.
 */
export function processTree(pid: number): number[] {
  const out: number[] = [];
  const visit = (p: number) => {
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${p}/task`);
    } catch {
      return;
    }
    out.push(p);
    for (const tid of tids) {
      let kids = '';
      try {
        kids = readFileSync(`/proc/${p}/task/${tid}/children`, 'utf8');
      } catch {
        continue;
      }
      for (const k of kids.split(' ').filter(Boolean)) visit(Number(k));
    }
  };
  visit(pid);
  return out;
}

/** Whether `pid` still exists and is not a zombie. */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}
