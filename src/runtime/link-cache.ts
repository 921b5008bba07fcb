/**
 * A cache of linked programs (peephole, register allocation and emission: runtime/loader.ts `link`) for the CLI
 * bundle, so that a tool's second and later starts skip that work (issue 13, tool start-up: 40-100 ms of CPU for
 * tcpdrop, memleak, filetop, whose register allocation runs in cold, interpreted code at every start).
 *
 * Why it cannot change what is loaded: `link` is a pure function of the program's IR (the IrFunction objects of the
 * main function and its callbacks, including their source positions, frame base and counters) and of the fd its
 * resolver gives each map name. The key is the complete serialization of that IR (every own property; a value the
 * serializer does not know, such as a Map, makes the program uncacheable instead of being dropped), with the
 * fingerprint of the code that links it (size and mtime of the bundle file, as the V8 code cache uses); an entry is
 * used only when its stored key is byte for byte the key of this program (the file name is only a hash of it).
 * Map fds are not in the key: the cached instructions hold each map's index in first-reference order, and a hit
 * asks the caller's resolver for the names in that same order. An IR with a map ld_imm64 that names no map (a raw
 * fd) is not cached.
 *
 * Where and who: `dist/bundle/cache/link/` next to the code, created 0700, like the V8 code cache (cli/launch.ts):
 * whoever can write there can already replace the code. An entry is read only when it and the directory belong to
 * this effective user and are not writable by group or others. At most {@link MAX_ENTRIES} entries are kept (the
 * oldest are removed on a write; entries of an older build first). Any failure to read or write is a miss, never
 * an error. Outside the bundle (dist/src: the library and the tests) there is no cache.
 */
import { readdirSync, statSync, unlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BtfFunc } from '../bpf/btf-writer.js';
import { encode, type Insn } from '../bpf/insn.js';
import { BPF_PSEUDO_MAP_FD, BPF_PSEUDO_MAP_VALUE, LD_IMM64 } from '../bpf/opcodes.js';
import type { EmitResult } from '../codegen/emit.js';
import { readTrustedFile, trustedDir, writeTrustedFile } from '../kernel/cache-file.js';
import { IrFunction } from '../codegen/ir.js';
import type { Span } from '../lang/ast.js';

/** What `link` returns (runtime/loader.ts). */
export type LinkOutput = EmitResult & { funcs: (BtfFunc & { insnOff: number })[] };

/** Entries kept in the directory. */
export const MAX_ENTRIES = 256;

/** A cache directory and the fingerprint of the code whose output it holds. */
export interface LinkCache {
  dir: string;
  version: string;
}

/**
 * The CLI bundle's cache (dist/bundle/cache/link for cli.cjs, cache/link-tools for the tools' bundle tools.cjs: one
 * directory each, so neither prunes the other's entries as another build's), or null when this code is not one of
 * the two bundles.
 */
function bundleCache(): LinkCache | null {
  try {
    const file = fileURLToPath(import.meta.url);
    const name = basename(file);
    if (name !== 'cli.cjs' && name !== 'tools.cjs') return null;
    const st = statSync(file);
    const dir = join(dirname(file), 'cache', name === 'cli.cjs' ? 'link' : 'link-tools');
    return { dir, version: `${st.size}-${Math.trunc(st.mtimeMs)}` };
  } catch {
    return null;
  }
}

let defaultCache: LinkCache | null | undefined;

/** The cache `link` uses by default: the bundle's, or null (no cache). */
export function defaultLinkCache(): LinkCache | null {
  if (defaultCache === undefined) defaultCache = bundleCache();
  return defaultCache;
}

function isMapLoad(i: { code: number; src: number }): boolean {
  return i.code === LD_IMM64 && (i.src === BPF_PSEUDO_MAP_FD || i.src === BPF_PSEUDO_MAP_VALUE);
}

class Uncacheable extends Error {}

/**
 * The key text of the functions to link: JSON of every own property, bigints tagged, anything else that JSON would
 * silently drop or flatten (Map, Set, functions, symbols, class instances other than IrFunction) refused. null when
 * the IR cannot be cached.
 */
export function linkKey(version: string, fns: { fn: IrFunction; params: number }[]): string | null {
  for (const { fn } of fns) {
    for (const it of fn.items) {
      if ('code' in it && isMapLoad(it) && it.mapRef === undefined) return null;
    }
  }
  try {
    return JSON.stringify({ version, fns }, (_k, v: unknown) => {
      if (typeof v === 'bigint') return { $bigint: v.toString() };
      if (typeof v === 'function' || typeof v === 'symbol') throw new Uncacheable();
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
        const proto = Object.getPrototypeOf(v) as unknown;
        if (proto !== Object.prototype && proto !== null && !(v instanceof IrFunction)) {
          throw new Uncacheable();
        }
        if ('$bigint' in v) throw new Uncacheable();
      }
      return v;
    });
  } catch (e) {
    if (e instanceof Uncacheable) return null;
    throw e;
  }
}

/**
 * A 64-bit hash of a string's UTF-8 bytes, as 16 hex digits: the entry's file name (the stored key is compared in
 * full, so a collision costs a miss, never a wrong program). Two 32-bit multiplicative lanes over 32-bit words: the
 * key of a large program is 150-350 KB of JSON, hashed in cold code at every start, and a word at a time takes
 * about half the CPU of FNV-1a 64 a character at a time (which needed float arithmetic for its 64-bit product).
 */
function hash64(s: string): string {
  const bytes = Buffer.from(s, 'utf8');
  const aligned = bytes.byteOffset % 4 === 0 ? bytes : new Uint8Array(bytes); // a copy starts at offset 0
  const n = aligned.length >>> 2;
  const words = new Int32Array(aligned.buffer, aligned.byteOffset, n);
  let h1 = 0x811c9dc5 | 0;
  let h2 = 0x9e3779b9 | 0;
  for (let i = 0; i < n; i++) {
    const w = words[i]!;
    h1 = Math.imul(h1 ^ w, 0x01000193);
    h2 = Math.imul(h2 ^ w, 0x5bd1e995);
    h2 ^= h2 >>> 15;
  }
  for (let i = n * 4; i < aligned.length; i++) {
    h1 = Math.imul(h1 ^ aligned[i]!, 0x01000193);
    h2 = Math.imul(h2 ^ aligned[i]!, 0x5bd1e995);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16) ^ aligned.length, 0x85ebca6b);
  h2 = Math.imul(h2 ^ (h2 >>> 13), 0xc2b2ae35);
  return (h1 >>> 0).toString(16).padStart(8, '0') + (h2 >>> 0).toString(16).padStart(8, '0');
}

/**
 * A stored entry. The file holds the key's text, a newline (JSON text has none of its own) and then the JSON of the
 * rest: the key is compared as it is, without parsing it out of a JSON string (where it would be escaped).
 */
interface Entry {
  key: string;
  insns: Insn[];
  positions: (Span | null)[];
  funcs: (BtfFunc & { insnOff: number })[];
  maps: string[];
}

function entryFile(cache: LinkCache, key: string): string {
  return join(cache.dir, `${cache.version}-${hash64(key)}.entry`);
}

function read(cache: LinkCache, key: string): Entry | null {
  try {
    const text = readTrustedFile(cache.dir, entryFile(cache, key))?.toString('utf8');
    if (text === undefined || text.charCodeAt(key.length) !== 10 || !text.startsWith(key)) return null;
    const e = JSON.parse(text.slice(key.length + 1)) as Omit<Entry, 'key'>;
    return Array.isArray(e.insns) && Array.isArray(e.maps) ? { ...e, key } : null;
  } catch {
    return null;
  }
}

function write(cache: LinkCache, key: string, out: LinkOutput, maps: string[]): void {
  if (!trustedDir(cache.dir)) return;
  try {
    prune(cache);
    const e: Omit<Entry, 'key'> = {
      insns: out.insns,
      positions: out.positions.map((p) => p ?? null),
      funcs: out.funcs,
      maps,
    };
    writeTrustedFile(entryFile(cache, key), `${key}\n${JSON.stringify(e)}`);
  } catch {
    // read-only install or not our directory: the next run links again
  }
}

/** Keeps the directory under MAX_ENTRIES: entries of other builds go first, then the least recently written. */
function prune(cache: LinkCache): void {
  const names = readdirSync(cache.dir);
  if (names.length < MAX_ENTRIES) return;
  const aged = names.map((n) => {
    let t = 0;
    try {
      t = statSync(join(cache.dir, n)).mtimeMs;
    } catch {
      // gone already
    }
    return { n, t: n.startsWith(`${cache.version}-`) ? t : -1 };
  });
  aged.sort((a, b) => a.t - b.t);
  for (const { n } of aged.slice(0, names.length - MAX_ENTRIES / 2)) {
    try {
      unlinkSync(join(cache.dir, n));
    } catch {
      // gone already
    }
  }
}

/**
 * `link(fns)` through the cache: on a hit the stored output, on a miss `run` (with a resolver that numbers the maps
 * in first-reference order) stored for next time; either way the map loads then get `mapFd(name)`, asked in
 * first-reference order, and the result is what `run(mapFd)` would have returned.
 */
export function cachedLink(
  cache: LinkCache | null,
  fns: { fn: IrFunction; params: number }[],
  mapFd: (name: string) => number,
  run: (mapFd: (name: string) => number) => LinkOutput,
): LinkOutput {
  const key = cache ? linkKey(cache.version, fns) : null;
  if (!cache || key === null) return run(mapFd);
  let entry = read(cache, key);
  if (!entry) {
    const maps: string[] = [];
    const out = run((name) => {
      let i = maps.indexOf(name);
      if (i < 0) i = maps.push(name) - 1;
      return i;
    });
    write(cache, key, out, maps);
    entry = { key, insns: out.insns, positions: out.positions.map((p) => p ?? null), funcs: out.funcs, maps };
  }
  const fds = entry.maps.map((name) => mapFd(name));
  const insns = entry.insns.map((i) => {
    if (!isMapLoad(i)) return i;
    const fd = fds[i.imm];
    if (fd === undefined) throw new Error(`internal: linked program refers to map #${i.imm} of ${fds.length}`);
    return { ...i, imm: fd };
  });
  return {
    insns,
    bytes: encode(insns),
    positions: entry.positions.map((p) => p ?? undefined),
    funcRefs: [],
    funcs: entry.funcs,
  };
}
