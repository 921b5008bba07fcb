/** Parsing bcc histogram sections out of tool output, for the scheduler tool tests. */

export interface ParsedSection {
  /** The text after `<header> = ` */
  label: string;
  /** [low, high, count] rows */
  rows: [number, number, number][];
}

/** The `\n<header> = <label>` sections of bcc's print_log2_hist output, with their rows. */
export function parseSections(text: string, header: string): ParsedSection[] {
  const out: ParsedSection[] = [];
  let cur: ParsedSection | null = null;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${header} = `)) {
      cur = { label: line.slice(header.length + 3), rows: [] };
      out.push(cur);
      continue;
    }
    const m = /^ +(\d+) -> (\d+) +: (\d+) +\|/.exec(line);
    if (m && cur) cur.rows.push([Number(m[1]), Number(m[2]), Number(m[3])]);
  }
  return out;
}

/** Total count of a section. */
export function total(s: ParsedSection): number {
  return s.rows.reduce((a, r) => a + r[2], 0);
}
