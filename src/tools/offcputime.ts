/**
 * offcputime: total time threads spent blocked (off-CPU), by kernel and user stack trace. Follows bcc's
 * `tools/offcputime.py` (flags, help, "Tracing off-CPU time (us) of ..." header, multi-line and `-f` folded output
 * sorted by time) on `rawtracepoint:sched_switch` (tp_btf, BTF-typed `args.prev`/`args.next`) instead of bcc's
 * kprobe on `finish_task_switch`:
 * - switch-out: the task leaving the CPU is still current, so `kstack`/`ustack` are its stacks; they are kept with
 *   the time, keyed by its thread ID (`@__off[tid] = (nsecs, kstack(raw), ustack(raw))`), when it passes bcc's
 *   thread filter (`-p`, `-t`, `-u`, `-k`) and `--state` filter (on `args.prev_state`, the task's `__state` at the
 *   switch);
 * - switch-in of `args.next`: its off-CPU time in microseconds, when within `-m`/`-M`, is added to
 *   `@[kstack, ustack, comm, tid, tgid] = sum(us)` (bcc's key: stacks, name, pid and tgid).
 * Stacks come back as addresses and are symbolized here in bcc's formats (see `stacktool.ts`); `--svg FILE` renders
 * the folded stacks as flamegraph.pl's off-CPU flame graphs look (`--colors io --countname us --title "Off-CPU Time
 * Flame Graph"`).
 *
 * Differences from bcc:
 * - kernel stacks start at `__schedule` (the frames of the BPF program and `bpf_trace_runN` that a tp_btf stack
 *   begins with are dropped), where bcc's start at `finish_task_switch`;
 * - a task switching out for the last time (`TASK_DEAD`) is not recorded, so its thread ID, if reused, cannot
 *   inherit a stale start time;
 * - `[Missed ... Stack]` is never printed: stacks are stored by a hash of their frames (see profile.ts).
 */
import { bccName } from '../symbols/resolver.js';
import type { Parsed, ParserSpec } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { STACK_OUTPUT_OPTIONS, type StackFileFormat } from './framework/stackout.js';
import { defineTool, toolMain } from './framework/runner.js';
import {
  dropTracingFrames,
  exclusiveGroupError,
  POSITIVE_INT,
  POSITIVE_INTS,
  POSITIVE_NONZERO_BIG,
  POSITIVE_NONZERO_INT,
  U64_MAX,
  ProcessPreparer,
  type StackFormat,
  type StackKeyLayout,
  DEFAULT_STACK_STORAGE,
  runStackTool,
} from './stacktool.js';

export const FOREVER = 99999999;
export { DEFAULT_STACK_STORAGE };
/** include/linux/sched.h */
export const PF_KTHREAD = 0x00200000;
export const TASK_DEAD = 0x80;
/** flamegraph.pl options of Brendan Gregg's off-CPU flame graphs (and bcc's offcputime_example.txt). */
export const OFFCPU_FLAMEGRAPH = { colors: 'io', countname: 'us', title: 'Off-CPU Time Flame Graph' } as const;

export const SPEC: ParserSpec = {
  prog: 'offcputime',
  description: 'Summarize off-CPU time by stack trace',
  raw: true,
  epilog: `examples:
    ./offcputime             # trace off-CPU stack time until Ctrl-C
    ./offcputime 5           # trace for 5 seconds only
    ./offcputime -f 5        # 5 seconds, and output in folded format
    ./offcputime -s 5        # 5 seconds, and show symbol offsets
    ./offcputime -m 1000     # trace only events that last more than 1000 usec
    ./offcputime -M 10000    # trace only events that last less than 10000 usec
    ./offcputime -p 185,175,165 # only trace threads for PID 185,175,165
    ./offcputime -t 188,120,134 # only trace threads 188,120,134
    ./offcputime -u          # only trace user threads (no kernel)
    ./offcputime -k          # only trace kernel threads (no user)
    ./offcputime -U          # only show user space stacks (no kernel)
    ./offcputime -K          # only show kernel space stacks (no user)
    ./offcputime --svg out.svg 10  # write an off-CPU flame graph of 10 seconds`,
  options: [
    {
      flags: ['-p', '--pid'],
      kind: 'value',
      dest: 'tgids',
      metavar: 'PID',
      type: POSITIVE_INTS,
      help: 'trace these PIDs only, comma separated list',
    },
    {
      flags: ['-t', '--tid'],
      kind: 'value',
      dest: 'pids',
      metavar: 'TID',
      type: POSITIVE_INTS,
      help: 'trace these TIDs only, comma separated list',
    },
    { flags: ['-u', '--user-threads-only'], kind: 'flag', help: 'user threads only (no kernel threads)' },
    { flags: ['-k', '--kernel-threads-only'], kind: 'flag', help: 'kernel threads only (no user threads)' },
    {
      flags: ['-U', '--user-stacks-only'],
      kind: 'flag',
      help: 'show stacks from user space only (no kernel space stacks)',
    },
    {
      flags: ['-K', '--kernel-stacks-only'],
      kind: 'flag',
      help: 'show stacks from kernel space only (no user space stacks)',
    },
    { flags: ['-d', '--delimited'], kind: 'flag', help: 'insert delimiter between kernel/user stacks' },
    { flags: ['-f', '--folded'], kind: 'flag', help: 'output folded format' },
    { flags: ['-s', '--offset'], kind: 'flag', help: 'show address offsets' },
    {
      flags: ['--stack-storage-size'],
      kind: 'value',
      type: POSITIVE_NONZERO_INT,
      default: DEFAULT_STACK_STORAGE,
      help: 'the number of unique stack traces that can be stored and displayed (default 16384)',
    },
    {
      flags: ['-m', '--min-block-time'],
      kind: 'value',
      type: POSITIVE_NONZERO_INT,
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
    {
      flags: ['--state'],
      kind: 'value',
      type: POSITIVE_INT,
      help: 'filter on this thread state bitmask (eg, 2 == TASK_UNINTERRUPTIBLE) see include/linux/sched.h',
    },
    { flags: ['--ebpf'], kind: 'flag', help: null },
    {
      flags: ['--svg'],
      kind: 'value',
      metavar: 'FILE',
      help: 'write an off-CPU flame graph (SVG) of the folded stacks to FILE instead of printing the stacks (with -f, print them too)',
    },
    ...STACK_OUTPUT_OPTIONS,
  ],
  positionals: [
    { name: 'duration', help: 'duration of trace, in seconds', type: POSITIVE_NONZERO_INT, default: FOREVER },
  ],
};

export const GROUPS = [
  ['tgids', 'pids', 'user_threads_only', 'kernel_threads_only'],
  ['user_stacks_only', 'kernel_stacks_only'],
];

export interface OffcputimeOptions {
  /** -p: process IDs */
  tgids?: number[] | null;
  /** -t: thread IDs */
  tids?: number[] | null;
  userThreads: boolean;
  kernelThreads: boolean;
  userOnly: boolean;
  kernelOnly: boolean;
  /** -m, microseconds */
  minUs: number;
  /** -M, microseconds */
  maxUs: bigint;
  /** --state: null for any state */
  state?: number | null;
}

/** Key layout of `@` for `o` (see {@link buildProgram}): stacks, comm, tid, tgid. */
export function keyLayout(o: Pick<OffcputimeOptions, 'userOnly' | 'kernelOnly'>): StackKeyLayout & { tgid: number } {
  if (o.userOnly) return { user: 0, comm: 1, id: 2, tgid: 3 };
  if (o.kernelOnly) return { kernel: 0, comm: 1, id: 2, tgid: 3 };
  return { kernel: 0, user: 1, comm: 2, id: 3, tgid: 4 };
}

/** bcc's thread filter on the task switching out (current at sched_switch), or null. */
function threadFilter(o: OffcputimeOptions): string | null {
  if (o.tgids?.length) return o.tgids.map((p) => `pid == ${p}`).join(' || ');
  if (o.tids?.length) return o.tids.map((t) => `tid == ${t}`).join(' || ');
  if (o.userThreads) return `(args.prev->flags & ${PF_KTHREAD}) == 0`;
  if (o.kernelThreads) return `(args.prev->flags & ${PF_KTHREAD}) != 0`;
  return null;
}

/** The bpftrace program for `o` (see the module comment). */
export function buildProgram(o: OffcputimeOptions): string {
  const stacks = o.userOnly ? ['ustack(raw)'] : o.kernelOnly ? ['kstack(raw)'] : ['kstack(raw)', 'ustack(raw)'];
  const conds = [`args.prev_state != ${TASK_DEAD}`];
  const tf = threadFilter(o);
  if (tf) conds.push(`(${tf})`);
  if (o.state === 0) conds.push('args.prev_state == 0');
  else if (o.state) conds.push(`(args.prev_state & ${o.state}) != 0`);
  let p = configBlock();
  p += 'rawtracepoint:sched_switch {\n';
  p += `  if (${conds.join(' && ')}) {\n`;
  if (!o.kernelOnly) p += ProcessPreparer.statement('    ');
  p += `    @__off[tid] = (nsecs, ${stacks.join(', ')});\n  }\n`;
  p += '  $next = args.next->pid;\n  $o = @__off[$next];\n  if ($o.0 != 0) {\n    delete(@__off[$next]);\n';
  p += '    $us = (nsecs - $o.0) / 1000;\n';
  const range = [`$us >= ${o.minUs}`];
  if (o.maxUs < 1n << 63n) range.push(`$us <= ${o.maxUs}`);
  p += `    if (${range.join(' && ')}) {\n`;
  const keys = stacks.map((_, i) => `$o.${i + 1}`);
  p += `      @[${keys.join(', ')}, args.next->comm, $next, args.next->tgid] = sum($us);\n`;
  p += '    }\n  }\n}\n';
  return p;
}

/** bcc's header: `Tracing off-CPU time (us) of all threads by user + kernel stack... Hit Ctrl-C to end.` */
export function header(o: OffcputimeOptions, duration: number): string {
  const thread = o.tgids
    ? `PIDs ${o.tgids.join(',')}`
    : o.tids
      ? `TIDs ${o.tids.join(',')}`
      : o.userThreads
        ? 'user threads'
        : o.kernelThreads
          ? 'kernel threads'
          : 'all threads';
  const stack = o.userOnly ? 'user' : o.kernelOnly ? 'kernel' : 'user + kernel';
  const end = duration < FOREVER ? pyFormat(' for %d secs.', duration) : '... Hit Ctrl-C to end.';
  return `Tracing off-CPU time (us) of ${thread} by ${stack} stack${end}`;
}

/** bcc's multi-line frame text: the symbol, with `+0xOFF` when -s. */
export function offcputimeFormat(o: { delimited: boolean; offset: boolean }): StackFormat {
  const line = (f: Parameters<typeof bccName>[0]): string => bccName(f, { showOffset: o.offset });
  return { delimiter: o.delimited, annotate: false, kernelLine: line, userLine: line };
}

async function run(a: Parsed, writer: ToolWriter, argv: readonly string[]): Promise<number> {
  const conflict = exclusiveGroupError(SPEC, argv, a, GROUPS);
  if (conflict) {
    writer.err.write(conflict.text());
    return 2;
  }
  const folded = a.folded as boolean;
  if (folded && a.offset) {
    writer.line('ERROR: can only use -f or -s. Exiting.');
    return 1;
  }
  const o: OffcputimeOptions = {
    tgids: a.tgids as number[] | null,
    tids: a.pids as number[] | null,
    userThreads: a.user_threads_only as boolean,
    kernelThreads: a.kernel_threads_only as boolean,
    userOnly: a.user_stacks_only as boolean,
    kernelOnly: a.kernel_stacks_only as boolean,
    minUs: a.min_block_time as number,
    maxUs: a.max_block_time as bigint,
    state: a.state as number | null,
  };
  const duration = a.duration as number;
  const svg = a.svg as string | null;
  const fmt = offcputimeFormat({
    delimited: (a.delimited as boolean) && !(o.userOnly || o.kernelOnly),
    offset: a.offset as boolean,
  });
  if (o.kernelThreads && o.userOnly) {
    writer.err.write("ERROR: Displaying user stacks for kernel threads doesn't make sense.\n");
    return 2;
  }
  const program = buildProgram(o);
  return runStackTool({
    tool: 'offcputime',
    program,
    writer,
    duration,
    header: header(o, duration),
    folded,
    svg,
    format: a.format as StackFileFormat | null,
    output: a.output as string | null,
    kind: 'offcpu',
    fmt,
    layout: keyLayout(o),
    userPid: (key) => Number((key[keyLayout(o).tgid] as { value: bigint }).value),
    kernelFilter: dropTracingFrames,
    stackStorageSize: a.stack_storage_size as number,
    flameOptions: OFFCPU_FLAMEGRAPH,
    // kernel symbols of the programs just loaded: their frames are recognised and dropped
    beforeReport: (resolver) => resolver.reloadKernel(),
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'intervals', run });

/** `bpfscope offcputime [flags] [duration]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
