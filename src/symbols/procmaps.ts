/**
 * `/proc/PID/maps`: one mapping per line, `START-END PERMS OFFSET DEV INODE [PATH]` (hex START/END/OFFSET, `DEV` as
 * `MAJOR:MINOR` in hex; the kernel's `fs/proc/task_mmu.c` `show_map_vma`). PATH is a file (with ` (deleted)` appended
 * when it was unlinked), a pseudo name (`[vdso]`, `[vsyscall]`, `[heap]`, `[stack]`, `[anon:NAME]`), `memfd:NAME`, or
 * empty for anonymous memory (where JIT compilers put their code).
 *
 * Address translation for symbolization: a runtime address `addr` inside a file mapping lies at file offset
 * `addr - start + offset`; the ELF virtual address is then `fileOffset - p_offset + p_vaddr` of the `PT_LOAD` holding
 * that offset. This one rule covers fixed-address executables, PIE executables and shared libraries (the load bias
 * is `start - offset + p_offset - p_vaddr`).
 *
 * Addresses are JavaScript numbers: user-space addresses (below 2^47, or 2^56 with 5-level paging when asked for)
 * and page-aligned mapping bounds are exact.
 */
import { readFileSync } from 'node:fs';

/** What a mapping holds. */
export type MappingKind = 'file' | 'anon' | 'vdso' | 'vsyscall' | 'heap' | 'stack' | 'pseudo';

/** One line of /proc/PID/maps. */
export interface Mapping {
  start: number;
  /** Exclusive. */
  end: number;
  /** `rwxp`-style permission string. */
  perms: string;
  /** File offset of `start` (bytes). */
  offset: number;
  /** `MAJOR:MINOR` of the file's device, as printed. */
  dev: string;
  inode: number;
  /** File path without the ` (deleted)` suffix, pseudo name (`[vdso]`), or `''` for anonymous memory. */
  path: string;
  /** The file was deleted (or replaced) after it was mapped. */
  deleted: boolean;
  kind: MappingKind;
  /** Whether the mapping is executable (`x` permission). */
  exec: boolean;
}

const DELETED = ' (deleted)';

function classify(path: string, inode: number): MappingKind {
  if (path === '') return 'anon';
  if (path === '[vdso]') return 'vdso';
  if (path === '[vsyscall]') return 'vsyscall';
  if (path === '[heap]') return 'heap';
  if (path.startsWith('[stack')) return 'stack';
  if (path.startsWith('[')) return path.startsWith('[anon') ? 'anon' : 'pseudo';
  if (path.startsWith('/')) return 'file';
  // memfd:NAME, /dev/zero-style names without a leading slash, anon_inode:...: backed by an inode but not a path
  // that can be opened by name (map_files still opens them).
  return inode !== 0 ? 'file' : 'anon';
}

function hex(s: string, a: number, b: number): number {
  // Up to 16 hex digits; parseInt is exact for page-aligned values and below 2^53.
  return Number.parseInt(s.slice(a, b), 16);
}

/**
 * Parse the text of a /proc/PID/maps file. With `execOnly`, only executable mappings are kept (the ones return
 * addresses can point into). Lines that do not parse are skipped.
 */
export function parseMaps(text: string, execOnly = false): Mapping[] {
  const out: Mapping[] = [];
  let pos = 0;
  const n = text.length;
  while (pos < n) {
    let eol = text.indexOf('\n', pos);
    if (eol < 0) eol = n;
    const line = pos;
    pos = eol + 1;
    const dash = text.indexOf('-', line);
    if (dash < 0 || dash > eol) continue;
    const sp1 = text.indexOf(' ', dash);
    if (sp1 < 0 || sp1 > eol) continue;
    const perms = text.slice(sp1 + 1, sp1 + 5);
    const exec = perms.charCodeAt(2) === 120; // 'x'
    if (execOnly && !exec) continue;
    const sp2 = sp1 + 5;
    const sp3 = text.indexOf(' ', sp2 + 1);
    const sp4 = text.indexOf(' ', sp3 + 1);
    let sp5 = text.indexOf(' ', sp4 + 1);
    if (sp3 < 0 || sp4 < 0 || sp3 > eol || sp4 > eol) continue;
    if (sp5 < 0 || sp5 > eol) sp5 = eol;
    let p = sp5;
    while (p < eol && text.charCodeAt(p) === 32) p++;
    let path = text.slice(p, eol);
    let deleted = false;
    if (path.endsWith(DELETED)) {
      deleted = true;
      path = path.slice(0, -DELETED.length);
    }
    const start = hex(text, line, dash);
    const end = hex(text, dash + 1, sp1);
    if (!Number.isFinite(start) || !Number.isFinite(end)) continue;
    const inode = Number.parseInt(text.slice(sp4 + 1, sp5), 10) || 0;
    out.push({
      start,
      end,
      perms,
      offset: hex(text, sp2 + 1, sp3),
      dev: text.slice(sp3 + 1, sp4),
      inode,
      path,
      deleted,
      kind: classify(path, inode),
      exec,
    });
  }
  return out;
}

/**
 * Read and parse /proc/PID/maps (`pid` may be `'self'`). Returns `undefined` when the process does not exist (or is a
 * zombie: its maps file is empty) or cannot be read.
 */
export function readMaps(
  pid: number | 'self',
  opts: { execOnly?: boolean; procRoot?: string } = {},
): Mapping[] | undefined {
  const text = readMapsText(pid, opts.procRoot);
  if (text === undefined) return undefined;
  return parseMaps(text, opts.execOnly ?? false);
}

/** The raw text of /proc/PID/maps, or `undefined` when it is missing or empty. */
export function readMapsText(pid: number | 'self', procRoot = '/proc'): string | undefined {
  try {
    const t = readFileSync(`${procRoot}/${pid}/maps`, 'latin1');
    return t.length > 0 ? t : undefined;
  } catch {
    return undefined;
  }
}

/** The mapping containing `addr` (mappings sorted by start, as the kernel prints them), or `undefined`. */
export function findMapping(maps: readonly Mapping[], addr: number): Mapping | undefined {
  let a = 0;
  let b = maps.length;
  while (a < b) {
    const m = (a + b) >>> 1;
    if (maps[m]!.start <= addr) a = m + 1;
    else b = m;
  }
  const m = maps[a - 1];
  return m !== undefined && addr < m.end ? m : undefined;
}

/** File offset of `addr` inside file mapping `m`: `addr - start + offset`. */
export function mappingFileOffset(m: Mapping, addr: number): number {
  return addr - m.start + m.offset;
}

/**
 * The path that opens the very file behind mapping `m` of process `pid`: `/proc/PID/map_files/START-END` (works for
 * deleted files and other mount namespaces; needs CAP_SYS_ADMIN, i.e. root).
 */
export function mapFilesPath(pid: number | 'self', m: Mapping, procRoot = '/proc'): string {
  return `${procRoot}/${pid}/map_files/${m.start.toString(16)}-${m.end.toString(16)}`;
}
