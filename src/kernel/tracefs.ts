/**
 * tracefs access: locate (and, as root, mount) the tracing file system and read tracepoint event data from it:
 * `available_events` (`category:event` lines), `events/<category>/<event>/id` and `events/<category>/<event>/format`.
 * Layout and file formats: the kernel's `Documentation/trace/ftrace.rst` and `Documentation/trace/events.rst`.
 * Errors reach the user as {@link BpfscopeError}s (never raw `ENOENT` stack traces).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { childProcess } from '../builtins.js';
import { BpfscopeError } from '../errors.js';
import { privilegeMessage } from './privileges.js';

/** Where tracefs is normally found: its own mount point (kernel >= 4.1), then the legacy debugfs automount. */
export const TRACEFS_CANDIDATES: readonly string[] = ['/sys/kernel/tracing', '/sys/kernel/debug/tracing'];

/** The mount point bpfscope mounts tracefs on when it is not mounted anywhere (root only). */
export const TRACEFS_MOUNT_POINT = '/sys/kernel/tracing';

/** True when `dir` looks like a mounted tracefs (it has an `events` directory). */
function isTracefsRoot(dir: string): boolean {
  try {
    return statSync(join(dir, 'events')).isDirectory();
  } catch {
    return false;
  }
}

/** Mount points of type `tracefs` listed in `/proc/mounts` (in file order); empty if that file is unreadable. */
function tracefsMountPoints(): string[] {
  let text: string;
  try {
    text = readFileSync('/proc/mounts', 'utf8');
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    // /proc/mounts escapes spaces in paths as \040.
    if (f[2] === 'tracefs' && f[1]) out.push(f[1].replace(/\\040/g, ' '));
  }
  return out;
}

/**
 * Find a mounted tracefs: `/sys/kernel/tracing`, else `/sys/kernel/debug/tracing`, else any other tracefs mount
 * point in `/proc/mounts`. Returns null when none is mounted. Never mounts anything.
 */
export function locateTracefs(): string | null {
  for (const dir of TRACEFS_CANDIDATES) if (isTracefsRoot(dir)) return dir;
  for (const dir of tracefsMountPoints()) if (isTracefsRoot(dir)) return dir;
  return null;
}

/**
 * Locate tracefs, mounting it on {@link TRACEFS_MOUNT_POINT} (`mount -t tracefs nodev /sys/kernel/tracing`) when it
 * is not mounted and we are root. Returns the tracefs root directory.
 * @throws BpfscopeError when tracefs is not mounted and we are not root, or when mounting fails.
 */
export function ensureTracefs(): string {
  const found = locateTracefs();
  if (found) return found;
  // mounted but closed to us (tracefs is mode 0700): say so, not "not mounted"
  for (const dir of [...TRACEFS_CANDIDATES, ...tracefsMountPoints()]) {
    try {
      statSync(join(dir, 'events'));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EACCES' || code === 'EPERM') throw tracefsDenied(dir, e);
    }
  }
  const hint = `mount it as root: mount -t tracefs nodev ${TRACEFS_MOUNT_POINT}`;
  if (process.getuid?.() !== 0) {
    throw new BpfscopeError(`tracefs is not mounted (looked in ${TRACEFS_CANDIDATES.join(' and ')})`, { hint });
  }
  try {
    childProcess().execFileSync('mount', ['-t', 'tracefs', 'nodev', TRACEFS_MOUNT_POINT], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
  } catch (e) {
    const stderr = (e as { stderr?: Buffer }).stderr?.toString().trim();
    throw new BpfscopeError(`could not mount tracefs on ${TRACEFS_MOUNT_POINT}${stderr ? `: ${stderr}` : ''}`, {
      hint,
      cause: e,
    });
  }
  if (!isTracefsRoot(TRACEFS_MOUNT_POINT)) {
    throw new BpfscopeError(`mounted tracefs on ${TRACEFS_MOUNT_POINT} but it has no events directory`, { hint });
  }
  return TRACEFS_MOUNT_POINT;
}

/** Category whose events are ftrace's own (function, print, ...): listed in `events/` but not attachable as BPF. */
const FTRACE_INTERNAL_CATEGORY = 'ftrace';

/**
 * Reader for one tracefs tree. `root` is normally the mounted tracefs; tests pass a directory laid out the same way
 * (`available_events`, `events/<category>/<event>/{id,format}`). The event list is read once and cached.
 */
export class Tracefs {
  private eventMap: Map<string, string[]> | null = null;

  constructor(readonly root: string) {}

  /** `<root>/events/<category>/<event>` (no check that it exists). */
  eventDir(category: string, event: string): string {
    return join(this.root, 'events', category, event);
  }

  /**
   * All tracepoints, as a map from category to its event names, both sorted in byte order. Source:
   * `available_events` (what bpftrace reads; it omits ftrace's internal `ftrace:*` events), or, if that file is
   * missing, a listing of the `events/` directories without the `ftrace` category.
   * @throws BpfscopeError when neither can be read (e.g. permission denied when not root).
   */
  events(): Map<string, string[]> {
    if (this.eventMap) return this.eventMap;
    const byCat = new Map<string, Set<string>>();
    const add = (cat: string, ev: string) => {
      const s = byCat.get(cat);
      if (s) s.add(ev);
      else byCat.set(cat, new Set([ev]));
    };
    const avail = join(this.root, 'available_events');
    if (existsSync(avail)) {
      for (const raw of this.readText(avail).split('\n')) {
        const line = raw.trim();
        const colon = line.indexOf(':');
        if (colon > 0) add(line.slice(0, colon), line.slice(colon + 1));
      }
    } else {
      const evRoot = join(this.root, 'events');
      for (const cat of this.readDirs(evRoot)) {
        if (cat === FTRACE_INTERNAL_CATEGORY) continue;
        for (const ev of this.readDirs(join(evRoot, cat))) add(cat, ev);
      }
    }
    const sorted = new Map<string, string[]>();
    for (const cat of [...byCat.keys()].sort(byteCompare)) sorted.set(cat, [...byCat.get(cat)!].sort(byteCompare));
    this.eventMap = sorted;
    return sorted;
  }

  /** Category names, sorted. */
  categories(): string[] {
    return [...this.events().keys()];
  }

  /** Event names of one category, sorted; empty when the category does not exist. */
  eventsOf(category: string): string[] {
    return this.events().get(category) ?? [];
  }

  /** All tracepoints as `category:event` strings, sorted by category then event. */
  allTracepoints(): string[] {
    const out: string[] = [];
    for (const [cat, evs] of this.events()) for (const ev of evs) out.push(`${cat}:${ev}`);
    return out;
  }

  /**
   * Whether `category:event` is a known tracepoint (listed by {@link events}). Before the full list is needed, the
   * event's own directory `events/<category>/<event>` answers it (one stat): every event `available_events` lists
   * has one, and the only directories it does not list are ftrace's internal `ftrace:*` events, excluded here as in
   * {@link events}. Reading and splitting the ~60 kB `available_events` for one name cost 2-4 ms of a tool's start;
   * sorting all ~2,300 names (the full list) ~5 ms more and ~3.5 MB of peak RSS.
   * @throws BpfscopeError when tracefs cannot be read (e.g. permission denied when not root).
   */
  hasEvent(category: string, event: string): boolean {
    if (this.eventMap) return this.eventsOf(category).includes(event);
    if (category === FTRACE_INTERNAL_CATEGORY || !isName(category) || !isName(event)) return false;
    const dir = this.eventDir(category, event);
    try {
      return statSync(dir).isDirectory();
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return false;
      throw fsError(dir, e);
    }
  }

  /**
   * The tracepoint's id from `events/<category>/<event>/id`: the `config` of a `PERF_TYPE_TRACEPOINT` perf event.
   * @throws BpfscopeError when the file is missing or unreadable.
   */
  eventId(category: string, event: string): number {
    const path = join(this.eventDir(category, event), 'id');
    const text = this.readText(path).trim();
    const id = Number.parseInt(text, 10);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(id)) {
      throw new BpfscopeError(`unexpected contents of ${path}: ${JSON.stringify(text)}`);
    }
    return id;
  }

  /**
   * Text of `events/<category>/<event>/format` (parse it with `parseTracepointFormat`).
   * @throws BpfscopeError when the file is missing or unreadable.
   */
  eventFormat(category: string, event: string): string {
    return this.readText(join(this.eventDir(category, event), 'format'));
  }

  private readText(path: string): string {
    try {
      return readFileSync(path, 'utf8');
    } catch (e) {
      throw fsError(path, e);
    }
  }

  private readDirs(dir: string): string[] {
    try {
      return readdirSync(dir, { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => d.name);
    } catch (e) {
      throw fsError(dir, e);
    }
  }
}

/** A name that is one path component (a category or event name can never hold `/` or be `.` or `..`). */
function isName(s: string): boolean {
  return s !== '' && s !== '.' && s !== '..' && !s.includes('/') && !s.includes('\0');
}

function fsError(path: string, e: unknown): BpfscopeError {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'EACCES' || code === 'EPERM') return tracefsDenied(path, e);
  return new BpfscopeError(`cannot read ${path}: ${code ?? String(e)}`, { cause: e });
}

/**
 * `path` in tracefs is closed to us: the privilege sentence of kernel/privileges.ts when we lack CAP_BPF/CAP_PERFMON,
 * else (the capabilities but not root) that tracefs is readable by root only.
 */
function tracefsDenied(path: string, cause: unknown): BpfscopeError {
  return new BpfscopeError(
    privilegeMessage() ??
      `cannot read ${path}: Permission denied (tracefs is readable by root only, or with CAP_DAC_READ_SEARCH)`,
    { cause },
  );
}

/** Byte-order string comparison (C `strcmp`, as bpftrace's sorted std::set uses). */
export function byteCompare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

let shared: Tracefs | null = null;

/**
 * The process-wide {@link Tracefs} over the system's tracefs, located (or mounted, see {@link ensureTracefs}) on
 * first use and cached. @throws BpfscopeError as `ensureTracefs` does.
 */
export function systemTracefs(): Tracefs {
  if (!shared) shared = new Tracefs(ensureTracefs());
  return shared;
}
