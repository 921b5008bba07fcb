/**
 * `-c CMD`: start the command stopped, so probes are attached before it runs (bpftrace forks and waits for the
 * same reason), and make sure it never outlives bpfscope.
 *
 * The command is split on whitespace (no shell quoting, as bpftrace's `split_string(cmd, ' ')`) and its first word is
 * looked up first ({@link resolveCommand}): a command that does not exist fails before anything else runs, with
 * bpftrace's message. The child is
 * `setpriv --pdeathsig SIGKILL /bin/sh -c '[ "$PPID" = "$1" ] || exit 1; shift; kill -STOP $$; exec "$@"' sh PID WORDS...`:
 * setpriv (util-linux) sets PR_SET_PDEATHSIG, so the kernel kills the command when bpfscope dies, SIGKILL included
 * (bpftrace sets the same in its child, with SIGTERM; SIGKILL here because the command may still be stopped); the
 * shell leaves at once if bpfscope died before that was in place (its parent is then no longer PID), stops itself, we
 * see state `T` in /proc/PID/stat, attach, then send SIGCONT; after `exec` the pid (= `cpid`) is the command's. The
 * death signal survives `exec` except into a set-user-ID/set-group-ID or file-capability binary (prctl(2)). Without
 * setpriv the child is started the same way minus that guard; every exit path of bpfscope short of SIGKILL still
 * kills it ({@link StoppedChild.kill} from the tracer, and a process 'exit' hook).
 */
import type { ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants, existsSync, readFileSync, statSync } from 'node:fs';
import { constants } from 'node:os';
import { join } from 'node:path';
import { childProcess } from '../builtins.js';
import { BpfscopeError } from '../errors.js';

/** util-linux's setpriv, by absolute path (bpfscope runs as root: no $PATH lookup for it). */
const SETPRIV = '/usr/bin/setpriv';

export interface StoppedChild {
  pid: number;
  process: ChildProcess;
  /** Resolves with the exit code (or 128 + signal) when the command ends. */
  exited: Promise<number>;
  /** Let the command run. */
  resume(): void;
  /** SIGKILL it unless it has already exited (every way the run ends but the command's own exit). */
  kill(): void;
}

function processState(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return null;
  }
}

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The words of `command` (split on whitespace, as bpftrace does) once its first word names an executable file: a
 * path when it contains '/', else a file found in $PATH.
 * @throws BpfscopeError `Failed to fork child: Path 'WORD' does not exist or is not executable (No such file or
 *   directory)`, current bpftrace's message (src/util/proc.cpp extract_binary, printed by main.cpp), or for an
 *   empty command `Failed to fork child: Empty command (No such file or directory)`
 */
export function resolveCommand(command: string): string[] {
  const argv = command.split(/\s+/).filter((w) => w !== '');
  const fail = (what: string) => new BpfscopeError(`Failed to fork child: ${what} (No such file or directory)`);
  const first = argv[0];
  if (first === undefined) throw fail('Empty command');
  const found = first.includes('/')
    ? isExecutableFile(first)
    : (process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin')
        .split(':')
        .some((dir) => dir !== '' && isExecutableFile(join(dir, first)));
  if (!found) throw fail(`Path '${first}' does not exist or is not executable`);
  return argv;
}

/** Children started here and not yet known to have exited: killed if the process exits some other way. */
const live = new Set<ChildProcess>();
let exitHookInstalled = false;

function killLive(): void {
  for (const c of live) {
    try {
      c.kill('SIGKILL');
    } catch {
      /* already gone */
    }
  }
  live.clear();
}

/** Spawn `command` stopped before exec. @throws BpfscopeError when it does not exist or cannot be started. */
export async function spawnStopped(command: string): Promise<StoppedChild> {
  const argv = resolveCommand(command);
  const script = '[ "$PPID" = "$1" ] || exit 1; shift; kill -STOP $$; exec "$@"';
  const shArgs = ['-c', script, 'sh', String(process.pid), ...argv];
  const child = existsSync(SETPRIV)
    ? childProcess().spawn(SETPRIV, ['--pdeathsig', 'SIGKILL', '/bin/sh', ...shArgs], { stdio: 'inherit' })
    : childProcess().spawn('/bin/sh', shArgs, { stdio: 'inherit' });
  let done = false;
  live.add(child);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', killLive);
  }
  const exited = new Promise<number>((resolve) => {
    child.on('exit', (code, signal) => {
      done = true;
      live.delete(child);
      resolve(code ?? 128 + (signal ? osSignal(signal) : 0));
    });
    child.on('error', () => {
      done = true;
      live.delete(child);
      resolve(127);
    });
  });
  const pid = child.pid;
  const kill = (): void => {
    if (done) return;
    live.delete(child);
    try {
      child.kill('SIGKILL');
    } catch {
      /* already gone */
    }
  };
  if (pid === undefined) {
    kill();
    throw new BpfscopeError(`Failed to fork child: ${command}`);
  }
  // Wait (at most ~5 s) until the shell has stopped itself.
  for (let i = 0; i < 5000; i++) {
    const s = processState(pid);
    if (s === 'T' || s === 't') break;
    if (s === null || s === 'Z') {
      kill();
      throw new BpfscopeError(`Failed to fork child: ${command}`);
    }
    await new Promise((r) => setTimeout(r, 1));
  }
  return {
    pid,
    process: child,
    exited,
    resume: () => {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        /* already gone */
      }
    },
    kill,
  };
}

function osSignal(name: string): number {
  return (constants.signals as Record<string, number>)[name] ?? 0;
}
