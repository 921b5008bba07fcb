/**
 * argdist: collect a histogram (`-H`) or frequency count (`-C`) of expressions evaluated at a function, tracepoint
 * or USDT probe, printed every interval. Follows bcc's `tools/argdist.py`: its specifier
 * `{p,r,t,u}:{[library],category}:function(signature)[:type[,type...]:expr[,expr...][:filter]][#label]` (with
 * `$retval`, `$entry(param)`, `$latency`, `$PID` and `$COMM`), its flags, and its output: `[HH:MM:SS]`, then per
 * probe the label (or specifier) with `\tCOUNT      EVENT` rows sorted by count, or bcc's log2 histogram.
 *
 * Each specifier becomes bpftrace probes (framework/cexpr.ts translates the C expressions): a count map keyed by
 * the typed expressions, or a `hist()` of the typed expression, read and cleared each interval. A return probe that
 * uses `$entry(param)` or `$latency` gets an entry probe storing the parameters and the time per thread, as bcc's
 * does; the entries are deleted when the function returns (bcc keeps them).
 *
 * `-I` is accepted and ignored: kernel types come from BTF. String keys print as text (bcc under Python 3 prints
 * their bytes repr, `b'...'`).
 */
import { BpfscopeError } from '../errors.js';
import type { Tracer } from '../runtime/tracer.js';
import { INT, type OptionsOf, type ParserSpec } from './framework/argparse.js';
import { type CParam, convertTo, parseCType, parseSignature, translateCExpr, typedValue } from './framework/cexpr.js';
import { formatLog2Hist, type Log2Bucket, log2Buckets, log2SlotsOf } from './framework/hist.js';
import { keyPart, log2Slots } from './framework/histmaps.js';
import { runIntervals } from './framework/interval.js';
import type { ToolWriter } from './framework/output.js';
import { kprobesAvailable, matchTargets, parseProbeSpec, toAttachPoint } from './framework/probespec.js';
import { configBlock, predicate } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { defineTool, toolMain } from './framework/runner.js';
import { clockTime } from './framework/system.js';

const EXAMPLES = `Probe specifier syntax:
        {p,r,t,u}:{[library],category}:function(signature):type[,type...]:expr[,expr...][:filter]][#label]
Where:
        p,r,t,u    -- probe at function entry, function exit, kernel
                      tracepoint, or USDT probe
                      in exit probes: can use $retval, $entry(param), $latency
        library    -- the library that contains the function
                      (leave empty for kernel functions)
        category   -- the category of the kernel tracepoint (e.g. net, sched)
        function   -- the function name to trace (or tracepoint name)
        signature  -- the function's parameters, as in the C header
        type       -- the type of the expression to collect (supports multiple)
        expr       -- the expression to collect (supports multiple)
        filter     -- the filter that is applied to collected values
        label      -- the label for this probe in the resulting output

EXAMPLES:

argdist -H 'p::__kmalloc(u64 size):u64:size'
        Print a histogram of allocation sizes passed to kmalloc

argdist -p 1005 -C 'p:c:malloc(size_t size):size_t:size:size==16'
        Print a frequency count of how many times process 1005 called malloc
        with an allocation size of 16 bytes

argdist -C 'r:c:gets():char*:(char*)$retval#snooped strings'
        Snoop on all strings returned by gets()

argdist -H 'r::__kmalloc(size_t size):u64:$latency/$entry(size)#ns per byte'
        Print a histogram of nanoseconds per byte from kmalloc allocations

argdist -C 'p::__kmalloc(size_t sz, gfp_t flags):size_t:sz:flags&GFP_ATOMIC'
        Print frequency count of kmalloc allocation sizes that have GFP_ATOMIC

argdist -p 1005 -C 'p:c:write(int fd):int:fd' -T 5
        Print frequency counts of how many times writes were issued to a
        particular file descriptor number, in process 1005, but only show
        the top 5 busiest fds

argdist -p 1005 -H 'r:c:read()'
        Print a histogram of results (sizes) returned by read() in process 1005

argdist -C 'r::__vfs_read():u32:$PID:$latency > 100000'
        Print frequency of reads by process where the latency was >0.1ms

argdist -C 'r::__vfs_read():u32:$COMM:$latency > 100000'
        Print frequency of reads by process name where the latency was >0.1ms

argdist -H 'r::__vfs_read(void *file, void *buf, size_t count):size_t:
            $entry(count):$latency > 1000000'
        Print a histogram of read sizes that were longer than 1ms

argdist -H \\
        'p:c:write(int fd, const void *buf, size_t count):size_t:count:fd==1'
        Print a histogram of buffer sizes passed to write() across all
        processes, where the file descriptor was 1 (STDOUT)

argdist -C 'p:c:fork()#fork calls'
        Count fork() calls in libc across all processes
        Can also use funccount.py, which is easier and more flexible

argdist -H 't:block:block_rq_complete():u32:args->nr_sector'
        Print histogram of number of sectors in completing block I/O requests

argdist -C 't:irq:irq_handler_entry():int:args->irq'
        Aggregate interrupts by interrupt request (IRQ)

argdist -C 'u:pthread:pthread_start():u64:arg2' -p 1337
        Print frequency of function addresses used as a pthread start function,
        relying on the USDT pthread_start probe in process 1337

argdist -H 'p:c:sleep(u32 seconds):u32:seconds' \\
        -H 'p:c:nanosleep(struct timespec *req):long:req->tv_nsec'
        Print histograms of sleep() and nanosleep() parameter values

argdist -p 2780 -z 120 \\
        -C 'p:c:write(int fd, char* buf, size_t len):char*:buf:fd==1'
        Spy on writes to STDOUT performed by process 2780, up to a string size
        of 120 characters

argdist -I 'kernel/sched/sched.h' \\
        -C 'p::__account_cfs_rq_runtime(struct cfs_rq *cfs_rq):s64:cfs_rq->runtime_remaining'
        Trace on the cfs scheduling runqueue remaining runtime. The struct cfs_rq is defined
        in kernel/sched/sched.h which is in kernel source tree and not in kernel-devel
        package.  So this command needs to run at the kernel source tree root directory
        so that the added header file can be found by the compiler.
`;

export const SPEC = {
  prog: 'argdist',
  description: 'Trace a function and display a summary of its parameter values.',
  raw: true,
  epilog: EXAMPLES,
  options: [
    { flags: ['-p', '--pid'], kind: 'value', type: INT, help: 'id of the process to trace (optional)' },
    { flags: ['-t', '--tid'], kind: 'value', type: INT, help: 'id of the thread to trace (optional)' },
    {
      flags: ['-z', '--string-size'],
      kind: 'value',
      type: INT,
      default: 80,
      help: 'maximum string size to read from char* arguments',
    },
    {
      flags: ['-i', '--interval'],
      kind: 'value',
      type: INT,
      default: 1,
      help: 'output interval, in seconds (default 1 second)',
    },
    { flags: ['-d', '--duration'], kind: 'value', type: INT, help: 'total duration of trace, in seconds' },
    { flags: ['-n', '--number'], kind: 'value', type: INT, dest: 'count', help: 'number of outputs' },
    { flags: ['-v', '--verbose'], kind: 'flag', help: 'print resulting BPF program code before executing' },
    {
      flags: ['-c', '--cumulative'],
      kind: 'flag',
      help: 'do not clear histograms and freq counts at each interval',
    },
    {
      flags: ['-T', '--top'],
      kind: 'value',
      type: INT,
      help: 'number of top results to show (not applicable to histograms)',
    },
    {
      flags: ['-H', '--histogram'],
      kind: 'append',
      dest: 'histspecifier',
      metavar: 'specifier',
      help: 'probe specifier to capture histogram of (see examples below)',
    },
    {
      flags: ['-C', '--count'],
      kind: 'append',
      dest: 'countspecifier',
      metavar: 'specifier',
      help: 'probe specifier to capture count of (see examples below)',
    },
    {
      flags: ['-I', '--include'],
      kind: 'append',
      metavar: 'header',
      help:
        'additional header files to include in the BPF program as either full path, or relative to relative ' +
        'to current working directory, or relative to default kernel header search path',
    },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
} as const satisfies ParserSpec;

/** A specifier bcc rejects: `error parsing probe '<spec>': <reason>`. */
export class ArgdistProbeError extends BpfscopeError {
  constructor(spec: string, reason: string) {
    super(`error parsing probe '${spec}': ${reason}`);
    this.name = 'ArgdistProbeError';
  }
}

/** One parsed argdist specifier. */
export interface ArgdistProbe {
  /** The specifier as given (printed as the title of a count without a label). */
  raw: string;
  /** `freq` (-C) or `hist` (-H). */
  kind: 'freq' | 'hist';
  type: 'p' | 'r' | 't' | 'u';
  /** Library or binary ('' for the kernel); the category for tracepoints. */
  library: string;
  /** Function, tracepoint event or USDT probe name. */
  function: string;
  params: CParam[];
  /** The collected expressions' C types and texts (bcc's defaults without them: `u64 1`, or `int $retval`). */
  types: string[];
  exprs: string[];
  isDefaultExpr: boolean;
  /** The filter's C text ('' for none). */
  filter: string;
  label: string | null;
}

/**
 * Parse a `-C`/`-H` specifier as bcc's `Probe.__init__` (with `_validate_specifier`).
 * @throws ArgdistProbeError with bcc's reasons
 */
export function parseArgdistSpec(kind: 'freq' | 'hist', raw: string): ArgdistProbe {
  const bail = (reason: string): never => {
    throw new ArgdistProbeError(raw, reason);
  };
  const specAndLabel = raw.split('#');
  const parts = specAndLabel[0]!.trim().split(':');
  if (parts.length < 3) bail('at least the probe type, library, and function signature must be specified');
  if (parts.length > 6) bail("extraneous ':'-separated parts detected");
  if (!['r', 'p', 't', 'u'].includes(parts[0]!)) bail(`probe type must be 'p', 'r', 't', or 'u' but got '${parts[0]}'`);
  if (!/^\S+\(.*\)/.test(parts[2]!)) bail(`function signature '${parts[2]}' has an invalid format`);
  const type = parts[0] as ArgdistProbe['type'];
  const fparts = parts[2]!.split('(');
  const signature = (fparts[1] ?? '').trim().slice(0, -1);
  let types: string[];
  let exprs: string[];
  const isDefaultExpr = parts.length < 5;
  if (!isDefaultExpr) {
    if (parts[3]!.length === 0) bail('no expr types specified');
    if (parts[4]!.length === 0) bail('no exprs specified');
    types = parts[3]!.split(',');
    exprs = parts[4]!.split(',');
    if (types.length !== exprs.length) bail('mismatched # of exprs and types');
    if (kind === 'hist' && types.length > 1) bail('histograms can only have 1 expr');
  } else {
    if (type !== 'r' && kind === 'hist') bail('histograms must have expr');
    types = [type === 'r' ? 'int' : 'u64'];
    exprs = [type === 'r' ? '$retval' : '1'];
  }
  return {
    raw,
    kind,
    type,
    library: parts[1]!,
    function: fparts[0]!.trim(),
    params: parseSignature(signature),
    types,
    exprs,
    isDefaultExpr,
    filter: parts.length === 6 ? parts[5]! : '',
    label: specAndLabel.length === 2 ? specAndLabel[1]! : null,
  };
}

/** bcc's `_display_expr`: the expression as the user wrote it, `$entry(name)` shown as `name`. */
export function displayExpr(p: ArgdistProbe, i: number): string {
  const e = p.exprs[i]!;
  return p.type === 'r' ? e.replace(/\$entry\((\w+)\)/g, '$1') : e;
}

/** The title of a probe's output: its label, else the specifier (counts) or expression (histograms). */
export function title(p: ArgdistProbe): string {
  if (p.kind === 'freq') return p.label ?? p.raw;
  return p.label ?? (p.isDefaultExpr ? 'retval' : displayExpr(p, 0));
}

/** The bpftrace attach point of an argdist probe (via framework/probespec.ts). */
export function attachPoint(p: ArgdistProbe, entry = false): string {
  const t = entry ? 'p' : p.type;
  const text = t === 't' ? `t:${p.library}:${p.function}` : `${t}:${p.library}:${p.function}`;
  let spec;
  try {
    spec = parseProbeSpec(text, { allowReturn: true });
  } catch (e) {
    throw new ArgdistProbeError(p.raw, (e as Error).message);
  }
  if ((spec.kind === 'kprobe' || spec.kind === 'kretprobe') && !kprobesAvailable()) matchTargets(spec);
  return toAttachPoint(spec);
}

/** Options of {@link buildProgram}. */
export interface ArgdistOptions {
  pid?: number | null;
  tid?: number | null;
  stringSize: number;
}

/** Name of the map of probe `index` (without `@`). */
export function mapName(index: number): string {
  return `p${index}`;
}

function usesEntry(p: ArgdistProbe): boolean {
  return p.type === 'r' && [...p.exprs, p.filter].some((e) => /\$entry\(|\$latency/.test(e));
}

/** The bpftrace probes of argdist probe `p` (map `@p<index>`); `attach(entry)` gives the attach points. */
export function probeProgram(
  p: ArgdistProbe,
  index: number,
  o: ArgdistOptions,
  attach: (entry: boolean) => string,
): string {
  const m = mapName(index);
  const who = [o.pid != null ? `pid == ${o.pid}` : null, o.tid != null ? `tid == ${o.tid}` : null];
  const params = new Map(p.params.map((q, i) => [q.name, { ...q, index: i }]));
  const entryNeeded = usesEntry(p);
  const saved = new Set<string>();
  let latency = false;
  const names = (n: string): string | undefined => {
    if (n === '$PID') return 'pid';
    if (n === '$COMM') return 'comm';
    if (n === '$retval' && p.type === 'r') return 'retval';
    if (n === '$latency' && entryNeeded) {
      latency = true;
      return `nsecs - @${m}_ts[tid]`;
    }
    if (p.type === 'u') {
      const a = /^arg([1-9]\d*)$/.exec(n);
      if (a) return `arg${Number(a[1]) - 1}`;
    }
    const q = params.get(n);
    if (q && p.type === 'p') return typedValue(q.type, `arg${q.index}`);
    return undefined;
  };
  const entry = (name: string): string | undefined => {
    const q = params.get(name);
    if (!q || !entryNeeded) return undefined;
    saved.add(name);
    return typedValue(q.type, `@${m}_${name}[tid]`);
  };
  const tr = (e: string): string => {
    try {
      return translateCExpr(e, { names, entry, stringSize: o.stringSize }).trim();
    } catch (err) {
      throw new ArgdistProbeError(p.raw, (err as Error).message);
    }
  };
  const keys = p.exprs.map((e, i) => {
    const t = parseCType(p.types[i]!.trim());
    if (!t) throw new ArgdistProbeError(p.raw, `unsupported type '${p.types[i]}'`);
    const x = tr(e);
    return t.kind === 'string' && x === 'comm' ? 'comm' : convertTo(t, x, o.stringSize);
  });
  const filter = p.filter.trim() ? tr(p.filter) : null;
  const update = p.kind === 'hist' ? `@${m} = hist(${keys[0]});` : `@${m}[${keys.join(', ')}] = count();`;
  let prog = '';
  if (entryNeeded) {
    let body = '';
    for (const name of saved) body += `  @${m}_${name}[tid] = arg${params.get(name)!.index};\n`;
    if (latency) body += `  @${m}_ts[tid] = nsecs;\n`;
    const guard = latency ? `@${m}_ts` : `@${m}_${[...saved][0]}`;
    prog += `${attach(true)}${predicate(who)} {\n${body}}\n`;
    let ret = `${attach(false)}${predicate([...who, `has_key(${guard}, tid)`])} {\n`;
    ret += filter ? `  if (${filter}) {\n    ${update}\n  }\n` : `  ${update}\n`;
    for (const name of saved) ret += `  delete(@${m}_${name}, tid);\n`;
    if (latency) ret += `  delete(@${m}_ts, tid);\n`;
    prog += `${ret}}\n`;
    return prog;
  }
  return `${attach(false)}${predicate([...who, filter])} {\n  ${update}\n}\n`;
}

/** The bpftrace program for `probes`. */
export function buildProgram(probes: ArgdistProbe[], o: ArgdistOptions, attach = attachPoint): string {
  let prog = configBlock();
  probes.forEach((p, i) => {
    prog += probeProgram(p, i, o, (entry) => attach(p, entry));
  });
  return prog;
}

/** A count row: the key values (bigint or text) and the count. */
export interface CountRow {
  key: (bigint | string)[];
  count: bigint;
}

function compareKeys(a: (bigint | string)[], b: (bigint | string)[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x === y) continue;
    if (typeof x === 'bigint' && typeof y === 'bigint') return x < y ? -1 : 1;
    return String(x) < String(y) ? -1 : 1;
  }
  return 0;
}

/** One probe's result in an interval: a frequency count (-C) or a histogram (-H). */
export type ArgdistResult =
  | {
      kind: 'freq';
      /** The label, else the specifier (bcc's title line). */
      title: string;
      /** By count ascending (ties by key), the last `-T` of them: the expressions' values and the count. */
      rows: { values: (bigint | string)[]; event: string; count: bigint }[];
    }
  | {
      kind: 'hist';
      /** The label, else the expression (the histogram's value column). */
      title: string;
      /** bcc's log2 buckets of the expression's values. */
      buckets: Log2Bucket[];
    };

/** One interval of argdist (runTool's interval, `--json`'s object). */
export interface ArgdistInterval {
  /** Wall-clock time of the interval, HH:MM:SS (bcc's `[%H:%M:%S]` line). */
  time: string;
  /** One result per specifier: the -C ones first, then the -H ones, each in the order given. */
  probes: ArgdistResult[];
}

/** A count probe's result: rows sorted by count (ascending; ties by key), the last `top` when given. */
export function countResult(p: ArgdistProbe, rows: CountRow[], top: number | null): ArgdistResult {
  let sorted = [...rows].sort((a, b) => (a.count < b.count ? -1 : a.count > b.count ? 1 : compareKeys(a.key, b.key)));
  // Python's sdata[-top:]: -T 0 keeps everything.
  if (top !== null && top !== 0) sorted = sorted.slice(-top);
  return {
    kind: 'freq',
    title: title(p),
    rows: sorted.map((r) => {
      let event: string;
      if (p.isDefaultExpr) event = p.type === 'r' ? `retval = ${r.key[0]}` : 'total calls';
      else event = p.exprs.map((_, i) => `${displayExpr(p, i)} = ${r.key[i]}`).join(', ');
      return { values: r.key, event, count: r.count };
    }),
  };
}

/** bcc's text of one probe's result: a count's title and `\tCOUNT      EVENT` rows, or the log2 histogram. */
export function formatResult(r: ArgdistResult): string {
  if (r.kind === 'hist') return formatLog2Hist(log2SlotsOf(r.buckets), r.title);
  let out = `${r.title}\n${pyFormat('\t%-10s %s', 'COUNT', 'EVENT')}\n`;
  for (const row of r.rows) out += `${pyFormat('\t%-10s %s', row.count.toString(), row.event)}\n`;
  return out;
}

/**
 * bcc's `display()` of a count probe: the title, `\tCOUNT      EVENT`, then the rows sorted by count (ascending;
 * ties by key here), the last `top` when given.
 */
export function formatCounts(p: ArgdistProbe, rows: CountRow[], top: number | null): string {
  return formatResult(countResult(p, rows, top));
}

/** The rows of a count map. */
export function countRows(t: Pick<Tracer, 'readMap'>, index: number): CountRow[] {
  return t.readMap(mapName(index)).entries.map((e) => ({
    key: e.key.map((k) => keyPart(k)),
    count: e.value.kind === 'count' ? e.value.value : 0n,
  }));
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  let probes: ArgdistProbe[];
  let program: string;
  try {
    probes = [
      ...(a.countspecifier ?? []).map((s) => parseArgdistSpec('freq', s)),
      ...(a.histspecifier ?? []).map((s) => parseArgdistSpec('hist', s)),
    ];
    if (probes.length === 0) {
      writer.line('at least one specifier is required');
      return 1;
    }
    program = buildProgram(probes, { pid: a.pid, tid: a.tid, stringSize: a.string_size });
  } catch (e) {
    if (e instanceof ArgdistProbeError) {
      writer.line(e.message);
      return 1;
    }
    throw e;
  }
  if (a.verbose) writer.line(program);
  return runIntervals<ArgdistInterval>({
    tool: 'argdist',
    program,
    writer,
    seconds: a.interval,
    count: a.count,
    durationSec: a.duration,
    read: (t, now) => ({
      time: clockTime(now),
      probes: probes.map((p, i) =>
        p.kind === 'freq'
          ? countResult(p, countRows(t, i), a.top)
          : { kind: 'hist', title: title(p), buckets: log2Buckets(log2Slots(t.readMap(mapName(i)))) },
      ),
    }),
    format: (i) => `[${i.time}]\n${i.probes.map(formatResult).join('')}`,
    clear: a.cumulative ? [] : probes.map((_, i) => mapName(i)),
    // bcc's main loop ends on Ctrl-C (or SIGTERM) without printing the interval under way.
    last: 'skip-interrupted',
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'intervals', run });

/** `bpfscope argdist [flags]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
