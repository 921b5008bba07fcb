/**
 * printf() format strings, parsed at compile time and shared by the analyser (argument checks), the code generator
 * (argument layout) and the runtime (rendering, runtime/output/printf.ts).
 *
 * Syntax and argument rules follow bpftrace v0.26 `src/format_string.cpp`:
 * - a conversion is `%` [-] [+] [space] [#] [0] [width | `*`] [.precision | .`*`] [length: h l L j z t ...]
 *   conversion, the flags in exactly that order (anything else, e.g. `%0-5d`, is literal text); `%%` (with any
 *   flags) prints `%`; a `*` width/precision is ignored and takes no argument;
 * - `%d %i` read the argument as C `int` (low 32 bits, signed), `%hhd` as `char`, `%hd` as `short`,
 *   `%ld %lld %jd %zd %td` as 64-bit; `%u %o %x %X` likewise unsigned; `%c` reads the low byte; `%p` the 64-bit
 *   value; `%s` takes any value (its text form);
 * - ints, bools and pointers are accepted by the integer conversions; `%e %f %g %a %n` are rejected ("unsupported
 *   format specifier"), as are `%r %rx %rh` (they need a buf() argument) and bpftrace's `%gr` (GFP flag names,
 *   not implemented here).
 */
import { type SType, typeName } from './types.js';

/** How a conversion reads its argument. */
export type ArgClass = 'signed' | 'unsigned' | 'char' | 'pointer' | 'string' | 'unsupported';

/** One parsed conversion specification. */
export interface PrintfSpec {
  /** The conversion as written, e.g. `%-08lx`. */
  text: string;
  leftAlign: boolean;
  showSign: boolean;
  spacePrefix: boolean;
  alternate: boolean;
  zeroPad: boolean;
  /** Field width; 0 when absent or `*`. */
  width: number;
  /** Precision; -1 when absent or `*`. */
  precision: number;
  /** Length modifier as written (`hh`, `l`, `ll`, ...), '' when none. */
  length: string;
  /** Conversion: one of `d i o u x X e E f F G a A c s p n` or `gr g rh rx r`. */
  conv: string;
  /** Derived: how the argument is read. */
  argClass: ArgClass;
  /** Derived: bits the integer argument is truncated to (8, 16, 32 or 64). */
  bits: 8 | 16 | 32 | 64;
  /** Derived: numeric base for integer conversions. */
  base: 8 | 10 | 16;
  uppercase: boolean;
}

/**
 * A compiled format string: `fragments` has exactly one more element than `specs`; output is
 * fragments[0], spec 0, fragments[1], ..., spec n-1, fragments[n] (`%%` already turned into `%`).
 */
export interface CompiledPrintf {
  format: string;
  fragments: string[];
  specs: PrintfSpec[];
}

const CONV_CHARS = 'diouxXeEfFGaAcspn%';
const LENGTH_CHARS = 'hlLjzt';

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function classify(conv: string): ArgClass {
  switch (conv) {
    case 'd':
    case 'i':
      return 'signed';
    case 'u':
    case 'o':
    case 'x':
    case 'X':
      return 'unsigned';
    case 'c':
      return 'char';
    case 'p':
      return 'pointer';
    case 's':
      return 'string';
    default:
      return 'unsupported';
  }
}

function lengthBits(length: string): 8 | 16 | 32 | 64 {
  switch (length) {
    case 'hh':
      return 8;
    case 'h':
      return 16;
    case 'l':
    case 'll':
    case 'j':
    case 'z':
    case 't':
      return 64;
    default:
      return 32;
  }
}

/** Try to parse a conversion at `fmt[start]` (a `%`); returns the spec and its end, or null if none matches. */
function parseSpecAt(fmt: string, start: number): { spec: PrintfSpec; end: number } | null {
  let i = start + 1;
  const at = (c: string): boolean => {
    if (fmt[i] !== c) return false;
    i++;
    return true;
  };
  const leftAlign = at('-');
  const showSign = at('+');
  const spacePrefix = at(' ');
  const alternate = at('#');
  const zeroPad = at('0');
  let width = 0;
  if (fmt[i] === '*') i++;
  else if (isDigit(fmt.charCodeAt(i))) {
    const s = i;
    while (isDigit(fmt.charCodeAt(i))) i++;
    width = Number.parseInt(fmt.slice(s, i), 10);
  }
  let precision = -1;
  if (fmt[i] === '.') {
    if (fmt[i + 1] === '*') i += 2;
    else if (isDigit(fmt.charCodeAt(i + 1))) {
      const s = ++i;
      while (isDigit(fmt.charCodeAt(i))) i++;
      precision = Number.parseInt(fmt.slice(s, i), 10);
    }
  }
  const ls = i;
  while (i < fmt.length && LENGTH_CHARS.includes(fmt[i]!)) i++;
  const length = fmt.slice(ls, i);
  let conv: string;
  const c = fmt[i];
  if (c !== undefined && CONV_CHARS.includes(c)) conv = c;
  else if (fmt.startsWith('gr', i)) conv = 'gr';
  else if (c === 'g') conv = 'g';
  else if (fmt.startsWith('rh', i)) conv = 'rh';
  else if (fmt.startsWith('rx', i)) conv = 'rx';
  else if (c === 'r') conv = 'r';
  else return null;
  const end = i + conv.length;
  const spec: PrintfSpec = {
    text: fmt.slice(start, end),
    leftAlign,
    showSign,
    spacePrefix,
    alternate,
    zeroPad,
    width,
    precision,
    length,
    conv,
    argClass: classify(conv),
    bits: lengthBits(length),
    base: conv === 'o' ? 8 : conv === 'x' || conv === 'X' || conv === 'p' ? 16 : 10,
    uppercase: conv === 'X',
  };
  return { spec, end };
}

/** Parse a printf format string (bpftrace's grammar, see the module docstring). Never throws. */
export function compilePrintf(format: string): CompiledPrintf {
  const fragments: string[] = [];
  const specs: PrintfSpec[] = [];
  let frag = '';
  let last = 0;
  let pos = format.indexOf('%');
  while (pos !== -1) {
    const m = parseSpecAt(format, pos);
    if (!m) {
      pos = format.indexOf('%', pos + 1);
      continue;
    }
    frag += format.slice(last, pos);
    last = m.end;
    if (m.spec.conv === '%') frag += '%';
    else {
      fragments.push(frag);
      frag = '';
      specs.push(m.spec);
    }
    pos = format.indexOf('%', m.end);
  }
  fragments.push(frag + format.slice(last));
  return { format, fragments, specs };
}

/**
 * Check printf argument types against the format at compile time. Returns null when they fit, else bpftrace's
 * message: `not enough arguments for format string (1 supplied, 2 expected)`, `too many arguments for format
 * string (...)`, `unable to print none type for specifier: d`, `unsupported format specifier: f`,
 * `unsupported format specifier for type 'string[16]': d`.
 */
export function checkPrintfArgs(compiled: CompiledPrintf, argTypes: SType[]): string | null {
  const { specs } = compiled;
  if (argTypes.length < specs.length) {
    return `not enough arguments for format string (${argTypes.length} supplied, ${specs.length} expected)`;
  }
  if (argTypes.length > specs.length) {
    return `too many arguments for format string (${argTypes.length} supplied, ${specs.length} expected)`;
  }
  for (let i = 0; i < specs.length; i++) {
    const spec = specs[i]!;
    const t = argTypes[i]!;
    if (t.kind === 'none') return `unable to print none type for specifier: ${spec.conv}`;
    if (spec.conv === 'gr') return `unsupported format specifier: gr (GFP flag names are not implemented)`;
    if (spec.conv === 'r' || spec.conv === 'rx' || spec.conv === 'rh') {
      // These take a buf() argument.
      if (t.kind === 'buffer') continue;
      return `unsupported format specifier for type '${typeName(t)}': ${spec.conv}`;
    }
    if (spec.argClass === 'unsupported') return `unsupported format specifier: ${spec.conv}`;
    if (spec.argClass === 'string') continue;
    if (t.kind !== 'int' && t.kind !== 'bool' && t.kind !== 'pointer') {
      return `unsupported format specifier for type '${typeName(t)}': ${spec.conv}`;
    }
  }
  return null;
}
