/**
 * The flamegraph command's fast path: folded stack files merged into frames as they are read, through one reused
 * buffer, without keeping the input. It applies when the input is already in the order the merge needs (sorted by
 * bytes, as stackcollapse-perf and stackcollapse-perf.pl write it, or any order for flame charts), is ASCII, and
 * every line has a count; otherwise `mergeFolded` gives up (returns null) and the caller takes merge.ts's path over
 * all the lines, which gives the same frames. The result equals `mergeFrames(parseStacks(lines))` (see merge.ts):
 * - for ASCII lines, sorting strings (UTF-16 units) and comparing bytes agree, so input whose every line is not
 *   below the previous one (bytes, whole line) is already what `parseStacks` sorts it into (equal lines aside,
 *   which are interchangeable);
 * - frames open and close as in `mergeFrames`' byte path (the shared prefix with the previous stack, the open frames'
 *   end offsets);
 * - pruning: the width limit depends on the total of the counts, known only at the end. It only grows with the
 *   total (counts are not negative), so frames narrower than the limit for the running total are dropped as they
 *   close (they are narrower than the final limit too), and the rest are filtered by the final limit at the end.
 *
 * Why: on this project's VMs a fresh page of memory costs ~15 us (a fault in a paravirtualized guest), so holding a
 * 42 MB input as strings cost more than parsing it; this path touches a few MiB.
 */
import { isAscii } from 'node:buffer';
import { closeSync, openSync, readSync } from 'node:fs';
import { BpfscopeError } from '../errors.js';
import { type Frames, growFloat, growInt } from './merge.js';

/** What `mergeFolded` found: the input's totals, as `parseStacks` gives them, and a way to the frames. */
export interface MergedFolded {
  /** Sum of the width counts (the second column of differential lines), in input order. */
  total: number;
  /** Largest |count2 - count1| over differential lines, at least 1. */
  maxDelta: number;
  /** Always 0: a line without a count ends the fast path. */
  ignored: number;
  /** The frames at least `minTime` count units wide (must be at least the `minTimeFor(total)` given). */
  frames(minTime: number): Frames;
}

const INITIAL_BYTES = 1 << 21;

/**
 * Merges the folded stack files `files` (read in order, as one input; lines end at "\n"). `sorted`: the lines must
 * be sorted (flame graphs); false keeps them in input order (flame charts). `minTimeFor(total)`: the width limit
 * in count units for a running total; it must not decrease as the total grows. Returns null when the fast path does
 * not apply (a non-ASCII byte, a line without a count, lines out of order). Throws BpfscopeError when a file cannot
 * be opened or read.
 */
export function mergeFolded(
  files: readonly string[],
  sorted: boolean,
  minTimeFor: (total: number) => number,
): MergedFolded | null {
  const m = new StreamMerger(sorted, minTimeFor);
  for (const name of files) {
    let fd: number;
    try {
      fd = openSync(name, 'r');
    } catch (err) {
      throw new BpfscopeError(`cannot open ${name}: ${(err as Error).message}`);
    }
    try {
      if (!m.file(fd, name)) return null;
    } finally {
      closeSync(fd);
    }
  }
  return m.finish();
}

class StreamMerger {
  private buf: Buffer = Buffer.allocUnsafe(INITIAL_BYTES);
  private view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.length);
  /** The previous line's bytes are buf[prevStart, prevEnd) (prevEnd < 0: no previous line); its stack ends at prevStack. */
  private prevStart = 0;
  private prevEnd = -1;
  private prevStack = 0;
  /** Bytes in buf (all processed between files). */
  private fill = 0;
  // Open frames by depth (0: the root): name bounds relative to the line start, start time, delta.
  private cap = 256;
  private openFrom: Int32Array = new Int32Array(this.cap);
  private openTo: Int32Array = new Int32Array(this.cap);
  private openStart: Float64Array = new Float64Array(this.cap);
  private openDelta: Float64Array = new Float64Array(this.cap);
  private open = 0;
  private time = 0;
  private total = 0;
  private maxDelta = 1;
  private minTime: number;
  // Frames kept so far (wide enough for the running total's limit).
  private names: string[] = [];
  private depth: Int32Array = new Int32Array(1024);
  private stime: Float64Array = new Float64Array(1024);
  private etime: Float64Array = new Float64Array(1024);
  private delta: Float64Array = new Float64Array(1024);
  private count = 0;

  constructor(
    private readonly sorted: boolean,
    private readonly minTimeFor: (total: number) => number,
  ) {
    this.minTime = minTimeFor(0);
  }

  /** Reads one file; false when the fast path does not apply. */
  file(fd: number, name: string): boolean {
    let fill = this.fill;
    let pos = fill; // nothing of the previous file is left unprocessed
    for (;;) {
      // Keep the previous line and the unprocessed bytes; move them to the front, grow when they fill the buffer.
      const keepFrom = this.prevEnd >= 0 ? this.prevStart : pos;
      if (keepFrom > 0) {
        this.buf.copyWithin(0, keepFrom, fill);
        fill -= keepFrom;
        pos -= keepFrom;
        if (this.prevEnd >= 0) {
          this.prevStart -= keepFrom;
          this.prevEnd -= keepFrom;
          this.prevStack -= keepFrom;
        }
      }
      if (fill === this.buf.length) this.growBuffer();
      let n: number;
      try {
        n = readSync(fd, this.buf, fill, this.buf.length - fill, null);
      } catch (err) {
        throw new BpfscopeError(`cannot read ${name}: ${(err as Error).message}`);
      }
      if (!isAscii(this.buf.subarray(fill, fill + n))) return false;
      fill += n;
      this.fill = fill;
      for (;;) {
        const nl = this.buf.indexOf(10, pos);
        if (nl < 0 || nl >= fill) break;
        if (!this.line(pos, nl)) return false;
        pos = nl + 1;
      }
      if (n === 0) {
        // A last line without "\n".
        if (pos < fill && !this.line(pos, fill)) return false;
        return true;
      }
    }
  }

  private growBuffer(): void {
    const b = Buffer.allocUnsafe(this.buf.length * 2);
    this.buf.copy(b);
    this.buf = b;
    this.view = new DataView(b.buffer, b.byteOffset, b.length);
  }

  /** One line, buf[start, end); false when it ends the fast path. */
  private line(start: number, end: number): boolean {
    const buf = this.buf;
    const j = countStart(buf, start, end);
    if (j < 0) return false;
    const c1 = countValue(buf, j, end);
    const j2 = countStart(buf, start, j - 1);
    let stackEnd: number;
    let c0 = 0;
    const diff = j2 >= 0;
    if (!diff) stackEnd = j - 1;
    else {
      stackEnd = j2 - 1;
      c0 = countValue(buf, j2, j - 1);
      const d = Math.abs(c1 - c0);
      if (d > this.maxDelta) this.maxDelta = d;
    }
    while (stackEnd > start && buf[stackEnd - 1] === 59) stackEnd--;
    const len = stackEnd - start;
    // Shared prefix with the previous line (whole lines), which also tells their order.
    let shared = 0;
    const prevStart = this.prevStart;
    const hasPrev = this.prevEnd >= 0;
    if (hasPrev) {
      const prevLen = this.prevEnd - prevStart;
      const n = prevLen < end - start ? prevLen : end - start;
      shared = this.sharedPrefix(prevStart, start, n);
      if (this.sorted) {
        // Out of order: the first differing byte is lower, or the line is a proper prefix of the previous one.
        if (shared < n ? buf[start + shared]! < buf[prevStart + shared]! : prevLen > end - start) return false;
      }
    }
    const prevLen = hasPrev ? this.prevStack - prevStart : 0;
    const d = diff ? c1 - c0 : Number.NaN;
    let keep = 0;
    let from = 0;
    const open = this.open;
    if (open > 0) {
      if (prevLen > 0 && len > 0) {
        let i = shared;
        if (i > prevLen) i = prevLen;
        if (i > len) i = len;
        const openTo = this.openTo;
        let c = 0;
        while (c + 1 < open - 1 && openTo[c + 1]! < i) c++;
        const prevEnds = i === prevLen || buf[prevStart + i] === 59;
        const curEnds = i === len || buf[start + i] === 59;
        if (prevEnds && curEnds) {
          keep = 2 + c;
          from = i + 1;
        } else {
          keep = 1 + c;
          from = c > 0 ? openTo[c]! + 1 : 0;
        }
      } else {
        keep = 1;
        from = 0;
      }
    }
    for (let depth = open - 1; depth >= keep; depth--) this.emit(depth);
    this.open = keep;
    const time = this.time;
    const last = from < len ? -1 : keep === 0 ? 0 : keep - 1;
    if (keep === 0) this.push(0, 0, time, diff ? (last === 0 ? d : 0) : Number.NaN);
    if (from < len) {
      let s = from;
      for (;;) {
        let e = s;
        while (e < len && buf[start + e] !== 59) e++;
        const isLast = e === len;
        this.push(s, e, time, diff ? (isLast ? d : 0) : Number.NaN);
        if (isLast) break;
        s = e + 1;
      }
    }
    this.prevStart = start;
    this.prevEnd = end;
    this.prevStack = stackEnd;
    this.time = time + c1;
    this.total += c1;
    this.minTime = this.minTimeFor(this.total);
    return true;
  }

  /** Length of the common prefix of buf[a, a + n) and buf[b, b + n), four bytes at a time. */
  private sharedPrefix(a: number, b: number, n: number): number {
    const v = this.view;
    let i = 0;
    const n4 = n - 3;
    while (i < n4 && v.getInt32(a + i) === v.getInt32(b + i)) i += 4;
    const buf = this.buf;
    while (i < n && buf[a + i] === buf[b + i]) i++;
    return i;
  }

  private push(from: number, to: number, time: number, delta: number): void {
    if (this.open === this.cap) {
      this.cap *= 2;
      this.openFrom = growInt(this.openFrom, this.cap);
      this.openTo = growInt(this.openTo, this.cap);
      this.openStart = growFloat(this.openStart, this.cap);
      this.openDelta = growFloat(this.openDelta, this.cap);
    }
    const o = this.open++;
    this.openFrom[o] = from;
    this.openTo[o] = to;
    this.openStart[o] = time;
    this.openDelta[o] = delta;
  }

  /** Closes the open frame at `depth` at the current time: kept when wide enough for the running limit. */
  private emit(depth: number): void {
    const start = this.openStart[depth]!;
    const end = this.time;
    if (end - start < this.minTime) return;
    const i = this.count++;
    if (i === this.depth.length) {
      this.depth = growInt(this.depth, 2 * i);
      this.stime = growFloat(this.stime, 2 * i);
      this.etime = growFloat(this.etime, 2 * i);
      this.delta = growFloat(this.delta, 2 * i);
    }
    // The frame's name is in the previous line at the same place as in the line it was opened on.
    const p = this.prevStart;
    this.names.push(depth === 0 ? '' : this.buf.toString('latin1', p + this.openFrom[depth]!, p + this.openTo[depth]!));
    this.depth[i] = depth;
    this.stime[i] = start;
    this.etime[i] = end;
    this.delta[i] = this.openDelta[depth]!;
  }

  finish(): MergedFolded {
    for (let depth = this.open - 1; depth >= 0; depth--) this.emit(depth);
    this.open = 0;
    const { names, depth, stime, etime, delta, count, total, maxDelta } = this;
    return {
      total,
      maxDelta,
      ignored: 0,
      frames(minTime: number): Frames {
        const out: Frames = {
          count: 0,
          names: [],
          depth: new Int32Array(count),
          stime: new Float64Array(count),
          etime: new Float64Array(count),
          delta: new Float64Array(count),
          depthMax: 0,
        };
        let k = 0;
        for (let i = 0; i < count; i++) {
          if (etime[i]! - stime[i]! < minTime) continue;
          out.names.push(names[i]!);
          out.depth[k] = depth[i]!;
          out.stime[k] = stime[i]!;
          out.etime[k] = etime[i]!;
          out.delta[k] = delta[i]!;
          if (depth[i]! > out.depthMax) out.depthMax = depth[i]!;
          k++;
        }
        out.count = k;
        return out;
      },
    };
  }
}

/** folded.ts's `countStart` on ASCII bytes buf[start, end): where the trailing count starts, or -1. */
function countStart(buf: Buffer, start: number, end: number): number {
  let j = end;
  let dots = 0;
  while (j > start) {
    const c = buf[j - 1]!;
    if (c >= 48 && c <= 57) j--;
    else if (c === 46) {
      dots++;
      j--;
    } else break;
  }
  if (j === end || j === start) return -1;
  const s = buf[j - 1]!;
  if (s !== 32 && (s < 9 || s > 13)) return -1;
  if (buf[j] === 46 || dots > 1) return -1;
  return j;
}

/** The value of the count buf[j, end) (digits with at most one "."), as `Number` reads it. */
function countValue(buf: Buffer, j: number, end: number): number {
  if (end - j <= 15) {
    let v = 0;
    for (let i = j; i < end; i++) {
      const c = buf[i]!;
      if (c === 46) return Number(buf.toString('latin1', j, end));
      v = v * 10 + (c - 48);
    }
    return v;
  }
  return Number(buf.toString('latin1', j, end));
}
