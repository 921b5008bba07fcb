/**
 * Per-process facts the agent puts on profiles as labels, cached for the life of the process:
 * - `cgroup`: the process's cgroup v2 path (the `0::PATH` line of /proc/PID/cgroup, proc(5)); on a cgroup v1 host
 *   the path of the first hierarchy listed;
 * - `container_id`: a 64-hex-digit id in that path, as Docker, containerd and CRI-O name their scopes
 *   (`docker-ID.scope`, `cri-containerd-ID.scope`, `crio-ID.scope`, `/docker/ID`, `/kubepods/.../ID`), else none;
 * - `build_id`: the GNU build-id note of the process's executable (/proc/PID/exe) and of any mapped file, read
 *   with symbols/elf.ts (files are cached by device and inode, so a shared library is read once).
 * Everything is best effort: a process that is gone gives empty strings, never an error.
 */
import { readFileSync, statSync } from 'node:fs';
import { ElfFile } from '../../symbols/elf.js';

/** What the agent knows about a process. */
export interface ProcInfo {
  pid: number;
  cgroup: string;
  containerId: string;
  /** Build-id (lowercase hex) of the executable, '' when it has none or cannot be read. */
  buildId: string;
  /** The process's root directory is the host's: its files can be read by their paths after it exits. */
  hostRoot: boolean;
  /** Set when the facts were read (a period number): entries not seen for a while are dropped. */
  seen: number;
  /** Build-ids of the files it maps, by path (see {@link ProcCache.mappedBuildId}). */
  mapped?: Map<string, string>;
}

const CONTAINER_ID = /(?:^|[/-])([0-9a-f]{64})(?:\.scope)?(?:$|\/)/;

/** The cgroup path of /proc/PID/cgroup's text: the v2 (`0::`) line, else the first line's path. */
export function cgroupPath(text: string): string {
  let first = '';
  for (const line of text.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    if (m[1] === '0' && m[2] === '') return m[3]!;
    if (first === '') first = m[3]!;
  }
  return first;
}

/** The container id (64 hex digits) in a cgroup path, or ''. */
export function containerIdOf(path: string): string {
  let best = '';
  for (const part of path.split('/')) {
    const m = CONTAINER_ID.exec(`/${part}/`);
    if (m) best = m[1]!;
  }
  return best;
}

/** Caches of process facts and file build-ids; bounded by {@link ProcCache.expire}. */
export class ProcCache {
  private readonly procs = new Map<number, ProcInfo>();
  private readonly fileIds = new Map<string, string>();

  constructor(
    private readonly procRoot = '/proc',
    /** Most distinct files whose build-id is kept (oldest forgotten first). */
    private readonly maxFiles = 4096,
  ) {}

  /** Facts about `pid` (read on first use), marked as seen in `period`. */
  get(pid: number, period: number): ProcInfo {
    let p = this.procs.get(pid);
    if (!p) {
      let cg = '';
      try {
        cg = cgroupPath(readFileSync(`${this.procRoot}/${pid}/cgroup`, 'utf8'));
      } catch {
        /* gone, or no cgroups */
      }
      let hostRoot = false;
      try {
        const r = statSync(`${this.procRoot}/${pid}/root/`);
        const h = statSync('/');
        hostRoot = r.dev === h.dev && r.ino === h.ino;
      } catch {
        /* gone */
      }
      p = {
        pid,
        hostRoot,
        cgroup: cg,
        containerId: containerIdOf(cg),
        buildId: this.fileBuildId(`${this.procRoot}/${pid}/exe`),
        seen: period,
      };
      this.procs.set(pid, p);
    }
    p.seen = period;
    return p;
  }

  /**
   * Build-id of the file at `path` as process `pid` sees it (`/proc/PID/root` + path, so a container's files are
   * read from its own root), or ''.
   */
  mappedBuildId(pid: number, path: string): string {
    if (!path.startsWith('/')) return '';
    // Once per process and path while the process is cached (a file mapped under a path stays that file until an
    // exec, which forgets the process): no stat per period.
    const p = this.procs.get(pid);
    const known = p?.mapped?.get(path);
    if (known !== undefined) return known;
    let id = this.fileBuildId(`${this.procRoot}/${pid}/root${path}`);
    // An exited process: its files are still where they were if it lived in the host's root.
    if (id === '' && p?.hostRoot) id = this.fileBuildId(path);
    if (p) (p.mapped ??= new Map()).set(path, id);
    return id;
  }

  private fileBuildId(path: string): string {
    let key: string;
    try {
      const s = statSync(path);
      key = `${s.dev}:${s.ino}:${s.mtimeMs}`;
    } catch {
      return '';
    }
    const known = this.fileIds.get(key);
    if (known !== undefined) return known;
    let id = '';
    try {
      const elf = ElfFile.open(path);
      try {
        id = elf.buildId() ?? '';
      } finally {
        elf.close();
      }
    } catch {
      /* not an ELF file, or unreadable */
    }
    if (this.fileIds.size >= this.maxFiles) this.fileIds.delete(this.fileIds.keys().next().value!);
    this.fileIds.set(key, id);
    return id;
  }

  /** Forget processes not seen since period `before`; returns their pids (the caller drops their symbols too). */
  expire(before: number): number[] {
    const gone: number[] = [];
    for (const [pid, p] of this.procs) {
      if (p.seen < before) {
        this.procs.delete(pid);
        gone.push(pid);
      }
    }
    return gone;
  }

  /** Forget `pid` (after an exec: its executable changed). */
  forget(pid: number): void {
    this.procs.delete(pid);
  }

  /** Processes cached now. */
  get size(): number {
    return this.procs.size;
  }
}
