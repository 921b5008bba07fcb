/**
 * The randomized kill campaign (issue 19, campaign item 1), shared by `test/reliability/kills.test.ts` (20 runs, a
 * fixed seed, in `npm test`) and `bench/reliability/kills.mjs` (200 runs, figures in docs/reliability.md).
 *
 * One run: start bpfscope (a one-liner, most with a `-c` command, or a bcc tool), wait until it is in the phase the
 * run targets, send SIGINT, SIGTERM or SIGKILL, wait for it to end, then check that nothing of it is left.
 *
 * Phases, observed from outside (the process's file descriptors in /proc/PID/fd, and its output):
 * - `compile`: node has started but holds no BPF object yet (start-up, parsing, analysis, code generation);
 * - `load`: it holds BPF maps or programs (anon inodes `bpf-map`, `bpf-prog`) but no perf event or BPF link;
 * - `attach`: it holds a perf event (`[perf_event]`) or a BPF link, but has not said it is attached (one-liners:
 *   `Attached N probes` on stderr; tools: their header, printed once attached);
 * - `streaming`: attached, running, events flowing;
 * - `printing`: a first SIGINT has ended the run and its end-of-run output (the maps, a tool's report) has begun to
 *   appear on stdout; the run's signal is then sent on top of it.
 * The phase recorded is the one seen right before the signal went out (polled in a tight loop for `load` and
 * `attach`, which can last a few milliseconds), not the one aimed at.
 *
 * After each run: bpfscope and every process of the run (the `-c` command, found by the run's unique comm in its
 * command line) are gone; no BPF program, map or link it held or created is alive ({@link findLeaks}); no new
 * tracefs `uprobe_events`/`kprobe_events`/`dynamic_events` line, no new file under /sys/fs/bpf (a pin), no perf
 * event with a program held by its pids; unless it was SIGKILLed, its registry record `/run/bpfscope/PID.json` is
 * gone (a SIGKILLed run cannot remove it: readers ignore it, as its pid is dead, and the next run prunes it). Exit:
 * 0, or death by the signal sent (SIGKILL; SIGINT/SIGTERM while compiling, before bpfscope listens for them); no
 * `internal error` and no stack trace on stderr. Each one-liner fills `@k` with {@link MAP_KEYS} known keys in
 * BEGIN: when the run ends by SIGINT or SIGTERM, stdout has all of them with their values or none.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type BpfIds,
  bpfState,
  emptyIds,
  fdHeldIds,
  findLeaks,
  formatIds,
  idCount,
  tracefsProbeEvents,
} from './bpf-objects.js';
import { describe, isAlive, repoRoot, type RunningTool, startTool, type ToolResult } from './cli.js';
import { workloadPath } from './workload.js';

export const PHASES = ['compile', 'load', 'attach', 'streaming', 'printing'] as const;
export type Phase = (typeof PHASES)[number];
export const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGKILL'] as const;
export type KillSignal = (typeof SIGNALS)[number];

/** Keys BEGIN puts into `@k` in every one-liner (`@k[i] = 1000000 + i`, i < MAP_KEYS). */
export const MAP_KEYS = 100;
const FILL = `BEGIN { $i = 0; while ($i < ${MAP_KEYS}) { @k[$i] = $i + 1000000; $i++; } }`;

/** One kind of run. `tag` is unique per run: it names the `-c` command's comm so the command can be found. */
export interface KillCase {
  name: string;
  kind: 'one-liner' | 'tool';
  args: (tag: string) => string[];
  /** Prints something when the run ends (maps, a report): the `printing` phase applies. */
  printsAtEnd: boolean;
}

/** A long-running `-c` workload under comm `tag`: 1 ms sleeps, each a nanosleep system call through libc. */
function sleeper(tag: string): string {
  return `${workloadPath()} comm ${tag} nanosleep 100000 1000`;
}

let usdtBinary: string | undefined;
/** test/fixtures/usdt.c built -O1 into `os.tmpdir()/bpfscope-test-<sha256 of usdt.c, 12 hex>/bpfs_usdt`. @throws when cc fails */
export function usdtPath(): string {
  if (usdtBinary) return usdtBinary;
  const src = join(repoRoot(), 'test', 'fixtures', 'usdt.c');
  const dir = join(
    tmpdir(),
    `bpfscope-test-${createHash('sha256').update(readFileSync(src)).digest('hex').slice(0, 12)}`,
  );
  const out = join(dir, 'bpfs_usdt');
  if (!existsSync(out)) {
    mkdirSync(dir, { recursive: true });
    const tmp = `${out}.${process.pid}.tmp`;
    execFileSync('cc', ['-O1', '-o', tmp, src]);
    renameSync(tmp, out);
  }
  usdtBinary = out;
  return out;
}

export const CASES: KillCase[] = [
  {
    name: 'tracepoint, -c',
    kind: 'one-liner',
    printsAtEnd: true,
    args: (tag) => [
      '-e',
      `${FILL} tracepoint:syscalls:sys_enter_nanosleep /pid == cpid/ { @calls = count(); }`,
      '-c',
      sleeper(tag),
    ],
  },
  {
    name: 'tracepoint wildcard',
    kind: 'one-liner',
    printsAtEnd: true,
    args: () => ['-e', `${FILL} tracepoint:syscalls:sys_enter_get* { @[probe] = count(); }`],
  },
  {
    name: 'uprobe libc, -c',
    kind: 'one-liner',
    printsAtEnd: true,
    args: (tag) => ['-e', `${FILL} uprobe:libc.so.6:syscall /pid == cpid/ { @calls = count(); }`, '-c', sleeper(tag)],
  },
  {
    name: 'uprobe multi wildcard, -c',
    kind: 'one-liner',
    printsAtEnd: true,
    args: (tag) => ['-e', `${FILL} uprobe:${workloadPath()}:* { @[probe] = count(); }`, '-c', sleeper(tag)],
  },
  {
    name: 'uretprobe + printf, -c',
    kind: 'one-liner',
    printsAtEnd: true,
    args: (tag) => [
      '-e',
      `${FILL} uretprobe:libc.so.6:syscall /pid == cpid/ { printf("ret %d\\n", retval); }`,
      '-c',
      sleeper(tag),
    ],
  },
  {
    name: 'profile:hz',
    kind: 'one-liner',
    printsAtEnd: true,
    args: () => ['-e', `${FILL} profile:hz:99 { @[cpu] = count(); } interval:ms:50 { printf("tick\\n"); }`],
  },
  {
    name: 'usdt, -c',
    kind: 'one-liner',
    printsAtEnd: true,
    // the fixture loops on its probe; argv[1] is the iteration count (a comm cannot be set: found by its path)
    args: () => ['-e', `${FILL} usdt:${usdtPath()}:bpfs:tick { @ticks = count(); }`, '-c', `${usdtPath()} 100000000`],
  },
  {
    name: 'rawtracepoint + tracepoint',
    kind: 'one-liner',
    printsAtEnd: true,
    args: () => [
      '-e',
      `${FILL} rawtracepoint:sched_switch { @sw = count(); } tracepoint:sched:sched_wakeup { @wk = count(); }`,
    ],
  },
  { name: 'opensnoop', kind: 'tool', printsAtEnd: false, args: () => ['opensnoop'] },
  { name: 'execsnoop', kind: 'tool', printsAtEnd: false, args: () => ['execsnoop'] },
  { name: 'exitsnoop', kind: 'tool', printsAtEnd: false, args: () => ['exitsnoop'] },
  { name: 'threadsnoop (uprobe)', kind: 'tool', printsAtEnd: false, args: () => ['threadsnoop'] },
  { name: 'syscount', kind: 'tool', printsAtEnd: true, args: () => ['syscount'] },
  { name: 'runqlat', kind: 'tool', printsAtEnd: true, args: () => ['runqlat'] },
  { name: 'runqlen', kind: 'tool', printsAtEnd: true, args: () => ['runqlen'] },
  { name: 'profile', kind: 'tool', printsAtEnd: true, args: () => ['profile', '-F', '49'] },
  { name: 'offcputime', kind: 'tool', printsAtEnd: true, args: () => ['offcputime'] },
  { name: 'funccount', kind: 'tool', printsAtEnd: true, args: () => ['funccount', 't:syscalls:sys_enter_getpp*'] },
];

/** Deterministic PRNG (mulberry32): the same seed gives the same campaign. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What one run did and what was wrong with it (`failures` empty when it passed every check). */
export interface KillResult {
  index: number;
  case: string;
  kind: KillCase['kind'];
  signal: KillSignal;
  target: Phase;
  /** The phase seen right before the signal (`ended` if the run had already ended by itself). */
  phase: Phase | 'ended';
  /** `exit N` or `signal NAME`. */
  status: string;
  /** For one-liners ended by SIGINT/SIGTERM: how many `@k` lines stdout had (0 or MAP_KEYS). */
  mapLines?: number;
  /** Leftovers found (all zero when clean). */
  leftover: { bpf: number; tracefs: number; pins: number; processes: number; registry: number };
  /** A SIGKILLed run's registry record still there (expected: it cannot remove it). */
  staleRecord: boolean;
  failures: string[];
  ms: number;
}

/** BPF-related file descriptors of `pid`: BPF maps/programs, and perf events/links (attachments). */
function fdKinds(pid: number): { objects: number; attachments: number } | null {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return null;
  }
  let objects = 0;
  let attachments = 0;
  for (const fd of fds) {
    let target: string;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue;
    }
    if (target === 'anon_inode:bpf-map' || target === 'anon_inode:bpf-prog') objects++;
    else if (target === 'anon_inode:[perf_event]' || target === 'anon_inode:bpf_link') attachments++;
  }
  return { objects, attachments };
}

/** Whether the process has exec'd node (its argv names the bundle): before that it is the sh prelude. */
function isNode(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0')[0]!.includes('node');
  } catch {
    return false;
  }
}

function attachedMarker(c: KillCase, run: RunningTool): boolean {
  return c.kind === 'tool' ? run.stdout().length > 0 : /^Attached \d+ probes?$/m.test(run.stderr());
}

/** The phase the run is in now. */
function currentPhase(c: KillCase, run: RunningTool, ending: boolean): Phase | 'ended' {
  const k = fdKinds(run.pid);
  if (k === null || !isAlive(run.pid)) return 'ended';
  if (ending) return 'printing';
  if (attachedMarker(c, run)) return 'streaming';
  if (k.attachments > 0) return 'attach';
  if (k.objects > 0) return 'load';
  return 'compile';
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` every `stepMs` until it holds or `ms` pass; returns whether it held. */
async function until(cond: () => boolean, ms: number, stepMs = 2): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if (cond()) return true;
    if (Date.now() > end) return false;
    await sleep(stepMs);
  }
}

/** Spins (no event loop turns) until `cond` holds or `ms` pass: for phases that last a few milliseconds. */
function spinUntil(cond: () => boolean, ms: number): boolean {
  const end = Date.now() + ms;
  while (Date.now() < end) if (cond()) return true;
  return false;
}

/** Live processes whose command line contains `word` (the run's `-c` command), other than this one. */
function processesWith(word: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${d}/cmdline`, 'latin1').includes(word) && isAlive(Number(d))) out.push(Number(d));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

/** Lines of tracefs dynamic_events (uprobes, kprobes, eprobes, synthetic events). */
function dynamicEvents(): string[] {
  for (const base of ['/sys/kernel/tracing', '/sys/kernel/debug/tracing']) {
    try {
      return readFileSync(`${base}/dynamic_events`, 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => `dynamic_events: ${l}`);
    } catch {
      /* not here */
    }
  }
  return [];
}

/** Every path under /sys/fs/bpf (pinned objects and their directories). */
function pins(dir = '/sys/fs/bpf'): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const n of names) {
    const p = `${dir}/${n}`;
    out.push(p);
    out.push(...pins(p));
  }
  return out;
}

/** Waits until the run has ended, at most `ms`; then SIGKILLs its group (a hang is a failure). */
async function ended(run: RunningTool, ms: number): Promise<{ r: ToolResult; hung: boolean }> {
  const t = new Promise<null>((r) => setTimeout(() => r(null), ms).unref());
  const r = await Promise.race([run.done, t]);
  if (r) return { r, hung: false };
  try {
    process.kill(-run.pid, 'SIGKILL');
  } catch {
    /* gone */
  }
  return { r: await run.done, hung: true };
}

export interface RunPlan {
  index: number;
  case: KillCase;
  signal: KillSignal;
  target: Phase;
  /** 0..1: where in the phase's window the signal goes (a random delay). */
  at: number;
}

/** The campaign's runs for `seed`: phases and signals in turn (every pair within 15 runs), cases and delays random. */
export function plan(seed: number, runs: number): RunPlan[] {
  const rnd = prng(seed);
  const out: RunPlan[] = [];
  for (let i = 0; i < runs; i++) {
    const target = PHASES[i % PHASES.length]!;
    const signal = SIGNALS[Math.floor(i / PHASES.length) % SIGNALS.length]!;
    const eligible = CASES.filter((c) => target !== 'printing' || c.printsAtEnd);
    const c = eligible[Math.floor(rnd() * eligible.length)]!;
    out.push({ index: i, case: c, signal, target, at: rnd() });
  }
  return out;
}

/** Runs one kill and checks what it left. */
export async function runKill(p: RunPlan): Promise<KillResult> {
  const t0 = Date.now();
  const c = p.case;
  const tag = `bpfs_k${process.pid % 1000}_${p.index}`;
  const failures: string[] = [];
  const before = { state: bpfState(), tracefs: [...tracefsProbeEvents(), ...dynamicEvents()] };
  const pinsBefore = new Set(pins());
  const run = startTool('bpfscope', c.args(tag), { timeoutMs: 120_000 });
  let phase = 'ended' as Phase | 'ended';
  let ours: BpfIds = emptyIds();
  let ending = false;
  const fire = (): void => {
    phase = currentPhase(c, run, ending);
    ours = fdHeldIds(run.pid);
    run.signal(p.signal);
  };
  try {
    switch (p.target) {
      case 'compile':
        // node is up and no BPF object exists yet: a random moment in the first ~150 ms (compiling takes ~0.3 s)
        await until(() => isNode(run.pid) || !isAlive(run.pid), 10_000, 1);
        await sleep(Math.floor(p.at * 150));
        fire();
        break;
      case 'load':
        spinUntil(() => (fdKinds(run.pid)?.objects ?? 1) > 0, 30_000);
        fire();
        break;
      case 'attach':
        spinUntil(() => {
          const k = fdKinds(run.pid);
          return k === null || k.attachments > 0 || attachedMarker(c, run);
        }, 30_000);
        fire();
        break;
      case 'streaming':
        await run.waitFor(c.kind === 'tool' ? /./ : /^Attached \d+ probes?$/m, 60_000);
        await sleep(Math.floor(p.at * 500));
        fire();
        break;
      case 'printing': {
        await run.waitFor(c.kind === 'tool' ? /./ : /^Attached \d+ probes?$/m, 60_000);
        await sleep(Math.floor(p.at * 300));
        const shown = run.stdout().length;
        ending = true;
        run.signal('SIGINT');
        await until(() => run.stdout().length > shown || !isAlive(run.pid), 30_000, 1);
        fire();
        break;
      }
    }
  } catch (e) {
    failures.push(`harness: ${(e as Error).message}`);
  }
  const pidsOfRun = [run.pid];
  const { r, hung } = await ended(run, 60_000);
  if (hung) failures.push('did not end within 60 s of the signal');
  const status = r.signal ? `signal ${r.signal}` : `exit ${r.code}`;
  // exit status: 0, or killed by the signal sent (SIGINT/SIGTERM only before bpfscope listens: while compiling)
  const ok =
    (r.code === 0 && p.signal !== 'SIGKILL') ||
    r.signal === p.signal ||
    (ending && r.code === 0 && p.signal === 'SIGKILL' && phase === 'ended');
  if (!ok && !hung) failures.push(`exit status ${status}`);
  // (in `load` it may not listen yet: the compiler's feature probes create BPF objects before Tracer.start listens)
  if (r.signal && r.signal !== 'SIGKILL' && phase !== 'compile' && phase !== 'load' && phase !== 'ended') {
    failures.push(`killed by ${r.signal} in phase ${phase}: bpfscope listens for it from loading on`);
  }
  if (/internal error|^\s+at .*\(.*:\d+:\d+\)$/m.test(r.stderr)) failures.push('internal error or stack trace');
  // the maps whole or not at all
  let mapLines: number | undefined;
  if (c.kind === 'one-liner' && p.signal !== 'SIGKILL') {
    const lines = r.stdout.split('\n').filter((l) => l.startsWith('@k['));
    mapLines = lines.length;
    const good = lines.filter((l) => {
      const m = /^@k\[(\d+)\]: (\d+)$/.exec(l);
      return m && Number(m[2]) === Number(m[1]) + 1_000_000;
    });
    if (!(lines.length === 0 || (lines.length === MAP_KEYS && good.length === MAP_KEYS))) {
      failures.push(`@k printed in part: ${lines.length} of ${MAP_KEYS} lines, ${good.length} well formed`);
    }
    if (r.code === 0 && phase !== 'compile' && phase !== 'ended' && lines.length === 0) {
      failures.push(`@k not printed although the run ended by ${p.signal} in phase ${phase}`);
    }
  }
  // processes: bpfscope and the -c command (found by the run's tag, or the usdt fixture's path)
  const leftPids = [
    ...pidsOfRun.filter(isAlive),
    ...(await settle(() => processesWith(tag).concat(c.name.startsWith('usdt') ? processesWith(usdtPath()) : []))),
  ];
  if (leftPids.length) {
    failures.push(`processes left: ${leftPids.join(', ')}`);
    for (const pid of leftPids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  }
  const report = await findLeaks(before, ours, 3000);
  const tracefs = [...report.tracefs, ...dynamicEvents().filter((l) => !before.tracefs.includes(l))];
  if (idCount(report.leaked)) failures.push(`BPF objects left: ${formatIds(report.leaked, report.state)}`);
  if (tracefs.length) failures.push(`tracefs entries left: ${tracefs.join('; ')}`);
  const newPins = pins().filter((x) => !pinsBefore.has(x));
  if (newPins.length) failures.push(`pins left: ${newPins.join(', ')}`);
  const perfHeld = [...(report.state.perf.get(run.pid) ?? [])];
  if (perfHeld.length) failures.push(`perf events left with programs ${perfHeld.join(', ')}`);
  const record = existsSync(`/run/bpfscope/${run.pid}.json`);
  if (record && p.signal !== 'SIGKILL') failures.push(`registry record /run/bpfscope/${run.pid}.json left`);
  return {
    index: p.index,
    case: c.name,
    kind: c.kind,
    signal: p.signal,
    target: p.target,
    phase,
    status: hung ? `hung (${status})` : status,
    ...(mapLines !== undefined ? { mapLines } : {}),
    leftover: {
      bpf: idCount(report.leaked) + perfHeld.length,
      tracefs: tracefs.length,
      pins: newPins.length,
      processes: leftPids.length,
      registry: record && p.signal !== 'SIGKILL' ? 1 : 0,
    },
    staleRecord: record && p.signal === 'SIGKILL',
    failures: failures.map((f) => (f.startsWith('exit status') ? `${f}\n${describe(r)}` : f)),
    ms: Date.now() - t0,
  };
}

/** `list()` once it is empty, or after 3 s what it still returns (a killed child takes a moment to be reaped). */
async function settle(list: () => number[]): Promise<number[]> {
  let last = list();
  await until(() => (last = list()).length === 0, 3000, 20);
  return last;
}

/** Runs the campaign; `onResult` sees each run as it finishes. */
export async function campaign(
  seed: number,
  runs: number,
  onResult: (r: KillResult) => void = () => {},
): Promise<KillResult[]> {
  const out: KillResult[] = [];
  for (const p of plan(seed, runs)) {
    const r = await runKill(p);
    onResult(r);
    out.push(r);
  }
  return out;
}

/** The campaign's table: runs per signal and phase seen, then failures. */
export function summary(results: KillResult[]): string {
  const cols = [...PHASES, 'ended'] as const;
  const lines: string[] = [];
  lines.push(`| signal \\ phase | ${cols.join(' | ')} | runs | failures |`);
  lines.push(`|---|${cols.map(() => '---:').join('|')}|---:|---:|`);
  for (const s of SIGNALS) {
    const rs = results.filter((r) => r.signal === s);
    lines.push(
      `| ${s} | ${cols.map((ph) => rs.filter((r) => r.phase === ph).length).join(' | ')} | ${rs.length} | ${
        rs.filter((r) => r.failures.length).length
      } |`,
    );
  }
  const sum = (k: keyof KillResult['leftover']) => results.reduce((n, r) => n + r.leftover[k], 0);
  lines.push('');
  lines.push(
    `leftovers: BPF objects ${sum('bpf')}, tracefs events ${sum('tracefs')}, pins ${sum('pins')}, ` +
      `processes ${sum('processes')}, registry records ${sum('registry')}; ` +
      `stale registry records after SIGKILL ${results.filter((r) => r.staleRecord).length}`,
  );
  const mapped = results.filter((r) => r.mapLines !== undefined);
  lines.push(
    `maps on SIGINT/SIGTERM (one-liners): ${mapped.filter((r) => r.mapLines === MAP_KEYS).length} whole, ` +
      `${mapped.filter((r) => r.mapLines === 0).length} not printed, ` +
      `${mapped.filter((r) => r.mapLines !== 0 && r.mapLines !== MAP_KEYS).length} in part`,
  );
  const byCase = new Map<string, number>();
  for (const r of results) byCase.set(r.case, (byCase.get(r.case) ?? 0) + 1);
  lines.push(`runs per case: ${[...byCase].map(([k, v]) => `${k} ${v}`).join(', ')}`);
  const statuses = new Map<string, number>();
  for (const r of results) statuses.set(`${r.signal} ${r.status}`, (statuses.get(`${r.signal} ${r.status}`) ?? 0) + 1);
  lines.push(`exit statuses: ${[...statuses].map(([k, v]) => `${k}: ${v}`).join(', ')}`);
  for (const r of results.filter((x) => x.failures.length)) {
    lines.push(`FAILED run ${r.index} (${r.case}, ${r.signal}, aimed at ${r.target}, seen ${r.phase}):`);
    for (const f of r.failures) lines.push(`  ${f}`);
  }
  return lines.join('\n');
}
