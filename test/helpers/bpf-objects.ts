/**
 * What BPF kernel objects exist and who holds them, for tests that check a run leaves nothing behind.
 *
 * Sources: `bpftool -j prog show` / `map show` / `link show` (ids, a program's map_ids, a link's prog_id),
 * `bpftool -j perf show` (perf events — tracepoint/kprobe/uprobe — with a program attached, per pid and fd),
 * `/proc/PID/fd` + `/proc/PID/fdinfo` (anon inodes `bpf-prog`, `bpf-map`, `bpf-link` carry `prog_id:`,
 * `map_id:`, `link_id:` lines; kernel/bpf/syscall.c bpf_*_show_fdinfo), and tracefs `uprobe_events` /
 * `kprobe_events` (entries created by writing to these files outlive the process unless removed).
 *
 * Other engineers' tests may create objects on this machine at the same time, so leak checks do not rely on a
 * plain before/after difference alone: see {@link findLeaks}.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** Ids of BPF programs, maps and links. */
export interface BpfIds {
  progs: Set<number>;
  maps: Set<number>;
  links: Set<number>;
}

/** The system's BPF objects at one moment, with the references between them. */
export interface BpfState {
  /** prog id -> its name and the ids of the maps it uses. */
  progs: Map<number, { name: string; type: string; mapIds: number[] }>;
  maps: Map<number, { name: string; type: string }>;
  /** link id -> the id of the program it holds. */
  links: Map<number, { progId: number; type: string }>;
  /** pid -> ids of programs attached to perf events that pid holds open. */
  perf: Map<number, Set<number>>;
}

export function emptyIds(): BpfIds {
  return { progs: new Set(), maps: new Set(), links: new Set() };
}

export function idCount(ids: BpfIds): number {
  return ids.progs.size + ids.maps.size + ids.links.size;
}

/** "progs [3, 4], maps [7], links []" for assertion messages. */
export function formatIds(ids: BpfIds, state?: BpfState): string {
  const names = (kind: 'progs' | 'maps' | 'links', id: number) => {
    if (!state) return `${id}`;
    if (kind === 'progs') return `${id}(${state.progs.get(id)?.name ?? '?'})`;
    if (kind === 'maps') return `${id}(${state.maps.get(id)?.name ?? '?'})`;
    return `${id}(${state.links.get(id)?.type ?? '?'})`;
  };
  return (['progs', 'maps', 'links'] as const)
    .map(
      (k) =>
        `${k} [${[...ids[k]]
          .sort((a, b) => a - b)
          .map((id) => names(k, id))
          .join(', ')}]`,
    )
    .join(', ');
}

function bpftoolJson(args: string[]): unknown[] {
  const out = execFileSync('bpftool', ['-j', ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const trimmed = out.trim();
  return trimmed ? (JSON.parse(trimmed) as unknown[]) : [];
}

/** Why bpftool cannot be used here, or undefined. */
export function bpftoolSkipReason(): string | undefined {
  try {
    execFileSync('bpftool', ['version'], { stdio: 'ignore' });
  } catch {
    return 'bpftool is not installed (apt-get install bpftool)';
  }
  if (process.getuid?.() !== 0) return 'listing BPF objects needs root';
  return undefined;
}

/** Reads the current BPF objects with bpftool. Throws if bpftool fails. */
export function bpfState(): BpfState {
  const progs: BpfState['progs'] = new Map();
  for (const p of bpftoolJson(['prog', 'show']) as { id: number; name?: string; type: string; map_ids?: number[] }[]) {
    progs.set(p.id, { name: p.name ?? '', type: p.type, mapIds: p.map_ids ?? [] });
  }
  const maps: BpfState['maps'] = new Map();
  for (const m of bpftoolJson(['map', 'show']) as { id: number; name?: string; type: string }[]) {
    maps.set(m.id, { name: m.name ?? '', type: m.type });
  }
  const links: BpfState['links'] = new Map();
  for (const l of bpftoolJson(['link', 'show']) as { id: number; prog_id: number; type: string }[]) {
    links.set(l.id, { progId: l.prog_id, type: l.type });
  }
  const perf: BpfState['perf'] = new Map();
  for (const e of bpftoolJson(['perf', 'show']) as { pid: number; prog_id: number }[]) {
    const progs = perf.get(e.pid) ?? new Set<number>();
    progs.add(e.prog_id);
    perf.set(e.pid, progs);
  }
  return { progs, maps, links, perf };
}

/** The ids present in a state. */
export function stateIds(s: BpfState): BpfIds {
  return { progs: new Set(s.progs.keys()), maps: new Set(s.maps.keys()), links: new Set(s.links.keys()) };
}

/**
 * Ids of BPF objects `pid` holds through its file descriptors (read from /proc/PID/fdinfo), not following
 * references. A pid that is gone yields empty sets.
 */
export function fdHeldIds(pid: number): BpfIds {
  const ids = emptyIds();
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return ids;
  }
  for (const fd of fds) {
    let target: string;
    let info: string;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      // the kernel names them anon_inode:bpf-prog, anon_inode:bpf-map and anon_inode:bpf_link
      if (!/^anon_inode:bpf[-_]/.test(target)) continue;
      info = readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8');
    } catch {
      continue; // closed meanwhile
    }
    const field = (name: string) => {
      const m = new RegExp(`^${name}:\\s*(\\d+)`, 'm').exec(info);
      return m ? Number(m[1]) : undefined;
    };
    const kind = target.slice('anon_inode:bpf-'.length).replace(/^_/, '');
    const id = kind === 'prog' ? field('prog_id') : kind === 'map' ? field('map_id') : field('link_id');
    if (id === undefined) continue;
    if (kind === 'prog') ids.progs.add(id);
    else if (kind === 'map') ids.maps.add(id);
    else if (kind === 'link') ids.links.add(id);
  }
  return ids;
}

/** Adds what the given objects keep alive: a link's program, a program's maps. */
export function withReferences(ids: BpfIds, s: BpfState): BpfIds {
  const out: BpfIds = { progs: new Set(ids.progs), maps: new Set(ids.maps), links: new Set(ids.links) };
  for (const l of out.links) {
    const p = s.links.get(l)?.progId;
    if (p !== undefined) out.progs.add(p);
  }
  for (const p of out.progs) for (const m of s.progs.get(p)?.mapIds ?? []) out.maps.add(m);
  return out;
}

/** Everything the given pids hold: their BPF fds, programs on their perf events, and what those reference. */
export function heldBy(pids: Iterable<number>, s: BpfState): BpfIds {
  const direct = emptyIds();
  for (const pid of pids) {
    const ids = fdHeldIds(pid);
    for (const k of ['progs', 'maps', 'links'] as const) for (const id of ids[k]) direct[k].add(id);
    for (const p of s.perf.get(pid) ?? []) direct.progs.add(p);
  }
  return withReferences(direct, s);
}

/** Pids of all live processes. */
export function allPids(): number[] {
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map(Number);
}

/** Non-empty lines of tracefs `uprobe_events` and `kprobe_events` (a missing file counts as empty). */
export function tracefsProbeEvents(): string[] {
  const lines: string[] = [];
  for (const f of ['uprobe_events', 'kprobe_events']) {
    for (const base of ['/sys/kernel/tracing', '/sys/kernel/debug/tracing']) {
      try {
        const text = readFileSync(`${base}/${f}`, 'utf8');
        lines.push(
          ...text
            .split('\n')
            .filter((l) => l.trim() !== '')
            .map((l) => `${f}: ${l}`),
        );
        break;
      } catch {
        // not mounted here or no such file (kprobe_events is absent without CONFIG_KPROBE_EVENTS)
      }
    }
  }
  return lines;
}

function subtract(a: BpfIds, b: BpfIds): BpfIds {
  return {
    progs: new Set([...a.progs].filter((x) => !b.progs.has(x))),
    maps: new Set([...a.maps].filter((x) => !b.maps.has(x))),
    links: new Set([...a.links].filter((x) => !b.links.has(x))),
  };
}

function intersect(a: BpfIds, b: BpfIds): BpfIds {
  return {
    progs: new Set([...a.progs].filter((x) => b.progs.has(x))),
    maps: new Set([...a.maps].filter((x) => b.maps.has(x))),
    links: new Set([...a.links].filter((x) => b.links.has(x))),
  };
}

function union(a: BpfIds, b: BpfIds): BpfIds {
  return {
    progs: new Set([...a.progs, ...b.progs]),
    maps: new Set([...a.maps, ...b.maps]),
    links: new Set([...a.links, ...b.links]),
  };
}

/** Result of {@link findLeaks}: `leaked` is empty when the run cleaned up. */
export interface LeakReport {
  leaked: BpfIds;
  /** New tracefs uprobe/kprobe event lines that were not there before the run. */
  tracefs: string[];
  /** The state at the last check (for naming leaked objects in messages). */
  state: BpfState;
  /** ms spent waiting for the kernel to free the objects. */
  waitedMs: number;
}

/**
 * After a run's process tree has exited: which of its BPF objects are still alive. An object counts as leaked
 * when it is still present after `waitMs` (the kernel frees programs, maps and links asynchronously, after an RCU
 * grace period) and either
 *  - it was held by the run while it ran (`ours`, sampled with {@link heldBy} during the run), or
 *  - it did not exist `before` the run and no live process holds it (pinned in bpffs, or kept by something the
 *    run left behind).
 * New objects held by other live processes (other tests on this machine) are not counted.
 */
export async function findLeaks(
  before: { state: BpfState; tracefs: string[] },
  ours: BpfIds,
  waitMs = 1000,
): Promise<LeakReport> {
  const t0 = Date.now();
  const beforeIds = stateIds(before.state);
  for (;;) {
    const listed = bpfState();
    const created = subtract(stateIds(listed), beforeIds);
    const heldByOthers = heldBy(allPids(), listed);
    // listed again after the scan: an object another process created and closed between the first listing and the
    // scan was held by nobody at the scan, and is gone now (ids are not reused); under a stream of other processes'
    // short-lived objects, the first listing alone always had some (kill campaign run 154's "leaked" links)
    const state = bpfState();
    const present = stateIds(state);
    const leaked = intersect(union(ours, subtract(created, heldByOthers)), present);
    const tracefs = tracefsProbeEvents().filter((l) => !before.tracefs.includes(l));
    const waitedMs = Date.now() - t0;
    if ((idCount(leaked) === 0 && tracefs.length === 0) || waitedMs >= waitMs) {
      return { leaked, tracefs, state, waitedMs };
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
