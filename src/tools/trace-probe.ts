/**
 * trace's probe specifiers (bcc `tools/trace.py` syntax, described in trace.ts): parsing a probe's text into its
 * kind, target, signature, predicate and format, and the format's conversions (`%d`, `%s`, `%K`, ...).
 */
import { BpfscopeError } from '../errors.js';
import type { CType } from './framework/cexpr.js';

/** A bcc `trace` probe error: bcc's `error in probe '<text>': <reason>`. */
export class TraceProbeError extends BpfscopeError {
  constructor(probe: string, reason: string) {
    super(`error in probe '${probe}': ${reason}`);
    this.name = 'TraceProbeError';
  }
}

/** A printf conversion of bcc's trace format strings and the C type its value is stored as. */
export type TraceConv =
  's' | 'u' | 'd' | 'lu' | 'llu' | 'ld' | 'lld' | 'hu' | 'hd' | 'x' | 'lx' | 'llx' | 'c' | 'K' | 'U';

/** bcc's `Probe.c_type`: the C type a value of each conversion is stored as. */
export const C_TYPE: Record<Exclude<TraceConv, 's'>, CType> = {
  u: { kind: 'int', bits: 32, signed: false },
  d: { kind: 'int', bits: 32, signed: true },
  lu: { kind: 'int', bits: 64, signed: false },
  ld: { kind: 'int', bits: 64, signed: true },
  llu: { kind: 'int', bits: 64, signed: false },
  lld: { kind: 'int', bits: 64, signed: true },
  hu: { kind: 'int', bits: 16, signed: false },
  hd: { kind: 'int', bits: 16, signed: true },
  x: { kind: 'int', bits: 32, signed: false },
  lx: { kind: 'int', bits: 64, signed: false },
  llx: { kind: 'int', bits: 64, signed: false },
  c: { kind: 'int', bits: 8, signed: true },
  K: { kind: 'int', bits: 64, signed: false },
  U: { kind: 'int', bits: 64, signed: false },
};
const CONVS: TraceConv[] = ['llu', 'lld', 'llx', 'lu', 'ld', 'lx', 'hu', 'hd', 's', 'u', 'd', 'x', 'c', 'K', 'U'];

/** A piece of a parsed format string: literal text, or the conversion of the next value. */
export type FormatPart = { text: string } | { conv: TraceConv };

/** One parsed trace probe. */
export interface TraceProbe {
  /** The specifier as given. */
  raw: string;
  type: 'p' | 'r' | 't' | 'u';
  /** Library or binary (`c`, a path); '' for the kernel. */
  library: string;
  /** Function (p/r), `category:event` (t) or `[provider:]probe` (u). */
  target: string;
  /** What the FUNC column shows: the function, the tracepoint's event or the USDT probe name. */
  display: string;
  /** Byte offset into the function (`func+0x12`). */
  offset: number;
  /** The text inside the signature's parentheses, or null. */
  signature: string | null;
  /** The predicate's C text (with its parentheses), or null. */
  filter: string | null;
  /** The format string (without its quotes), split; empty when the probe has no message. */
  format: FormatPart[];
  /** The value expressions (C), one per conversion. */
  values: string[];
}

/** Split a trace format string (bcc's `_parse_types`): `%%` is a literal `%`, the conversions of {@link CONVS}. */
export function parseFormat(fmt: string, probe: string): FormatPart[] {
  const parts: FormatPart[] = [];
  let text = '';
  for (let i = 0; i < fmt.length; i++) {
    if (fmt[i] !== '%') {
      text += fmt[i];
      continue;
    }
    if (fmt[i + 1] === '%') {
      text += '%';
      i++;
      continue;
    }
    const conv = CONVS.find((c) => fmt.startsWith(c, i + 1));
    if (!conv) throw new TraceProbeError(probe, `unrecognized format specifier ${fmt.slice(i, i + 2)}`);
    if (text) parts.push({ text });
    text = '';
    parts.push({ conv });
    i += conv.length;
  }
  if (text) parts.push({ text });
  return parts;
}

/** Split `text` at top-level commas (outside parentheses, brackets and string literals). */
function splitArgs(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      cur += c;
      if (c === '\\') cur += text[++i] ?? '';
      else if (c === quote) quote = null;
      continue;
    }
    if (c === '"' || c === "'") quote = c;
    else if (c === '(' || c === '[') depth++;
    else if (c === ')' || c === ']') depth--;
    else if (c === ',' && depth === 0) {
      out.push(cur);
      cur = '';
      continue;
    }
    cur += c;
  }
  out.push(cur);
  return out.map((s) => s.trim()).filter((s) => s.length > 0);
}

/**
 * Parse one trace probe as bcc's `Probe._parse_probe` does: the specifier runs to the first blank or `(`, then an
 * optional `(signature)`, an optional balanced `(predicate)`, and an optional `"format", arg, ...` action.
 * @throws TraceProbeError with bcc's reasons
 */
export function parseTraceProbe(text: string): TraceProbe {
  const m = /^([^ \t(]+)(\([^(]*\))?(.*)$/s.exec(text);
  if (!m) throw new TraceProbeError(text, 'probe specifier expected');
  const [, spec, sig, restText] = m as unknown as [string, string, string | undefined, string];
  let parts = spec.split(':');
  if (parts.length === 1) parts = ['p', '', parts[0]!];
  else if (parts.length === 2) parts = ['p', parts[0]!, parts[1]!];
  const type = parts[0] === '' ? 'p' : parts[0]!;
  if (!['p', 'r', 't', 'u'].includes(type)) {
    throw new TraceProbeError(text, `probe type must be '', 'p', 't', 'r', or 'u', but got '${parts[0]}'`);
  }
  let offset = 0;
  let last = parts[parts.length - 1]!;
  if (last.includes('+')) {
    const [fn, off = ''] = last.split('+');
    const n = /^0[xX][0-9a-fA-F]+$/.test(off) ? Number.parseInt(off, 16) : /^\d+$/.test(off) ? Number(off) : NaN;
    if (Number.isNaN(n)) {
      throw new TraceProbeError(text, `invalid offset format  '${off}', must be decimal or hexadecimal`);
    }
    last = fn!;
    offset = n;
    parts[parts.length - 1] = last;
  }
  let library: string;
  let target: string;
  let display: string;
  if (type === 't') {
    library = '';
    target = `${parts[1] ?? ''}:${parts[2] ?? ''}`;
    display = parts[2] ?? '';
  } else if (type === 'u') {
    library = parts[1] ?? '';
    target = parts.slice(2).join(':');
    display = target;
  } else {
    library = parts.slice(1, -1).join(':');
    target = last;
    display = last;
  }
  const signature = sig ? sig.slice(1, -1) : null;
  if (signature !== null && (type === 'u' || type === 't')) {
    throw new TraceProbeError(
      text,
      "USDT and tracepoint probes can't have a function signature; use arg1, arg2, ... instead",
    );
  }
  let rest = restText.trimStart();
  let filter: string | null = null;
  if (rest.startsWith('(')) {
    let balance = 1;
    for (let i = 1; i < rest.length; i++) {
      if (rest[i] === '(') balance++;
      if (rest[i] === ')') balance--;
      if (balance === 0) {
        filter = rest.slice(0, i + 1);
        rest = rest.slice(i + 1);
        break;
      }
    }
    if (filter === null) throw new TraceProbeError(text, 'unmatched end of predicate');
  }
  let format: FormatPart[] = [];
  let values: string[] = [];
  const action = rest.trim();
  if (action.length > 0) {
    const fm = /(".*?"),?(.*)/s.exec(action);
    if (!fm) throw new TraceProbeError(text, 'expected format string in "s');
    format = parseFormat(fm[1]!.slice(1, -1), text);
    values = splitArgs(fm[2]!);
    const convs = format.filter((p) => 'conv' in p).length;
    if (convs !== values.length) {
      throw new TraceProbeError(text, `the format has ${convs} conversions but ${values.length} arguments were given`);
    }
  }
  return {
    raw: text,
    type: type as TraceProbe['type'],
    library,
    target,
    display,
    offset,
    signature,
    filter,
    format,
    values,
  };
}
