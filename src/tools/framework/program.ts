/**
 * Small helpers for generating a tool's bpftrace program text: predicates, the config block and string literals.
 */

/** `/a && b/` for the non-empty conditions, or '' when there are none. */
export function predicate(conds: (string | false | null | undefined)[]): string {
  const c = conds.filter((x): x is string => typeof x === 'string' && x.length > 0);
  return c.length ? ` /${c.map((x) => (c.length > 1 ? `(${x})` : x)).join(' && ')}/` : '';
}

/**
 * The config block every tool program starts with: bcc's default hash size (10240 entries) for every map, and
 * the ring buffer size in pages when given. Setting them here keeps the user's BPFTRACE_* environment out of a
 * tool's behaviour.
 */
export function configBlock(opts: { maxMapKeys?: number; ringPages?: number } = {}): string {
  const items = [`max_map_keys = ${opts.maxMapKeys ?? 10240}`];
  if (opts.ringPages) items.push(`perf_rb_pages = ${opts.ringPages}`);
  return `config = { ${items.join('; ')} }\n`;
}

/** A bpftrace string literal for `s` (quotes and backslashes escaped, control bytes as octal). */
export function stringLiteral(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (c < 0x20 || c === 0x7f) out += `\\${c.toString(8).padStart(3, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/**
 * A `printf` statement that emits one event record (see output.ts): `fields` are `[conversion, expression]`
 * pairs, e.g. `[['%d', 'pid'], ['%s', 'comm']]`, joined by the `\x1f` field separator and ended by `\n`. A
 * free-form string (a comm or a path) belongs last.
 */
export function eventPrintf(fields: readonly (readonly [string, string])[]): string {
  const fmt = fields.map(([c]) => c).join('\\x1f');
  return `printf("${fmt}\\n", ${fields.map(([, e]) => e).join(', ')});`;
}
