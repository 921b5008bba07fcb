/**
 * offwaketime: time threads spent blocked, by the blocked thread's stack and the stack of the thread that woke it.
 * Follows bcc's `tools/offwaketime.py` (flags, help, "Tracing blocked time (us) by ... off-CPU and waker stack"
 * header, the multi-line `waker:` / `--` / `target:` blocks and the `-f` folded line
 * `target;stacks;--;waker stacks;waker N`, sorted by time) on two tracepoints only, so it runs on kernels without
 * kprobes (bcc probes `try_to_wake_up` and `finish_task_switch` with kprobes):
 * - `rawtracepoint:sched_waking` (tp_btf, `args.p` is the task being woken) runs in the waker's context, so
 *   `kstack`/`ustack`/`comm`/`tid`/`pid` there are the waker's; they are kept by the woken thread's ID in
 *   `@__wokeby` when the woken thread passes bcc's thread and `--state` filters. (`sched_wakeup` is not used: it
 *   may run on the woken task's CPU, in another task's context, and would name the wrong waker.)
 * - `rawtracepoint:sched_switch`: the task switching out keeps its time and stacks in `@__off[tid]` (as
 *   offcputime does); at the switch-in of `args.next` its blocked time in microseconds, when within `-m`/`-M`, is
 *   added to `@[target kstack, ustack, comm, tid, tgid, waker kstack, ustack, comm, tid, tgid] = sum(us)` (bcc's
 *   key), merged in the kernel as bcc does.
 *
 * `--chain N` (not in bcc): each thread's last waker record is kept when it switches in (`@__last[tid]`), and a
 * waker adds its own record's first N-1 levels to the record it leaves for the thread it wakes, so the key holds
 * the waker, the waker's waker, ... up to N levels (Brendan Gregg's "chain graph"). The folded line continues
 * `...;--;waker stacks;waker;--;its waker's stacks;its waker N`; a level with no known waker ends the chain.
 *
 * Differences from bcc:
 * - kernel stacks start at `__schedule` (blocked) and `try_to_wake_up` (waker), not at the caller of the probed
 *   function; bcc drops the first frame of each stack in folded output (of the waker's stacks in both outputs),
 *   which with kprobes is the probed function but for user stacks a real frame: here no frame is dropped;
 * - a thread's last switch-out (`TASK_DEAD`) is not recorded and clears its records;
 * - `[Missed ... Stack]` is never printed: stacks are stored by a hash of their frames (see profile.ts).
 */
import { BpfscopeError } from '../errors.js';
import type { MapDump, Value } from '../runtime/output/model.js';
import { bccName, type SymbolResolver } from '../symbols/resolver.js';
import type { OptionsOf, ParserSpec, ValueType } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { defineTool, toolMain } from './framework/runner.js';
import { FOREVER, PF_KTHREAD, TASK_DEAD } from './offcputime.js';
import { STACK_OUTPUT_OPTIONS, StackOutput } from './framework/stackout.js';
import {
  dropTracingFrames,
  foldedLine,
  parseRawStack,
  POSITIVE_INT,
  POSITIVE_NONZERO_BIG,
  POSITIVE_NONZERO_INT,
  U64_MAX,
  ProcessPreparer,
  runStackReport,
  type StackEntry,
  type StackResult,
  type StackThread,
} from './stacktool.js';

/** bcc's default `--stack-storage-size` of offwaketime and wakeuptime. */
export const WAKE_STACK_STORAGE = 1024;
/** Most `--chain` levels: each adds two stacks, a name and two IDs to the map key (BPF stack space). */
export const MAX_CHAIN = 4;
/** flamegraph.pl options of off-wake flame graphs (`--colors chain`: waker frames after `--` in blue). */
export const OFFWAKE_FLAMEGRAPH = { colors: 'chain', countname: 'us', title: 'Off-Wake Time Flame Graph' } as const;

/** bcc offwaketime's `positive_int`: `val.split(",", 5)`, the first 5 parts as `_positive_int`s (a 6th is dropped). */
const PIDS5: ValueType<number[]> = {
  name: 'positive_int',
  convert: (text: string) => {
    const parts = text.split(',');
    const head = parts.slice(0, 5);
    return head.map((v) => POSITIVE_INT.convert(v) as number);
  },
};

export const POS_NONZERO: ValueType<number> = {
  name: 'positive_nonzero_int',
  convert: (t) => POSITIVE_NONZERO_INT.convert(t) as number,
};

/** `--stack-storage-size`, `-m`, `-M`: declared alike by bcc's offwaketime and wakeuptime (their help texts). */
export const WAKE_STORAGE_OPTIONS = [
  {
    flags: ['--stack-storage-size'],
    kind: 'value',
    type: POS_NONZERO,
    default: WAKE_STACK_STORAGE,
    help: 'the number of unique stack traces that can be stored and displayed (default 1024)',
  },
  {
    flags: ['-m', '--min-block-time'],
    kind: 'value',
    type: POS_NONZERO,
    default: 1,
    help: 'the amount of time in microseconds over which we store traces (default 1)',
  },
  {
    flags: ['-M', '--max-block-time'],
    kind: 'value',
    type: POSITIVE_NONZERO_BIG,
    default: U64_MAX,
    help: 'the amount of time in microseconds under which we store traces (default U64_MAX)',
  },
] as const;
const POS_INT: ValueType<number> = { name: '_positive_int', convert: (t) => POSITIVE_INT.convert(t) as number };

const CHAIN: ValueType<number> = {
  name: 'chain',
  convert: (text: string) => {
    const n = POSITIVE_NONZERO_INT.convert(text) as number;
    if (n > MAX_CHAIN) throw new Error(`argparse: at most ${MAX_CHAIN} levels`);
    return n;
  },
};

/** bcc's options, in bcc's order (the help's first part equals bcc's), then bpfscope's `--chain` and `--svg`. */
export const SPEC = {
  prog: 'offwaketime',
  description: 'Summarize blocked time by kernel stack trace + waker stack',
  raw: true,
  epilog: `examples:
    ./offwaketime             # trace off-CPU + waker stack time until Ctrl-C
    ./offwaketime 5           # trace for 5 seconds only
    ./offwaketime -f 5        # 5 seconds, and output in folded format
    ./offwaketime -m 1000     # trace only events that last more than 1000 usec
    ./offwaketime -M 9000     # trace only events that last less than 9000 usec
    ./offwaketime -p 185      # only trace threads for PID 185
    ./offwaketime -t 188      # only trace thread 188
    ./offwaketime -u          # only trace user threads (no kernel)
    ./offwaketime -k          # only trace kernel threads (no user)
    ./offwaketime -U          # only show user space stacks (no kernel)
    ./offwaketime -K          # only show kernel space stacks (no user)`,
  options: [
    {
      flags: ['-p', '--pid'],
      kind: 'value',
      dest: 'tgid',
      metavar: 'PIDS',
      type: PIDS5,
      group: 'thread',
      help: 'trace these PIDS only. Can be a comma separated list of PIDS.',
    },
    {
      flags: ['-t', '--tid'],
      kind: 'value',
      dest: 'pid',
      metavar: 'TIDS',
      type: PIDS5,
      group: 'thread',
      help: 'trace these TIDS only. Can be a comma separated list of TIDS.',
    },
    {
      flags: ['-u', '--user-threads-only'],
      kind: 'flag',
      group: 'thread',
      help: 'user threads only (no kernel threads)',
    },
    {
      flags: ['-k', '--kernel-threads-only'],
      kind: 'flag',
      group: 'thread',
      help: 'kernel threads only (no user threads)',
    },
    {
      flags: ['-U', '--user-stacks-only'],
      kind: 'flag',
      group: 'stack',
      help: 'show stacks from user space only (no kernel space stacks)',
    },
    {
      flags: ['-K', '--kernel-stacks-only'],
      kind: 'flag',
      group: 'stack',
      help: 'show stacks from kernel space only (no user space stacks)',
    },
    { flags: ['-d', '--delimited'], kind: 'flag', help: 'insert delimiter between kernel/user stacks' },
    { flags: ['-f', '--folded'], kind: 'flag', help: 'output folded format' },
    ...WAKE_STORAGE_OPTIONS,
    {
      flags: ['--state'],
      kind: 'value',
      type: POS_INT,
      help: 'filter on this thread state bitmask (eg, 2 == TASK_UNINTERRUPTIBLE) see include/linux/sched.h',
    },
    { flags: ['--ebpf'], kind: 'flag', help: null },
    {
      flags: ['--chain'],
      kind: 'value',
      metavar: 'N',
      type: CHAIN,
      default: 1,
      help: `follow wakers of wakers up to N levels (default 1, at most ${MAX_CHAIN}): a chain graph`,
    },
    {
      flags: ['--svg'],
      kind: 'value',
      metavar: 'FILE',
      help: 'write an off-wake flame graph (SVG, chain palette) of the folded stacks to FILE instead of printing the stacks (with -f, print them too)',
    },
    ...STACK_OUTPUT_OPTIONS,
  ],
  positionals: [{ name: 'duration', help: 'duration of trace, in seconds', type: POS_NONZERO, default: FOREVER }],
} as const satisfies ParserSpec;

export interface OffwaketimeOptions {
  /** -p: process IDs */
  tgids?: readonly number[] | null;
  /** -t: thread IDs */
  tids?: readonly number[] | null;
  userThreads: boolean;
  kernelThreads: boolean;
  /** -U */
  userOnly: boolean;
  /** -K */
  kernelOnly: boolean;
  /** -m, microseconds */
  minUs: number;
  /** -M, microseconds */
  maxUs: bigint;
  /** --state: null for any state */
  state?: number | null;
  /** --chain: waker levels (1: bcc's waker only) */
  chain: number;
}

/** bcc's thread filter and state filter on task `t` (a `struct task_struct *` expression), or null for none. */
function filterOn(o: OffwaketimeOptions, t: string, state: string): string | null {
  const conds: string[] = [];
  if (o.tgids?.length) conds.push(`(${o.tgids.map((p) => `${t}->tgid == ${p}`).join(' || ')})`);
  else if (o.tids?.length) conds.push(`(${o.tids.map((p) => `${t}->pid == ${p}`).join(' || ')})`);
  else if (o.userThreads) conds.push(`(${t}->flags & ${PF_KTHREAD}) == 0`);
  else if (o.kernelThreads) conds.push(`(${t}->flags & ${PF_KTHREAD}) != 0`);
  if (o.state === 0) conds.push(`${state} == 0`);
  else if (o.state) conds.push(`(${state} & ${o.state}) != 0`);
  return conds.length ? conds.join(' && ') : null;
}

/** The stacks a record holds, as bpftrace expressions of the current task: `[kstack(raw), ustack(raw)]` or one. */
function stackExprs(o: Pick<OffwaketimeOptions, 'userOnly' | 'kernelOnly'>): string[] {
  return o.userOnly ? ['ustack(raw)'] : o.kernelOnly ? ['kstack(raw)'] : ['kstack(raw)', 'ustack(raw)'];
}

/** Fields of one waker level in a record: its stacks, comm, tid and tgid. */
function levelWidth(o: Pick<OffwaketimeOptions, 'userOnly' | 'kernelOnly'>): number {
  return stackExprs(o).length + 3;
}

/**
 * Key layout of `@` (see {@link buildProgram}): the target's fields (stacks, comm, tid, tgid) at 0, then `chain`
 * waker levels of the same shape.
 */
export interface WakeKeyLayout {
  kernel?: number;
  user?: number;
  comm: number;
  tid: number;
  tgid: number;
}

/** Where level `level` (0: the target, 1: its waker, 2: the waker's waker, ...) lies in the key of `@`. */
export function levelLayout(o: Pick<OffwaketimeOptions, 'userOnly' | 'kernelOnly'>, level: number): WakeKeyLayout {
  const base = level * levelWidth(o);
  const s = stackExprs(o).length;
  const l: WakeKeyLayout = { comm: base + s, tid: base + s + 1, tgid: base + s + 2 };
  if (o.userOnly) l.user = base;
  else if (o.kernelOnly) l.kernel = base;
  else {
    l.kernel = base;
    l.user = base + 1;
  }
  return l;
}

/** The bpftrace program for `o` (see the module comment). */
export function buildProgram(o: OffwaketimeOptions): string {
  const stacks = stackExprs(o);
  const w = levelWidth(o);
  const chainFields = (o.chain - 1) * w;
  let p = configBlock();
  if (o.chain > 1) {
    // @__last is read by sched_waking before sched_switch assigns it: give it its type (N-1 levels) first.
    const one = [...stacks, 'comm', 'tid', 'pid'];
    const zero = Array.from({ length: o.chain - 1 }, () => one).flat();
    p += `BEGIN {\n  @__last[0] = (${zero.join(', ')});\n  delete(@__last[0]);\n}\n`;
  }
  const woken = filterOn(o, 'args.p', 'args.p->__state');
  p += 'rawtracepoint:sched_waking {\n';
  let ind = '  ';
  if (woken) {
    p += `  if (${woken}) {\n`;
    ind = '    ';
  }
  if (!o.kernelOnly) p += ProcessPreparer.statement(ind);
  const rec = [...stacks, 'comm', 'tid', 'pid'];
  if (o.chain > 1) {
    p += `${ind}$c = @__last[tid];\n`;
    for (let i = 0; i < chainFields; i++) rec.push(`$c.${i}`);
  }
  p += `${ind}@__wokeby[args.p->pid] = (${rec.join(', ')});\n`;
  if (woken) p += '  }\n';
  p += '}\n';

  const off = filterOn(o, 'args.prev', 'args.prev_state');
  p += 'rawtracepoint:sched_switch {\n';
  p += `  if (args.prev_state == ${TASK_DEAD}) {\n    delete(@__wokeby[tid]);\n`;
  if (o.chain > 1) p += '    delete(@__last[tid]);\n';
  p += '  }';
  p += off ? ` else if (${off}) {\n` : ' else {\n';
  if (!o.kernelOnly) p += ProcessPreparer.statement('    ', 'comm', true);
  p += `    @__off[tid] = (nsecs, ${stacks.join(', ')});\n  }\n`;
  p += '  $next = args.next->pid;\n  $w = @__wokeby[$next];\n';
  p += `  if ($w.${stacks.length + 1} != 0) {\n    delete(@__wokeby[$next]);\n`;
  if (o.chain > 1) {
    const keep: string[] = [];
    for (let i = 0; i < chainFields; i++) keep.push(`$w.${i}`);
    p += `    @__last[$next] = (${keep.join(', ')});\n`;
  }
  p += '  }\n';
  p += '  $o = @__off[$next];\n  if ($o.0 != 0) {\n    delete(@__off[$next]);\n';
  p += '    $us = (nsecs - $o.0) / 1000;\n';
  const range = [`$us >= ${o.minUs}`];
  if (o.maxUs < 1n << 63n) range.push(`$us <= ${o.maxUs}`);
  p += `    if (${range.join(' && ')}) {\n`;
  const key = stacks.map((_, i) => `$o.${i + 1}`);
  key.push('args.next->comm', '$next', 'args.next->tgid');
  for (let i = 0; i < o.chain * w; i++) key.push(`$w.${i}`);
  p += `      @[${key.join(', ')}] = sum($us);\n`;
  p += '    }\n  }\n}\n';
  return p;
}

/** bcc's header: `Tracing blocked time (us) by user + kernel off-CPU and waker stack... Hit Ctrl-C to end.` */
export function header(o: Pick<OffwaketimeOptions, 'userOnly' | 'kernelOnly'>, duration: number): string {
  const stack = o.userOnly ? 'user' : o.kernelOnly ? 'kernel' : 'user + kernel';
  const end = duration < FOREVER ? pyFormat(' for %d secs.', duration) : '... Hit Ctrl-C to end.';
  return `Tracing blocked time (us) by ${stack} off-CPU and waker stack${end}`;
}

/**
 * One aggregated off-wake stack, as the other stack tools' entries (stacktool.ts {@link StackEntry}): the blocked
 * thread (`comm`, `id` its thread ID, `tgid`, its stacks), `wakers` (nearest first, each with the stacks it had at
 * the wake-up) and `value`, the microseconds blocked.
 */
export type OffwakeEntry = StackEntry & { tgid: number; wakers: WakeThread[] };

/** One waker of an off-wake entry: its name, thread ID (`id`), process ID and stacks (innermost frame first). */
export type WakeThread = StackThread & { tgid: number };

function valueAt(key: Value[], i: number): Value {
  const v = key[i];
  if (!v) throw new BpfscopeError('internal: an offwaketime map key is shorter than its layout');
  return v;
}

function str(v: Value): string {
  if (v.kind === 'string') return v.value;
  throw new BpfscopeError('internal: an offwaketime map key is not a string where one was expected');
}

function num(v: Value): number {
  if (v.kind === 'int') return Number(v.value);
  throw new BpfscopeError('internal: an offwaketime map key is not an integer where one was expected');
}

function threadAt(key: Value[], l: WakeKeyLayout, resolver: SymbolResolver): WakeThread {
  const t: WakeThread = {
    comm: str(valueAt(key, l.comm)),
    id: num(valueAt(key, l.tid)),
    tgid: num(valueAt(key, l.tgid)),
  };
  if (l.kernel !== undefined)
    t.kernel = dropTracingFrames(resolver.kernelStack(parseRawStack(str(valueAt(key, l.kernel)))));
  if (l.user !== undefined) t.user = resolver.userStack(t.tgid, parseRawStack(str(valueAt(key, l.user))));
  return t;
}

/**
 * Symbolize the entries of `dump` (the `@` of {@link buildProgram} for `o`). The first waker level is always kept
 * (empty, as bcc prints it, when no waker was seen); deeper levels end at the first without a waker (tid 0).
 */
export function symbolizeOffwake(dump: MapDump, o: OffwaketimeOptions, resolver: SymbolResolver): OffwakeEntry[] {
  return dump.entries.map((e) => {
    const v = e.value;
    const value = 'value' in v && typeof v.value === 'bigint' ? v.value : 0n;
    const target = threadAt(e.key, levelLayout(o, 0), resolver);
    const wakers: WakeThread[] = [];
    for (let level = 1; level <= o.chain; level++) {
      const l = levelLayout(o, level);
      if (level > 1 && num(valueAt(e.key, l.tid)) === 0) break;
      wakers.push(threadAt(e.key, l, resolver));
    }
    return { ...target, value, wakers };
  });
}

/** Output options: `-d` (only when both stacks are shown) and `-s`-less bcc frame text. */
export interface OffwakeFormat {
  delimiter: boolean;
}

/**
 * bcc's folded line: `target;target user frames;[-;]target kernel frames` (outermost first), then per waker level
 * `--;waker kernel frames;[-;]waker user frames;waker` (innermost first, so the waker's stack grows upwards from
 * the wake-up), then ` N` (stacktool.ts {@link foldedLine}).
 */
export function offwakeFolded(e: OffwakeEntry, fmt: OffwakeFormat): string {
  return foldedLine(e, { delimiter: fmt.delimiter, annotate: false });
}

/**
 * bcc's multi-line block: for each waker level, farthest first, `    waker:           comm tid` and its user then
 * kernel frames outermost first, then `    --               --`; the target's kernel then user frames innermost
 * first; `    target:          comm tid`, `        N` and a blank line.
 */
export function offwakeLines(e: OffwakeEntry, fmt: OffwakeFormat): string {
  let s = '';
  for (let i = e.wakers.length - 1; i >= 0; i--) {
    const w = e.wakers[i]!;
    s += `${pyFormat('    %-16s %s %s', 'waker:', w.comm, String(w.id))}\n`;
    for (const f of [...(w.user ?? [])].reverse()) s += `    ${bccName(f)}\n`;
    if (fmt.delimiter && w.user?.length && w.kernel?.length) s += '    -\n';
    for (const f of [...(w.kernel ?? [])].reverse()) s += `    ${bccName(f)}\n`;
    s += `${pyFormat('    %-16s %s', '--', '--')}\n`;
  }
  for (const f of e.kernel ?? []) s += `    ${bccName(f)}\n`;
  if (fmt.delimiter && e.user?.length && e.kernel?.length) s += '    -\n';
  for (const f of e.user ?? []) s += `    ${bccName(f)}\n`;
  s += `${pyFormat('    %-16s %s %s', 'target:', e.comm, String(e.id))}\n`;
  s += `        ${e.value}\n\n`;
  return s;
}

/** bcc's order: ascending time; ties (hash order in bcc) by the folded text, for deterministic output. */
export function sortOffwake(entries: OffwakeEntry[], fmt: OffwakeFormat): { entry: OffwakeEntry; folded: string }[] {
  const keyed = entries.map((entry) => ({ entry, folded: offwakeFolded(entry, fmt) }));
  keyed.sort((a, b) =>
    a.entry.value < b.entry.value
      ? -1
      : a.entry.value > b.entry.value
        ? 1
        : a.folded < b.folded
          ? -1
          : a.folded > b.folded
            ? 1
            : 0,
  );
  return keyed;
}

/**
 * What offwaketime yields as data (`--json`, runTool): one result at the end with the entries in bcc's order, the
 * shape of profile's and offcputime's (stacktool.ts {@link StackResult}) with each entry's `tgid` and `wakers`.
 */
export interface OffwakeResult extends StackResult {
  stacks: OffwakeEntry[];
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const o: OffwaketimeOptions = {
    tgids: a.tgid,
    tids: a.pid,
    userThreads: a.user_threads_only,
    kernelThreads: a.kernel_threads_only,
    userOnly: a.user_stacks_only,
    kernelOnly: a.kernel_stacks_only,
    minUs: a.min_block_time,
    maxUs: a.max_block_time,
    state: a.state,
    chain: a.chain,
  };
  const duration = a.duration;
  const fmt: OffwakeFormat = { delimiter: a.delimited && !(o.userOnly || o.kernelOnly) };
  const out = StackOutput.from({ folded: a.folded, svg: a.svg, format: a.format, output: a.output }, 'offwaketime');
  return runStackReport<OffwakeResult>({
    tool: 'offwaketime',
    program: buildProgram(o),
    writer,
    output: out,
    meta: { tool: 'offwaketime', kind: 'offcpu', flame: { ...OFFWAKE_FLAMEGRAPH } },
    header: `${header(o, duration)}\n`,
    ...(o.kernelOnly ? {} : { processFields: 2 as const }),
    stackStorageSize: a.stack_storage_size,
    interval: { seconds: duration, count: 1 },
    exportFrom: 'last',
    report: (t, resolver, last) => {
      if (!last) return null;
      const dump = t.readMap('');
      // kernel symbols of the programs just loaded: their frames are recognised and dropped
      resolver.reloadKernel();
      const sorted = sortOffwake(symbolizeOffwake(dump, o, resolver), fmt);
      let text = out.header ? '\n' : '';
      if (out.text === 'folded') text += sorted.map((s) => `${s.folded}\n`).join('');
      else if (out.text === 'report') text += sorted.map((s) => offwakeLines(s.entry, fmt)).join('');
      return { result: { stacks: sorted.map((s) => s.entry) }, text, folded: sorted.map((s) => s.folded) };
    },
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'intervals', run });

/** `bpfscope offwaketime [flags] [duration]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
