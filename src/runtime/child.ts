/**
 * `-c CMD`: start the command stopped, so probes are attached before it runs (bpftrace forks and waits for the
 * same reason). The child is `/bin/sh -c 'kill -STOP $$; exec "$@"' sh WORDS...`: it stops itself, we see state `T` in
 * /proc/PID/stat, attach, then send SIGCONT; after `exec` the pid (= `cpid`) is the command's.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { childProcess } from '../builtins.js';
import { BpfscopeError } from '../errors.js';

export interface StoppedChild {
  pid: number;
  process: ChildProcess;
  /** Resolves with the exit code (or 128 + signal) when the command ends. */
  exited: Promise<number>;
  /** Let the command run. */
  resume(): void;
  /** Kill it (used on error paths before it ran). */
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

/** Spawn `command` stopped before exec. @throws BpfscopeError when it cannot be started. */
export async function spawnStopped(command: string): Promise<StoppedChild> {
  // bpftrace splits the command on whitespace (no shell quoting) and execs it with a $PATH search
  const argv = command.split(/\s+/).filter((w) => w !== '');
  if (argv.length === 0) throw new BpfscopeError('-c: empty command');
  const child = childProcess().spawn('/bin/sh', ['-c', 'kill -STOP $$; exec "$@"', 'sh', ...argv], {
    stdio: 'inherit',
  });
  const exited = new Promise<number>((resolve) => {
    child.on('exit', (code, signal) => resolve(code ?? 128 + (signal ? osSignal(signal) : 0)));
    child.on('error', () => resolve(127));
  });
  const pid = child.pid;
  if (pid === undefined) throw new BpfscopeError(`Failed to run command: ${command}`);
  // Wait (at most ~5 s) until the shell has stopped itself.
  for (let i = 0; i < 5000; i++) {
    const s = processState(pid);
    if (s === 'T' || s === 't') break;
    if (s === null || s === 'Z') throw new BpfscopeError(`Failed to run command: ${command}`);
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
    kill: () => {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    },
  };
}

function osSignal(name: string): number {
  return (constants.signals as Record<string, number>)[name] ?? 0;
}
