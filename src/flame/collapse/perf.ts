/**
 * Collapses `perf script` output into folded stacks, reproducing FlameGraph's stackcollapse-perf.pl (commit 41fee1f)
 * byte for byte, options included (`--pid`, `--tid`, `--kernel`, `--jit`, `--all`, `--addrs`, `--event-filter`;
 * `--inline`, `--context` and `--srcline`, which run addr2line or read source lines, are not supported).
 *
 * Input: samples separated by blank lines. A sample starts with an event line
 *   `java 24636/25607 [000] 4794564.109216: 10101010 cpu-clock:`
 * (comm, optional PID, TID, period, event name), followed by one line per frame, leaf first:
 *   `\t    7f0e2f4c9afc cpu_startup_entry+0x2ec ([kernel.kallsyms])`.
 * Output: `comm;root;...;leaf count` lines sorted in byte order, counts summed per distinct stack (a sample counts
 * its period, or 1 when the event line has none).
 *
 * Behaviour kept from the Perl script because byte-identical output depends on it: only the first event type seen
 * is kept unless `--event-filter` names one; a sample only ends at a blank line (a last sample without one is
 * dropped); a TID of 0 counts as absent (PID shown as "?"); a period of 0 counts as 1; "+0x..." offsets, argument
 * lists, quotes and Java "L" prefixes are tidied; "[unknown]" frames are replaced by the DSO's file name.
 *
 * Speed: the input stays bytes, copied into a WebAssembly memory (frame-scan.ts). Each distinct frame-line text
 * (after the address) is decoded and tidied once here and kept in a byte-keyed table in that memory with its
 * interned frame ids; the frame lines of a sample are then taken by the module's loop (frame-scan.c), which finds
 * each line's end and address, recognises the text among the lines that followed the previous line before (length,
 * then one comparison) or by hash, and appends its ids, returning here for any other line. A sample is a sequence
 * of ids counted in stack-table.ts, which builds each distinct stack's text only when writing the output.
 */
import { perlSplit } from '../perl.js';
import { ByteTable, hashBytes } from './byte-table.js';
import type { StackCollapser, WarnFn } from './collapser.js';
import { FrameScanner } from './frame-scan.js';
import { type ExportedStacks, Interner, StackTable } from './stack-table.js';

/** Options of stackcollapse-perf.pl (the Perl option names in comments). */
export interface PerfCollapseOptions {
  /** `--pid`: process names become "comm-PID". */
  pid?: boolean;
  /** `--tid`: process names become "comm-PID/TID" (takes precedence over `pid`). */
  tid?: boolean;
  /** `--kernel`: append "_[k]" to kernel frames (DSO "[...]" or ending in "vmlinux"). */
  kernel?: boolean;
  /** `--jit`: append "_[j]" to JIT frames (DSO /tmp/perf-PID.map). */
  jit?: boolean;
  /** `--all`: both `kernel` and `jit`. */
  all?: boolean;
  /** `--addrs`: "[unknown]" frames keep their address: "[dso <addr>]". */
  addrs?: boolean;
  /** `--event-filter EVENT`: keep only samples of this event (default: the first event seen). */
  eventFilter?: string;
  /** Where warnings go (the Perl script prints them to stderr). Default: dropped. */
  warn?: WarnFn;
  /**
   * `eventFilter` was not given but taken from the input's first event (by a collapser of a later part of the
   * input, see perf-parallel.ts): samples of other events are then dropped with stackcollapse-perf.pl's warning.
   */
  eventDefaulted?: boolean;
}

// Byte classes: Perl's \s on byte strings ([\t\n\v\f\r ]) and \w (ASCII letters, digits, underscore).
// "\n" gets a class of its own: it ends lines, so the scans of a frame line stop there.
const WS_BIT = 1;
const WORD_BIT = 2;
const NEWLINE = 4;
const CLASS = new Uint8Array(256);
for (let c = 0; c < 256; c++) {
  if (c === 10) CLASS[c] = NEWLINE;
  else if (c === 32 || (c >= 9 && c <= 13)) CLASS[c] = WS_BIT;
  else if ((c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95) CLASS[c] = WORD_BIT;
}
const isWs = (c: number): boolean => CLASS[c] === WS_BIT || c === 10;

const WS = '[\\t\\n\\v\\f\\r ]';
const NWS = '[^\\t\\n\\v\\f\\r ]';
/** The event line: comm, PID (or TID), optional "/TID". */
const EVENT_LINE_RE = new RegExp(`^(${NWS}.+?)${WS}+(\\d+)\\/*(\\d+)*${WS}+`, 's');
/** Period and event name at the end of the event line. */
const PERIOD_EVENT_RE = new RegExp(`:${WS}*(\\d+)*${WS}+(${NWS}+):${WS}*$`, 's');
/** A frame line: address, symbol, "(dso)". The fast path in `frameLine` finds the same split without a regex. */
const FRAME_LINE_RE = new RegExp(`^${WS}*(\\w+)${WS}*(.+) \\((.*)\\)`, 's');
const GO_METHOD_RE = /\.\(.*\)\./s;
const ARGS_RE = /\((?!anonymous namespace\)).*/s;
const JIT_DSO_RE = /\/tmp\/perf-\d+\.map/;
const KERNEL_DSO_RE = /^\[|vmlinux$/;
const OFFSET_RE = /\+0x[0-9a-f]+$/;

// Modes of frame-line table entries.
/** Frames are the entry's ids. */
const IDS = 0;
/** The line must go through the regex (no fast split). */
const SLOW = 1;
/** The frames include the line's address ("[unknown]" with --addrs). */
const WITH_ADDRESS = 2;
const EMPTY = new Int32Array(0);
/** Most entries of each event-line cache. */
const EVENT_CACHE_MAX = 4096;

/** PERIOD_EVENT_RE's captures: the period (undefined when absent) and the event name. */
interface EventTail {
  period: string | undefined;
  event: string;
}

export class PerfCollapser implements StackCollapser {
  private readonly includeTid: boolean;
  private readonly includePid: boolean;
  private readonly annotateKernel: boolean;
  private readonly annotateJit: boolean;
  private readonly includeAddrs: boolean;
  private eventFilter: string;
  private eventDefaulted = false;
  private eventWarned = false;
  private readonly warn: WarnFn;

  private readonly interner = new Interner();
  /**
   * The input area, the current stack's ids and the frame-line tables (bytes after the address -> mode and frame ids,
   * in reverse of their order in the printed stack; separate for "java..." processes, whose tidying differs), in
   * WebAssembly memory, with the scan of frame lines.
   */
  private readonly sc = new FrameScanner();
  /** The memory as bytes up to the end of the lines being read (for searches that must stop there). */
  private b: Buffer;
  /** Event lines' bytes before their first "[" -> mode 1 and [process name id, 1 if "java..."], or mode 0. */
  private readonly procTable = new ByteTable();
  /** Event lines' period parts -> [index in `tails`]. */
  private readonly tailTable = new ByteTable();
  private readonly tails: (EventTail | null)[] = [];
  private readonly stacks: StackTable;
  /** Length of a line cut by the end of a chunk, kept at the start of the input area. */
  private carryLen = 0;

  // Current sample.
  private pname = -1;
  private pnameIsJava = false;
  private period = 1;
  private periodBig: bigint | null = null;

  /** `transferable`: the stacks will go to another thread (`exportStacks`), see StackTable. */
  constructor(opts: PerfCollapseOptions = {}, table: { transferable?: boolean } = {}) {
    this.includeTid = !!opts.tid;
    this.includePid = !!opts.pid;
    this.annotateKernel = !!(opts.kernel || opts.all);
    this.annotateJit = !!(opts.jit || opts.all);
    this.includeAddrs = !!opts.addrs;
    this.eventFilter = opts.eventFilter ?? '';
    this.eventDefaulted = !!opts.eventDefaulted && this.eventFilter !== '';
    this.warn = opts.warn ?? (() => {});
    this.stacks = new StackTable(this.interner.names, true, table);
    this.b = this.sc.u8.subarray(0, 0);
  }

  push(chunk: Uint8Array): void {
    const sc = this.sc;
    const carry = this.carryLen;
    const n = carry + chunk.length;
    if (n > sc.inCap) sc.growInput(n * 2, carry);
    sc.u8.set(chunk, sc.inBase + carry);
    this.take(n);
  }

  /**
   * As push(), for input read by `read(buffer, offset, length)` (up to `max` bytes, returning how many it read)
   * straight into the input area instead of through a buffer of its own. Returns the number of bytes read.
   */
  pushRead(read: (buffer: Buffer, offset: number, length: number) => number, max: number): number {
    const sc = this.sc;
    const carry = this.carryLen;
    if (carry + max > sc.inCap) sc.growInput((carry + max) * 2, carry);
    const got = read(sc.u8, sc.inBase + carry, max);
    if (got > 0) this.take(carry + got);
    return got;
  }

  /** Processes the input area's first `n` bytes (a cut line from before, then new input). */
  private take(n: number): void {
    const sc = this.sc;
    const end = sc.inBase + n;
    const pos = this.lines(sc.inBase, end);
    this.carryLen = end - pos;
    if (pos < end) this.sc.u8.copyWithin(this.sc.inBase, pos, end);
  }

  /**
   * Processes the complete lines of the memory's bytes [pos, end); returns where the unfinished last line starts.
   * The frame lines of a sample go to the scanner; any line it does not take is handled here, then it goes on.
   */
  private lines(pos: number, end: number): number {
    const sc = this.sc;
    this.b = sc.u8.subarray(0, end);
    while (pos < end) {
      if (this.pname >= 0) {
        pos = sc.frames(pos, end);
        if (pos >= end) break;
      }
      // (A native search for "\n": far cheaper than a JavaScript byte loop.)
      const b = this.b;
      const nl = b.indexOf(10, pos);
      if (nl < 0) break;
      const c0 = b[pos]!;
      if ((c0 === 9 || c0 === 32) && this.pname >= 0) this.frameLineInSample(b, sc.dv, pos, nl);
      else this.line(b, sc.dv, pos, nl);
      if (sc.refresh()) this.b = sc.u8.subarray(0, end);
      pos = nl + 1;
    }
    return pos;
  }

  /**
   * A frame line [start, end) inside a sample (the bulk of the input): finds the address, then the line's table
   * entry: first among the lines that followed the previous one before (same length, then the same bytes), else by
   * hash.
   */
  private frameLineInSample(b: Buffer, dv: DataView, start: number, end: number): void {
    // CLASS of "\n" is neither WS_BIT nor WORD_BIT, so these scans stop at the end of the line.
    let i = start + 1;
    while (CLASS[b[i]!] === WS_BIT) i++;
    const pcStart = i;
    while (CLASS[b[i]!] === WORD_BIT) i++;
    const pcEnd = i;
    while (CLASS[b[i]!] === WS_BIT) i++;
    if (pcEnd === pcStart || i === end) {
      this.frameLine(b, dv, start, end);
      return;
    }
    this.frameAt(b, start, pcStart, pcEnd, i, end);
  }

  /**
   * Starts reading a part of the input that begins after a blank line (perf-parallel.ts), as a fresh collapser
   * would: no current sample, no cut line, and the "Filtering for events of type" warning not yet given (each part
   * reports its own first one; the caller keeps the first in file order). The event filter and the counted stacks
   * stay.
   */
  beginPart(): void {
    this.carryLen = 0;
    this.pname = -1;
    this.sc.curLen = 0;
    this.sc.prev = -1;
    this.eventWarned = false;
  }

  endFile(): void {
    if (this.carryLen > 0) {
      const sc = this.sc;
      const end = sc.inBase + this.carryLen;
      this.carryLen = 0;
      this.b = sc.u8.subarray(0, end);
      this.line(this.b, sc.dv, sc.inBase, end);
    }
  }

  *finish(): Generator<Uint8Array> {
    this.endFile();
    yield* this.stacks.lines();
  }

  /** The stacks counted so far, for another thread to merge (`addStacks`). */
  exportStacks(): ExportedStacks {
    return this.stacks.exportStacks();
  }

  /** Adds the stacks another collapser counted (its `exportStacks()`), as if this one had read its input too. */
  addStacks(other: ExportedStacks): void {
    const idOf = new Int32Array(other.names.length);
    for (let i = 0; i < idOf.length; i++) idOf[i] = this.interner.id(other.names[i]!);
    this.stacks.addStacks(other, idOf);
  }

  private line(b: Buffer, dv: DataView, start: number, end: number): void {
    if (start === end) {
      this.endSample();
      return;
    }
    const c0 = b[start]!;
    if (c0 === 35) return; // "#" comment (the perf header)
    if (isWs(c0)) {
      this.frameLine(b, dv, start, end);
      return;
    }
    if (this.eventLineCached(b, dv, start, end)) return;
    const line = b.toString('latin1', start, end);
    if (!this.eventLine(line)) this.frameLineSlow(line);
  }

  /**
   * An event line from the caches of its two parts, without decoding it (~89,000 lines on synth-200M, each one
   * string and two regex results of garbage otherwise). Returns false, having done nothing, when the line does not
   * have the shape the caches rely on; the caller then decodes it (`eventLine`).
   *
   * Process part: EVENT_LINE_RE cannot match across a "[" (its comm is the shortest that the rest matches after,
   * and the rest takes only blanks, digits and "/"), so when it matches the bytes before the line's first "[", that
   * is its match on the whole line: cached by those bytes ("comm PID/TID  "). Period part: PERIOD_EVENT_RE
   * (`:\s*(\d+)*\s+(\S+):\s*$`) leaves at most one blank-separated word between its ":" and its last word, so its
   * leftmost match starts no earlier than the last byte of the third-last word: cached by the bytes from there
   * (": PERIOD EVENT: " after the timestamp's digits). Each cache stops taking entries at EVENT_CACHE_MAX (then a
   * new period part is matched on its few bytes alone), so that memory does not grow with the input.
   */
  private eventLineCached(b: Buffer, dv: DataView, start: number, end: number): boolean {
    const k = b.indexOf(0x5b, start);
    if (k <= start || k >= end) return false;
    // The last byte of the third-last word (words: runs of non-blanks).
    let i = end;
    while (i > start && isWs(b[i - 1]!)) i--;
    const lastEnd = i;
    while (i > start && !isWs(b[i - 1]!)) i--;
    if (i === lastEnd) return false;
    let j = i;
    while (j > start && isWs(b[j - 1]!)) j--;
    if (j === i) return false;
    const secondEnd = j;
    while (j > start && !isWs(b[j - 1]!)) j--;
    if (j === secondEnd) return false;
    let t = j;
    while (t > start && isWs(b[t - 1]!)) t--;
    if (t === j || t === start) return false;
    const tail = t - 1;

    const procs = this.procTable;
    const hp = hashBytes(dv, start, k);
    let pe = procs.find(dv, start, k, hp);
    if (pe < 0) {
      if (procs.size >= EVENT_CACHE_MAX) return false;
      const m = EVENT_LINE_RE.exec(b.toString('latin1', start, k));
      const ids = new Int32Array(2);
      if (m) {
        const pname = this.processName(m);
        ids[0] = this.interner.id(pname);
        ids[1] = pname.startsWith('java') ? 1 : 0;
      }
      pe = procs.insert(b, start, k, hp, m ? 1 : 0, ids);
    }
    if (procs.mode(pe) === 0) return false; // not matched before the "[": decoded whole

    const tails = this.tailTable;
    const ht = hashBytes(dv, tail, end);
    const te = tails.find(dv, tail, end, ht);
    let info: EventTail | null;
    if (te >= 0) {
      info = this.tails[tails.words[tails.idsStart(te)]!]!;
    } else {
      const m = PERIOD_EVENT_RE.exec(b.toString('latin1', tail, end));
      info = m ? { period: m[1], event: m[2]! } : null;
      if (tails.size < EVENT_CACHE_MAX) {
        tails.insert(b, tail, end, ht, 0, Int32Array.of(this.tails.length));
        this.tails.push(info);
      }
    }
    const w = procs.words;
    this.applyEvent(info, w[procs.idsStart(pe)]!, w[procs.idsStart(pe) + 1] === 1);
    return true;
  }

  /** The process name of an EVENT_LINE_RE match, as the options shape it. */
  private processName(m: RegExpExecArray): string {
    const comm = m[1]!;
    let pid = m[2]!;
    let tid = m[3];
    if (!tid || tid === '0') {
      tid = pid;
      pid = '?';
    }
    let pname = this.includeTid ? `${comm}-${pid}/${tid}` : this.includePid ? `${comm}-${pid}` : comm;
    if (pname.includes(' ')) pname = pname.replaceAll(' ', '_');
    return pname;
  }

  /** Returns false when the line is not an event line (it is then tried as a frame line, as the Perl does). */
  private eventLine(line: string): boolean {
    const m = EVENT_LINE_RE.exec(line);
    if (!m) return false;
    const pname = this.processName(m);
    const pe = PERIOD_EVENT_RE.exec(line);
    this.applyEvent(pe ? { period: pe[1], event: pe[2]! } : null, this.interner.id(pname), pname.startsWith('java'));
    return true;
  }

  /**
   * An event line's effect: `tail` is its PERIOD_EVENT_RE match (null: none, the period is then ""), `pname` the
   * interned process name.
   */
  private applyEvent(tail: EventTail | null, pname: number, isJava: boolean): void {
    let period: string | undefined = '';
    if (tail) {
      period = tail.period;
      const event = tail.event;
      if (this.eventFilter === '') {
        this.eventFilter = event;
        this.eventDefaulted = true;
      } else if (event !== this.eventFilter) {
        if (this.eventDefaulted && !this.eventWarned) {
          this.warn(`Filtering for events of type: ${event}`);
          this.eventWarned = true;
        }
        return; // skipped; the current process name (if any) stays as it is
      }
    }
    this.setPeriod(period);
    this.pname = pname;
    this.pnameIsJava = isJava;
    this.sc.table = isJava ? 1 : 0;
    this.sc.prev = -1;
  }

  private setPeriod(p: string | undefined): void {
    // Perl: `$period = 1 if not $period` ("" and "0" are false).
    if (!p || p === '0') {
      this.period = 1;
      this.periodBig = null;
    } else if (p.length <= 15) {
      this.period = Number(p);
      this.periodBig = null;
    } else {
      const big = BigInt(p);
      this.period = Number(big);
      this.periodBig = big < 1n << 64n ? big : null; // beyond 64 bits Perl has a double too
    }
  }

  private frameLine(b: Buffer, dv: DataView, start: number, end: number): void {
    let i = start + 1;
    while (i < end && CLASS[b[i]!] === WS_BIT) i++;
    const pcStart = i;
    while (i < end && CLASS[b[i]!] === WORD_BIT) i++;
    const pcEnd = i;
    while (i < end && CLASS[b[i]!] === WS_BIT) i++;
    const p = i;
    if (pcEnd === pcStart || this.pname < 0) {
      // Not an address (the regex decides), or outside a sample / in a filtered one, where only whether the line
      // is well formed matters (for the warning).
      this.frameLineSlow(b.toString('latin1', start, end));
      return;
    }
    this.frameAt(b, start, pcStart, pcEnd, p, end);
  }

  /**
   * A frame line [start, end) inside a sample with its address at [pcStart, pcEnd) and its text after the address
   * at [p, end): finds (or adds) the text's table entry and appends its frames to the sample. Stacks repeat, so the
   * entry is first looked for among the lines that followed the previous one before (same length, then the same
   * bytes), without hashing the line; only then by hash.
   */
  private frameAt(b: Buffer, start: number, pcStart: number, pcEnd: number, p: number, end: number): void {
    const sc = this.sc;
    let e = sc.lookup(p, end);
    if (e < 0) e = this.addLine(b, pcStart, pcEnd, p, end, sc.hash);
    sc.prev = e;
    const mode = sc.mode(e);
    if (mode === IDS) {
      sc.pushEntry(e);
    } else if (mode === SLOW) {
      this.frameLineSlow(sc.u8.toString('latin1', start, end));
    } else {
      // "[unknown]" with --addrs: the frame name holds this line's address.
      const u8 = sc.u8;
      const key = u8.toString('latin1', p, end);
      const r = key.lastIndexOf(')');
      const q = key.lastIndexOf(' (', r - 2);
      sc.pushIds(this.makeFrames(u8.toString('latin1', pcStart, pcEnd), key.slice(0, q), key.slice(q + 2, r)).ids);
    }
  }

  /**
   * First sight of a frame line's text after its address: splits it as /^\s*(\w+)\s*(.+) \((.*)\)/ does and adds
   * it to the table. With the address and the spaces after it taken greedily, the greedy (.+) ends at the last
   * " (" that still has a ")" after it, and (.*) runs to the last ")"; both depend only on the text after the
   * address, the table key. Without such a split the regex would backtrack into the address: SLOW.
   */
  private addLine(b: Buffer, pcStart: number, pcEnd: number, p: number, end: number, h: number): number {
    const sc = this.sc;
    const key = b.toString('latin1', p, end);
    const r = key.lastIndexOf(')');
    const q = r >= 3 ? key.lastIndexOf(' (', r - 2) : -1;
    if (q < 1) return sc.insert(p, end, h, SLOW, EMPTY);
    // (The address is part of a frame only with --addrs.)
    const pc = this.includeAddrs ? b.toString('latin1', pcStart, pcEnd) : '';
    const made = this.makeFrames(pc, key.slice(0, q), key.slice(q + 2, r));
    return made.usesAddress ? sc.insert(p, end, h, WITH_ADDRESS, EMPTY) : sc.insert(p, end, h, IDS, made.ids);
  }

  private frameLineSlow(line: string): void {
    const m = FRAME_LINE_RE.exec(line);
    if (!m) {
      this.warn(`Unrecognized line: ${line}`);
      return;
    }
    if (this.pname < 0) return;
    this.sc.pushIds(this.makeFrames(m[1]!, m[2]!, m[3]!).ids);
  }

  /** One frame line's frames (several when the symbol holds inlined "a->b" chains), as ids in reverse order. */
  private makeFrames(pc: string, rawfunc: string, mod: string): { ids: Int32Array; usesAddress: boolean } {
    if (rawfunc.includes('+0x')) rawfunc = rawfunc.replace(OFFSET_RE, '');
    if (rawfunc.charCodeAt(0) === 40) return { ids: new Int32Array(0), usesAddress: false }; // "(": a process name
    let usesAddress = false;
    const out: string[] = [];
    for (let func of rawfunc.includes('->') || rawfunc === '' ? perlSplit(rawfunc, '->') : [rawfunc]) {
      if (func === '[unknown]') {
        func = mod !== '[unknown]' ? mod.slice(mod.lastIndexOf('/') + 1) : 'unknown';
        if (this.includeAddrs) {
          func = `[${func} <${pc}>]`;
          usesAddress = true;
        } else {
          func = `[${func}]`;
        }
      }
      // Generic tidying: ";" would split the frame; argument lists are noise unless this is a Go method name
      // such as "net/http.(*Client).Do"; "(anonymous namespace)" is kept; quotes go.
      if (func.includes(';')) func = func.replaceAll(';', ':');
      if (func.includes('(') && !GO_METHOD_RE.test(func)) func = func.replace(ARGS_RE, '');
      if (func.includes('"') || func.includes("'")) func = func.replace(/["']/g, '');
      // Java: "Lorg/foo/Bar;.baz" -> "org/foo/Bar:.baz".
      if (this.pnameIsJava && func.includes('/') && func.charCodeAt(0) === 76) func = func.slice(1);
      if (out.length > 0) {
        if (!func.includes('_[i]')) func += '_[i]'; // inlined
      } else if (this.annotateKernel && KERNEL_DSO_RE.test(mod) && !mod.includes('unknown')) {
        func += '_[k]';
      } else if (this.annotateJit && JIT_DSO_RE.test(mod)) {
        if (!func.includes('_[j]')) func += '_[j]';
      }
      out.push(func);
    }
    const ids = new Int32Array(out.length);
    for (let k = 0; k < out.length; k++) ids[out.length - 1 - k] = this.interner.id(out[k]!);
    return { ids, usesAddress };
  }

  private endSample(): void {
    if (this.pname < 0) return;
    const sc = this.sc;
    this.stacks.add(this.pname, sc.cur, sc.curLen, this.period, this.periodBig);
    sc.curLen = 0;
    this.pname = -1;
    sc.prev = -1;
  }
}

/**
 * The event name of the first event line in `b[start, end)` that would set the default event filter (a line not
 * starting with whitespace or "#", with a PID and a period/event part), or undefined when there is none.
 */
export function firstEvent(b: Buffer, start: number, end: number): string | undefined {
  let pos = start;
  while (pos < end) {
    let nl = b.indexOf(10, pos);
    if (nl < 0 || nl > end) nl = end;
    const c0 = b[pos]!;
    if (nl > pos && c0 !== 35 && !isWs(c0)) {
      const line = b.toString('latin1', pos, nl);
      if (EVENT_LINE_RE.test(line)) {
        const pe = PERIOD_EVENT_RE.exec(line);
        if (pe) return pe[2]!;
      }
    }
    pos = nl + 1;
  }
  return undefined;
}
