/**
 * wakeuptime: time threads spent blocked, by the kernel stack of the thread that woke them. Follows bcc's
 * `tools/wakeuptime.py` (flags, help, "Tracing blocked time (us) by kernel stack" header, the multi-line
 * `target:` / address and symbol / `waker:` blocks, the `-f` folded line `waker;frames;target N` and the final
 * "Detaching...") on two tracepoints, so it runs without kprobes:
 * - `rawtracepoint:sched_switch`: the task switching out (still current) keeps the time in `@__start[tid]`
 *   (bcc's raw tracepoint variant does the same; its kprobe variant probes `schedule()`);
 * - `rawtracepoint:sched_waking` (tp_btf, `args.p` is the task being woken) runs in the waker's context: the
 *   woken task's blocked time in microseconds, when within `-m`/`-M`, is added to
 *   `@[kstack(raw), comm, args.p->comm] = sum(us)` (bcc's key: waker stack, waker name, target name). bcc's raw
 *   tracepoint variant uses `sched_wakeup`, which may run in another task's context (on the woken task's CPU) and
 *   then names the wrong waker.
 *
 * Differences from bcc: the waker's kernel stack starts at `try_to_wake_up` (bcc drops the first frame, the probed
 * function with its kprobe variant, the raw tracepoint's caller with the other); a thread's last switch-out
 * (`TASK_DEAD`) clears its start time; `-v` is accepted and, as in bcc, changes nothing.
 */
import { ArgError, formatUsage, type OptionsOf, type ParserSpec, type ValueType } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { defineTool, toolMain } from './framework/runner.js';
import { StackOutput } from './framework/stackout.js';
import { FOREVER, PF_KTHREAD, TASK_DEAD } from './offcputime.js';
import { POS_NONZERO, WAKE_STORAGE_OPTIONS } from './offwaketime.js';
import type { Frame, SymbolResolver } from '../symbols/resolver.js';
import { bccName } from '../symbols/resolver.js';
import type { MapDump, Value } from '../runtime/output/model.js';
import { BpfscopeError } from '../errors.js';
import { dropTracingFrames, parseRawStack, POSITIVE_INT, runStackReport } from './stacktool.js';

const POS_INT: ValueType<number> = { name: 'positive_int', convert: (t) => POSITIVE_INT.convert(t) as number };

/** bcc's parser, option for option. */
export const SPEC = {
  prog: 'wakeuptime',
  description: 'Summarize sleep to wakeup time by waker kernel stack',
  raw: true,
  epilog: `examples:
    ./wakeuptime             # trace blocked time with waker stacks
    ./wakeuptime 5           # trace for 5 seconds only
    ./wakeuptime -f 5        # 5 seconds, and output in folded format
    ./wakeuptime -u          # don't include kernel threads (user only)
    ./wakeuptime -p 185      # trace for PID 185 only`,
  options: [
    { flags: ['-u', '--useronly'], kind: 'flag', help: 'user threads only (no kernel threads)' },
    { flags: ['-p', '--pid'], kind: 'value', type: POS_INT, help: 'trace this PID only' },
    { flags: ['-v', '--verbose'], kind: 'flag', help: 'show raw addresses' },
    { flags: ['-f', '--folded'], kind: 'flag', help: 'output folded format' },
    ...WAKE_STORAGE_OPTIONS,
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
  positionals: [{ name: 'duration', help: 'duration of trace, in seconds', type: POS_NONZERO, default: FOREVER }],
} as const satisfies ParserSpec;

export interface WakeuptimeOptions {
  /** -p: process ID (of both the sleeping task and the woken task, as bcc filters) */
  pid?: number | null;
  /** -u */
  userOnly: boolean;
  /** -m, microseconds */
  minUs: number;
  /** -M, microseconds */
  maxUs: bigint;
}

/** bcc's FILTER negated (bcc returns when it holds): which tasks `t` are traced, or null for all. */
function filterOn(o: WakeuptimeOptions, t: string): string | null {
  if (o.pid) return `${t}->tgid == ${o.pid}`;
  if (o.userOnly) return `(${t}->flags & ${PF_KTHREAD}) == 0`;
  return null;
}

/** The bpftrace program for `o` (see the module comment). */
export function buildProgram(o: WakeuptimeOptions): string {
  let p = configBlock();
  p += 'rawtracepoint:sched_switch {\n';
  p += `  if (args.prev_state == ${TASK_DEAD}) {\n    delete(@__start[tid]);\n  }`;
  const sw = filterOn(o, 'args.prev');
  p += sw ? ` else if (${sw}) {\n` : ' else {\n';
  p += '    @__start[tid] = nsecs;\n  }\n}\n';
  p += 'rawtracepoint:sched_waking {\n  $t = args.p->pid;\n  $s = @__start[$t];\n  if ($s != 0) {\n';
  p += '    delete(@__start[$t]);\n';
  const conds = ['$us >= ' + o.minUs];
  if (o.maxUs < 1n << 63n) conds.push(`$us <= ${o.maxUs}`);
  const wk = filterOn(o, 'args.p');
  if (wk) conds.unshift(wk);
  p += '    $us = (nsecs - $s) / 1000;\n';
  p += `    if (${conds.join(' && ')}) {\n`;
  p += '      @[kstack(raw), comm, args.p->comm] = sum($us);\n    }\n  }\n}\n';
  return p;
}

/** bcc's header: `Tracing blocked time (us) by kernel stack... Hit Ctrl-C to end.` or ` for N secs.` */
export function header(duration: number): string {
  const end = duration < FOREVER ? pyFormat(' for %d secs.', duration) : '... Hit Ctrl-C to end.';
  return `Tracing blocked time (us) by kernel stack${end}`;
}

/** One aggregated wake-up stack: the waker's kernel frames (innermost first), names and blocked time in us. */
export interface WakeupEntry {
  waker: string;
  target: string;
  kernel: Frame[];
  value: bigint;
}

function str(v: Value | undefined): string {
  if (v?.kind === 'string') return v.value;
  throw new BpfscopeError('internal: a wakeuptime map key is not a string where one was expected');
}

/** Symbolize `@` of {@link buildProgram}. */
export function symbolizeWakeup(dump: MapDump, resolver: SymbolResolver): WakeupEntry[] {
  return dump.entries.map((e) => {
    const v = e.value;
    return {
      kernel: dropTracingFrames(resolver.kernelStack(parseRawStack(str(e.key[0])))),
      waker: str(e.key[1]),
      target: str(e.key[2]),
      value: 'value' in v && typeof v.value === 'bigint' ? v.value : 0n,
    };
  });
}

/** bcc's folded line: `waker;kernel frames innermost first;target N`. */
export function wakeupFolded(e: WakeupEntry): string {
  return `${[e.waker, ...e.kernel.map((f) => f.name ?? '[unknown]'), e.target].join(';')} ${e.value}`;
}

/**
 * bcc's multi-line block: `    target:          comm`, one `    ADDR             symbol` line per frame (address in
 * hex, `%-16x`) outermost first, `    waker:           comm`, `        N` and a blank line.
 */
export function wakeupLines(e: WakeupEntry): string {
  let s = `${pyFormat('    %-16s %s', 'target:', e.target)}\n`;
  for (const f of [...e.kernel].reverse()) s += `    ${f.addr.toString(16).padEnd(16)} ${bccName(f)}\n`;
  s += `${pyFormat('    %-16s %s', 'waker:', e.waker)}\n`;
  s += `        ${e.value}\n\n`;
  return s;
}

/** What wakeuptime yields as data (`--json`, runTool): the entries in bcc's order (ascending time). */
export interface WakeupResult {
  stacks: WakeupEntry[];
}

/** flamegraph.pl's options for wake-up flame graphs (`--colors wakeup`), for the folded lines' exports. */
export const WAKEUP_FLAMEGRAPH = { colors: 'wakeup', countname: 'us', title: 'Wakeup Time Flame Graph' } as const;

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  if (a.pid && a.useronly) {
    writer.err.write(new ArgError('use either -p or -u.', formatUsage(SPEC), SPEC.prog).text());
    return 2;
  }
  const o: WakeuptimeOptions = {
    pid: a.pid,
    userOnly: a.useronly,
    minUs: a.min_block_time,
    maxUs: a.max_block_time,
  };
  const duration = a.duration;
  const out = StackOutput.from({ folded: a.folded }, 'wakeuptime');
  return runStackReport<WakeupResult>({
    tool: 'wakeuptime',
    program: buildProgram(o),
    writer,
    output: out,
    meta: { tool: 'wakeuptime', kind: 'offcpu', flame: { ...WAKEUP_FLAMEGRAPH } },
    header: `${header(duration)}\n`,
    footer: 'Detaching...\n',
    stackStorageSize: a.stack_storage_size,
    interval: { seconds: duration, count: 1 },
    exportFrom: 'last',
    report: (t, resolver, last) => {
      if (!last) return null;
      const dump = t.readMap('');
      resolver.reloadKernel();
      const keyed = symbolizeWakeup(dump, resolver).map((entry) => ({ entry, folded: wakeupFolded(entry) }));
      keyed.sort((x, y) =>
        x.entry.value < y.entry.value
          ? -1
          : x.entry.value > y.entry.value
            ? 1
            : x.folded < y.folded
              ? -1
              : x.folded > y.folded
                ? 1
                : 0,
      );
      const text =
        out.text === 'folded'
          ? keyed.map((k) => `${k.folded}\n`).join('')
          : `\n${keyed.map((k) => wakeupLines(k.entry)).join('')}`;
      return { result: { stacks: keyed.map((k) => k.entry) }, text, folded: keyed.map((k) => k.folded) };
    },
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'intervals', run });

/** `bpfscope wakeuptime [flags] [duration]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
