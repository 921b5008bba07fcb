/**
 * `bpfscope stackcollapse-perf [options] [FILE...]`: `perf script` output to folded stacks, as FlameGraph's
 * stackcollapse-perf.pl does (same options, byte-identical output). Reads the files in order, or stdin.
 */
import { BpfscopeError } from '../../errors.js';
import { collapsePerfParallel } from '../collapse/perf-parallel.js';
import { type PerfCollapseOptions, PerfCollapser } from '../collapse/perf.js';
import { readInputs } from '../input.js';
import { parseCommandArgs, warnTo, writeOut } from './common.js';

const NAME = 'stackcollapse-perf';

export const USAGE = `USAGE: bpfscope ${NAME} [options] [infile...] > outfile

Collapse "perf script" output into folded stacks (one "frame;frame;... count" line per
distinct stack), as FlameGraph's stackcollapse-perf.pl does.

    --pid                include PID with process names [1]
    --tid                include TID and PID with process names [1]
    --all                all annotations (--kernel --jit)
    --kernel             annotate kernel functions with a _[k]
    --jit                annotate jit functions with a _[j]
    --addrs              include raw addresses where symbols can't be found
    --event-filter=EVENT event name filter (default: the first event seen)
    -h, --help           this message

[1] perf script must emit both PID and TIDs for these to work; eg:
    perf script -F comm,pid,tid,cpu,time,event,ip,sym,dso,trace
`;

/** Command entry point: returns the exit status. Throws BpfscopeError on bad options or unreadable input. */
export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs(NAME, argv, {
    pid: { type: 'boolean' },
    tid: { type: 'boolean' },
    kernel: { type: 'boolean' },
    jit: { type: 'boolean' },
    all: { type: 'boolean' },
    addrs: { type: 'boolean' },
    'event-filter': { type: 'string' },
    inline: { type: 'boolean' },
    context: { type: 'boolean' },
    srcline: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    await writeOut(USAGE);
    return 0;
  }
  for (const o of ['inline', 'context', 'srcline']) {
    if (values[o]) throw new BpfscopeError(`${NAME}: --${o} is not supported (it needs addr2line source lookups)`);
  }
  const opts: PerfCollapseOptions = {
    pid: !!values.pid,
    tid: !!values.tid,
    kernel: !!values.kernel,
    jit: !!values.jit,
    all: !!values.all,
    addrs: !!values.addrs,
    eventFilter: (values['event-filter'] as string | undefined) ?? '',
    warn: warnTo(NAME),
  };
  // One large file: read in parts by several threads (same output); otherwise in order on this one.
  let collapser =
    positionals.length === 1 && positionals[0] !== '-' ? await collapsePerfParallel(positionals[0]!, opts) : null;
  if (collapser === null) {
    const one = new PerfCollapser(opts);
    await readInputs(
      positionals,
      (chunk) => one.push(chunk),
      () => one.endFile(),
    );
    collapser = one;
  }
  for (const piece of collapser.finish()) await writeOut(piece);
  return 0;
}
