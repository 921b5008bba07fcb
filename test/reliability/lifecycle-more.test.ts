/**
 * Lifecycle at the edges (issue 19, campaign item 4): the traced process execs or exits mid-trace (`-c` and `-p`),
 * a `-p` process that dies and stays a zombie, two bpfscope sessions at once, tracefs not mounted at start, kernel
 * BTF missing, a read-only working directory, a full disk under `-o FILE`, and SIGINT/SIGTERM arriving over and
 * over while a run ends. Each case checks the output and exit status against literals and that nothing is left
 * attached (test/helpers/bpf-objects.ts findLeaks).
 *
 * Mount tricks run in a private mount namespace (`unshare -m`, util-linux, whose default propagation is private):
 * the rest of the machine keeps its tracefs, BTF and disks. `unshare -m sh -c '...; exec bpfscope ...'` keeps one
 * pid from unshare to bpfscope, so the run's BPF objects are found by that pid.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  type BpfIds,
  bpfState,
  bpftoolSkipReason,
  findLeaks,
  formatIds,
  heldBy,
  idCount,
  tracefsProbeEvents,
} from '../helpers/bpf-objects.js';
import { bpfscopeEntry, bpfscopeSkipReason, isAlive, processTree } from '../helpers/cli.js';
import { runWorkload, workloadPath } from '../helpers/workload.js';

const skip = bpfscopeSkipReason() ?? bpftoolSkipReason() ?? false;
const WAIT_MS = 20_000;
const ATTACHED = /^Attached \d+ probes?$/m;

interface Run {
  child: ChildProcess;
  pid: number;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code, or the signal's name, once the process has exited and its output is read. */
  done: Promise<number | string>;
  waitFor: (re: RegExp) => Promise<boolean>;
}

/** Starts `file args`; stdin closed unless `stdin` is 'pipe'. */
function start(file: string, args: string[], stdin: 'ignore' | 'pipe' = 'ignore'): Run {
  const child = spawn(file, args, { stdio: [stdin, 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const listeners = new Set<() => void>();
  child.stdout!.on('data', (b: Buffer) => {
    out += b.toString();
    for (const l of listeners) l();
  });
  child.stderr!.on('data', (b: Buffer) => {
    err += b.toString();
    for (const l of listeners) l();
  });
  const done = new Promise<number | string>((resolve) => child.on('close', (code, sig) => resolve(code ?? sig!)));
  let exited = false;
  void done.then(() => {
    exited = true;
    for (const l of listeners) l();
  });
  return {
    child,
    pid: child.pid!,
    stdout: () => out,
    stderr: () => err,
    done,
    waitFor: (re) =>
      new Promise((resolve) => {
        const check = () => {
          if (re.test(out) || re.test(err)) settle(true);
          else if (exited) settle(false);
        };
        const timer = setTimeout(() => settle(false), WAIT_MS);
        const settle = (v: boolean) => {
          clearTimeout(timer);
          listeners.delete(check);
          resolve(v);
        };
        listeners.add(check);
        check();
      }),
  };
}

const bpfscope = (args: string[], stdin: 'ignore' | 'pipe' = 'ignore') =>
  start(process.execPath, [bpfscopeEntry(), ...args], stdin);

/** `unshare -m sh -c SCRIPT`: SCRIPT sees the bpfscope command as "$@" (run it with `exec "$@"` to keep the pid). */
const inNamespace = (script: string, args: string[]) =>
  start('unshare', ['-m', 'sh', '-c', script, 'sh', process.execPath, bpfscopeEntry(), ...args]);

/** Ends with a bounded wait: the exit status, or 'still running' (then it is killed). */
async function ended(run: Run, ms = WAIT_MS): Promise<number | string> {
  const t = new Promise<string>((r) => setTimeout(() => r('still running'), ms).unref());
  const r = await Promise.race([run.done, t]);
  if (r === 'still running') run.child.kill('SIGKILL');
  return r;
}

/** Objects held by `pid` and its children now (call once attached). */
function held(pid: number): BpfIds {
  return heldBy(processTree(pid), bpfState());
}

async function assertNoLeaks(before: { state: ReturnType<typeof bpfState>; tracefs: string[] }, ours: BpfIds) {
  const report = await findLeaks(before, ours, 3000);
  assert.equal(idCount(report.leaked), 0, `BPF objects left: ${formatIds(report.leaked, report.state)}`);
  assert.deepEqual(report.tracefs, [], 'tracefs probe entries left');
}

const snapshot = () => ({ state: bpfState(), tracefs: tracefsProbeEvents() });
let serial = 0;
/** A comm unique to this process and case (the workload's `comm` step), so parallel runs do not mix. */
const comm = () => `bpfs_l${(process.pid % 0x1000).toString(16)}${++serial}`;

describe('the traced process execs or exits mid-trace', { skip, timeout: 60_000 }, () => {
  it('-c command that execs (env execs the workload): events before and after the exec, then the run ends', async () => {
    const run = bpfscope([
      '-e',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @calls = count(); } ' +
        'tracepoint:syscalls:sys_enter_execve /pid == cpid/ { @execs = count(); }',
      '-c',
      `/usr/bin/env ${workloadPath()} getppid 4`,
    ]);
    assert.equal(await ended(run), 0, run.stderr());
    // execve of env (the -c command starts after attach) and env's execve of the workload; bpftrace 0.17 the same
    assert.equal(run.stdout(), '\n\n@calls: 4\n@execs: 2\n');
  });

  it('-p process that execs, then exits: counted across the exec; the run ends by itself, status 0', async () => {
    const before = snapshot();
    const c = comm();
    // the target: a shell that waits for a line on stdin, then execs the workload under the same pid
    const target = start('/bin/sh', ['-c', `read line; exec ${workloadPath()} comm ${c} getppid 5`], 'pipe');
    const run = bpfscope([
      '-p',
      String(target.pid),
      '-e',
      `tracepoint:syscalls:sys_enter_getppid /pid == ${target.pid}/ { @calls = count(); } ` +
        `tracepoint:syscalls:sys_enter_execve /pid == ${target.pid}/ { @execs = count(); }`,
    ]);
    try {
      assert.ok(await run.waitFor(ATTACHED), run.stderr());
      const ours = held(run.pid);
      target.child.stdin!.end('go\n');
      assert.equal(await target.done, 0);
      assert.equal(await ended(run), 0, run.stderr());
      assert.equal(run.stdout(), '\n\n@calls: 5\n@execs: 1\n');
      await assertNoLeaks(before, ours);
    } finally {
      target.child.kill('SIGKILL');
      run.child.kill('SIGKILL');
    }
  });

  it('-p process that exits and stays a zombie (its parent does not reap it): the run ends, as bpftrace', async () => {
    const before = snapshot();
    const dir = mkdtempSync(join(tmpdir(), 'bpfscope-zombie-'));
    const fifo = join(dir, 'go');
    spawnSync('mkfifo', [fifo]);
    const c = comm();
    // the workload waits for the FIFO to close, calls getppid 3 times and exits; its parent then execs `sleep`,
    // which never waits for children: the workload stays a zombie
    const parent = start('/bin/sh', [
      '-c',
      `${workloadPath()} comm ${c} wait-stdin getppid 3 < ${fifo} & echo $!; exec sleep 120`,
    ]);
    let run: Run | undefined;
    try {
      assert.ok(await parent.waitFor(/^\d+$/m));
      const pid = Number(parent.stdout().trim());
      run = bpfscope([
        '-p',
        String(pid),
        '-e',
        `tracepoint:syscalls:sys_enter_getppid /pid == ${pid}/ { @calls = count(); }`,
      ]);
      assert.ok(await run.waitFor(ATTACHED), run.stderr());
      const ours = held(run.pid);
      closeSync(openSync(fifo, 'w'));
      // it ends once the workload has exited, although the pid lives on as a zombie (kill(pid, 0) succeeds)
      assert.equal(await ended(run), 0, `still tracing a zombie: ${run.stderr()}`);
      assert.equal(readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1]![0], 'Z', 'the target is a zombie');
      assert.equal(run.stdout(), '\n\n@calls: 3\n');
      await assertNoLeaks(before, ours);
    } finally {
      run?.child.kill('SIGKILL');
      parent.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('two sessions at once', { skip, timeout: 60_000 }, () => {
  it('both see their own events; ending one does not disturb the other; both clean up', async () => {
    const before = snapshot();
    const [ca, cb] = [comm(), comm()];
    const prog = (c: string) => `tracepoint:syscalls:sys_enter_getppid /comm == "${c}"/ { @calls = count(); }`;
    const a = bpfscope(['-e', prog(ca)]);
    const b = bpfscope(['-e', prog(cb)]);
    try {
      assert.ok((await a.waitFor(ATTACHED)) && (await b.waitFor(ATTACHED)), a.stderr() + b.stderr());
      const ours = held(a.pid);
      const oursB = held(b.pid);
      for (const k of ['progs', 'maps', 'links'] as const) for (const id of oursB[k]) ours[k].add(id);
      runWorkload('comm', ca, 'getppid', 3);
      runWorkload('comm', cb, 'getppid', 5);
      a.child.kill('SIGINT');
      assert.equal(await ended(a), 0, a.stderr());
      assert.equal(a.stdout(), '\n\n@calls: 3\n');
      // b is still attached and counting after a has detached and closed everything
      runWorkload('comm', cb, 'getppid', 2);
      b.child.kill('SIGINT');
      assert.equal(await ended(b), 0, b.stderr());
      assert.equal(b.stdout(), '\n\n@calls: 7\n');
      await assertNoLeaks(before, ours);
    } finally {
      a.child.kill('SIGKILL');
      b.child.kill('SIGKILL');
    }
  });
});

describe('the host lacks something (private mount namespace)', { skip, timeout: 60_000 }, () => {
  it('tracefs not mounted at start: bpfscope mounts it (in the namespace only) and traces', async () => {
    const hostHadTracefs = readFileSync('/proc/self/mounts', 'utf8').includes(' tracefs ');
    const run = inNamespace(
      // unmount every tracefs (the debugfs automount too) and show that none is left, then run
      'for m in $(awk \'$3 == "tracefs" || $3 == "debugfs" { print $2 }\' /proc/self/mounts | sort -r); do ' +
        'umount -l "$m" || exit 9; done; ' +
        'echo "tracefs mounts before: $(grep -c " tracefs " /proc/self/mounts)"; "$@"; s=$?; ' +
        'echo "tracefs mounts after: $(grep -c " tracefs " /proc/self/mounts)"; exit $s',
      [
        '-e',
        'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @calls = count(); }',
        '-c',
        `${workloadPath()} getppid 6`,
      ],
    );
    assert.equal(await ended(run), 0, run.stderr());
    assert.equal(run.stdout(), 'tracefs mounts before: 0\n\n\n@calls: 6\ntracefs mounts after: 1\n');
    assert.equal(run.stderr(), 'Attached 1 probe\n');
    assert.equal(readFileSync('/proc/self/mounts', 'utf8').includes(' tracefs '), hostHadTracefs, 'host unchanged');
  });

  it('kernel BTF missing: programs that need it fail with one message; the others run', async () => {
    const hide = 'mount -t tmpfs none /sys/kernel/btf || exit 9; exec "$@"';
    const curtask = inNamespace(hide, ['-e', 'BEGIN { printf("%d\\n", curtask->pid); exit(); }']);
    assert.equal(await ended(curtask), 1);
    assert.equal(curtask.stdout(), '');
    assert.equal(
      curtask.stderr(),
      'ERROR: kernel BTF is not available (/sys/kernel/btf/vmlinux): cannot read kernel BTF /sys/kernel/btf/vmlinux: ENOENT\n' +
        'HINT: struct types, curtask and rawtracepoint arguments need a kernel built with CONFIG_DEBUG_INFO_BTF\n',
    );
    const plain = inNamespace(hide, [
      '-e',
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @calls = count(); }',
      '-c',
      `${workloadPath()} getppid 2`,
    ]);
    assert.equal(await ended(plain), 0, plain.stderr());
    assert.equal(plain.stdout(), '\n\n@calls: 2\n');
  });

  it("a read-only working directory: tracing works; -o FILE there fails with bpftrace's message", async () => {
    const ro = 'd=$(mktemp -d) && mount -t tmpfs -o ro none "$d" && cd "$d" || exit 9; exec "$@"';
    const ok = inNamespace(ro, ['-e', 'BEGIN { printf("hi\\n"); exit(); }']);
    assert.equal(await ended(ok), 0, ok.stderr());
    assert.equal(ok.stdout(), 'hi\n\n\n');
    const out = inNamespace(ro, ['-o', 'out.txt', '-e', 'BEGIN { printf("hi\\n"); exit(); }']);
    assert.equal(await ended(out), 1);
    assert.equal(out.stdout(), '');
    // bpftrace 0.17 prints the same (src/main.cpp)
    assert.equal(out.stderr(), 'ERROR: Failed to open output file: "out.txt": Read-only file system\n');
  });

  it('disk full under -o FILE: one message, status 1, nothing left attached, the lines written before intact', async () => {
    const before = snapshot();
    const dir = mkdtempSync(join(tmpdir(), 'bpfscope-full-'));
    const file = join(dir, 'out');
    const pad = 'x'.repeat(60);
    const run = inNamespace(`mount -t tmpfs -o size=64k none ${dir} || exit 9; exec "$@"`, [
      '-o',
      file,
      '-e',
      `interval:ms:1 { printf("line %08d ${pad}\\n", @n); @n++; }`,
    ]);
    // the file lives in the namespace's tmpfs: read it through the process's root while it runs
    const inside = `/proc/${run.pid}/root${file}`;
    try {
      assert.ok(await run.waitFor(ATTACHED), run.stderr());
      const ours = held(run.pid);
      let text = '';
      // read the file as the run writes it, until the run ends
      const reading = (async () => {
        while (isAlive(run.pid)) {
          try {
            text = readFileSync(inside, 'latin1');
          } catch {
            /* gone with the namespace */
          }
          await new Promise((r) => setTimeout(r, 5));
        }
      })();
      assert.equal(await ended(run), 1, run.stderr());
      await reading;
      assert.equal(
        run.stderr(),
        `Attached 1 probe\nERROR: Failed to write to output file: "${file}": No space left on device\n`,
      );
      await assertNoLeaks(before, ours);
      // what was read before the end: whole lines numbered from 0, then at most a piece of the next one
      const lines = text.split('\n');
      const last = lines.pop()!;
      assert.ok(lines.length > 100, `only ${lines.length} lines read`);
      lines.forEach((l, i) => assert.equal(l, `line ${String(i).padStart(8, '0')} ${pad}`, `line ${i}`));
      assert.ok(`line ${String(lines.length).padStart(8, '0')} ${pad}`.startsWith(last), `last piece: ${last}`);
    } finally {
      run.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SIGINT and SIGTERM over and over while a run ends', { skip, timeout: 60_000 }, () => {
  /**
   * After the first SIGINT, a SIGINT or SIGTERM every millisecond until the process has exited: each must be
   * ignored (the run is ending), never kill it half-way through detaching or printing. The tools' runner removed
   * its listeners before detaching, so one of them could kill a tool there (found by the kill campaign).
   */
  async function hammer(args: string[], report: (stdout: string) => boolean): Promise<void> {
    const run = bpfscope(args);
    try {
      assert.ok(await run.waitFor(args[0] === '-e' ? ATTACHED : /./), run.stderr());
      run.child.kill('SIGINT');
      let n = 0;
      const timer = setInterval(() => {
        try {
          process.kill(run.pid, n++ % 2 ? 'SIGTERM' : 'SIGINT');
        } catch {
          clearInterval(timer);
        }
      }, 1);
      const r = await ended(run);
      clearInterval(timer);
      assert.equal(r, 0, `${n} signals: ${run.stderr()}`);
      assert.ok(report(run.stdout()), `report cut short or missing:\n${run.stdout()}`);
      assert.ok(!existsSync(`/run/bpfscope/${run.pid}.json`), 'its registry record was left');
    } finally {
      run.child.kill('SIGKILL');
    }
  }

  it('a tool (runqlen) prints its report whole (or none: no sample yet) and exits 0', () =>
    hammer(['runqlen'], (out) =>
      /^Sampling run queue length\.\.\. Hit Ctrl-C to end\.\n\n( +runqlen +: count +distribution\n( +\d+ +: \d+ +\|\** *\|\n)+)?$/.test(
        out,
      ),
    ));

  it('a tool (profile) exits 0', () => hammer(['profile', '-F', '49'], (out) => /Hit Ctrl-C to end\./.test(out)));

  it('a one-liner prints its maps whole and exits 0', () =>
    hammer(
      ['-e', 'BEGIN { $i = 0; while ($i < 50) { @k[$i] = $i; $i++; } } profile:hz:99 { @p = count(); }'],
      (out) => {
        const lines = out.split('\n').filter((l) => l.startsWith('@k['));
        return lines.length === 50 && lines.every((l) => /^@k\[(\d+)\]: \1$/.test(l));
      },
    ));
});
