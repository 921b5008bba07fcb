/**
 * Glob patterns for attach points and `-l` searches: `*` matches any run of characters (`:` included, as in
 * bpftrace's wildcard matcher, `src/util/wildcard.cpp`), `?` one character, `[abc]` / `[a-z]` / `[!a]` one character
 * of (or not of) a set. Everything else is literal.
 */

/** Whether `s` contains a glob metacharacter (`*`, `?`, or a `[...]` set). */
export function hasWildcard(s: string): boolean {
  return s.includes('*') || s.includes('?') || /\[[^\]]*\]/.test(s);
}

/** Compile a glob to an anchored RegExp (see the module docs for the syntax). */
export function globToRegExp(glob: string): RegExp {
  let re = '^';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else if (c === '[') {
      const close = glob.indexOf(']', i + 2);
      if (close < 0) {
        re += '\\[';
        continue;
      }
      let body = glob.slice(i + 1, close);
      const negate = body.startsWith('!') || body.startsWith('^');
      if (negate) body = body.slice(1);
      re += `[${negate ? '^' : ''}${body.replace(/[\\\]^]/g, '\\$&')}]`;
      i = close;
    } else re += c.replace(/[.+^${}()|\\/]/g, '\\$&');
  }
  return new RegExp(`${re}$`, 's');
}

/** Whether `s` matches the glob `pattern` entirely. */
export function globMatch(pattern: string, s: string): boolean {
  return globToRegExp(pattern).test(s);
}
