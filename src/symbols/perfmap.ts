/**
 * JIT symbol maps, `/tmp/perf-PID.map`: one line per compiled code block, `START SIZE NAME` with START and SIZE in hex
 * (with or without `0x`) and NAME the rest of the line (it may hold spaces). The format is perf's
 * (`tools/perf/Documentation/jit-interface.txt`); Node writes it with `--perf-basic-prof` (e.g.
 * `7f03e6f45b80 2b0 JS:*hot [eval]:1:24`), Java with perf-map-agent.
 *
 * JIT runtimes append while they run, and may reuse freed code memory for new code: a later line wins over an earlier
 * one for the addresses they share. The file is re-read (only the appended part) when a lookup misses and the file
 * grew; a file that shrank or was replaced is read again from the start.
 */
import { closeSync, fstatSync, openSync, readFileSync, readSync, statSync } from 'node:fs';

/** A perf-map hit. */
export interface PerfMapSymbol {
  name: string;
  /** Bytes from the block's start. */
  offset: number;
  start: number;
  size: number;
}

/**
 * Where the perf map of process `pid` lives: `/tmp/perf-PID.map` in the process's own mount namespace and with its own
 * pid (the last `NSpid` value of /proc/PID/status) when it runs in a container, else in ours.
 */
export function perfMapPaths(pid: number, procRoot = '/proc'): string[] {
  const paths: string[] = [];
  const status = readFileSyncSafe(`${procRoot}/${pid}/status`);
  const m = /^NSpid:[ \t]*([\d \t]+)$/m.exec(status ?? '');
  const ids = m ? m[1]!.trim().split(/\s+/) : [];
  const nspid = ids.length > 1 ? ids[ids.length - 1]! : undefined;
  if (nspid !== undefined && nspid !== String(pid)) paths.push(`${procRoot}/${pid}/root/tmp/perf-${nspid}.map`);
  paths.push(`/tmp/perf-${pid}.map`);
  return paths;
}

function readFileSyncSafe(p: string): string | undefined {
  try {
    return readFileSync(p, 'latin1');
  } catch {
    return undefined;
  }
}

/** How far back `resolve` scans for an earlier, larger block that still covers the address. */
const LOOKBACK = 64;

/** One perf map file, parsed incrementally. */
export class PerfMap {
  /** Entries in file order. */
  private starts: number[] = [];
  private sizes: number[] = [];
  private names: string[] = [];
  /** Entry indices sorted by (start, file order); rebuilt lazily after appends. */
  private sorted: Uint32Array = new Uint32Array(0);
  private sortedStarts: Float64Array = new Float64Array(0);
  private dirty = false;
  /** Bytes of the file consumed (up to the last complete line). */
  private consumed = 0;
  private ino = -1;
  private lastSize = -1;

  constructor(readonly path: string) {}

  /** Number of entries read so far. */
  get size(): number {
    return this.starts.length;
  }

  /**
   * Read what was appended since the last call (all of it the first time, or after the file shrank or was replaced).
   * Returns whether anything new was read; `false` also when the file does not exist.
   */
  refresh(): boolean {
    let st: { size: number; ino: number };
    try {
      st = statSync(this.path);
    } catch {
      return false;
    }
    if (st.ino !== this.ino || st.size < this.consumed) {
      this.starts = [];
      this.sizes = [];
      this.names = [];
      this.consumed = 0;
      this.ino = st.ino;
      this.lastSize = -1;
      this.dirty = true;
    }
    if (st.size === this.lastSize || st.size <= this.consumed) return false;
    let fd: number;
    try {
      fd = openSync(this.path, 'r');
    } catch {
      return false;
    }
    let text: string;
    try {
      const size = fstatSync(fd).size;
      const len = size - this.consumed;
      if (len <= 0) return false;
      const buf = Buffer.allocUnsafe(len);
      let got = 0;
      while (got < len) {
        const n = readSync(fd, buf, got, len - got, this.consumed + got);
        if (n <= 0) break;
        got += n;
      }
      // Only complete lines: a writer may be mid-line.
      const lastNl = buf.lastIndexOf(10, got - 1);
      if (lastNl < 0) return false;
      text = buf.toString('utf8', 0, lastNl + 1);
      this.consumed += lastNl + 1;
      this.lastSize = size;
    } finally {
      closeSync(fd);
    }
    const before = this.starts.length;
    this.parse(text);
    if (this.starts.length !== before) this.dirty = true;
    return this.starts.length !== before;
  }

  private parse(text: string): void {
    let pos = 0;
    while (pos < text.length) {
      let eol = text.indexOf('\n', pos);
      if (eol < 0) eol = text.length;
      const sp1 = text.indexOf(' ', pos);
      const sp2 = sp1 < 0 ? -1 : text.indexOf(' ', sp1 + 1);
      if (sp1 > pos && sp2 > sp1 && sp2 < eol) {
        const start = parseHex(text, pos, sp1);
        const size = parseHex(text, sp1 + 1, sp2);
        let nameEnd = eol;
        if (nameEnd > sp2 && text.charCodeAt(nameEnd - 1) === 13) nameEnd--;
        if (start >= 0 && size >= 0) {
          this.starts.push(start);
          this.sizes.push(size);
          this.names.push(text.slice(sp2 + 1, nameEnd));
        }
      }
      pos = eol + 1;
    }
  }

  private index(): void {
    if (!this.dirty) return;
    const n = this.starts.length;
    const idx = new Uint32Array(n);
    for (let i = 0; i < n; i++) idx[i] = i;
    const s = this.starts;
    idx.sort((a, b) => s[a]! - s[b]! || a - b);
    this.sorted = idx;
    this.sortedStarts = new Float64Array(n);
    for (let k = 0; k < n; k++) this.sortedStarts[k] = s[idx[k]!]!;
    this.dirty = false;
  }

  /** The block containing `addr` without re-reading the file. */
  lookup(addr: number): PerfMapSymbol | undefined {
    this.index();
    const ss = this.sortedStarts;
    let a = 0;
    let b = ss.length;
    while (a < b) {
      const m = (a + b) >>> 1;
      if (ss[m]! <= addr) a = m + 1;
      else b = m;
    }
    // Among blocks covering addr (near the insertion point), the one written last wins.
    let best = -1;
    for (let k = a - 1; k >= 0 && k >= a - LOOKBACK; k--) {
      const i = this.sorted[k]!;
      if (addr < this.starts[i]! + this.sizes[i]! && i > best) best = i;
    }
    if (best < 0) return undefined;
    const start = this.starts[best]!;
    return { name: this.names[best]!, offset: addr - start, start, size: this.sizes[best]! };
  }

  /** The block containing `addr`; on a miss, re-read the file if it grew and look again. */
  resolve(addr: number): PerfMapSymbol | undefined {
    const hit = this.lookup(addr);
    if (hit) return hit;
    return this.refresh() ? this.lookup(addr) : undefined;
  }
}

function parseHex(s: string, a: number, b: number): number {
  if (b - a > 2 && s.charCodeAt(a) === 48 && (s.charCodeAt(a + 1) | 32) === 120) a += 2;
  let v = 0;
  for (let i = a; i < b; i++) {
    const c = s.charCodeAt(i);
    let d: number;
    if (c >= 48 && c <= 57) d = c - 48;
    else if ((c | 32) >= 97 && (c | 32) <= 102) d = (c | 32) - 87;
    else return -1;
    v = v * 16 + d;
  }
  return b > a ? v : -1;
}
