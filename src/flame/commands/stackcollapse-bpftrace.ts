/**
 * `bpfscope stackcollapse-bpftrace [FILE...]`: bpftrace/bpfscope map output keyed by stacks
 * (`@[kstack]`, `@[kstack, comm]`, `@[kstack, ustack, comm]`, ...) to folded stacks, as FlameGraph's
 * stackcollapse-bpftrace.pl does. Reads the files in order, or stdin.
 */
import { BpftraceCollapser } from '../collapse/bpftrace.js';
import { readInputs } from '../input.js';
import { parseCommandArgs, writeOut } from './common.js';

const NAME = 'stackcollapse-bpftrace';

export const USAGE = `USAGE: bpfscope ${NAME} [infile...] > outfile

Collapse bpftrace (or bpfscope) map output keyed by stacks into folded stacks, one
"frame;frame;... count" line per map entry, root first, e.g. from:
    bpfscope -e 'profile:hz:99 { @[kstack, ustack, comm] = count(); }' > out.txt

    -h, --help    this message
`;

/** Command entry point: returns the exit status. */
export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs(NAME, argv, { help: { type: 'boolean', short: 'h' } });
  if (values.help) {
    await writeOut(USAGE);
    return 0;
  }
  const collapser = new BpftraceCollapser();
  await readInputs(
    positionals,
    (chunk) => collapser.push(chunk),
    () => collapser.endFile(),
  );
  for (const piece of collapser.finish()) await writeOut(piece);
  return 0;
}
