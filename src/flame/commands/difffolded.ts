/**
 * `bpfscope difffolded [-n] [-s] FOLDED1 FOLDED2`: two folded profiles to differential input
 * ("stack count1 count2" lines) for `bpfscope flamegraph`, as FlameGraph's difffolded.pl does; lines are
 * sorted by stack (the Perl script prints them in random hash order).
 */
import { readFileSync } from 'node:fs';
import { BpfscopeError } from '../../errors.js';
import { diffFolded } from '../folded.js';
import { parseCommandArgs, writeOut } from './common.js';

const NAME = 'difffolded';

export const USAGE = `USAGE: bpfscope ${NAME} [-hns] folded1 folded2 | bpfscope flamegraph > diff2.svg
    -h       # help message
    -n       # normalize sample counts
    -s       # strip hex numbers (addresses)
See the stackcollapse commands for generating folded files.
Also consider flipping the files and hues to highlight reduced paths:
bpfscope ${NAME} folded2 folded1 | bpfscope flamegraph --negate > diff1.svg
`;

/** Command entry point: returns the exit status. Throws BpfscopeError for bad usage or unreadable files. */
export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs(NAME, argv, {
    normalize: { type: 'boolean', short: 'n' },
    'strip-hex': { type: 'boolean', short: 's' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    await writeOut(USAGE);
    return 0;
  }
  if (positionals.length !== 2) {
    throw new BpfscopeError(`${NAME}: expected two folded files, got ${positionals.length}`, {
      hint: `usage: bpfscope ${NAME} [-ns] folded1 folded2`,
    });
  }
  const [a, b] = positionals.map(readLines) as [string[], string[]];
  const text = diffFolded(a, b, { normalize: !!values.normalize, stripHex: !!values['strip-hex'] });
  await writeOut(text);
  return 0;
}

function readLines(file: string): string[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new BpfscopeError(`${NAME}: Can't read ${file}${code === 'ENOENT' ? ': no such file' : ''}`);
  }
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}
