/**
 * Startup (issue 4, item 2): launch until probes are attached (the tracer's attach line) and launch to exit, for the
 * STARTUP programs, interleaving bpfscope and bpftrace (A B A B ...). Programs that do not end by themselves get
 * SIGINT as soon as the attach line is seen; their "launch to exit" therefore includes the shutdown, which is also
 * reported alone (SIGINT to exit). Peak RSS (VmHWM) of each run is kept for the memory section.
 * `node -e ''` is measured in the same rounds as the floor of any Node program.
 */
import { CLI, TRACERS } from './env.mjs';
import { launch, waitPerfFds } from './proc.mjs';
import { STARTUP } from './programs.mjs';

/**
 * One launch of `tracer` on `prog`; resolves to { readyMs, liveMs, exitMs, shutdownMs, peakKb, ok, error }.
 * liveMs: all the probes' perf event fds are open (bpftrace 0.17 loses a SIGINT that arrives while it attaches and
 * then never exits, so SIGINT waits for this).
 */
export async function startOnce(tracer, prog) {
  const { cmd, args } = tracer.argv(prog.program);
  const h = launch({ cmd, args, readyRe: tracer.readyRe, readyOn: tracer.readyOn, timeoutMs: 30000 });
  const readyMs = await h.ready;
  let liveMs = null;
  if (readyMs !== null && !prog.exits) {
    liveMs = await waitPerfFds(h, tracer.liveFds(prog.probes));
    h.signal('SIGINT');
  }
  const ex = await h.exited;
  const ok = readyMs !== null && ex.code === 0 && (prog.exits || liveMs !== null);
  return {
    readyMs,
    liveMs,
    exitMs: ex.ms,
    shutdownMs: h.signalMs !== null ? ex.ms - h.signalMs : null,
    peakKb: h.peakHwmKb || null,
    ok,
    ...(ok
      ? {}
      : { error: `exit ${ex.code ?? ex.signal}: ${(h.err() || h.out()).trim().split('\n').slice(-2).join(' / ')}` }),
  };
}

async function nodeFloor() {
  const h = launch({ cmd: process.execPath, args: ['-e', ''] });
  return (await h.exited).ms;
}

/**
 * @param {{ rounds: number, log: (s: string) => void }} opts
 * @returns {{ rows: object[], raw: object, memoryRows: object[] }}
 */
export async function runStartup({ rounds, log }) {
  const raw = {};
  for (const p of STARTUP) raw[p.id] = { bpfscope: [], bpftrace: [] };
  raw.node_floor = [];
  for (let r = 0; r < rounds; r++) {
    raw.node_floor.push(await nodeFloor());
    for (const p of STARTUP) {
      for (const t of [TRACERS.bpfscope, TRACERS.bpftrace]) {
        const res = await startOnce(t, p);
        raw[p.id][t.name].push(res);
        if (!res.ok) log(`  ${t.name} ${p.id}: FAILED ${res.error}`);
      }
    }
    log(`  startup round ${r + 1}/${rounds} done`);
  }
  const pick = (id, tool, key) => raw[id][tool].filter((x) => x.ok).map((x) => x[key]);
  const rows = [];
  for (const p of STARTUP) {
    rows.push({
      name: `launch → attached: ${p.title}`,
      unit: 'ms',
      ours: pick(p.id, 'bpfscope', 'readyMs'),
      peer: pick(p.id, 'bpftrace', 'readyMs'),
      target: { op: '<=', ratio: 1.0 },
    });
    if (!p.exits) {
      rows.push({
        name: `launch → probes live (perf event fds open): ${p.title}`,
        unit: 'ms',
        ours: pick(p.id, 'bpfscope', 'liveMs'),
        peer: pick(p.id, 'bpftrace', 'liveMs'),
        target: { op: '<=', ratio: 1.0 },
      });
    }
    rows.push({
      name: `launch → exit: ${p.title}${p.exits ? '' : ' (SIGINT when live)'}`,
      unit: 'ms',
      ours: pick(p.id, 'bpfscope', 'exitMs'),
      peer: pick(p.id, 'bpftrace', 'exitMs'),
      target: { op: '<=', ratio: 0.5 },
    });
    if (!p.exits) {
      rows.push({
        name: `SIGINT → exit: ${p.title}`,
        unit: 'ms',
        ours: pick(p.id, 'bpfscope', 'shutdownMs'),
        peer: pick(p.id, 'bpftrace', 'shutdownMs'),
      });
    }
  }
  rows.push({
    name: "`node -e ''` launch → exit (floor of any Node CLI)",
    unit: 'ms',
    ours: raw.node_floor,
    peer: null,
  });
  const memoryRows = STARTUP.map((p) => ({
    name: `peak RSS: ${p.title}`,
    unit: 'MB',
    ours: pick(p.id, 'bpfscope', 'peakKb').map((k) => k / 1024),
    peer: pick(p.id, 'bpftrace', 'peakKb').map((k) => k / 1024),
    target: { op: '<=', ratio: 0.6 },
  }));
  return { rows, raw, memoryRows, cli: CLI };
}
