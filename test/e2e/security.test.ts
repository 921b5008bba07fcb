/**
 * bpfscope runs as root: nothing may open Node's inspector in it or load code into it (issue 12, item 1).
 *
 * - SIGUSR1 (what bpftrace's users send to print the maps) prints the maps and the run goes on, as bpftrace 0.17
 *   does (compared byte for byte with the oracle, text and `-f json`); a program with `self:signal:SIGUSR1` probes
 *   runs them instead; a tool ignores the signal and goes on; `signal("SIGUSR1")` from the program itself is the
 *   same signal. In every case no listening socket appears in the process (Node 20 opens its inspector on
 *   127.0.0.1:9229 on SIGUSR1, where any local user can evaluate JavaScript as root).
 * - NODE_OPTIONS (`--inspect`, `--require`) and the other NODE_* / UV_* / OPENSSL_* variables in the environment
 *   never reach node through the installed command (package.json's bin, run directly and through `npx`); `node
 *   dist/bundle/bpfscope.cjs` by hand with NODE_OPTIONS is refused as root.
 *
 * Listening sockets: the inodes of /proc/net/tcp and tcp6 lines in state 0A (TCP_LISTEN) that one of the process's
 * /proc/PID/fd links (`socket:[INODE]`) names.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  ATTACHED_PATTERN,
  bpfscopeEntry,
  bpfscopeSkipReason,
  bpftraceSkipReason,
  describe as describeRun,
  isAlive,
  processTree,
  repoRoot,
  runTool,
  startTool,
  stripOracleAttach,
  type RunningTool,
  type Tool,
} from '../helpers/cli.js';
import { runWorkload } from '../helpers/workload.js';

const skip = bpfscopeSkipReason();
const COMM = `bpfs_s${(process.pid % 0x10000).toString(16)}`;
const WAIT_MS = 30_000;
const tmp = mkdtempSync(join(tmpdir(), 'bpfscope-sec-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

/** Inodes of the TCP sockets (IPv4 and IPv6) in state LISTEN. */
function listeningInodes(): Set<string> {
  const out = new Set<string>();
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(f, 'utf8');
    } catch {
      continue; // no IPv6
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length > 9 && cols[3] === '0A') out.add(cols[9]!);
    }
  }
  return out;
}

/** Listening TCP sockets held by `pids`, as `PID: socket:[INODE]` lines (empty when there are none). */
function listeningSockets(pids: number[]): string[] {
  const listening = listeningInodes();
  const found: string[] = [];
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let link: string;
      try {
        link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(link);
      if (m && listening.has(m[1]!)) found.push(`${pid}: ${link}`);
    }
  }
  return found;
}

/**
 * The process of `tree` (pids) that runs the bundle: node with the bin (bpfscope.cjs, or npm's link to it named
 * bpfscope) as its script.
 */
function bundleProcess(tree: number[]): number | undefined {
  return tree.find((p) => {
    try {
      const argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
      return /(^|\/)node$/.test(argv[0]!) && argv.some((a) => /\/bpfscope(\.cjs)?$/.test(a));
    } catch {
      return false;
    }
  });
}

async function waitOrFail(run: RunningTool, pattern: RegExp, what: string): Promise<void> {
  if (await run.waitFor(pattern, WAIT_MS)) return;
  run.signal('SIGKILL');
  assert.fail(`${what}: ${pattern} did not appear\n${describeRun(await run.done)}`);
}

/** bpftrace's (and our) line on stdout once every probe is live (`__BPFTRACE_NOTIFY_PROBES_ATTACHED` set). */
const LIVE = '__BPFTRACE_NOTIFY_PROBES_ATTACHED\n';

/**
 * Count syscalls, SIGUSR1 twice with calls in between, then SIGINT; stdout before the SIGINT and the result (both
 * without the LIVE line).
 */
async function usr1Session(tool: Tool, format: 'text' | 'json') {
  const program = `tracepoint:syscalls:sys_enter_getppid /comm == "${COMM}"/ { @ = count(); @calls[comm] = count(); }`;
  const run = startTool(tool, ['-f', format, '-e', program], {
    timeoutMs: 120_000,
    env: { __BPFTRACE_NOTIFY_PROBES_ATTACHED: '1' },
  });
  // the attach notice comes before the probes are attached: wait until they are live
  await waitOrFail(run, /^__BPFTRACE_NOTIFY_PROBES_ATTACHED$/m, 'probes live');
  const third = format === 'text' ? /@calls\[.*\]: 3\n/ : /"@calls": \{"[^"]*": 3\}/;
  const fifth = format === 'text' ? /@calls\[.*\]: 5\n/ : /"@calls": \{"[^"]*": 5\}/;
  assert.equal(runWorkload('comm', COMM, 'getppid', 3).status, 0);
  run.signal('SIGUSR1');
  await waitOrFail(run, third, `${tool}: maps after the first SIGUSR1`);
  const sockets = listeningSockets(processTree(run.pid));
  assert.ok(isAlive(run.pid), `${tool} goes on after SIGUSR1`);
  assert.equal(runWorkload('comm', COMM, 'getppid', 2).status, 0);
  run.signal('SIGUSR1');
  await waitOrFail(run, fifth, `${tool}: maps after the second SIGUSR1`);
  const beforeInt = run.stdout().replace(LIVE, '');
  run.signal('SIGINT');
  const r = await run.done;
  return { beforeInt, sockets, r: { ...r, stdout: r.stdout.replace(LIVE, '') } };
}

describe('SIGUSR1 and Node.js start-up options as root (no inspector, no code from the environment)', { skip }, () => {
  it('SIGUSR1 prints every map and the run goes on (text); no listening socket appears', async () => {
    const { beforeInt, sockets, r } = await usr1Session('bpfscope', 'text');
    assert.deepEqual(sockets, []);
    assert.doesNotMatch(r.stderr, /Debugger|inspector/, describeRun(r));
    assert.equal(r.code, 0, describeRun(r));
    assert.equal(beforeInt, `@: 3\n@calls[${COMM}]: 3\n@: 5\n@calls[${COMM}]: 5\n`);
    assert.equal(r.stdout, `${beforeInt}\n\n@: 5\n@calls[${COMM}]: 5\n`);
  });

  it('SIGUSR1 with -f json prints map records', async () => {
    const { beforeInt, sockets, r } = await usr1Session('bpfscope', 'json');
    assert.deepEqual(sockets, []);
    assert.equal(r.code, 0, describeRun(r));
    const maps = (n: number) =>
      `{"type": "map", "data": {"@": ${n}}}\n{"type": "map", "data": {"@calls": {"${COMM}": ${n}}}}\n`;
    assert.equal(beforeInt, `{"type": "attached_probes", "count": 1, "data": {"probes": 1}}\n${maps(3)}${maps(5)}`);
  });

  it(
    'prints what bpftrace 0.17 prints on SIGUSR1, byte for byte (text and json)',
    { skip: bpftraceSkipReason() },
    async () => {
      for (const format of ['text', 'json'] as const) {
        const ours = await usr1Session('bpfscope', format);
        const oracle = await usr1Session('bpftrace', format);
        assert.equal(oracle.r.code, 0, describeRun(oracle.r));
        // the attach notices differ by version (helpers/cli.ts); what SIGUSR1 printed must not
        const strip = (s: string) => stripOracleAttach(s).stdout.replace(/^\{"type": "attached_probes".*\n/m, '');
        assert.equal(strip(ours.beforeInt), strip(oracle.beforeInt), format);
      }
    },
  );

  it('self:signal:SIGUSR1 probes run on the signal instead (no maps printed then, as current bpftrace)', async () => {
    const run = startTool('bpfscope', [
      '-e',
      'BEGIN { @a = 1; } self:signal:SIGUSR1 { printf("usr1 %d\\n", @a); @a++; }',
    ]);
    await waitOrFail(run, ATTACHED_PATTERN, 'attach notice');
    run.signal('SIGUSR1');
    await waitOrFail(run, /usr1 1\n/, 'first probe run');
    run.signal('SIGUSR1');
    await waitOrFail(run, /usr1 2\n/, 'second probe run');
    assert.deepEqual(listeningSockets(processTree(run.pid)), []);
    run.signal('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, describeRun(r));
    assert.equal(r.stdout, 'usr1 1\nusr1 2\n\n\n@a: 3\n');
  });

  it('signal("SIGUSR1") from the program to bpfscope itself prints the maps (--unsafe)', async () => {
    // the probe fires in bpfscope's own process: its parent is this test (the bin's sh execs node in place)
    const program =
      `tracepoint:syscalls:sys_enter_bpf /curtask->real_parent->tgid == ${process.pid} && @sent == 0/ ` +
      '{ @sent = 1; signal("SIGUSR1"); }';
    const run = startTool('bpfscope', ['--unsafe', '-e', program]);
    await waitOrFail(run, /^@sent: 1\n/, 'maps printed on the self-sent signal');
    assert.deepEqual(listeningSockets(processTree(run.pid)), []);
    assert.ok(isAlive(run.pid));
    run.signal('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, describeRun(r));
    assert.equal(r.stdout, '@sent: 1\n\n\n@sent: 1\n');
    assert.doesNotMatch(r.stderr, /Debugger|inspector/);
  });

  it('a tool (syscount) ignores SIGUSR1 and goes on; no listening socket appears', async () => {
    const run = startTool('bpfscope', ['syscount', '-i', '1', '-T', '1'], { timeoutMs: 120_000 });
    await waitOrFail(run, /^Tracing syscalls/m, 'syscount banner');
    run.signal('SIGUSR1');
    const intervals = () => (run.stdout().match(/^\[\d\d:\d\d:\d\d\]$/gm) ?? []).length;
    // two more interval reports: the second began after the signal had been handled
    const seen = intervals();
    await waitOrFail(run, new RegExp(`(^\\[\\d\\d:\\d\\d:\\d\\d\\]$[^]*){${seen + 2}}`, 'm'), 'reports after SIGUSR1');
    assert.deepEqual(listeningSockets(processTree(run.pid)), []);
    run.signal('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, describeRun(r));
    assert.match(r.stdout, /\nDetaching\.\.\.\n$/);
    assert.doesNotMatch(r.stderr, /Debugger|inspector/);
  });

  // x.js, when node loads it, appends "PID MAIN-SCRIPT" to the marker file
  const marker = join(tmp, 'marker');
  const preload = join(tmp, 'x.js');
  writeFileSync(
    preload,
    `require('fs').appendFileSync(${JSON.stringify(marker)}, process.pid + ' ' + process.argv[1] + '\\n');\n`,
  );
  const hostile = {
    NODE_OPTIONS: `--inspect=127.0.0.1:0 --require ${preload}`,
    NODE_PATH: tmp,
    NODE_V8_COVERAGE: join(tmp, 'coverage'),
    NODE_REDIRECT_WARNINGS: join(tmp, 'warnings'),
    UV_THREADPOOL_SIZE: '3',
    OPENSSL_CONF: join(tmp, 'openssl.cnf'),
    BPFSCOPE_SEC_KEPT: 'yes',
  };
  const markerLines = () => (existsSync(marker) ? readFileSync(marker, 'utf8') : '');

  /** Start `cmd` with the hostile environment; check the bundle's process once attached, then SIGINT it. */
  async function hostileRun(cmd: string, args: string[], cwd?: string) {
    rmSync(marker, { force: true });
    const child = spawn(cmd, args, {
      cwd: cwd ?? repoRoot(),
      env: { ...process.env, ...hostile },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const done = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    const deadline = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 120_000);
    try {
      // wait for the attach notice
      await new Promise<void>((resolve, reject) => {
        const check = () => {
          if (ATTACHED_PATTERN.test(stderr)) resolve();
          else if (child.exitCode !== null) reject(new Error(`exited early: ${stderr}`));
        };
        child.stderr.on('data', check);
        child.on('exit', check);
      });
      const pid = bundleProcess(processTree(child.pid!));
      assert.ok(pid, `the bundle's process under ${cmd}`);
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      const sockets = listeningSockets([pid]);
      process.kill(pid, 'SIGINT');
      const code = await done;
      return { pid, environ, sockets, code, stdout, stderr };
    } finally {
      clearTimeout(deadline);
      // a failed check leaves the run going: end it (its whole group: npx, sh, node)
      if (child.exitCode === null) {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  }

  const program = `tracepoint:syscalls:sys_enter_getppid /comm == "${COMM}"/ { @ = count(); }`;

  it('the bin clears NODE_OPTIONS and the other NODE_*, UV_*, OPENSSL_* variables: no inspector, no --require', async () => {
    const r = await hostileRun(bpfscopeEntry(), ['-e', program]);
    assert.deepEqual(r.sockets, []);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(markerLines(), '', 'x.js was not loaded');
    assert.deepEqual(
      r.environ.filter((e) => /^(NODE|UV|OPENSSL)_/.test(e)),
      [],
      'no variable of those families reaches node',
    );
    assert.ok(r.environ.includes('BPFSCOPE_SEC_KEPT=yes'), 'other variables are kept');
    assert.doesNotMatch(r.stderr, /Debugger/);
    assert.equal(existsSync(join(tmp, 'coverage')), false, 'NODE_V8_COVERAGE wrote nothing');
  });

  it('the same through npx (npm links the bin into node_modules/.bin)', async () => {
    // a project that depends on bpfscope, linked the way npm links a dependency's bin
    const project = join(tmp, 'project');
    mkdirSync(join(project, 'node_modules', '.bin'), { recursive: true });
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'sec-test', version: '1.0.0', dependencies: { bpfscope: `file:${repoRoot()}` } }),
    );
    symlinkSync(repoRoot(), join(project, 'node_modules', 'bpfscope'));
    symlinkSync('../bpfscope/dist/bundle/bpfscope.cjs', join(project, 'node_modules', '.bin', 'bpfscope'));
    const r = await hostileRun('npx', ['--offline', '--no-install', 'bpfscope', '-e', program], project);
    assert.deepEqual(r.sockets, []);
    assert.equal(r.code, 0, r.stderr);
    // npx is itself node and loads x.js as NODE_OPTIONS says; bpfscope's process must not
    assert.doesNotMatch(markerLines(), /dist\/bundle/, 'x.js was not loaded into bpfscope');
    assert.deepEqual(
      r.environ.filter((e) => /^(NODE|UV|OPENSSL)_/.test(e)),
      [],
    );
  });

  it('node dist/bundle/bpfscope.cjs by hand with NODE_OPTIONS is refused as root, its inspector closed', async () => {
    const r = spawnSync(process.execPath, [bpfscopeEntry(), '-e', 'BEGIN { exit(); }'], {
      env: { ...process.env, NODE_OPTIONS: '--inspect=127.0.0.1:0' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(r.status, 1, r.stderr);
    assert.equal(r.stdout, '');
    assert.match(
      r.stderr,
      /^ERROR: refusing to run as root with NODE_OPTIONS set \("--inspect=127\.0\.0\.1:0"\): run the bpfscope command, which starts node without it$/m,
    );
  });

  it('the installed command still runs without NODE_OPTIONS (and keeps its exit status)', async () => {
    const r = await runTool('bpfscope', ['-e', 'BEGIN { @x = 7; exit(3); }']);
    assert.equal(r.code, 3, describeRun(r));
    assert.equal(r.stdout, '\n\n@x: 7\n');
  });
});
