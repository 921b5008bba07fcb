/**
 * Python's `textwrap.wrap(text, width)` with its defaults (break on hyphens, break long words, drop whitespace
 * at line ends), which argparse uses for option help. Source: CPython 3.11 `Lib/textwrap.py` (`TextWrapper`,
 * `wordsep_re`, `_wrap_chunks`, `_handle_long_word`). ASCII text is assumed (Python's `\w` is Unicode-aware).
 */

/** TextWrapper.wordsep_re: whitespace runs, em-dashes between words, and words split after inner hyphens. */
const LETTER = String.raw`[^\d\W]`;
const WORD_PUNCT = String.raw`[\w!"'&.,?]`;
const WORDSEP = new RegExp(
  String.raw`(\s+|(?<=${WORD_PUNCT})-{2,}(?=\w)|\S+?(?:-(?:(?<=${LETTER}{2}-)|(?<=${LETTER}-${LETTER}-))(?=${LETTER}-?${LETTER})|(?=\s|$)|(?<=${WORD_PUNCT})(?=-{2,}\w)))`,
);

function chunksOf(text: string): string[] {
  return text.split(WORDSEP).filter((c) => c !== '' && c !== undefined);
}

/**
 * Wrap `text` (whitespace already collapsed by the caller, as argparse does) into lines of at most `width`
 * characters, exactly as `textwrap.wrap(text, width)` does.
 */
export function wrap(text: string, width: number): string[] {
  // TextWrapper first expands tabs and turns every whitespace character into a space.
  const chunks = chunksOf(text.replace(/\t/g, '        ').replace(/[\n\v\f\r]/g, ' ')).reverse();
  const lines: string[] = [];
  while (chunks.length) {
    const cur: string[] = [];
    let curLen = 0;
    if (lines.length && chunks[chunks.length - 1]!.trim() === '') chunks.pop();
    while (chunks.length) {
      const l = chunks[chunks.length - 1]!.length;
      if (curLen + l <= width) {
        cur.push(chunks.pop()!);
        curLen += l;
      } else break;
    }
    if (chunks.length && chunks[chunks.length - 1]!.length > width) {
      // _handle_long_word with break_long_words and break_on_hyphens.
      const spaceLeft = Math.max(width - curLen, 1);
      const chunk = chunks[chunks.length - 1]!;
      let end = spaceLeft;
      if (chunk.length > spaceLeft) {
        const hyphen = chunk.lastIndexOf('-', spaceLeft - 1);
        if (hyphen > 0 && /[^-]/.test(chunk.slice(0, hyphen))) end = hyphen + 1;
      }
      cur.push(chunk.slice(0, end));
      chunks[chunks.length - 1] = chunk.slice(end);
    }
    if (cur.length && cur[cur.length - 1]!.trim() === '') cur.pop();
    if (cur.length) lines.push(cur.join(''));
  }
  return lines;
}
