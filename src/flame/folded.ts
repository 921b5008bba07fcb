/**
 * Folded stack lines ("frame;frame;frame count", optionally with a second count for differential graphs), parsed
 * the way flamegraph.pl and difffolded.pl read them: the count is the last whitespace-separated field when it is
 * a decimal number (`/^(.*)\s+?(\d+(?:\.\d*)?)$/`), and only one whitespace character is taken off the stack
 * before it. Lines that do not end in a count are invalid (flamegraph.pl ignores them and says how many).
 */
import { perlNum } from './perl.js';

/** Perl's \s on character strings (flame graph input is read as UTF-8 text). */
export function isPerlSpace(c: number): boolean {
  return (
    c === 32 ||
    (c >= 9 && c <= 13) ||
    c === 0x85 ||
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000
  );
}

/**
 * Splits `line[0, end)` at its trailing count: returns the index where the count starts (the stack is
 * `line[0, index - 1)`), or -1 when the line does not end in whitespace + a decimal number.
 *
 * Why a scan equals the regex: the number must start right after a whitespace character and run to the end, so it
 * is the whole trailing run of digits and dots; the greedy (.*) then leaves exactly one whitespace character for
 * \s+?.
 */
export function countStart(line: string, end = line.length): number {
  let j = end;
  while (j > 0) {
    const c = line.charCodeAt(j - 1);
    if ((c >= 48 && c <= 57) || c === 46) j--;
    else break;
  }
  if (j === end || j === 0 || !isPerlSpace(line.charCodeAt(j - 1))) return -1;
  // The run must be \d+(\.\d*)?
  const first = line.charCodeAt(j);
  if (first === 46) return -1;
  let dots = 0;
  for (let k = j; k < end; k++) if (line.charCodeAt(k) === 46 && ++dots > 1) return -1;
  return j;
}

/** A parsed folded line. `samples2` is set for differential input (two count columns). */
export interface FoldedLine {
  stack: string;
  samples: number;
  samples2?: number;
}

/** Parses one folded line (without "\n"), or returns null when it has no count. */
export function parseFoldedLine(line: string): FoldedLine | null {
  const j = countStart(line);
  if (j < 0) return null;
  const samples = Number(line.slice(j));
  const stackEnd = j - 1;
  const j2 = countStart(line, stackEnd);
  if (j2 < 0) return { stack: line.slice(0, stackEnd), samples };
  return { stack: line.slice(0, j2 - 1), samples: Number(line.slice(j2, stackEnd)), samples2: samples };
}

/** Options of difffolded.pl. */
export interface DiffFoldedOptions {
  /** `-n`: scale the first profile's counts to the second's total (integer truncation, as the Perl does). */
  normalize?: boolean;
  /** `-s`: replace hexadecimal numbers ("0x7f3a...") by "0x..." so that stacks differing only in addresses merge. */
  stripHex?: boolean;
}

/**
 * difffolded.pl: merges two folded profiles into differential input ("stack count1 count2"), for
 * `flamegraph` to colour by change. Invalid lines count under an empty stack, as in the Perl script (which adds
 * undefined values). Output is sorted by stack (the Perl script prints in hash order, which is random).
 */
export function diffFolded(lines1: Iterable<string>, lines2: Iterable<string>, opts: DiffFoldedOptions = {}): string {
  const counts = new Map<string, [number, number]>();
  const read = (lines: Iterable<string>, col: 0 | 1): number => {
    let total = 0;
    for (const line of lines) {
      const j = countStart(line);
      let stack = j < 0 ? '' : line.slice(0, j - 1);
      const count = j < 0 ? 0 : Number(line.slice(j));
      if (opts.stripHex) stack = stack.replace(/0x[0-9a-fA-F]+/g, '0x...');
      let c = counts.get(stack);
      if (!c) {
        c = [0, 0];
        counts.set(stack, c);
      }
      c[col] += count;
      total += count;
    }
    return total;
  };
  const total1 = read(lines1, 0);
  const total2 = read(lines2, 1);
  const out: string[] = [];
  for (const stack of [...counts.keys()].sort()) {
    const c = counts.get(stack)!;
    let c1 = c[0];
    if (opts.normalize && total1 !== total2) c1 = Math.trunc((c1 * total2) / total1);
    out.push(`${stack} ${perlNum(c1)} ${perlNum(c[1])}\n`);
  }
  return out.join('');
}
