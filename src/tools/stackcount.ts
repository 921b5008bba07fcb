/**
 * stackcount: count the stack traces that led to the functions, tracepoints or USDT probes a pattern matches.
 * Follows bcc's `tools/stackcount.py` (flags, help, bcc probe specifiers with `*` wildcards or `-r` regexps,
 * "Tracing N functions for ..." line, stacks as `  frame` lines with `    --` between kernel and user frames (-d),
 * `    comm [pid]` (-P) and `    count`, sorted by count; `-f` folded lines `comm;user;-;kernel count`; `-s`
 * offsets, `-v` addresses, `-K`/`-U`, `-i`/`-D`, `-T`, "Detaching...") with one bpftrace probe over every matched
 * target counting `kstack(raw)`/`ustack(raw)` keys; the stack map holds 1024 stacks as bcc's.
 *
 * Differences from bcc: user stacks are symbolized in the process that recorded them even without -P (bcc uses
 * pid -1 then and prints `[unknown]`), so the key also holds the pid and stacks are merged by their printed text
 * afterwards; the comm prints as text (bcc 0.26 on Python 3 prints `b'comm'`); `-c CPU` filters every probe type
 * (bcc only kernel ones).
 */
import type { MapDump } from '../runtime/output/model.js';
import { bccName, foldedName, type Frame } from '../symbols/resolver.js';
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import { intervalOf, intervalPrefix, resolveTargetsOrReport, type Targets, tracingLine } from './framework/functool.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { defineTool, toolMain } from './framework/runner.js';
import { STACK_OUTPUT_OPTIONS, StackOutput } from './framework/stackout.js';
import { clockTime } from './framework/system.js';
import {
  ProcessPreparer,
  runStackReport,
  type StackEntry,
  type StackResult,
  sortEntries,
  symbolizeEntries,
} from './stacktool.js';

export const SPEC = {
  prog: 'stackcount',
  description: 'Count events and their stack traces',
  raw: true,
  epilog: `examples:
    ./stackcount submit_bio         # count kernel stack traces for submit_bio
    ./stackcount -d ip_output       # include a user/kernel stack delimiter
    ./stackcount -s ip_output       # show symbol offsets
    ./stackcount -sv ip_output      # show offsets and raw addresses (verbose)
    ./stackcount 'tcp_send*'        # count stacks for funcs matching tcp_send*
    ./stackcount -r '^tcp_send.*'   # same as above, using regular expressions
    ./stackcount -Ti 5 ip_output    # output every 5 seconds, with timestamps
    ./stackcount -p 185 ip_output   # count ip_output stacks for PID 185 only
    ./stackcount -c 1 put_prev_entity   # count put_prev_entity stacks for CPU 1 only
    ./stackcount -p 185 c:malloc    # count stacks for malloc in PID 185
    ./stackcount t:sched:sched_fork # count stacks for sched_fork tracepoint
    ./stackcount -p 185 u:node:*    # count stacks for all USDT probes in node
    ./stackcount -K t:sched:sched_switch   # kernel stacks only
    ./stackcount -U t:sched:sched_switch   # user stacks only
        `,
  options: [
    { flags: ['-p', '--pid'], kind: 'value', type: INT, help: 'trace this PID only' },
    { flags: ['-c', '--cpu'], kind: 'value', type: INT, help: 'trace this CPU only' },
    { flags: ['-i', '--interval'], kind: 'value', type: INT, help: 'summary interval, seconds' },
    { flags: ['-D', '--duration'], kind: 'value', type: INT, help: 'total duration of trace, seconds' },
    { flags: ['-T', '--timestamp'], kind: 'flag', help: 'include timestamp on output' },
    {
      flags: ['-r', '--regexp'],
      kind: 'flag',
      help: 'use regular expressions. Default is "*" wildcards only.',
    },
    { flags: ['-s', '--offset'], kind: 'flag', help: 'show address offsets' },
    { flags: ['-P', '--perpid'], kind: 'flag', help: 'display stacks separately for each process' },
    { flags: ['-K', '--kernel-stacks-only'], kind: 'flag', help: 'kernel stack only' },
    { flags: ['-U', '--user-stacks-only'], kind: 'flag', help: 'user stack only' },
    { flags: ['-v', '--verbose'], kind: 'flag', help: 'show raw addresses' },
    { flags: ['-d', '--delimited'], kind: 'flag', help: 'insert delimiter between kernel/user stacks' },
    { flags: ['-f', '--folded'], kind: 'flag', help: 'output folded format' },
    {
      flags: ['--debug'],
      kind: 'flag',
      help: 'print BPF program before starting (for debugging purposes)',
    },
    {
      flags: ['--svg'],
      kind: 'value',
      metavar: 'FILE',
      help: 'write a flame graph (SVG) of the folded stacks of the whole run to FILE instead of printing the stacks (with -f, print them too)',
    },
    ...STACK_OUTPUT_OPTIONS,
  ],
  positionals: [{ name: 'pattern', help: 'search expression for events', required: true }],
} as const satisfies ParserSpec;

/** bcc's `BPF_STACK_TRACE(stack_traces, 1024)`. */
export const STACK_STORAGE = 1024;

export interface StackcountOptions {
  pid?: number | null;
  cpu?: number | null;
  kernel: boolean;
  user: boolean;
}

/** Key layout of `@counts` for `o`: `[kstack(raw)?, ustack(raw)?, comm, pid]`. */
export function keyLayout(o: Pick<StackcountOptions, 'kernel' | 'user'>): {
  kernel?: number;
  user?: number;
  comm: number;
  id: number;
} {
  let i = 0;
  const kernel = o.kernel ? i++ : undefined;
  const user = o.user ? i++ : undefined;
  return { ...(kernel !== undefined ? { kernel } : {}), ...(user !== undefined ? { user } : {}), comm: i, id: i + 1 };
}

/**
 * The bpftrace program: one probe over every target counting `@counts[kstack(raw), ustack(raw), comm, pid]`; with
 * user stacks, each new process is reported once (its symbols are loaded while it lives).
 */
export function buildProgram(t: Targets, o: StackcountOptions): string {
  const conds = [
    o.pid !== null && o.pid !== undefined ? `pid == ${o.pid}` : null,
    o.cpu !== null && o.cpu !== undefined ? `cpu == ${o.cpu}` : null,
  ];
  const key = [o.kernel ? 'kstack(raw)' : null, o.user ? 'ustack(raw)' : null, 'comm', 'pid'].filter(Boolean);
  let p = configBlock();
  p += `${t.attachPoints.join(',\n')}${predicate(conds)} {\n`;
  if (o.user) p += ProcessPreparer.statement('  ');
  p += `  @counts[${key.join(', ')}] = count();\n}\n`;
  return p;
}

/** How stackcount prints frames and entries. */
export interface StackcountFormat {
  offset: boolean;
  verbose: boolean;
  /** -d with both stacks. */
  delimiter: boolean;
  /** -P: comm and pid are part of the key (and printed). */
  perPid: boolean;
  /** -p given: the `comm [pid]` line is left out. */
  pidGiven: boolean;
}

/** One frame line: `  [%-16x ]name[+0xoff]`. */
export function frameLine(f: Frame, fmt: Pick<StackcountFormat, 'offset' | 'verbose'>): string {
  return `  ${fmt.verbose ? pyFormat('%-16x ', f.addr) : ''}${bccName(f, { showOffset: fmt.offset })}\n`;
}

/** An entry's multi-line form without its count (bcc's loop body up to `print("    %d\n")`). */
export function stackText(e: StackEntry, fmt: StackcountFormat): string {
  let s = '';
  for (const f of e.kernel ?? []) s += frameLine(f, fmt);
  if (fmt.delimiter) s += '    --\n';
  for (const f of e.user ?? []) s += frameLine(f, fmt);
  if (fmt.perPid && !fmt.pidGiven) s += pyFormat('    %s [%d]\n', e.comm, e.id);
  return s;
}

/** The folded form without the count: `comm;user outermost first;[-;]kernel outermost first` (comm '' without -P). */
export function foldedText(e: StackEntry, fmt: StackcountFormat): string {
  const parts = [fmt.perPid ? e.comm : ''];
  for (let i = (e.user?.length ?? 0) - 1; i >= 0; i--) parts.push(foldedName(e.user![i]!));
  // bcc adds "-" whenever -d is in effect with both stacks, even when one of them is empty.
  if (fmt.delimiter) parts.push('-');
  for (let i = (e.kernel?.length ?? 0) - 1; i >= 0; i--) parts.push(foldedName(e.kernel![i]!));
  return parts.join(';');
}

/**
 * One interval's report: entries with the same printed text merged (pids split user symbolization only), sorted
 * ascending by count (ties by text), each as bcc prints it.
 */
export function formatReport(entries: StackEntry[], fmt: StackcountFormat, folded: boolean): string {
  const merged = new Map<string, bigint>();
  for (const e of entries) {
    const text = folded ? foldedText(e, fmt) : stackText(e, fmt);
    merged.set(text, (merged.get(text) ?? 0n) + e.value);
  }
  const rows = [...merged].sort((a, b) =>
    a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0,
  );
  return rows.map(([text, n]) => (folded ? `${text} ${n}\n` : `${text}    ${n}\n\n`)).join('');
}

/**
 * What stackcount yields as data (`--json`, runTool): one result per interval (and one at the end), the shape of
 * the other stack tools' results (stacktool.ts {@link StackResult}). Each entry is one stack of one process
 * (`comm`, `id` the process ID), `value` the number of events, in bcc's order (ascending, ties by the folded text);
 * the text report merges processes' equal stacks unless -P.
 */
export interface StackcountInterval extends StackResult {
  /** Wall-clock time of the interval's end, HH:MM:SS (the `-T` line). */
  time: string;
}

/** flamegraph.pl's options for stackcount's `--svg`/`--format svg`. */
export const STACKCOUNT_FLAMEGRAPH = { title: 'Stack Count Flame Graph', countname: 'events' } as const;

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const kOnly = a.kernel_stacks_only;
  const uOnly = a.user_stacks_only;
  if (kOnly && uOnly) {
    writer.line('ERROR: -K and -U are mutually exclusive. If you want both stacks, that is the default.');
    return 1;
  }
  const pattern = a.pattern;
  const t = resolveTargetsOrReport(pattern, a.regexp, writer);
  if (!t) return 1;
  const pid = a.pid;
  const o: StackcountOptions = { pid, cpu: a.cpu, kernel: !uOnly, user: !kOnly };
  const program = buildProgram(t, o);
  if (a.debug) writer.write(program);
  const out = StackOutput.from({ folded: a.folded, svg: a.svg, format: a.format, output: a.output }, 'stackcount');
  const folded = out.text === 'folded';
  const fmt: StackcountFormat = {
    offset: a.offset,
    verbose: a.verbose,
    delimiter: a.delimited && !kOnly && !uOnly,
    perPid: a.perpid || (pid !== null && pid > 0),
    pidGiven: pid !== null && pid !== 0,
  };
  const layout = keyLayout(o);
  const sortFmt = { delimiter: fmt.delimiter, annotate: false };
  return runStackReport<StackcountInterval>({
    tool: 'stackcount',
    program,
    writer,
    output: out,
    meta: { tool: 'stackcount', kind: 'count', flame: { ...STACKCOUNT_FLAMEGRAPH } },
    header: tracingLine(t.names.length, pattern),
    footer: 'Detaching...\n',
    ...(o.user ? { processFields: 1 as const } : {}),
    stackStorageSize: STACK_STORAGE,
    interval: { seconds: intervalOf(a.interval, a.duration) },
    durationSec: a.duration,
    exportFrom: 'sum',
    report: (tracer, resolver, last) => {
      const now = new Date();
      const dump: MapDump = tracer.readMap('counts');
      if (!last) tracer.clearMap('counts');
      const entries = sortEntries(
        symbolizeEntries(dump, layout, resolver, (k) => Number((k[layout.id] as { value: bigint }).value)),
        sortFmt,
      );
      let text = '';
      if (out.text !== 'none') {
        text = folded ? '' : '\n';
        if (a.timestamp) text += intervalPrefix(true, now).slice(1);
        text += formatReport(entries, fmt, folded);
      }
      // without -P the folded text starts with an empty name: no root frame in the exports
      const lines = entries.map((e) => `${foldedText(e, fmt).replace(/^;/, '')} ${e.value}`);
      return { result: { time: clockTime(now), stacks: entries }, text, folded: lines };
    },
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'intervals', run });

/** `bpfscope stackcount [flags] pattern`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
