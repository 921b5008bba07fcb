/**
 * Counting distinct stacks for collapsers: a stack is a sequence of interned ids (a process name, then frames in
 * any fixed order the collapser chooses), hashed into a table with its summed count. At the end the stacks come out
 * as folded lines in byte order of their text, without building all the texts first (the texts of a large profile
 * are tens of MB; the ids are a fraction of that).
 *
 * Counts follow Perl's arithmetic as stackcollapse-perf.pl prints it: exact integers below 2^64, doubles above.
 */
import { perlNum } from '../perl.js';

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const TWO_64 = 1n << 64n;

/** Interned strings: equal strings get the same id (ids are indexes into `names`). */
export class Interner {
  readonly names: string[] = [];
  private readonly ids = new Map<string, number>();

  /** The id of `s`, adding it when new. */
  id(s: string): number {
    let id = this.ids.get(s);
    if (id === undefined) {
      id = this.names.length;
      this.names.push(s);
      this.ids.set(s, id);
    }
    return id;
  }
}

class StackEntry {
  big: bigint | null = null;
  next: StackEntry | null = null;
  constructor(
    /** The tokens of the text in printed order (the process name, then frames from the root). */
    readonly ids: Int32Array,
    public count: number,
  ) {}
}

/** Separator between frames in folded text. */
const SEMI = 0x3b;

/**
 * Distinct stacks and their counts. `reversed`: the frame ids after the first are stored leaf first (as perf
 * prints them) and printed in reverse.
 */
export class StackTable {
  private readonly buckets = new Map<number, StackEntry>();
  private size = 0;

  constructor(
    private readonly names: string[],
    private readonly reversed: boolean,
  ) {}

  /** Number of distinct stacks. */
  get distinct(): number {
    return this.size;
  }

  /**
   * Adds `count` (or `big`, when the count does not fit a double exactly) to the stack `first, ids[0..len)`.
   */
  add(first: number, ids: Int32Array, len: number, count: number, big: bigint | null): void {
    let h = Math.imul(first + 1, 0x9e3779b1);
    for (let i = 0; i < len; i++) {
      h = Math.imul(h ^ ids[i]!, 0x01000193);
      h ^= h >>> 15;
    }
    h &= 0x3fffffff; // a small integer: Map keys stay unboxed
    const head = this.buckets.get(h);
    const rev = this.reversed;
    for (let e: StackEntry | undefined | null = head; e; e = e.next) {
      const eids = e.ids;
      if (eids.length !== len + 1 || eids[0] !== first) continue;
      let i = 0;
      if (rev) while (i < len && eids[len - i] === ids[i]) i++;
      else while (i < len && eids[i + 1] === ids[i]) i++;
      if (i < len) continue;
      if (big === null && e.big === null && e.count + count <= MAX_SAFE) e.count += count;
      else e.big = (e.big ?? BigInt(e.count)) + (big ?? BigInt(count));
      return;
    }
    const stored = new Int32Array(len + 1);
    stored[0] = first;
    if (rev) for (let i = 0; i < len; i++) stored[len - i] = ids[i]!;
    else for (let i = 0; i < len; i++) stored[i + 1] = ids[i]!;
    const fresh = new StackEntry(stored, count);
    fresh.big = big;
    this.size++;
    if (head) {
      fresh.next = head.next;
      head.next = fresh;
    } else {
      this.buckets.set(h, fresh);
    }
  }

  /**
   * The folded lines ("text count\n") in byte order of the text, in pieces of about `pieceChars` characters.
   * Stacks whose texts coincide (possible only when a name contains ";") are merged, as a Perl hash keyed by the
   * text would.
   */
  *lines(pieceChars = 1 << 20): Generator<string> {
    const entries: StackEntry[] = [];
    for (const head of this.buckets.values()) for (let e: StackEntry | null = head; e; e = e.next) entries.push(e);
    const names = this.names;
    if (names.some((n) => n.includes(';'))) {
      // Rare: texts are not a function of the token sequence alone; compare real texts and merge equal ones.
      const byText = new Map<string, StackEntry>();
      for (const e of entries) {
        const text = this.text(e);
        const prev = byText.get(text);
        if (prev) {
          prev.big = addBig(prev, e);
          prev.count = 0;
        } else byText.set(text, e);
      }
      const texts = [...byText.keys()].sort();
      let piece: string[] = [];
      let chars = 0;
      for (const text of texts) {
        const line = `${text} ${formatCount(byText.get(text)!)}\n`;
        piece.push(line);
        chars += line.length;
        if (chars >= pieceChars) {
          yield piece.join('');
          piece = [];
          chars = 0;
        }
      }
      if (piece.length) yield piece.join('');
      return;
    }
    const order = sortStacks(entries, names);
    // Sorted texts share long prefixes: each line extends the previous line's prefix strings.
    const prefix: string[] = [''];
    let prevIds: Int32Array | null = null;
    let piece: string[] = [];
    let chars = 0;
    for (const e of order) {
      const ids = e.ids;
      let c = 0;
      if (prevIds) {
        const n = Math.min(ids.length, prevIds.length);
        while (c < n && ids[c] === prevIds[c]) c++;
      }
      for (let k = c; k < ids.length; k++) prefix[k + 1] = k === 0 ? names[ids[0]!]! : `${prefix[k]};${names[ids[k]!]}`;
      prevIds = ids;
      const line = `${prefix[ids.length]} ${formatCount(e)}\n`;
      piece.push(line);
      chars += line.length;
      if (chars >= pieceChars) {
        yield piece.join('');
        piece = [];
        chars = 0;
      }
    }
    if (piece.length) yield piece.join('');
  }

  private text(e: StackEntry): string {
    const ids = e.ids;
    const names = this.names;
    const parts: string[] = new Array(ids.length);
    for (let i = 0; i < ids.length; i++) parts[i] = names[ids[i]!]!;
    return parts.join(';');
  }
}

/**
 * Sorts stacks in byte order of their texts "t0;t1;...;tn", given that no token contains ";" (multikey quicksort on
 * token ranks: each token position is compared once per group instead of once per comparison).
 *
 * A token's rank is its place among all strings "name;" (a token followed by more) and "name" (the last token):
 * comparing two texts at their first differing token is comparing these strings, because neither can be a proper
 * prefix of the other except "x" of "x;..." or of "xy...", where the text that ends first sorts first, as it
 * does in byte order.
 */
function sortStacks(entries: StackEntry[], names: string[]): StackEntry[] {
  const n = names.length;
  const variants: string[] = new Array(2 * n);
  for (let i = 0; i < n; i++) {
    variants[2 * i] = `${names[i]};`;
    variants[2 * i + 1] = names[i]!;
  }
  // Names are distinct and hold no ";", so all variants are distinct: rank them by a native string sort.
  const rankOf = new Map<string, number>();
  variants.sort().forEach((v, r) => rankOf.set(v, r));
  const rankMore = new Int32Array(n);
  const rankLast = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    rankMore[i] = rankOf.get(`${names[i]};`)!;
    rankLast[i] = rankOf.get(names[i]!)!;
  }
  const seqs = entries.map((e) => e.ids);
  const idx = new Int32Array(entries.length);
  for (let i = 0; i < idx.length; i++) idx[i] = i;
  /** Key of sequence i at token position d: -1 past its end. */
  const key = (i: number, d: number): number => {
    const s = seqs[i]!;
    return d < s.length - 1 ? rankMore[s[d]!]! : d === s.length - 1 ? rankLast[s[d]!]! : -1;
  };
  const compareFrom = (a: number, b: number, d: number): number => {
    for (;;) {
      const ka = key(a, d);
      const kb = key(b, d);
      if (ka !== kb || ka === -1) return ka - kb;
      d++;
    }
  };
  const sort = (lo: number, hi: number, d: number): void => {
    while (hi - lo > 1) {
      if (hi - lo <= 12) {
        for (let i = lo + 1; i < hi; i++) {
          const v = idx[i]!;
          let j = i;
          while (j > lo && compareFrom(idx[j - 1]!, v, d) > 0) {
            idx[j] = idx[j - 1]!;
            j--;
          }
          idx[j] = v;
        }
        return;
      }
      const pivot = key(idx[(lo + hi) >> 1]!, d);
      let lt = lo;
      let gt = hi;
      let i = lo;
      while (i < gt) {
        const k = key(idx[i]!, d);
        if (k < pivot) {
          const t = idx[lt]!;
          idx[lt++] = idx[i]!;
          idx[i++] = t;
        } else if (k > pivot) {
          const t = idx[--gt]!;
          idx[gt] = idx[i]!;
          idx[i] = t;
        } else i++;
      }
      sort(lo, lt, d);
      sort(gt, hi, d);
      if (pivot === -1) return; // sequences that ended here are equal
      lo = lt;
      hi = gt;
      d++;
    }
  };
  sort(0, idx.length, 0);
  return Array.from(idx, (i) => entries[i]!);
}

function addBig(a: StackEntry, b: StackEntry): bigint {
  return (a.big ?? BigInt(a.count)) + (b.big ?? BigInt(b.count));
}

/** Perl prints sums below 2^64 as integers and larger ones as doubles (%.15g). */
function formatCount(e: StackEntry): string {
  if (e.big === null) return String(e.count);
  return e.big >= TWO_64 ? perlNum(Number(e.big)) : e.big.toString();
}
