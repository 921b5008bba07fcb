/**
 * Shared parts of bcc's stack-aggregating tools (`profile`, `offcputime`):
 * - argparse value types and mutually exclusive option groups as bcc's parsers declare them;
 * - reading `kstack(raw)` / `ustack(raw)` map keys back into instruction addresses and symbolizing them with one
 *   {@link SymbolResolver} that also learns each process's mappings while it runs ({@link ProcessPreparer});
 * - bcc's two report formats: multi-line stacks (`    frame` lines, `    -                comm (pid)`, the value)
 *   and folded lines (`comm;user frames;kernel frames value`, FlameGraph's input), sorted as bcc sorts them;
 * - writing a flame graph SVG in-process with `flame/flamegraph.ts`.
 *
 * Formats follow iovisor/bcc `tools/profile.py` and `tools/offcputime.py` (HEAD 6d0a964c) and `BPF.sym()` /
 * `BPF.ksym()` in `src/python/bcc/__init__.py`.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { BpfscopeError } from '../errors.js';
import { type FlameGraphOptions, renderFlameGraph } from '../flame/flamegraph.js';
import type { MapDump, Value } from '../runtime/output/model.js';
import { readMapsText } from '../symbols/procmaps.js';
import { type Frame, foldedName, SymbolResolver } from '../symbols/resolver.js';
import { ArgError, formatUsage, INT, type Parsed, type ParserSpec, type ValueType } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { runProgram } from './framework/runner.js';
import { numberOf, pidsInMap, readStackEntries, type StackEntry, type StackKeyLayout, stringOf } from './stackread.js';
import { pyFormat } from './framework/pyformat.js';
import { type StackFileFormat, type StackMeta, StackOutput } from './framework/stackout.js';
import type { Tracer } from '../runtime/tracer.js';

// ---- options ----

function pyInt(text: string, invalid: string): number {
  try {
    return INT.convert(text) as number;
  } catch {
    throw new Error(`argparse: ${invalid}`);
  }
}

/** bcc's `positive_int`: an integer >= 0 ("must be an integer", "must be positive"). */
export const POSITIVE_INT: ValueType = {
  name: 'positive_int',
  convert: (text) => {
    const n = pyInt(text, 'must be an integer');
    if (n < 0) throw new Error('argparse: must be positive');
    return n;
  },
};

/** bcc's `positive_nonzero_int`: an integer > 0 ("must be nonzero" for 0). */
export const POSITIVE_NONZERO_INT: ValueType = {
  name: 'positive_nonzero_int',
  convert: (text) => {
    const n = POSITIVE_INT.convert(text) as number;
    if (n === 0) throw new Error('argparse: must be nonzero');
    return n;
  },
};

/** 2^64 - 1: bcc's `U64_MAX`, the default of `-M/--max-block-time` (offcputime, offwaketime). */
export const U64_MAX = (1n << 64n) - 1n;

/** bcc's `positive_nonzero_int` for `-M`, whose default is U64_MAX: the value kept as a bigint. */
export const POSITIVE_NONZERO_BIG: ValueType<bigint> = {
  name: 'positive_nonzero_int',
  convert: (text: string) => {
    const t = text.trim().replace(/_/g, '');
    if (!/^[+-]?\d+$/.test(t)) throw new Error('argparse: must be an integer');
    const n = BigInt(t);
    if (n < 0n) throw new Error('argparse: must be positive');
    if (n === 0n) throw new Error('argparse: must be nonzero');
    return n;
  },
};

/** profile's `positive_int_list`: comma-separated `positive_int`s (`185,186` → [185, 186]). */
export const POSITIVE_INT_LIST: ValueType = {
  name: 'positive_int_list',
  convert: (text) => text.split(',').map((v) => POSITIVE_INT.convert(v) as number),
};

/**
 * offcputime's `positive_ints`: comma-separated integers; a non-integer gives "must be integers", a negative one
 * bcc's own message "must be positive ingegers" (sic, kept as bcc prints it).
 */
export const POSITIVE_INTS: ValueType = {
  name: 'positive_ints',
  convert: (text) => {
    const vals = text.split(',').map((v) => pyInt(v, 'must be integers'));
    if (vals.some((v) => v < 0)) throw new Error('argparse: must be positive ingegers');
    return vals;
  },
};

/** Where each option of `spec` first appears in `argv` (argparse's reading order), by dest. */
function optionOrder(spec: ParserSpec, argv: string[]): Map<string, number> {
  const byFlag = new Map<string, { dest: string; takesValue: boolean }>();
  for (const o of spec.options) {
    const long = o.flags.find((f) => f.startsWith('--'));
    const dest = o.dest ?? (long ? long.slice(2) : o.flags[0]!.replace(/^-+/, '')).replace(/-/g, '_');
    for (const f of o.flags) byFlag.set(f, { dest, takesValue: o.kind === 'value' || o.kind === 'append' });
  }
  const order = new Map<string, number>();
  let seq = 0;
  const seen = (dest: string): void => {
    if (!order.has(dest)) order.set(dest, seq);
    seq++;
  };
  for (let i = 0; i < argv.length; i++) {
    const tok = argv[i]!;
    if (tok === '--') break;
    if (tok.startsWith('--')) {
      const eq = tok.indexOf('=');
      const name = eq > 0 ? tok.slice(0, eq) : tok;
      let o = byFlag.get(name);
      if (!o) {
        const matches = [...byFlag.keys()].filter((f) => f.startsWith('--') && f.startsWith(name));
        if (matches.length === 1) o = byFlag.get(matches[0]!);
      }
      if (!o) continue;
      seen(o.dest);
      if (o.takesValue && eq < 0) i++;
    } else if (tok.startsWith('-') && tok.length > 1 && !/^-\d+$/.test(tok)) {
      for (let j = 1; j < tok.length; j++) {
        const o = byFlag.get(`-${tok[j]}`);
        if (!o) break;
        seen(o.dest);
        if (o.takesValue) {
          if (j === tok.length - 1) i++;
          break;
        }
      }
    }
  }
  return order;
}

/**
 * argparse's mutually exclusive groups (bcc's `add_mutually_exclusive_group()`): when two options of one group
 * were given, the error argparse prints for the later one, `argument -L/--tid: not allowed with argument
 * -p/--pid`, as an {@link ArgError}; otherwise undefined. `groups` lists dests (`[['pid', 'tid'], ...]`); an option
 * counts as given when its parsed value differs from its default.
 */
export function exclusiveGroupError(
  spec: ParserSpec,
  argv: readonly string[],
  parsed: Parsed,
  groups: string[][],
): ArgError | undefined {
  const order = optionOrder(spec, [...argv]);
  const name = (dest: string): string => {
    const o = spec.options.find(
      (x) => (x.dest ?? '') === dest || x.flags.some((f) => f.replace(/^-+/, '').replace(/-/g, '_') === dest),
    );
    return o ? o.flags.join('/') : dest;
  };
  let worst: { at: number; msg: string } | undefined;
  for (const g of groups) {
    const given = g
      .filter((d) => parsed[d] !== null && parsed[d] !== false && parsed[d] !== undefined && order.has(d))
      .sort((a, b) => order.get(a)! - order.get(b)!);
    if (given.length < 2) continue;
    const at = order.get(given[1]!)!;
    if (!worst || at < worst.at)
      worst = { at, msg: `argument ${name(given[1]!)}: not allowed with argument ${name(given[0]!)}` };
  }
  return worst ? new ArgError(worst.msg, formatUsage(spec), spec.prog) : undefined;
}

// ---- reading stacks ----

/**
 * Addresses of a `kstack(raw)` / `ustack(raw)` value as the runtime decodes it (a newline, then one hex address
 * per line; empty when the kernel recorded no stack). Innermost frame first; an `<unwind failure>` line becomes
 * the u64 -1 marker (symbolized as an unknown frame, `[unknown]` as bcc prints address -1).
 */
export function parseRawStack(text: string): bigint[] {
  const out: bigint[] = [];
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (t === '') continue;
    // The resolver's formatStack prints the u64 -1 marker as "<unwind failure>" in every mode.
    out.push(/^[0-9a-f]+$/i.test(t) ? BigInt(`0x${t}`) : U64_MAX);
  }
  return out;
}

/** Frames of the BPF machinery that calls a tracing program (the program itself, `bpf_trace_runN`, ...). */
const TRACING_FRAME = /^(bpf_trace_run\d+|__bpf_trace_\w+|__traceiter_\w+|bpf_trampoline_\w+|bpf_prog_\w+)$/;

/**
 * A kernel stack captured inside a tp_btf/raw_tp program starts with the program and the functions that called
 * it (`bpf_prog_<tag>_<name>`, `bpf_trace_run4`); bcc's kprobe on `finish_task_switch` has no such frames. Drop
 * them from the top of `frames`, keeping the traced kernel code (`__schedule`, `schedule`, ...).
 */
export function dropTracingFrames(frames: Frame[]): Frame[] {
  let i = 0;
  while (
    i < frames.length &&
    (frames[i]!.module === 'bpf' || (frames[i]!.name !== undefined && TRACING_FRAME.test(frames[i]!.name!)))
  ) {
    i++;
  }
  return i === 0 ? frames : frames.slice(i);
}

export type { StackEntry, StackKeyLayout, StackThread } from './stackread.js';

/**
 * Symbolize every entry of `dump` (keys laid out as `layout`, values count()/sum()) with `resolver`. User stacks
 * are symbolized in the process named by the `ustack` value itself (the runtime decodes them with it), which the
 * caller passes through `userPid`; `kernelFilter` edits kernel frames (e.g. {@link dropTracingFrames}).
 */
export function symbolizeEntries(
  dump: MapDump,
  layout: StackKeyLayout,
  resolver: SymbolResolver,
  userPid: (key: Value[]) => number,
  kernelFilter: (frames: Frame[]) => Frame[] = (f) => f,
): StackEntry[] {
  const out: StackEntry[] = [];
  for (const e of dump.entries) {
    const v = e.value;
    const value = 'value' in v && typeof v.value === 'bigint' ? v.value : 0n;
    const entry: StackEntry = { comm: stringOf(e.key[layout.comm]), id: numberOf(e.key[layout.id]), value };
    if (layout.kernel !== undefined) {
      entry.kernel = kernelFilter(resolver.kernelStack(parseRawStack(stringOf(e.key[layout.kernel]))));
    }
    if (layout.user !== undefined) {
      entry.user = resolver.userStack(userPid(e.key), parseRawStack(stringOf(e.key[layout.user])));
    }
    out.push(entry);
  }
  return out;
}

// ---- output ----

/** How a stack tool prints an entry. */
export interface StackFormat {
  /** -d: a `-` (folded) / `    --` (multi-line) between kernel and user frames when both are there. */
  delimiter: boolean;
  /** Multi-line output: a kernel frame's text (`BPF.ksym(addr, ...)`). */
  kernelLine: (f: Frame) => string;
  /** Multi-line output: a user frame's text (`BPF.sym(addr, pid, ...)`). */
  userLine: (f: Frame) => string;
  /** Folded output: add `_[k]` to kernel frames (profile -a). */
  annotate: boolean;
}

/**
 * bcc's folded line: `comm;user frames outermost first;[-;]kernel frames outermost first value`. Frame names are
 * bare symbols (`[unknown]` when unknown), kernel frames with `_[k]` when annotating. With wakers (offwaketime),
 * each waker follows as `--;kernel frames innermost first;[-;]user frames innermost first;comm` (bcc's
 * offwaketime.py folded line: the waker's stack grows upwards from the wake-up), before the value.
 */
export function foldedLine(e: StackEntry, fmt: Pick<StackFormat, 'delimiter' | 'annotate'>): string {
  const parts = [e.comm];
  if (e.user) for (let i = e.user.length - 1; i >= 0; i--) parts.push(foldedName(e.user[i]!, false));
  if (e.kernel) {
    if (fmt.delimiter && e.kernel.length > 0 && e.user && e.user.length > 0) parts.push('-');
    for (let i = e.kernel.length - 1; i >= 0; i--) parts.push(foldedName(e.kernel[i]!, fmt.annotate));
  }
  for (const w of e.wakers ?? []) {
    parts.push('--');
    for (const f of w.kernel ?? []) parts.push(foldedName(f, fmt.annotate));
    if (fmt.delimiter && w.kernel?.length && w.user?.length) parts.push('-');
    for (const f of w.user ?? []) parts.push(foldedName(f, false));
    parts.push(w.comm);
  }
  return `${parts.join(';')} ${e.value}`;
}

/**
 * bcc's multi-line stack: kernel frames innermost first, `    --` with -d, user frames, then
 * `    -                comm (id)` and `        value`, and a blank line.
 */
export function stackLines(e: StackEntry, fmt: StackFormat): string {
  let s = '';
  if (e.kernel) for (const f of e.kernel) s += `    ${fmt.kernelLine(f)}\n`;
  if (e.user) {
    if (fmt.delimiter && e.kernel && e.kernel.length > 0 && e.user.length > 0) s += '    --\n';
    for (const f of e.user) s += `    ${fmt.userLine(f)}\n`;
  }
  s += `${pyFormat('    %-16s %s (%d)', '-', e.comm, e.id)}\n`;
  s += `        ${e.value}\n\n`;
  return s;
}

/**
 * Entries in bcc's report order: ascending value (`sorted(counts.items(), key=value)`); ties, which bcc leaves in
 * hash order, by their folded text so that output is deterministic.
 */
export function sortEntries(entries: StackEntry[], fmt: Pick<StackFormat, 'delimiter' | 'annotate'>): StackEntry[] {
  return sortEntriesFolded(entries, fmt).entries;
}

/** {@link sortEntries}, with each entry's {@link foldedLine} (built once, for the sort and the output). */
export function sortEntriesFolded(
  entries: StackEntry[],
  fmt: Pick<StackFormat, 'delimiter' | 'annotate'>,
): { entries: StackEntry[]; folded: string[] } {
  const keyed = entries.map((e) => ({ e, k: foldedLine(e, fmt) }));
  keyed.sort((a, b) => (a.e.value < b.e.value ? -1 : a.e.value > b.e.value ? 1 : a.k < b.k ? -1 : a.k > b.k ? 1 : 0));
  return { entries: keyed.map((x) => x.e), folded: keyed.map((x) => x.k) };
}

/**
 * `fmt` with each frame's line text computed once per frame object (the resolver shares a frame between every
 * stack that holds its address): for a whole report of many stacks.
 */
export function cachedFormat(fmt: StackFormat): StackFormat {
  const k = new Map<Frame, string>();
  const u = new Map<Frame, string>();
  return {
    ...fmt,
    kernelLine: (f) => {
      let s = k.get(f);
      if (s === undefined) k.set(f, (s = fmt.kernelLine(f)));
      return s;
    },
    userLine: (f) => {
      let s = u.get(f);
      if (s === undefined) u.set(f, (s = fmt.userLine(f)));
      return s;
    },
  };
}

/**
 * Render `folded` lines as a flame graph with `options` and write the SVG to `path`; flamegraph.pl's warnings go
 * to stderr. Returns the number of bytes written. @throws BpfscopeError when the file cannot be written
 */
export function writeFlameGraph(
  path: string,
  folded: string[],
  options: Partial<FlameGraphOptions>,
  writer: ToolWriter,
  tool: string,
): number {
  const r = renderFlameGraph(folded, options);
  for (const w of r.warnings) writer.err.write(`${tool}: flame graph: ${w}\n`);
  if (r.error) writer.err.write(`${tool}: flame graph: ${r.error}\n`);
  const data = Buffer.concat(r.chunks);
  try {
    writeFileSync(path, data);
  } catch (e) {
    throw new BpfscopeError(`${tool}: cannot write the flame graph to ${path}: ${(e as Error).message}`, {
      cause: e,
    });
  }
  return data.length;
}

/**
 * Create (or truncate) `path` before tracing starts, so that an unwritable `--svg` file fails at once instead of
 * after the run. @throws BpfscopeError naming the file and the reason
 */
export function checkWritable(path: string, tool: string): void {
  try {
    writeFileSync(path, '');
  } catch (e) {
    throw new BpfscopeError(`${tool}: cannot write the flame graph to ${path}: ${(e as Error).message}`, { cause: e });
  }
}

// ---- processes seen during the run ----

/**
 * Loads the symbol tables of each process a stack tool sees while the process is alive (`prepare(pid)`), so that
 * stacks of processes that exit before the report still resolve. (bcc symbolizes only at the end, from
 * /proc/PID/maps, and prints `[unknown]` for processes that are gone.) The tool's program reports each new
 * (pid, comm) pair once as an event whose only field is the pid; a changed comm (exec) is reported again, and the
 * process's cached mappings are then replaced by the new program's (stacks sampled before the exec, e.g. in the
 * parent's image between fork and exec, are then symbolized in the new image).
 *
 * Loading a large executable's symbols takes ~100 ms, and a busy system reports hundreds of processes when tracing
 * starts, so the work is queued and done in slices of at most {@link ProcessPreparer.SLICE_MS} between other
 * events, newest process first: the run's duration timer and Ctrl-C stay on time. {@link stop} drops what is left
 * (processes still alive at report time resolve from /proc anyway).
 */
export class ProcessPreparer {
  /** Longest stretch of preparation work before yielding to the event loop, in ms. */
  static readonly SLICE_MS = 10;
  /**
   * Processes prepared between two sweeps (see {@link sweepWith}): at most this many exited processes that no map
   * entry names are kept at any time.
   */
  static SWEEP_EVERY = 256;
  private readonly done = new Set<number>();
  private readonly queue: number[] = [];
  /** Priority records (see {@link statement}): prepared before {@link queue}. */
  private readonly urgent: number[] = [];
  private readonly queued = new Set<number>();
  /** Start time (from the records) of the process last reported under each PID. */
  private readonly starts = new Map<number, string>();
  /** The processes the tool's map still refers to (see {@link sweepWith}). */
  private inUse: (() => Set<number>) | undefined;
  /** Processes prepared at which the next sweep runs. */
  private sweepAt = ProcessPreparer.SWEEP_EVERY;
  /** Exited processes forgotten by sweeps (nothing in the map referred to them). */
  swept = 0;
  private scheduled = false;
  private stopped = false;

  constructor(private readonly resolver: SymbolResolver) {}

  /**
   * The bpftrace statement that reports a new (pid, name) of the current task (`@__seen` is its map). The name is
   * `comm` by default; `name` may give another expression, e.g. the process's main thread's name
   * (`curtask->group_leader->comm`, which changes at exec but not when a thread renames itself). With `priority`
   * the record has a second field, 1: such processes are prepared before the others (e.g. the processes a tool
   * filters on, ahead of the tasks an interrupt happened to run in).
   *
   * The key and the record's first field (`PID/START`) hold the process's start time (its leader's
   * `task_struct.start_time`, ns since boot): a new process that reuses a PID is reported even with the same name,
   * and is told apart from an exec or a renamed thread of the process seen before (see {@link onEvent}).
   */
  static statement(indent: string, name = 'comm', priority = false): string {
    const fmt = priority ? '%d/%llu\\x1f1\\n' : '%d/%llu\\n';
    const key = `pid, ${name}, curtask->group_leader->start_time`;
    return (
      `${indent}if (@__seen[${key}] == 0) {\n${indent}  @__seen[${key}] = 1;\n` +
      `${indent}  printf("${fmt}", pid, curtask->group_leader->start_time);\n${indent}}\n`
    );
  }

  /** Event handler for the statement's records: queue the process for preparation (again after an exec). */
  readonly onEvent = (fields: string[]): void => {
    const [p, start] = (fields[0] ?? '').split('/');
    const pid = Number(p);
    if (this.stopped || !Number.isInteger(pid) || pid <= 0) return;
    if (start !== undefined) {
      const was = this.starts.get(pid);
      this.starts.set(pid, start);
      // another process under a PID already prepared: what was learnt about the old one must not name the new
      // one's addresses (the new one is prepared below if it is still alive; if not, its frames stay unknown)
      if (was !== undefined && was !== start && this.done.delete(pid)) this.resolver.forget(pid);
    }
    const urgent = fields[1] === '1';
    if (this.queued.has(pid)) {
      if (!urgent || this.urgent.includes(pid)) return;
      this.queue.splice(this.queue.indexOf(pid), 1);
    }
    (urgent ? this.urgent : this.queue).push(pid);
    this.queued.add(pid);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.drain);
    }
  };

  /** Prepare queued processes for up to SLICE_MS, then yield. */
  readonly drain = (): void => {
    this.scheduled = false;
    const start = performance.now();
    while (!this.stopped && this.pending > 0 && performance.now() - start < ProcessPreparer.SLICE_MS) {
      // Newest first: processes already running when tracing started are mostly long-lived; a process seen later
      // may be a short one that exits soon.
      const pid = (this.urgent.length > 0 ? this.urgent : this.queue).pop()!;
      this.queued.delete(pid);
      try {
        // Reported again: a new comm, normally an exec. Read the new program's mappings now (the resolver would
        // trust the old ones for up to a second; the process may be gone by then).
        // A thread renaming itself (prctl PR_SET_NAME) is reported again too: when the process has exited (or is a
        // zombie) by now, its known mappings are kept rather than forgotten with nothing to replace them.
        if (this.done.has(pid)) {
          if (readMapsText(pid) === undefined) continue;
          this.resolver.forget(pid);
        }
        this.resolver.prepare(pid);
        // keep only what resolves its addresses after it exits (bounds a long run over many short processes)
        this.resolver.retire(pid);
        this.done.add(pid);
      } catch {
        // The process may already be gone: its stacks then resolve as far as anything is known.
      }
      this.sweep();
    }
    if (!this.stopped && this.pending > 0) {
      this.scheduled = true;
      setImmediate(this.drain);
    }
  };

  /**
   * Bound what is kept over a long run of many short processes by what the tool's map can name: each time
   * {@link SWEEP_EVERY} more processes are prepared than a sweep left, the processes that have exited and that no
   * entry of the map refers to (`inUse`: the numbers its keys hold, see stackread.ts `pidsInMap`) are forgotten, with
   * the symbol tables no kept process uses. An exited process cannot be sampled again, so nothing it would name is
   * lost. What is kept is then at most: the processes the map names, the live ones, and SWEEP_EVERY more (issue 19:
   * the earlier rule, a sweep when the number doubled, let a full map's profile keep as many exited processes again
   * as the map named before sweeping, ~5 KB each).
   */
  sweepWith(inUse: () => Set<number>): void {
    this.inUse = inUse;
  }

  private sweep(): void {
    if (this.stopped || !this.inUse || this.done.size < this.sweepAt) return;
    let used: Set<number>;
    try {
      used = this.inUse();
    } catch {
      return;
    }
    let forgot = false;
    for (const pid of this.done) {
      if (used.has(pid) || existsSync(`/proc/${pid}`)) continue;
      this.done.delete(pid);
      this.starts.delete(pid);
      this.resolver.forget(pid);
      this.swept++;
      forgot = true;
    }
    // start times of processes reported but never prepared (gone before their turn)
    for (const pid of this.starts.keys()) {
      if (!this.done.has(pid) && !this.queued.has(pid) && !existsSync(`/proc/${pid}`)) this.starts.delete(pid);
    }
    if (forgot) this.resolver.dropUnusedFiles();
    this.sweepAt = this.done.size + ProcessPreparer.SWEEP_EVERY;
  }

  /** What is kept about the processes seen: prepared processes, and PIDs whose start time is remembered. */
  get kept(): { prepared: number; starts: number } {
    return { prepared: this.done.size, starts: this.starts.size };
  }

  /** Stop preparing (before the report): queued processes are dropped. */
  stop(): void {
    this.stopped = true;
    this.queue.length = 0;
    this.urgent.length = 0;
    this.queued.clear();
  }

  /** Processes prepared so far. */
  get count(): number {
    return this.done.size;
  }

  /** Processes waiting to be prepared. */
  get pending(): number {
    return this.queue.length + this.urgent.length;
  }
}

/**
 * What the stack tools yield as data (runTool's results, `--json`'s objects): the stacks in bcc's report order, each
 * with its frames symbolized (innermost first) and its value (samples for profile, microseconds off CPU for
 * offcputime and offwaketime, events for stackcount). profile, offcputime and offwaketime yield one at the end;
 * stackcount one per interval.
 */
export interface StackResult {
  stacks: StackEntry[];
}

/** bcc's default `--stack-storage-size` (profile and offcputime). */
export const DEFAULT_STACK_STORAGE = 16384;

/** One report of a stack tool (see {@link StackRun.report}). */
export interface StackReport<R> {
  /** The result object: `--json` prints it, runTool yields it. */
  result: R;
  /** bcc's text of the report (stdout in text mode), written as is. */
  text: string;
  /** The report's folded lines (`frame;...;frame count`), for `--svg`/`--format`. */
  folded: string[];
}

/**
 * One run of a stack tool ({@link runStackReport}): the program, where the stacks go, and the tool's report.
 * Everything else (the symbol resolver, loading symbols of processes seen during the run, the interval and
 * duration, the header and footer, the result objects and the exports) is the runner's.
 */
export interface StackRun<R> {
  tool: string;
  program: string;
  writer: ToolWriter;
  /** bcc's text, the export and whether the header is printed (framework/stackout.ts). */
  output: StackOutput;
  /** What the exports' counts are (pprof sample types, flame graph palette and title). */
  meta: StackMeta;
  /** The "Tracing ..." text (with its newline), printed once attached when the output has a header. */
  header: string;
  /** Printed after the last report when the output has a header (bcc's "Detaching..."). */
  footer?: string;
  /**
   * Fields of the program's process records ({@link ProcessPreparer.statement}: 1, or 2 with priority records);
   * absent when the program reports no processes (kernel stacks only).
   */
  processFields?: 1 | 2;
  /** Distinct stacks each kstack/ustack map holds (bcc's --stack-storage-size). */
  stackStorageSize: number;
  /**
   * The map whose entries keep until the end what was learnt about the processes they name (`''` for `@`): exited
   * processes no entry names are then forgotten during the run (ProcessPreparer.sweepWith). Absent: none are.
   */
  sweepMap?: string;
  /** Report every `seconds` (null: only at the end), at most `count` times; stop after `durationSec`. */
  interval: { seconds: number | null; count?: number | null };
  durationSec?: number | null;
  /**
   * The exports: the folded stacks of the `last` report, or the `sum` of every report's (interval tools whose
   * maps are cleared after each report).
   */
  exportFrom: 'last' | 'sum';
  /** One report, made while the maps still exist (`last`: the run is ending); null: nothing to report. */
  report(tracer: Tracer, resolver: SymbolResolver, last: boolean): StackReport<R> | null;
  /** Called after the last report and the export (e.g. a "hash table full" warning). */
  afterReport?: (tracer: Tracer) => void;
}

function sumFolded(into: Map<string, bigint>, lines: string[]): void {
  for (const l of lines) {
    const sp = l.lastIndexOf(' ');
    const k = l.slice(0, sp);
    into.set(k, (into.get(k) ?? 0n) + BigInt(l.slice(sp + 1)));
  }
}

/**
 * The shared run of the stack tools: check the export's file, trace while the symbols of new processes are loaded,
 * and at each report (every interval, or once at the end) give the tool's result to the writer (bcc's text, a JSON
 * object, or runTool's result); at the end write the export (`--svg`, `--format`, see framework/stackout.ts) and the
 * footer. Resolves with the exit status.
 */
export async function runStackReport<R>(r: StackRun<R>): Promise<number> {
  const { writer, output: out } = r;
  out.prepare(r.tool);
  const resolver = await SymbolResolver.create();
  const preparer = r.processFields ? new ProcessPreparer(resolver) : null;
  const whole = new Map<string, bigint>();
  let lastFolded: string[] = [];
  return runProgram({
    tool: r.tool,
    program: r.program,
    writer,
    ...(preparer ? { onEvent: preparer.onEvent, fieldCount: r.processFields } : {}),
    stackMapEntries: r.stackStorageSize,
    interval: r.interval,
    durationSec: r.durationSec ?? null,
    onStarted: (tracer) => {
      if (r.sweepMap !== undefined) preparer?.sweepWith(() => pidsInMap(tracer, r.sweepMap!));
      if (out.header) writer.write(r.header);
    },
    onTick: (tracer, last) => {
      if (last) preparer?.stop();
      const rep = r.report(tracer, resolver, last);
      if (rep) {
        writer.emit(rep.result, () => rep.text);
        if (r.exportFrom === 'sum') sumFolded(whole, rep.folded);
        else lastFolded = rep.folded;
      }
      if (!last) return;
      writer.flush();
      const folded =
        r.exportFrom === 'sum'
          ? [...whole]
              .sort((x, y) => (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0))
              .map(([k, n]) => `${k} ${n}`)
          : lastFolded;
      out.finish(folded, r.meta, writer);
      if (r.footer !== undefined && out.header) writer.write(r.footer);
      r.afterReport?.(tracer);
    },
  });
}

/** What differs between profile's and offcputime's runs; see {@link runStackTool}. */
export interface StackToolRun {
  tool: string;
  program: string;
  writer: ToolWriter;
  /** Seconds to trace (bcc's positional `duration`). */
  duration: number;
  /** The "Tracing ..." line (not printed with -f). */
  header: string;
  folded: boolean;
  svg: string | null;
  /** --format and -o (framework/stackout.ts). */
  format?: StackFileFormat | null;
  output?: string | null;
  /** What the values are, for pprof: CPU samples every `periodNs`, or off-CPU microseconds. */
  kind: 'cpu' | 'offcpu';
  periodNs?: number;
  fmt: StackFormat;
  /** Where the stacks, comm and ids are in the map key. */
  layout: StackKeyLayout;
  /** The process whose memory a key's user stack belongs to. */
  userPid: (key: Value[]) => number;
  kernelFilter?: (frames: Frame[]) => Frame[];
  stackStorageSize: number;
  flameOptions?: Partial<FlameGraphOptions>;
  /** Called with the resolver before symbolizing (e.g. to reload kernel symbols). */
  beforeReport?: (resolver: SymbolResolver) => void;
  /** Called with the map after the report (e.g. a "hash table full" warning). */
  afterReport?: (dump: MapDump) => void;
}

/**
 * profile's and offcputime's run ({@link runStackReport}): trace for `duration` seconds, then symbolize, sort and
 * print the stacks of `@` (bcc's multi-line or folded form) and/or write the export. Resolves with the exit status.
 */
export async function runStackTool(r: StackToolRun): Promise<number> {
  const { writer, fmt } = r;
  const out = StackOutput.from({ folded: r.folded, svg: r.svg, format: r.format, output: r.output }, r.tool);
  let dump: MapDump | null = null;
  return runStackReport<StackResult>({
    tool: r.tool,
    program: r.program,
    writer,
    output: out,
    meta: { tool: r.tool, kind: r.kind, periodNs: r.periodNs, flame: { ...r.flameOptions } },
    header: `${r.header}\n`,
    processFields: 1,
    stackStorageSize: r.stackStorageSize,
    sweepMap: '',
    interval: { seconds: r.duration, count: 1 },
    exportFrom: 'last',
    report: (t, resolver, last) => {
      if (!last) return null;
      r.beforeReport?.(resolver);
      // each distinct stack read and symbolized once, each frame's text made once, each process's /proc files
      // read once (issue 19: a full map)
      resolver.settle();
      const read = readStackEntries(t, '', r.layout, resolver, r.userPid, r.kernelFilter);
      dump = read.dump;
      const { entries, folded } = sortEntriesFolded(read.entries, fmt);
      let text = out.header ? '\n' : '';
      if (out.text === 'folded') text += folded.map((l) => `${l}\n`).join('');
      else if (out.text === 'report') {
        const cfmt = cachedFormat(fmt);
        text += entries.map((e) => stackLines(e, cfmt)).join('');
      }
      return { result: { stacks: entries }, text, folded };
    },
    afterReport: () => {
      if (dump) r.afterReport?.(dump);
    },
  });
}
