/**
 * Every BPF program, map and link on the system, who holds it and where it is attached: the data of
 * `bpfscope ps` (bcc's bpflist, `bpftool prog/map/link/perf show`), from the public API as {@link listBpfObjects}.
 *
 * Sources:
 * - objects: BPF_{PROG,MAP,LINK}_GET_NEXT_ID, *_GET_FD_BY_ID and BPF_OBJ_GET_INFO_BY_FD (`struct bpf_prog_info`,
 *   `bpf_map_info`, `bpf_link_info` of include/uapi/linux/bpf.h; see kernel/bpf.ts);
 * - owners: `/proc/PID/fd` links `anon_inode:bpf-prog`, `anon_inode:bpf-map`, `anon_inode:bpf_link` whose
 *   `/proc/PID/fdinfo/FD` has a `prog_id:`, `map_id:` or `link_id:` line (kernel/bpf/syscall.c
 *   bpf_*_show_fdinfo); perf event fds (`anon_inode:[perf_event]`) with a program, and where that perf event is
 *   (tracepoint name, kprobe function + offset, uprobe file + offset), from BPF_TASK_FD_QUERY, as `bpftool perf`;
 * - bpfscope's own runs: the session registry `/run/bpfscope/PID.json` (runtime/registry.ts);
 * - run statistics: `run_cnt` and `run_time_ns` of `bpf_prog_info`, which the kernel counts only while
 *   `kernel.bpf_stats_enabled` is 1 or a BPF_ENABLE_STATS fd is open.
 *
 * Objects come and go while they are listed: one that disappears between its id and its fd is left out; the
 * listing is a snapshot taken over a few milliseconds, not an atomic one.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { BpfscopeError, KernelError, PermissionError } from '../errors.js';
import {
  type BpfObjectKind,
  enableStats,
  type LinkInfo,
  LinkType,
  linkInfo,
  mapInfo,
  objGetFdById,
  objGetNextId,
  PerfEventType,
  type ProgInfo,
  progInfo,
  TaskFdType,
  taskFdQuery,
} from '../kernel/bpf.js';
import { close, Errno } from '../kernel/ffi.js';
import { type ProcessRecord, readSessionRecords, type SessionRecord } from '../runtime/registry.js';
import { ATTACH_TYPE_NAMES, enumName, LINK_TYPE_NAMES, MAP_TYPE_NAMES, PROG_TYPE_NAMES } from './names.js';

export type { ProcessRecord, SessionRecord } from '../runtime/registry.js';

/** Listing the system's BPF objects needs CAP_SYS_ADMIN (root); thrown without it (errno EPERM). */
export class BpfPermissionError extends PermissionError {
  constructor() {
    super('bpf(BPF_PROG_GET_NEXT_ID)', 1, 'listing the BPF objects of the system needs root (CAP_SYS_ADMIN)', {
      hint: 'run it with sudo',
    });
    this.name = 'BpfPermissionError';
  }
}

/** A process holding a BPF object through file descriptors. */
export interface BpfOwner {
  pid: number;
  /** /proc/PID/comm. */
  comm: string;
  /** The fds it holds the object by (for a program: also perf event fds it is attached through). */
  fds: number[];
}

/**
 * Where a program is attached. `text` is one line in bpftool's terms (`tracepoint sys_enter_openat`,
 * `uprobe /usr/bin/bash+0xc6c20`, `kprobe do_sys_open+0x0`, `raw_tracepoint sched_switch`,
 * `tracing trace_fentry btf 1:5123`, `uprobe_multi /usr/bin/bash (3)`).
 */
export interface AttachPoint {
  /**
   * `tracepoint`, `raw_tracepoint`, `kprobe`, `kretprobe`, `uprobe`, `uretprobe`, `perf_event` (a software or
   * hardware event, or a perf_event link whose target the kernel does not report, before 6.6), `tracing`,
   * `kprobe_multi`, `kretprobe_multi`, `uprobe_multi`, `uretprobe_multi`, or the link type for other links
   * (`cgroup`, `xdp`, `tcx`, `iter`, ...).
   */
  kind: string;
  text: string;
  /** Tracepoint name (no category, as the kernel reports it), kprobe function, iterator target. */
  name?: string;
  /** uprobe: the probed file. */
  path?: string;
  /** uprobe: offset in the file; kprobe: offset from `name` (bytes). */
  offset?: number;
  /** kprobe by address: the address (`0x...`). */
  address?: string;
  /** Multi links: how many functions or offsets. */
  count?: number;
  /** `enum bpf_attach_type` name (tracing, cgroup, tcx, ... links). */
  attachType?: string;
  /** The link that holds the attachment, when there is one. */
  linkId?: number;
  /** The perf event fd the program is attached through (`bpftool perf`), when one was found. */
  perfEvent?: { pid: number; fd: number };
}

/** Run counts over the `stats` interval of {@link listBpfObjects}. */
export interface RunDelta {
  runCnt: bigint;
  /** ns */
  runTimeNs: bigint;
}

/** A BPF program (`struct bpf_prog_info`). */
export interface BpfProgram {
  id: number;
  /** Program type as bpftool prints it (`tracepoint`, `kprobe` — uprobes too —, `raw_tracepoint`, `tracing`...). */
  type: string;
  /** Object name (at most 15 characters). */
  name: string;
  /** The program tag, 16 hex digits. */
  tag: string;
  gplCompatible: boolean;
  /** When it was loaded, ms since the epoch (from load_time, ns since boot, and the boot time; ~10 ms). */
  loadedAtMs: number;
  /** uid of the loading process. */
  uid: number;
  /** BTF object of the program (0: none). */
  btfId: number;
  mapIds: number[];
  /** Translated and JIT-compiled sizes, bytes. */
  xlatedBytes: number;
  jitedBytes: number;
  verifiedInsns: number;
  /** Cumulative runs and run time (ns) counted while statistics were on (since load). */
  runCnt: bigint;
  runTimeNs: bigint;
  /** Runs skipped because the program was already running on that CPU. */
  recursionMisses: bigint;
  /** Runs and run time during the measured interval (only when `stats` was asked for). */
  delta?: RunDelta;
  /** Processes holding the program (its fd, a link of it, or a perf event it is attached to). */
  owners: BpfOwner[];
  attach: AttachPoint[];
  /** The bpfscope run the program belongs to. */
  session?: { pid: number; source: string };
}

/** A BPF map (`struct bpf_map_info`). */
export interface BpfMapObject {
  id: number;
  /** Map type as bpftool prints it (`hash`, `percpu_array`, `ringbuf`...). */
  type: string;
  name: string;
  /** Bytes. */
  keySize: number;
  valueSize: number;
  maxEntries: number;
  flags: number;
  btfId: number;
  /** Programs using it. */
  progIds: number[];
  owners: BpfOwner[];
}

/** A BPF link (`struct bpf_link_info`). */
export interface BpfLinkObject {
  id: number;
  /** Link type as bpftool prints it (`perf_event`, `raw_tracepoint`, `tracing`, `kprobe_multi`...). */
  type: string;
  progId: number;
  /** What it attaches the program to, as far as the kernel reports it. */
  attach: AttachPoint;
  owners: BpfOwner[];
}

/** A process holding BPF objects. */
export interface BpfProcess {
  pid: number;
  comm: string;
  /** /proc/PID/cmdline split at NULs (empty for kernel threads or when unreadable). */
  cmdline: string[];
  /** Programs it holds directly, through links and through perf events. */
  progIds: number[];
  mapIds: number[];
  linkIds: number[];
  /** Its perf event fds that have a program. */
  perfEvents: { fd: number; progId: number }[];
  /** Set when the process is a running bpfscope (see runtime/registry.ts): its command line and sessions. */
  bpfscope?: { argv: string[]; sessions: SessionRecord[] };
}

/** What {@link listBpfObjects} returns. Lists are sorted by id (processes by pid). */
export interface BpfObjects {
  programs: BpfProgram[];
  maps: BpfMapObject[];
  links: BpfLinkObject[];
  processes: BpfProcess[];
  stats: {
    /** Whether run_cnt/run_time_ns were being counted when the listing was taken. */
    enabled: boolean;
    /**
     * `sysctl`: kernel.bpf_stats_enabled was already 1; `enable_stats`: this call held a BPF_ENABLE_STATS fd for
     * the interval; `off`: not counted.
     */
    how: 'sysctl' | 'enable_stats' | 'off';
    /** Length of the measured interval, ns (when one was measured). */
    intervalNs?: bigint;
  };
}

export interface ListOptions {
  /** Only objects this process holds (directly, through links or perf events) and what they use. */
  pid?: number;
  /**
   * Measure run counts and run time over an interval: a number of seconds to wait, or a function whose run is the
   * interval (stats are switched on before it starts). Programs then have `delta`. Statistics are turned on with
   * BPF_ENABLE_STATS for the interval only, unless kernel.bpf_stats_enabled is already 1.
   */
  stats?: number | (() => Promise<unknown>);
}

const STATS_SYSCTL = '/proc/sys/kernel/bpf_stats_enabled';

function statsSysctl(): boolean {
  try {
    return readFileSync(STATS_SYSCTL, 'utf8').trim() === '1';
  } catch {
    return false;
  }
}

/** Calls `f` with an fd of object `id`, closing it after; undefined when the object is gone. */
function withObject<T>(kind: BpfObjectKind, id: number, f: (fd: number) => T): T | undefined {
  const fd = objGetFdById(kind, id);
  if (fd === undefined) return undefined;
  try {
    return f(fd);
  } catch (e) {
    // gone between the two calls
    if (e instanceof KernelError && e.errno === Errno.ENOENT) return undefined;
    throw e;
  } finally {
    close(fd);
  }
}

function allIds(kind: BpfObjectKind): number[] {
  const ids: number[] = [];
  for (let id = objGetNextId(kind, 0); id !== undefined; id = objGetNextId(kind, id)) ids.push(id);
  return ids;
}

function permissionChecked<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof KernelError && (e.errno === Errno.EPERM || e.errno === Errno.EACCES)) {
      throw new BpfPermissionError();
    }
    throw e;
  }
}

/** Run counters of every program now. */
function runCounters(): Map<number, RunDelta> {
  const out = new Map<number, RunDelta>();
  for (const id of allIds('prog')) {
    const info = withObject('prog', id, (fd) => progInfo(fd));
    if (info) out.set(id, { runCnt: info.runCnt, runTimeNs: info.runTimeNs });
  }
  return out;
}

/** What one process holds. */
interface Held {
  pid: number;
  comm: string;
  prog: Map<number, number[]>;
  map: Map<number, number[]>;
  link: Map<number, number[]>;
  perf: { fd: number; query: NonNullable<ReturnType<typeof taskFdQuery>> }[];
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** Walks /proc/PID/fd of every process for BPF objects and perf events with programs. */
function scanProcesses(): Held[] {
  const pids = readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map(Number);
  const out: Held[] = [];
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone, or a kernel thread's fd table we cannot read
    }
    const held: Held = { pid, comm: '', prog: new Map(), map: new Map(), link: new Map(), perf: [] };
    for (const name of fds) {
      const fd = Number(name);
      let target: string;
      try {
        target = readlinkSync(`/proc/${pid}/fd/${name}`);
      } catch {
        continue;
      }
      if (target === 'anon_inode:[perf_event]') {
        const q = taskFdQuery(pid, fd);
        if (q) held.perf.push({ fd, query: q });
        continue;
      }
      // anon_inode:bpf-prog, anon_inode:bpf-map, anon_inode:bpf_link (the kernel's spellings)
      const m = /^anon_inode:bpf[-_](prog|map|link)$/.exec(target);
      if (!m) continue;
      const kind = m[1] as 'prog' | 'map' | 'link';
      const info = readText(`/proc/${pid}/fdinfo/${name}`);
      const idm = info && new RegExp(`^${kind}_id:\\s*(\\d+)`, 'm').exec(info);
      if (!idm) continue;
      const id = Number(idm[1]);
      const list = held[kind].get(id) ?? [];
      list.push(fd);
      held[kind].set(id, list);
    }
    if (held.prog.size || held.map.size || held.link.size || held.perf.length) {
      held.comm = (readText(`/proc/${pid}/comm`) ?? '').replace(/\n$/, '');
      out.push(held);
    }
  }
  return out;
}

function hex(n: bigint | number): string {
  return `0x${n.toString(16)}`;
}

/** The attach point of a perf event found by BPF_TASK_FD_QUERY. */
function perfAttach(q: NonNullable<ReturnType<typeof taskFdQuery>>, pid: number, fd: number): AttachPoint {
  const perfEvent = { pid, fd };
  switch (q.fdType) {
    case TaskFdType.TRACEPOINT:
    case TaskFdType.RAW_TRACEPOINT: {
      const kind = q.fdType === TaskFdType.TRACEPOINT ? 'tracepoint' : 'raw_tracepoint';
      return { kind, text: `${kind} ${q.name}`, name: q.name, perfEvent };
    }
    case TaskFdType.KPROBE:
    case TaskFdType.KRETPROBE: {
      const kind = q.fdType === TaskFdType.KPROBE ? 'kprobe' : 'kretprobe';
      if (q.name === '') {
        return { kind, text: `${kind} ${hex(q.probeAddr)}`, address: hex(q.probeAddr), perfEvent };
      }
      const offset = Number(q.probeOffset);
      return { kind, text: `${kind} ${q.name}+${hex(offset)}`, name: q.name, offset, perfEvent };
    }
    case TaskFdType.UPROBE:
    case TaskFdType.URETPROBE: {
      const kind = q.fdType === TaskFdType.UPROBE ? 'uprobe' : 'uretprobe';
      const offset = Number(q.probeOffset);
      return { kind, text: `${kind} ${q.name}+${hex(offset)}`, path: q.name, offset, perfEvent };
    }
    default:
      return { kind: 'perf_event', text: 'perf_event', perfEvent };
  }
}

/** The attach point a link's info describes. */
function linkAttach(l: LinkInfo): AttachPoint {
  const type = enumName(LINK_TYPE_NAMES, l.type);
  const at = l.attachType !== undefined ? enumName(ATTACH_TYPE_NAMES, l.attachType) : undefined;
  const base = { linkId: l.id };
  switch (l.type) {
    case LinkType.RAW_TRACEPOINT:
      return { ...base, kind: 'raw_tracepoint', text: `raw_tracepoint ${l.tpName}`, name: l.tpName ?? '' };
    case LinkType.TRACING:
      return {
        ...base,
        kind: 'tracing',
        text: `tracing ${at} btf ${l.targetObjId}:${l.targetBtfId}`,
        ...(at ? { attachType: at } : {}),
      };
    case LinkType.KPROBE_MULTI:
    case LinkType.UPROBE_MULTI: {
      const ret = ((l.flags ?? 0) & 1) !== 0;
      const kind =
        l.type === LinkType.KPROBE_MULTI
          ? ret
            ? 'kretprobe_multi'
            : 'kprobe_multi'
          : ret
            ? 'uretprobe_multi'
            : 'uprobe_multi';
      const where = l.path ? ` ${l.path}` : '';
      return {
        ...base,
        kind,
        text: `${kind}${where} (${l.count})`,
        ...(l.path ? { path: l.path } : {}),
        ...(l.count !== undefined ? { count: l.count } : {}),
      };
    }
    case LinkType.PERF_EVENT: {
      switch (l.perfEventType) {
        case PerfEventType.TRACEPOINT:
          return { ...base, kind: 'tracepoint', text: `tracepoint ${l.perfName}`, name: l.perfName ?? '' };
        case PerfEventType.KPROBE:
        case PerfEventType.KRETPROBE: {
          const kind = l.perfEventType === PerfEventType.KPROBE ? 'kprobe' : 'kretprobe';
          if (!l.perfName) {
            const a = hex(l.perfAddr ?? 0n);
            return { ...base, kind, text: `${kind} ${a}`, address: a };
          }
          const offset = l.perfOffset ?? 0;
          return { ...base, kind, text: `${kind} ${l.perfName}+${hex(offset)}`, name: l.perfName, offset };
        }
        case PerfEventType.UPROBE:
        case PerfEventType.URETPROBE: {
          const kind = l.perfEventType === PerfEventType.UPROBE ? 'uprobe' : 'uretprobe';
          const offset = l.perfOffset ?? 0;
          return { ...base, kind, text: `${kind} ${l.perfName}+${hex(offset)}`, path: l.perfName ?? '', offset };
        }
        case PerfEventType.EVENT:
          return {
            ...base,
            kind: 'perf_event',
            text: `perf_event type ${l.perfEventAttrType} config ${hex(l.perfAddr ?? 0n)}`,
          };
        default:
          return { ...base, kind: 'perf_event', text: 'perf_event' };
      }
    }
    case LinkType.ITER:
      return { ...base, kind: 'iter', text: `iter ${l.iterTarget}`, name: l.iterTarget ?? '' };
    case LinkType.XDP:
    case LinkType.TCX:
    case LinkType.NETKIT:
      return {
        ...base,
        kind: type,
        text: `${type}${at ? ` ${at}` : ''} ifindex ${l.ifindex}`,
        ...(at ? { attachType: at } : {}),
      };
    case LinkType.CGROUP:
      return {
        ...base,
        kind: type,
        text: `cgroup ${at} cgroup_id ${l.cgroupId}`,
        ...(at ? { attachType: at } : {}),
      };
    default:
      return { ...base, kind: type, text: at ? `${type} ${at}` : type, ...(at ? { attachType: at } : {}) };
  }
}

function bootTimeMs(): number {
  const up = readText('/proc/uptime');
  const sec = up ? Number(up.split(' ')[0]) : 0;
  return Date.now() - sec * 1000;
}

function delay(seconds: number): Promise<void> {
  return new Promise((r) => setTimeout(r, seconds * 1000));
}

function owner(map: Map<number, BpfOwner>, h: Held, fds: number[]): void {
  const o = map.get(h.pid);
  if (o) o.fds.push(...fds.filter((f) => !o.fds.includes(f)));
  else map.set(h.pid, { pid: h.pid, comm: h.comm, fds: [...fds] });
}

function sorted<T>(m: Map<number, T>): T[] {
  return [...m.entries()].sort((a, b) => a[0] - b[0]).map((e) => e[1]);
}

/**
 * Lists the system's BPF programs, maps and links with the processes holding them, where programs are attached,
 * their run statistics and the bpfscope runs they belong to (see the module comment for the sources).
 * @throws BpfPermissionError without CAP_SYS_ADMIN; KernelError for another failed bpf() call; BpfscopeError when
 * `pid` is not a running process
 */
export async function listBpfObjects(options: ListOptions = {}): Promise<BpfObjects> {
  if (options.pid !== undefined) {
    if (!Number.isInteger(options.pid) || options.pid <= 0) {
      throw new BpfscopeError(`invalid pid ${options.pid}: expected a positive integer`);
    }
    try {
      readdirSync(`/proc/${options.pid}/fd`);
    } catch {
      throw new BpfscopeError(`no such process: ${options.pid}`);
    }
  }
  permissionChecked(() => objGetNextId('prog', 0));
  let how: BpfObjects['stats']['how'] = statsSysctl() ? 'sysctl' : 'off';
  let baseline: Map<number, RunDelta> | undefined;
  let intervalNs: bigint | undefined;
  let statsFd = -1;
  try {
    if (options.stats !== undefined) {
      if (how === 'off') {
        statsFd = permissionChecked(() => enableStats());
        how = 'enable_stats';
      }
      baseline = runCounters();
      const t0 = process.hrtime.bigint();
      if (typeof options.stats === 'number') await delay(options.stats);
      else await options.stats();
      intervalNs = process.hrtime.bigint() - t0;
    }
    return collect(options.pid, baseline, how, intervalNs);
  } finally {
    if (statsFd >= 0) close(statsFd);
  }
}

function collect(
  pid: number | undefined,
  baseline: Map<number, RunDelta> | undefined,
  how: BpfObjects['stats']['how'],
  intervalNs: bigint | undefined,
): BpfObjects {
  const boot = bootTimeMs();
  // 1. every object's info (each fd closed at once, so this process's own fds below are only what it really holds)
  const progInfos = new Map<number, ProgInfo>();
  for (const id of permissionChecked(() => allIds('prog'))) {
    const info = withObject('prog', id, (fd) => progInfo(fd));
    if (info) progInfos.set(id, info);
  }
  const mapInfos = new Map<number, ReturnType<typeof mapInfo>>();
  for (const id of allIds('map')) {
    const info = withObject('map', id, (fd) => mapInfo(fd));
    if (info) mapInfos.set(id, info);
  }
  const linkInfos = new Map<number, LinkInfo>();
  for (const id of allIds('link')) {
    const info = withObject('link', id, (fd) => linkInfo(fd));
    if (info) linkInfos.set(id, info);
  }
  // 2. who holds what
  const held = scanProcesses();
  const sessions = new Map<number, ProcessRecord>(readSessionRecords().map((r) => [r.pid, r]));

  const programs = new Map<number, BpfProgram>();
  for (const [id, p] of progInfos) {
    const prog: BpfProgram = {
      id,
      type: enumName(PROG_TYPE_NAMES, p.type),
      name: p.name,
      tag: p.tag,
      gplCompatible: p.gplCompatible,
      loadedAtMs: Math.round(boot + Number(p.loadTimeNs / 1000n) / 1000),
      uid: p.createdByUid,
      btfId: p.btfId,
      mapIds: p.mapIds,
      xlatedBytes: p.xlatedProgLen,
      jitedBytes: p.jitedProgLen,
      verifiedInsns: p.verifiedInsns,
      runCnt: p.runCnt,
      runTimeNs: p.runTimeNs,
      recursionMisses: p.recursionMisses,
      owners: [],
      attach: [],
    };
    if (baseline) {
      // a program loaded during the interval counted only then
      const b = baseline.get(id) ?? { runCnt: 0n, runTimeNs: 0n };
      prog.delta = { runCnt: p.runCnt - b.runCnt, runTimeNs: p.runTimeNs - b.runTimeNs };
    }
    programs.set(id, prog);
  }
  const maps = new Map<number, BpfMapObject>();
  for (const [id, m] of mapInfos) {
    maps.set(id, {
      id,
      type: enumName(MAP_TYPE_NAMES, m.type),
      name: m.name,
      keySize: m.keySize,
      valueSize: m.valueSize,
      maxEntries: m.maxEntries,
      flags: m.flags,
      btfId: m.btfId,
      progIds: [],
      owners: [],
    });
  }
  for (const p of programs.values()) for (const m of p.mapIds) maps.get(m)?.progIds.push(p.id);
  const links = new Map<number, BpfLinkObject>();
  for (const [id, l] of linkInfos) {
    links.set(id, { id, type: enumName(LINK_TYPE_NAMES, l.type), progId: l.progId, attach: linkAttach(l), owners: [] });
  }

  // owners and attach points
  const progOwners = new Map<number, Map<number, BpfOwner>>();
  const ownersOf = (table: Map<number, Map<number, BpfOwner>>, id: number): Map<number, BpfOwner> => {
    let m = table.get(id);
    if (!m) table.set(id, (m = new Map()));
    return m;
  };
  const mapOwners = new Map<number, Map<number, BpfOwner>>();
  const linkOwners = new Map<number, Map<number, BpfOwner>>();
  const processes = new Map<number, BpfProcess>();
  for (const h of held) {
    const progIds = new Set<number>(h.prog.keys());
    for (const [id, fds] of h.prog) owner(ownersOf(progOwners, id), h, fds);
    for (const [id, fds] of h.map) owner(ownersOf(mapOwners, id), h, fds);
    for (const [id, fds] of h.link) {
      owner(ownersOf(linkOwners, id), h, fds);
      const l = links.get(id);
      if (l) {
        owner(ownersOf(progOwners, l.progId), h, fds);
        progIds.add(l.progId);
      }
    }
    for (const { fd, query } of h.perf) {
      owner(ownersOf(progOwners, query.progId), h, [fd]);
      progIds.add(query.progId);
      programs.get(query.progId)?.attach.push(perfAttach(query, h.pid, fd));
    }
    const proc: BpfProcess = {
      pid: h.pid,
      comm: h.comm,
      cmdline: (readText(`/proc/${h.pid}/cmdline`) ?? '').split('\0').filter((s, i, a) => s !== '' || i < a.length - 1),
      progIds: [...progIds].sort((a, b) => a - b),
      mapIds: [...h.map.keys()].sort((a, b) => a - b),
      linkIds: [...h.link.keys()].sort((a, b) => a - b),
      perfEvents: h.perf.map((p) => ({ fd: p.fd, progId: p.query.progId })),
    };
    const rec = sessions.get(h.pid);
    if (rec) {
      proc.bpfscope = { argv: rec.argv, sessions: rec.sessions };
      for (const s of rec.sessions) {
        for (const id of s.progIds) {
          const p = programs.get(id);
          if (p) p.session = { pid: h.pid, source: s.source };
        }
      }
    }
    processes.set(h.pid, proc);
  }
  // links' attach points: a perf_event link describes the perf event already found through its fd (merge them);
  // the others (and perf_event links whose perf event fd no process holds) are added
  for (const l of links.values()) {
    const p = programs.get(l.progId);
    if (!p) continue;
    if (l.type === 'perf_event') {
      const linkPids = new Set(linkOwners.get(l.id)?.keys() ?? []);
      const known = l.attach.text !== 'perf_event';
      const candidates = p.attach.filter(
        (a) => a.linkId === undefined && a.perfEvent !== undefined && (!known || a.text === l.attach.text),
      );
      const match = candidates.find((a) => linkPids.has(a.perfEvent!.pid)) ?? candidates[0];
      if (match) {
        match.linkId = l.id;
        // before Linux 6.6 the link does not say what it is attached to: its perf event does
        if (!known) l.attach = { ...match, linkId: l.id };
        continue;
      }
    }
    p.attach.push(l.attach);
  }
  for (const [id, m] of progOwners) {
    const p = programs.get(id);
    if (p) p.owners = sorted(m);
  }
  for (const [id, m] of mapOwners) {
    const x = maps.get(id);
    if (x) x.owners = sorted(m);
  }
  for (const [id, m] of linkOwners) {
    const x = links.get(id);
    if (x) x.owners = sorted(m);
  }

  let result: BpfObjects = {
    programs: sorted(programs),
    maps: sorted(maps),
    links: sorted(links),
    processes: sorted(processes),
    stats: { enabled: how !== 'off', how, ...(intervalNs !== undefined ? { intervalNs } : {}) },
  };
  if (pid !== undefined) result = onlyProcess(result, pid);
  return result;
}

/** The part of a listing that process `pid` holds, and the maps its programs use. */
function onlyProcess(all: BpfObjects, pid: number): BpfObjects {
  const proc = all.processes.find((p) => p.pid === pid);
  const progIds = new Set(proc?.progIds ?? []);
  const linkIds = new Set(proc?.linkIds ?? []);
  const mapIds = new Set(proc?.mapIds ?? []);
  const programs = all.programs.filter((p) => progIds.has(p.id));
  for (const p of programs) for (const m of p.mapIds) mapIds.add(m);
  return {
    programs,
    maps: all.maps.filter((m) => mapIds.has(m.id)),
    links: all.links.filter((l) => linkIds.has(l.id)),
    processes: proc ? [proc] : [],
    stats: all.stats,
  };
}
