/**
 * Turning folded stacks into flame graph frames, as flamegraph.pl's flow() does: lines are sorted (or kept in
 * input order for flame charts), and walking them keeps the stack of open frames: a frame opens where a line's
 * stack first differs from the previous line's and closes when a later line stops sharing it. A frame's extent
 * [stime, etime) is in count units (samples); depth 0 is the root frame "" ("all").
 *
 * Divergence from flamegraph.pl, on purpose: the Perl keys finished frames by (name, depth, end time), so a
 * zero-width frame (a line with count 0, as differential input has) ending at the same time as an earlier frame of
 * the same name and depth overwrites it and that frame disappears; here every frame is kept.
 */
import { countStart } from './folded.js';
import { perlSplit } from './perl.js';

/** Input after sorting and parsing: per valid line, its stack and counts. */
export interface ParsedStacks {
  stacks: string[];
  samples: Float64Array;
  /** NaN when the line has one count. */
  samples2: Float64Array;
  /** Sum of the counts that give widths (the second column for differential lines), in merge order. */
  total: number;
  /** Largest |samples2 - samples| over differential lines, at least 1. */
  maxDelta: number;
  /** Lines without a count. */
  ignored: number;
}

/**
 * Reads `lines` (without "\n") as flamegraph.pl does: `reverse` reverses each stack first (--reverse);
 * `order`: 'sorted' sorts lines as strings (the default merge order), 'input' keeps them (--flamechart);
 * `chain` marks waker frames after ";--;" with "_[w]" (--colors chain); `bmpOnly`: the caller knows no line has a
 * surrogate pair (skips a scan of all the text before sorting).
 */
export function parseStacks(
  lines: string[],
  opts: { reverse?: boolean; order?: 'sorted' | 'input'; chain?: boolean; bmpOnly?: boolean } = {},
): ParsedStacks {
  let data = lines;
  if (opts.reverse) data = lines.map(reverseLine);
  if (opts.order !== 'input') data = sortLines(data === lines ? lines.slice() : data, !!opts.bmpOnly);
  const n = data.length;
  const stacks: string[] = [];
  const samples = new Float64Array(n);
  const samples2 = new Float64Array(n);
  let total = 0;
  let maxDelta = 1;
  let ignored = 0;
  let k = 0;
  for (const line of data) {
    const j = countStart(line);
    if (j < 0) {
      ignored++;
      continue;
    }
    const c1 = Number(line.slice(j));
    const j2 = countStart(line, j - 1);
    let stack: string;
    if (j2 < 0) {
      stack = line.slice(0, j - 1);
      samples[k] = c1;
      samples2[k] = Number.NaN;
      total += c1;
    } else {
      stack = line.slice(0, j2 - 1);
      const c0 = Number(line.slice(j2, j - 1));
      samples[k] = c0;
      samples2[k] = c1;
      const d = Math.abs(c1 - c0);
      if (d > maxDelta) maxDelta = d;
      total += c1;
    }
    stacks.push(opts.chain ? chainStack(stack) : stack);
    k++;
  }
  return { stacks, samples: samples.subarray(0, k), samples2: samples2.subarray(0, k), total, maxDelta, ignored };
}

/** --reverse: the stack's frames in reverse order, counts unchanged. Invalid lines stay invalid. */
function reverseLine(line: string): string {
  const j = countStart(line);
  if (j < 0) return ' ';
  const j2 = countStart(line, j - 1);
  const stack = line.slice(0, (j2 < 0 ? j : j2) - 1);
  const counts = j2 < 0 ? line.slice(j) : `${line.slice(j2, j - 1)} ${line.slice(j)}`;
  return `${perlSplit(stack, ';').reverse().join(';')} ${counts}`;
}

/** Perl's `sort` on character strings: by code point (JavaScript's default compares UTF-16 units). */
function sortLines(lines: string[], bmpOnly: boolean): string[] {
  if (bmpOnly || !lines.some((l) => /[\ud800-\udfff]/.test(l))) return lines.sort();
  return lines.sort((a, b) => {
    const x = Array.from(a);
    const y = Array.from(b);
    const n = Math.min(x.length, y.length);
    for (let i = 0; i < n; i++) {
      if (x[i] !== y[i]) return x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    }
    return x.length - y.length;
  });
}

/** flamegraph.pl's chain palette preparation: frames after each ";--;" get "_[w]" (and a "--" frame is added). */
function chainStack(stack: string): string {
  const parts = perlSplit(stack, ';--;');
  const first = parts.shift() ?? '';
  return `${first};--;${parts.map((p) => `${p.replaceAll(';', '_[w];')}_[w]`).join(';--;')}`;
}

/** Frames of a flame graph, in the order they closed. `delta` is NaN for non-differential frames. */
export interface Frames {
  count: number;
  names: string[];
  depth: Int32Array;
  stime: Float64Array;
  etime: Float64Array;
  delta: Float64Array;
  /** Largest depth among the frames. */
  depthMax: number;
}

/** Strips trailing ";" (Perl's split drops trailing empty fields, so "a;b;" is the frames a, b). */
function trimStack(s: string): string {
  let e = s.length;
  while (e > 0 && s.charCodeAt(e - 1) === 59) e--;
  return e === s.length ? s : s.slice(0, e);
}

/**
 * Merges parsed stacks into frames, dropping frames narrower than `minTime` count units (flamegraph.pl's
 * --minwidth pruning; the root frame's width for this test is the total of the counts).
 *
 * An open frame is kept as the line it was opened on and its name's bounds there; its name is sliced out only
 * when it closes wide enough to be drawn (most frames of a large input are pruned). A frame stays open only while
 * every later line shares the text up to its end, so the offsets of the open frames are also those of the
 * previous line, and the frames shared with the previous line are those whose end it shares. `ascii`: the caller
 * knows every stack is ASCII; the shared prefix is then found on the stacks' bytes, four at a time (a character
 * comparison of kilobyte stacks was most of the merge's time).
 */
export function mergeFrames(parsed: ParsedStacks, minTime: number, opts: { ascii?: boolean } = {}): Frames {
  const out: Frames = {
    count: 0,
    names: [],
    depth: new Int32Array(1024),
    stime: new Float64Array(1024),
    etime: new Float64Array(1024),
    delta: new Float64Array(1024),
    depthMax: 0,
  };
  const { stacks, samples, samples2 } = parsed;
  // Open frames by depth: the stack (trimmed) each was opened on, the bounds of its name there, start and delta.
  // Depth 0 is the root (name ""). `open` frames are valid.
  let cap = 256;
  let openLine: Int32Array = new Int32Array(cap);
  let openFrom: Int32Array = new Int32Array(cap);
  let openTo: Int32Array = new Int32Array(cap);
  let openStart: Float64Array = new Float64Array(cap);
  let openDelta: Float64Array = new Float64Array(cap);
  const trimmed: string[] = new Array<string>(stacks.length);
  let open = 0;
  const emit = (depth: number, end: number): void => {
    const start = openStart[depth]!;
    if (end - start < minTime) return;
    const i = out.count++;
    if (i === out.depth.length) grow(out);
    out.names.push(depth === 0 ? '' : trimmed[openLine[depth]!]!.slice(openFrom[depth]!, openTo[depth]!));
    out.depth[i] = depth;
    out.stime[i] = start;
    out.etime[i] = end;
    out.delta[i] = openDelta[depth]!;
    if (depth > out.depthMax) out.depthMax = depth;
  };
  const push = (line: number, from: number, to: number, time: number, delta: number): void => {
    if (open === cap) {
      cap *= 2;
      openLine = growInt(openLine, cap);
      openFrom = growInt(openFrom, cap);
      openTo = growInt(openTo, cap);
      openStart = growFloat(openStart, cap);
      openDelta = growFloat(openDelta, cap);
    }
    openLine[open] = line;
    openFrom[open] = from;
    openTo[open] = to;
    openStart[open] = time;
    openDelta[open] = delta;
    open++;
  };
  let prev = '';
  let time = 0;
  const ascii = !!opts.ascii;
  let prevBytes = new PrefixBytes(1024);
  let cur = new PrefixBytes(1024);
  for (let k = 0; k < stacks.length; k++) {
    const stack = trimStack(stacks[k]!);
    trimmed[k] = stack;
    const s2 = samples2[k]!;
    const diff = !Number.isNaN(s2);
    const d = diff ? s2 - samples[k]! : Number.NaN;
    // Frames shared with the previous line (the root always is, once open).
    let keep = 0;
    let from = 0;
    if (ascii) {
      if (stack.length > cur.buf.length) cur = new PrefixBytes(2 * stack.length);
      cur.buf.write(stack, 0, 'latin1');
      cur.len = stack.length;
    }
    if (open > 0) {
      if (ascii && prev.length > 0 && stack.length > 0) {
        // Frames of the previous line end at openTo[1..open-1] (a ";" but for the last, which ends the line).
        const i = sharedPrefix(prevBytes, cur);
        let c = 0;
        while (c + 1 < open - 1 && openTo[c + 1]! < i) c++;
        const prevEnds = i === prev.length || prev.charCodeAt(i) === 59;
        const curEnds = i === stack.length || stack.charCodeAt(i) === 59;
        if (prevEnds && curEnds) {
          keep = 2 + c;
          from = i + 1;
        } else {
          keep = 1 + c;
          from = c > 0 ? openTo[c]! + 1 : 0;
        }
      } else {
        const c = commonFrames(prev, stack);
        keep = 1 + c.count;
        from = c.next;
      }
    }
    for (let depth = open - 1; depth >= keep; depth--) emit(depth, time);
    open = keep;
    // The new frames: the root on the first line, then the names of stack[from...] split at ";" (as split(';')
    // does: empty names between ";;" included). The last new frame gets the line's delta.
    const n = stack.length;
    const last = from < n ? -1 : keep === 0 ? 0 : keep - 1; // depth of the last new frame when known now
    if (keep === 0) push(k, 0, 0, time, diff ? (last === 0 ? d : 0) : Number.NaN);
    if (from < n) {
      let s = from;
      for (;;) {
        const semi = stack.indexOf(';', s);
        const e = semi < 0 ? n : semi;
        push(k, s, e, time, diff ? (semi < 0 ? d : 0) : Number.NaN);
        if (semi < 0) break;
        s = semi + 1;
      }
    }
    prev = stack;
    if (ascii) {
      const t = prevBytes;
      prevBytes = cur;
      cur = t;
    }
    time += diff ? s2 : samples[k]!;
  }
  for (let depth = open - 1; depth >= 0; depth--) emit(depth, time);
  return out;
}

/** A stack's bytes (ASCII), with a word view for comparing four bytes at a time. */
class PrefixBytes {
  readonly buf: Buffer;
  readonly words: Int32Array;
  len = 0;
  constructor(n: number) {
    const ab = new ArrayBuffer((n + 3) & ~3);
    this.buf = Buffer.from(ab);
    this.words = new Int32Array(ab);
  }
}

/** Length of the common prefix of two stacks' bytes. */
function sharedPrefix(a: PrefixBytes, b: PrefixBytes): number {
  const n = a.len < b.len ? a.len : b.len;
  const aw = a.words;
  const bw = b.words;
  const nw = n >> 2;
  let w = 0;
  while (w < nw && aw[w] === bw[w]) w++;
  let i = w << 2;
  const ab = a.buf;
  const bb = b.buf;
  while (i < n && ab[i] === bb[i]) i++;
  return i;
}

/** `a` copied into a new array of `n` entries (n >= a.length). */
export function growInt(a: Int32Array, n: number): Int32Array {
  const b = new Int32Array(n);
  b.set(a);
  return b;
}

/** `a` copied into a new array of `n` entries (n >= a.length). */
export function growFloat(a: Float64Array, n: number): Float64Array {
  const b = new Float64Array(n);
  b.set(a);
  return b;
}

/**
 * How many leading frames stacks `a` and `b` (trimmed) share, and where in `b` the first unshared frame starts.
 * Frames are equal up to a ";" both have at the same place, or up to where one ends and the other has ";".
 * The common prefix is found by a binary search of native comparisons and the frames in it counted with
 * `indexOf`: stacks are long (kilobytes) and this runs once per line, mostly before the JIT has optimized it.
 */
function commonFrames(a: string, b: string): { count: number; next: number } {
  if (a.length === 0 || b.length === 0) return { count: 0, next: 0 };
  let lo = 0; // a and b agree on [0, lo)
  let hi = a.length < b.length ? a.length : b.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (a.startsWith(b.slice(lo, mid), lo)) lo = mid;
    else hi = mid - 1;
  }
  const i = lo;
  let k = 0;
  let start = 0;
  for (let j = a.indexOf(';'); j >= 0 && j < i; j = a.indexOf(';', j + 1)) {
    k++;
    start = j + 1;
  }
  const aEnds = i === a.length || a.charCodeAt(i) === 59;
  const bEnds = i === b.length || b.charCodeAt(i) === 59;
  return aEnds && bEnds ? { count: k + 1, next: i + 1 } : { count: k, next: start };
}

function grow(f: Frames): void {
  const n = f.depth.length * 2;
  const d = new Int32Array(n);
  d.set(f.depth);
  f.depth = d;
  for (const key of ['stime', 'etime', 'delta'] as const) {
    const a = new Float64Array(n);
    a.set(f[key]);
    f[key] = a;
  }
}
