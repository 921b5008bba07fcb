/**
 * stackcollapse-perf's frame-line table and scan in WebAssembly memory (perf.ts uses it). The hot loop, frame-scan.c
 * compiled to WebAssembly (frame-scan-wasm.ts), takes the frame lines of a sample one after another: finds the
 * line's end and its address, looks the text after the address up in a byte-keyed hash table (first among the
 * entries that followed the previous line before, then by hash) and appends the entry's frame ids to the current
 * stack, all in the module's memory. It returns to JavaScript at the first line it does not take: any other line
 * (event line, blank line, comment), a text not in the table yet (JavaScript tidies it once and inserts it here), an
 * entry whose frames depend on more than its text, or a full stack buffer.
 * Why: in JavaScript this loop cost ~300 ns a frame line (a native call to find "\n", DataView comparisons, V8's
 * interpreter until the optimizing compiler took over); see bench/results/flame-issue14.md, section collapse10.
 *
 * Memory (one per collapser, byte addresses): the state block at 64-127 (ST_* below), the byte classes at 256-511,
 * the input area (`inBase`, `inCap` bytes; moved to a larger one for a line longer than it), then a heap growing up
 * to the end of the memory: the current stack's ids, both tables' slot arrays and the entries.
 *
 * Entry (at a multiple of 4): hash, key length, mode, id count n, four (successor entry, its key length) pairs, most
 * recent first (-1: none), n ids, the key bytes. Slot arrays hold entry addresses (-1: empty), open addressing.
 */
import { FRAME_SCAN_WASM } from './frame-scan-wasm.js';
import { instantiate, newMemory, PAGE } from './wasm.js';

// The state block (byte addresses, as in frame-scan.c).
const ST_PREV = 64;
const ST_TAB = 68;
const ST_CUR = 72;
const ST_CURLEN = 76;
const ST_CURCAP = 80;
const ST_HASH = 84;
const ST_TABLES = 96;
const CLS = 256;
const IN_BASE = 1024;
/** The input area's first size: a 1 MiB read plus a line cut by the previous one. */
const IN_CAP = 2 << 20;
const R_HASH = 0;
const R_LEN = 4;
const R_MODE = 8;
const R_N = 12;
const R_SUCC = 16;
const R_IDS = 48;
/**
 * First memory size in pages: a reservation, like stack-table.ts's (only the pages written become memory); the
 * memory grows beyond it when the entries need more.
 */
const FIRST_PAGES = 1024;
const FIRST_SLOTS = 1 << 12;
const FIRST_CUR = 1 << 12;

export class FrameScanner {
  private readonly memory = newMemory(FIRST_PAGES);
  private readonly lookupFn: (p: number, end: number) => number;
  private readonly framesFn: (pos: number, end: number) => number;
  /** The whole memory as bytes and as int32s (views made again when it grows). */
  u8!: Buffer;
  i32!: Int32Array;
  dv!: DataView;
  /** The current stack's ids (a view of its buffer in the memory). */
  cur!: Int32Array;
  /** The input area. */
  inBase = IN_BASE;
  inCap = IN_CAP;
  private top = IN_BASE + IN_CAP;
  /** Per table: its entries (for rehashing) and its number of slots. */
  private readonly entries: number[][] = [[], []];

  constructor() {
    const exports = instantiate(FRAME_SCAN_WASM, this.memory);
    this.lookupFn = exports.lookup as (p: number, end: number) => number;
    this.framesFn = exports.frames as (pos: number, end: number) => number;
    this.views();
    const u8 = this.u8;
    for (let c = 0; c < 256; c++) {
      if (c === 10) u8[CLS + c] = 4;
      else if (c === 32 || (c >= 9 && c <= 13)) u8[CLS + c] = 1;
      else if ((c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95) u8[CLS + c] = 2;
    }
    this.i32[ST_PREV >> 2] = -1;
    for (let t = 0; t < 2; t++) {
      const slots = this.alloc(FIRST_SLOTS * 4);
      this.i32.fill(-1, slots >> 2, (slots >> 2) + FIRST_SLOTS);
      const tb = (ST_TABLES + 16 * t) >> 2;
      this.i32[tb] = slots;
      this.i32[tb + 1] = FIRST_SLOTS - 1;
      this.i32[tb + 2] = -1;
    }
    const cur = this.alloc(FIRST_CUR * 4);
    this.i32[ST_CUR >> 2] = cur;
    this.i32[ST_CURCAP >> 2] = FIRST_CUR;
    this.views();
  }

  private views(): void {
    const buf = this.memory.buffer;
    this.u8 = Buffer.from(buf);
    this.i32 = new Int32Array(buf);
    this.dv = new DataView(buf);
    const cur = this.i32[ST_CUR >> 2]!;
    this.cur = new Int32Array(buf, cur, this.i32[ST_CURCAP >> 2]!);
  }

  /** Whether the memory grew since the views were made (then they are made again). */
  refresh(): boolean {
    if (this.u8.buffer === this.memory.buffer) return false;
    this.views();
    return true;
  }

  /** `bytes` of the heap (8-aligned), growing the memory when needed. */
  private alloc(bytes: number): number {
    const at = (this.top + 7) & ~7;
    const end = at + bytes;
    const have = this.memory.buffer.byteLength;
    if (end > have) {
      this.memory.grow(Math.max(Math.ceil((end - have) / PAGE), have / PAGE / 2));
      this.views();
    }
    this.top = end;
    return at;
  }

  /**
   * Makes the input area at least `bytes` long, keeping its first `keep` bytes (a new area on the heap; the old one
   * is not reused).
   */
  growInput(bytes: number, keep: number): void {
    const at = this.alloc(bytes);
    this.u8.copyWithin(at, this.inBase, this.inBase + keep);
    this.inBase = at;
    this.inCap = bytes;
  }

  /** Frame lines of the current sample from `pos` (see frame-scan.c `frames`); returns where it stopped. */
  frames(pos: number, end: number): number {
    return this.framesFn(pos, end);
  }

  /** The entry of the key [p, end) in the current table (see frame-scan.c `lookup`), or -1 (then see `hash`). */
  lookup(p: number, end: number): number {
    return this.lookupFn(p, end);
  }

  /** The hash of the key of the last `lookup` that missed. */
  get hash(): number {
    return this.i32[ST_HASH >> 2]!;
  }

  /** The previous frame line's entry in this sample (-1 at its start). */
  get prev(): number {
    return this.i32[ST_PREV >> 2]!;
  }

  set prev(e: number) {
    this.i32[ST_PREV >> 2] = e;
  }

  /** Selects the table of Java processes (1) or the other one (0). */
  set table(t: number) {
    this.i32[ST_TAB >> 2] = t;
  }

  get curLen(): number {
    return this.i32[ST_CURLEN >> 2]!;
  }

  set curLen(n: number) {
    this.i32[ST_CURLEN >> 2] = n;
  }

  /** Makes room for `n` more ids in the current stack. */
  reserveCur(n: number): void {
    const len = this.curLen;
    const cap = this.i32[ST_CURCAP >> 2]!;
    if (len + n <= cap) return;
    const size = Math.max(cap * 2, len + n);
    const old = this.i32[ST_CUR >> 2]!;
    const at = this.alloc(size * 4);
    this.u8.copyWithin(at, old, old + len * 4);
    this.i32[ST_CUR >> 2] = at;
    this.i32[ST_CURCAP >> 2] = size;
    this.views();
  }

  mode(e: number): number {
    return this.i32[(e + R_MODE) >> 2]!;
  }

  /** Appends entry `e`'s ids to the current stack. */
  pushEntry(e: number): void {
    const i32 = this.i32;
    const n = i32[(e + R_N) >> 2]!;
    this.reserveCur(n);
    const from = (e + R_IDS) >> 2;
    this.cur.set(this.i32.subarray(from, from + n), this.curLen);
    this.curLen += n;
  }

  /** Appends `ids` to the current stack. */
  pushIds(ids: Int32Array): void {
    this.reserveCur(ids.length);
    this.cur.set(ids, this.curLen);
    this.curLen += ids.length;
  }

  /**
   * Adds the key [p, end) of the memory (absent from the current table; `h` its hash from `lookup`) with `mode` and
   * `ids`, linked as the successor of the previous entry (or as the table's first entry); returns the entry.
   */
  insert(p: number, end: number, h: number, mode: number, ids: Int32Array): number {
    const len = end - p;
    const t = this.i32[ST_TAB >> 2]!;
    const e = this.alloc(R_IDS + 4 * ids.length + len);
    let i32 = this.i32;
    const w = e >> 2;
    i32[w + (R_HASH >> 2)] = h;
    i32[w + (R_LEN >> 2)] = len;
    i32[w + (R_MODE >> 2)] = mode;
    i32[w + (R_N >> 2)] = ids.length;
    i32.fill(-1, w + (R_SUCC >> 2), w + (R_IDS >> 2));
    i32.set(ids, w + (R_IDS >> 2));
    this.u8.copyWithin(e + R_IDS + 4 * ids.length, p, end);
    const list = this.entries[t]!;
    list.push(e);
    const tb = (ST_TABLES + 16 * t) >> 2;
    if (list.length * 2 > i32[tb + 1]! + 1) {
      const n = (i32[tb + 1]! + 1) * 2;
      const slots = this.alloc(n * 4);
      i32 = this.i32;
      i32.fill(-1, slots >> 2, (slots >> 2) + n);
      i32[tb] = slots;
      i32[tb + 1] = n - 1;
      for (const x of list) this.place(tb, x);
    } else {
      this.place(tb, e);
    }
    const prev = this.prev;
    if (prev >= 0) {
      const q = prev >> 2;
      i32.copyWithin(q + 6, q + 4, q + 10);
      i32[q + 4] = e;
      i32[q + 5] = len;
    } else {
      i32[tb + 2] = e;
    }
    return e;
  }

  private place(tb: number, e: number): void {
    const i32 = this.i32;
    const slots = i32[tb]! >> 2;
    const mask = i32[tb + 1]!;
    let s = i32[e >> 2]! & mask;
    while (i32[slots + s]! >= 0) s = (s + 1) & mask;
    i32[slots + s] = e;
  }
}
