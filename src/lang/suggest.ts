/**
 * "Did you mean" suggestions for misspelled names (probe types, attach points, functions, builtins, struct fields),
 * ranked by Levenshtein distance (`fastest-levenshtein`). bpftrace gives such hints for probe names; bpfscope gives
 * them wherever a name is looked up in a known set.
 */
import { distance } from 'fastest-levenshtein';

/**
 * The candidates closest to `word` by edit distance: those at the smallest distance found, at most `max` of them
 * (in candidate order), and only if that distance is at most a third of `word`'s length (minimum 1, maximum 5 edits),
 * so a random name suggests nothing.
 */
export function closestNames(word: string, candidates: Iterable<string>, max = 3): string[] {
  const limit = Math.min(5, Math.max(1, Math.floor(word.length / 3)));
  let best = limit + 1;
  let out: string[] = [];
  for (const c of candidates) {
    // Cheap lower bound: the length difference.
    if (Math.abs(c.length - word.length) > best) continue;
    const d = distance(word, c);
    if (d < best) {
      best = d;
      out = [c];
    } else if (d === best && out.length < max) out.push(c);
  }
  return best <= limit ? out : [];
}

/** `Did you mean X?` / `Did you mean one of: X, Y?`, or undefined when there is nothing to suggest. */
export function didYouMean(names: string[]): string | undefined {
  if (names.length === 0) return undefined;
  if (names.length === 1) return `Did you mean ${names[0]}?`;
  return `Did you mean one of: ${names.join(', ')}?`;
}
