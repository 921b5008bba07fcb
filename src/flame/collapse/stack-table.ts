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
    const withSemi = names.some((n) => n.includes(';'));
    let sorted: { e: StackEntry; text?: string }[];
    if (withSemi) {
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
      sorted = texts.map((text) => ({ e: byText.get(text)!, text }));
    } else {
      entries.sort((a, b) => compareStacks(a.ids, b.ids, names));
      sorted = entries.map((e) => ({ e }));
    }
    let piece: string[] = [];
    let chars = 0;
    for (const { e, text } of sorted) {
      const line = `${text ?? this.text(e)} ${formatCount(e)}\n`;
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
 * Byte order of the texts "t0;t1;...;tn" of two stacks, from their tokens, given that no token contains ";".
 * At the first differing token x (of a) and y (of b): unless one is a prefix of the other they compare as strings;
 * if x is a proper prefix of y, the text of a continues with ";" (or ends) where b's continues with y's next char.
 */
function compareStacks(a: Int32Array, b: Int32Array, names: string[]): number {
  const la = a.length;
  const lb = b.length;
  const n = la < lb ? la : lb;
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  if (i === n) return la - lb; // one is a prefix of the other, token-wise: the shorter text sorts first
  const x = names[a[i]!]!;
  const y = names[b[i]!]!;
  if (y.startsWith(x)) {
    // x is a proper prefix of y (they differ).
    if (i === la - 1) return -1; // a's text ends here
    return SEMI < y.charCodeAt(x.length) ? -1 : 1;
  }
  if (x.startsWith(y)) {
    if (i === lb - 1) return 1;
    return x.charCodeAt(y.length) < SEMI ? -1 : 1;
  }
  return x < y ? -1 : 1;
}

function addBig(a: StackEntry, b: StackEntry): bigint {
  return (a.big ?? BigInt(a.count)) + (b.big ?? BigInt(b.count));
}

/** Perl prints sums below 2^64 as integers and larger ones as doubles (%.15g). */
function formatCount(e: StackEntry): string {
  if (e.big === null) return String(e.count);
  return e.big >= TWO_64 ? perlNum(Number(e.big)) : e.big.toString();
}
