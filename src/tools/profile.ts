/**
 * profile: a CPU profiler that samples stack traces at a timed interval and counts them in the kernel. Follows
 * bcc's `tools/profile.py` (flags, help, "Sampling at ..." header, multi-line and `-f` folded output, sorted by
 * count) on bpftrace's `profile:hz:N` probe (a cpu-clock perf event per CPU):
 *
 *     profile:hz:49 /tid != 0/ { @[kstack(raw), ustack(raw), comm, pid] = count(); }
 *
 * The stacks come back as addresses and are symbolized here, in bcc's frame formats, with one `SymbolResolver`
 * that also loads each sampled process's symbols while the process runs (see `stacktool.ts`), so processes that
 * exit before the end still get names where bcc prints `[unknown]`. `--svg FILE` renders the folded stacks as a
 * flame graph in-process (flamegraph.pl's defaults).
 *
 * Differences from bcc, all deliberate or forced:
 * - bcc re-inserts the sampled kernel IP at the top of the kernel stack (needed on old kernels and arm64); on
 *   x86-64 the kernel's stack already starts at that IP, so the leaf would be printed twice. We print it once
 *   (libbpf-tools' profile does the same on x86-64).
 * - `-C CPU` samples every CPU and keeps CPU N's samples (a predicate), where bcc opens one perf event.
 * - `-c COUNT`: the cpu-clock period is rounded down to whole microseconds (bpftrace's `profile:us:N`).
 * - Stacks are stored by a hash of their frames (as current bpftrace does), so two stacks never collide and
 *   `[Missed User Stack]` / `[Missed Kernel Stack]` (bcc: -EEXIST on a STACK_TRACE map collision) are never
 *   printed. `--stack-storage-size` sizes the stack maps as in bcc; a stack that no longer fits prints empty.
 */
import { onlineCpus } from '../kernel/cpus.js';
import { bccName } from '../symbols/resolver.js';
import { INT, type Parsed, type ParserSpec } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { STACK_OUTPUT_OPTIONS, type StackFileFormat } from './framework/stackout.js';
import { defineTool, toolMain, unsupported } from './framework/runner.js';
import {
  exclusiveGroupError,
  POSITIVE_INT,
  POSITIVE_INT_LIST,
  POSITIVE_NONZERO_INT,
  ProcessPreparer,
  type StackFormat,
  type StackKeyLayout,
  DEFAULT_STACK_STORAGE,
  runStackTool,
} from './stacktool.js';

/** bcc's defaults: 49 Hz, 40960 hash keys, 16384 stacks, "forever" (99999999 s). */
export const DEFAULT_FREQUENCY = 49;
export const DEFAULT_HASH_STORAGE = 40960;
export { DEFAULT_STACK_STORAGE };
export const FOREVER = 99999999;

export const SPEC: ParserSpec = {
  prog: 'profile',
  description: 'Profile CPU stack traces at a timed interval',
  raw: true,
  epilog: `examples:
    ./profile             # profile stack traces at 49 Hertz until Ctrl-C
    ./profile -F 99       # profile stack traces at 99 Hertz
    ./profile -c 1000000  # profile stack traces every 1 in a million events
    ./profile 5           # profile at 49 Hertz for 5 seconds only
    ./profile -f 5        # output in folded format for flame graphs
    ./profile -p 185      # only profile process with PID 185
    ./profile -L 185      # only profile thread with TID 185
    ./profile -U          # only show user space stacks (no kernel)
    ./profile -K          # only show kernel space stacks (no user)
    ./profile --cgroupmap mappath  # only trace cgroups in this BPF map
    ./profile --mntnsmap mappath   # only trace mount namespaces in the map
    ./profile -F 99 --svg out.svg 10  # write a CPU flame graph of 10 seconds`,
  options: [
    {
      flags: ['-p', '--pid'],
      kind: 'value',
      type: POSITIVE_INT_LIST,
      help: 'profile processes with one or more comma-separated PIDs only',
    },
    {
      flags: ['-L', '--tid'],
      kind: 'value',
      type: POSITIVE_INT_LIST,
      help: 'profile threads with one or more comma-separated TIDs only',
    },
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
    { flags: ['-F', '--frequency'], kind: 'value', type: POSITIVE_INT, help: 'sample frequency, Hertz' },
    { flags: ['-c', '--count'], kind: 'value', type: POSITIVE_INT, help: 'sample period, number of events' },
    { flags: ['-d', '--delimited'], kind: 'flag', help: 'insert delimiter between kernel/user stacks' },
    { flags: ['-a', '--annotations'], kind: 'flag', help: 'add _[k] annotations to kernel frames' },
    { flags: ['-I', '--include-idle'], kind: 'flag', help: 'include CPU idle stacks' },
    {
      flags: ['-f', '--folded'],
      kind: 'flag',
      help: 'output folded format, one line per stack (for flame graphs)',
    },
    {
      flags: ['--hash-storage-size'],
      kind: 'value',
      type: POSITIVE_NONZERO_INT,
      default: DEFAULT_HASH_STORAGE,
      help: 'the number of hash keys that can be stored and (default 40960)',
    },
    {
      flags: ['--stack-storage-size'],
      kind: 'value',
      type: POSITIVE_NONZERO_INT,
      default: DEFAULT_STACK_STORAGE,
      help: 'the number of unique stack traces that can be stored and displayed (default 16384)',
    },
    { flags: ['-C', '--cpu'], kind: 'value', type: INT, default: -1, help: 'cpu number to run profile on' },
    { flags: ['--ebpf'], kind: 'flag', help: null },
    { flags: ['--cgroupmap'], kind: 'value', help: 'trace cgroups in this BPF map only' },
    { flags: ['--mntnsmap'], kind: 'value', help: 'trace mount namespaces in this BPF map only' },
    { flags: ['-A', '--address'], kind: 'flag', help: 'show raw addresses' },
    {
      flags: ['--svg'],
      kind: 'value',
      metavar: 'FILE',
      help: 'write a CPU flame graph (SVG) of the folded stacks to FILE instead of printing the stacks (with -f, print them too)',
    },
    ...STACK_OUTPUT_OPTIONS,
  ],
  positionals: [
    { name: 'duration', help: 'duration of trace, in seconds', type: POSITIVE_NONZERO_INT, default: FOREVER },
  ],
};

/** bcc's mutually exclusive groups. */
export const GROUPS = [
  ['pid', 'tid'],
  ['user_stacks_only', 'kernel_stacks_only'],
  ['frequency', 'count'],
];

export interface ProfileOptions {
  pids?: number[] | null;
  tids?: number[] | null;
  userOnly: boolean;
  kernelOnly: boolean;
  /** Hz; ignored when `period` is set. */
  frequency?: number | null;
  /** -c: cpu-clock events (ns) between samples. */
  period?: number | null;
  includeIdle: boolean;
  cpu: number;
  hashStorage: number;
}

/** The profile probe for `o`: `profile:hz:F`, or `profile:us:N` for a period of N*1000 cpu-clock ns (-c). */
export function probeOf(o: Pick<ProfileOptions, 'frequency' | 'period'>): string {
  if (o.frequency) return `profile:hz:${o.frequency}`;
  if (o.period) return `profile:us:${Math.max(1, Math.floor(o.period / 1000))}`;
  return `profile:hz:${DEFAULT_FREQUENCY}`;
}

/** Key layout of `@` for `o` (see {@link buildProgram}). */
export function keyLayout(o: Pick<ProfileOptions, 'userOnly' | 'kernelOnly'>): StackKeyLayout {
  if (o.userOnly) return { user: 0, comm: 1, id: 2 };
  if (o.kernelOnly) return { kernel: 0, comm: 1, id: 2 };
  return { kernel: 0, user: 1, comm: 2, id: 3 };
}

/**
 * The bpftrace program for `o`: `@[kstack(raw), ustack(raw), comm, pid] = count()` (only the collected stacks)
 * behind bcc's filters (idle = thread 0, `-p` process IDs, `-L` thread IDs, `-C` CPU), plus the event that
 * reports each new process so its symbols are loaded while it runs.
 */
export function buildProgram(o: ProfileOptions): string {
  const conds = [
    o.includeIdle ? null : 'tid != 0',
    o.pids?.length ? o.pids.map((p) => `pid == ${p}`).join(' || ') : null,
    !o.pids?.length && o.tids?.length ? o.tids.map((t) => `tid == ${t}`).join(' || ') : null,
    o.cpu >= 0 ? `cpu == ${o.cpu}` : null,
  ];
  const stacks = o.userOnly ? 'ustack(raw)' : o.kernelOnly ? 'kstack(raw)' : 'kstack(raw), ustack(raw)';
  let p = configBlock({ maxMapKeys: o.hashStorage });
  p += `${probeOf(o)}${predicate(conds)} {\n`;
  if (!o.kernelOnly) p += ProcessPreparer.statement('  ');
  p += `  @[${stacks}, comm, pid] = count();\n}\n`;
  return p;
}

/** bcc's header: `Sampling at 49 Hertz of all threads by user + kernel stack... Hit Ctrl-C to end.` */
export function header(o: ProfileOptions, duration: number): string {
  const sample = o.frequency
    ? `${o.frequency} Hertz`
    : o.period
      ? `every ${o.period} events`
      : `${DEFAULT_FREQUENCY} Hertz`;
  // Python prints the option's list: "PID [185, 186]".
  const thread = o.pids ? `PID [${o.pids.join(', ')}]` : o.tids ? `TID [${o.tids.join(', ')}]` : 'all threads';
  const stack = o.userOnly ? 'user' : o.kernelOnly ? 'kernel' : 'user + kernel';
  let s = `Sampling at ${sample} of ${thread} by ${stack} stack`;
  if (o.cpu >= 0) s += ` on CPU#${o.cpu}`;
  s += duration < FOREVER ? pyFormat(' for %d secs.', duration) : '... Hit Ctrl-C to end.';
  return s;
}

/** bcc's multi-line frame text: `name+0xOFF [module]`, with `-A` the address first. */
export function profileFormat(o: { delimited: boolean; annotations: boolean; address: boolean }): StackFormat {
  return {
    delimiter: o.delimited,
    annotate: o.annotations,
    kernelLine: (f) => {
      const s = bccName(f, { showModule: true, showOffset: true });
      return o.address ? pyFormat('0x%-16x %s', f.addr, s) : s;
    },
    userLine: (f) => {
      const s = bccName(f, { showModule: true, showOffset: true });
      return o.address ? pyFormat('0x%016x %s', f.addr, s) : s;
    },
  };
}

async function run(a: Parsed, writer: ToolWriter, argv: readonly string[]): Promise<number> {
  const conflict = exclusiveGroupError(SPEC, argv, a, GROUPS);
  if (conflict) {
    writer.err.write(conflict.text());
    return 2;
  }
  if (a.cgroupmap !== null || a.mntnsmap !== null) {
    throw unsupported('profile: --cgroupmap/--mntnsmap read pinned BPF maps, which bpfscope tools do not support yet');
  }
  const o: ProfileOptions = {
    pids: a.pid as number[] | null,
    tids: a.tid as number[] | null,
    userOnly: a.user_stacks_only as boolean,
    kernelOnly: a.kernel_stacks_only as boolean,
    frequency: a.frequency as number | null,
    period: a.count as number | null,
    includeIdle: a.include_idle as boolean,
    cpu: a.cpu as number,
    hashStorage: a.hash_storage_size as number,
  };
  const duration = a.duration as number;
  const folded = a.folded as boolean;
  const svg = a.svg as string | null;
  const fmt = profileFormat({
    // bcc: the delimiter only makes sense with both stacks.
    delimited: (a.delimited as boolean) && !(o.userOnly || o.kernelOnly),
    annotations: a.annotations as boolean,
    address: a.address as boolean,
  });
  const program = buildProgram(o);
  if (o.cpu >= 0 && !onlineCpus().includes(o.cpu)) {
    throw unsupported(`profile: CPU ${o.cpu} is not online (online: ${onlineCpus().join(',')})`);
  }
  return runStackTool({
    tool: 'profile',
    program,
    writer,
    duration,
    header: header(o, duration),
    folded,
    svg,
    format: a.format as StackFileFormat | null,
    output: a.output as string | null,
    kind: 'cpu',
    periodNs: o.period
      ? Math.max(1, Math.floor(o.period / 1000)) * 1000
      : Math.round(1e9 / (o.frequency || DEFAULT_FREQUENCY)),
    fmt,
    layout: keyLayout(o),
    userPid: (key) => Number((key[keyLayout(o).id] as { value: bigint }).value),
    stackStorageSize: a.stack_storage_size as number,
    afterReport: (dump) => {
      if (dump.entries.length >= o.hashStorage) {
        writer.err.write('WARNING: hash table full. Consider increasing --hash-storage-size.\n');
      }
    },
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'intervals', run });

/** `bpfscope profile [flags] [duration]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
