/**
 * Where a uprobe or USDT attach point's BINARY part leads, as bpftrace resolves it (v0.26 `docs/language.md`
 * "uprobe, uretprobe" and "usdt"; its runtime tests uprobe/usdt "list probes ..." and "... separate mount namespace"):
 * - a path (it has a `/`) names that file and is *printed as written* (`uprobe:./testprogs/uprobe_test:f`, in `-l`
 *   listings, in the `probe` builtin and in messages), while the absolute path is what is opened and attached;
 * - a name without `/` is a library (`libc`, `c`, `libc.so.6`, through the dynamic linker's cache) or an executable
 *   on `$PATH`, printed as the path found;
 * - with `-p PID`, a path the tracer cannot see is looked up in the process's mount namespace (`/proc/PID/root/...`),
 *   and a wildcard target (`*`, or none at all in `usdt::provider:name`) stands for every file the process maps
 *   executable (from `/proc/PID/maps`), printed as mapped;
 * - a path whose last component has wildcards (`./testprogs/uprobe_*`) stands for the matching files of that
 *   directory.
 */
import { accessSync, constants, existsSync, readdirSync, statSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { childProcess } from '../builtins.js';
import { readMaps } from '../symbols/procmaps.js';
import { globToRegExp, hasWildcard } from './glob.js';
import { readLdCache } from './ldcache.js';

/** One binary an attach point names: what to open and attach (`path`), and how bpftrace prints it (`display`). */
export interface BinaryTarget {
  /** Absolute path to open and to give the kernel (possibly under `/proc/PID/root`). */
  path: string;
  /** The path as bpftrace prints it: as written for a path, the resolved path for a library or `$PATH` name. */
  display: string;
}

let ldCache: Map<string, string> | undefined;

/**
 * Library name → path from the dynamic linker's cache for this machine's architecture: /etc/ld.so.cache read
 * directly, else `ldconfig -p` (an older cache format).
 */
function libraryCache(): Map<string, string> {
  if (ldCache) return ldCache;
  ldCache = readLdCache();
  if (ldCache) return ldCache;
  ldCache = new Map();
  for (const bin of ['/sbin/ldconfig', '/usr/sbin/ldconfig', 'ldconfig']) {
    try {
      const out = childProcess().execFileSync(bin, ['-p'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
      for (const line of out.split('\n')) {
        const m = /^\s+(\S+) \(([^)]*)\) => (\S+)$/.exec(line);
        if (!m) continue;
        if (process.arch === 'x64' && !m[2]!.includes('x86-64')) continue;
        if (!ldCache.has(m[1]!)) ldCache.set(m[1]!, m[3]!);
      }
      break;
    } catch {
      /* try the next location */
    }
  }
  return ldCache;
}

/**
 * Resolve a uprobe target the way bpftrace does: a path (made absolute), else a library name (`libc`, `c`,
 * `libc.so.6`), else `$PATH`. `undefined` when nothing is found.
 */
export function resolveBinary(target: string): string | undefined {
  if (target.includes('/')) return existsSync(target) ? resolve(target) : undefined;
  const cache = libraryCache();
  const names = [target, `lib${target}`].flatMap((n) => [n, `${n}.so`]);
  for (const [soname, path] of cache) {
    if (names.some((n) => soname === n || soname.startsWith(`${n}.`))) return path;
  }
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(delimiter)) {
    const p = join(dir, target);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

/**
 * The files process `pid` maps executable (`/proc/PID/maps` lines with `x` permission and a path), in map order,
 * each once; deleted files and pseudo-files (`[vdso]`) left out. Empty when the process is gone.
 */
export function mappedBinaries(pid: number): string[] {
  const maps = readMaps(pid, { execOnly: true }) ?? [];
  return [...new Set(maps.filter((m) => m.kind === 'file' && !m.deleted && m.path.startsWith('/')).map((m) => m.path))];
}

/** `path` as process `pid` sees it: through `/proc/PID/root` when that differs from ours (another mount namespace). */
function inProcessRoot(path: string, pid: number): string | undefined {
  const abs = resolve(path);
  const mine = existsSync(abs) ? abs : undefined;
  let theirs: string | undefined = `/proc/${pid}/root${abs}`;
  if (!existsSync(theirs)) theirs = undefined;
  if (!theirs) return mine;
  if (!mine) return theirs;
  try {
    // same file in both views: ours (a shorter path); else the process's (it runs in another mount namespace)
    const a = statSync(mine);
    const b = statSync(theirs);
    return a.dev === b.dev && a.ino === b.ino ? mine : theirs;
  } catch {
    return mine;
  }
}

/**
 * The binaries `target` stands for (see the module comment); `pid` is `-p`'s. Empty when nothing matches.
 * A target that is empty or only wildcards needs `pid` (then: every executable mapping of the process).
 */
export function resolveTargets(target: string, pid?: number): BinaryTarget[] {
  if (target === '' || (hasWildcard(target) && !target.includes('/'))) {
    if (pid === undefined) return [];
    const re = globToRegExp(target === '' ? '*' : target);
    return mappedBinaries(pid)
      .filter((p) => re.test(p) || re.test(p.slice(p.lastIndexOf('/') + 1)))
      .map((p) => ({ path: inProcessRoot(p, pid) ?? p, display: p }))
      .filter((t) => existsSync(t.path));
  }
  if (target.includes('/')) {
    const dir = dirname(target);
    const base = target.slice(dir.length + 1);
    if (hasWildcard(base) && !hasWildcard(dir)) {
      const re = globToRegExp(base);
      let names: string[];
      try {
        names = readdirSync(dir).filter((n) => re.test(n));
      } catch {
        return [];
      }
      return names
        .sort()
        .map((n) => `${dir}/${n}`)
        .filter((p) => {
          try {
            return statSync(p).isFile();
          } catch {
            return false;
          }
        })
        .map((p) => ({ path: resolve(p), display: p }));
    }
    const path = pid !== undefined ? inProcessRoot(target, pid) : existsSync(target) ? resolve(target) : undefined;
    return path ? [{ path, display: target }] : [];
  }
  const path = resolveBinary(target);
  return path ? [{ path, display: path }] : [];
}
