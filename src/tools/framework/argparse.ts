/**
 * Command-line parsing and `-h` help text the way Python's argparse does them, so each tool keeps its bcc (Python)
 * tool's flags, usage line, help layout and error messages. Source: CPython 3.11 `Lib/argparse.py`
 * (`HelpFormatter`, `RawDescriptionHelpFormatter`, `ArgumentParser._parse_known_args`) — Debian 12's Python, which
 * is what `bpfcc-tools` runs with ("options:" heading, `-p PID, --pid PID` invocations).
 *
 * What is modelled: options with zero or one argument (`store_true`, a value, `append`, `nargs='?'` with a
 * `const`), `nargs=REMAINDER`
 * options (`--exec CMD...`), optional positionals (`nargs='?'`), `-h/--help` added first, suppressed options
 * (hidden from help and usage), combined short flags (`-mT`), attached values (`-p181`, `--pid=181`), unique
 * prefixes of long options, negative numbers as values, `--`. Help width follows argparse:
 * `$COLUMNS` (else the terminal's width, else 80) minus 2.
 */
import { wrap } from './textwrap.js';

/** What an option does with its argument(s). */
export type OptionKind = 'flag' | 'value' | 'append' | 'remainder' | 'optional';

export interface OptionSpec {
  /** Option strings in argparse's order, e.g. `['-p', '--pid']`. */
  flags: readonly string[];
  kind: OptionKind;
  /** Attribute name; default as argparse: the first long option without `--`, `-` → `_` (else the short one). */
  dest?: string;
  metavar?: string;
  /** Help text; null hides the option (argparse.SUPPRESS). */
  help: string | null;
  /** Converter for the value(s); throw to report "invalid <typeName> value: '<text>'". */
  type?: ValueType;
  default?: unknown;
  /** `kind: 'optional'` (argparse `nargs='?'`): the value when the option is given without an argument. */
  const?: unknown;
  /**
   * Name of an argparse mutually exclusive group (`add_mutually_exclusive_group()`): adjacent options of one
   * group show as `[-4 | -6]` in the usage, and giving two of them is an error.
   */
  group?: string;
}

export interface PositionalSpec {
  name: string;
  help: string;
  type?: ValueType;
  default?: unknown;
  /** A required positional (argparse's default `nargs=None`): shown bare in the usage line, missing is an error. */
  required?: boolean;
  /** argparse `nargs='+'`: one or more values (an array), taken from the first run of positional arguments. */
  nargs?: '+';
  /** Name shown in usage, help and errors (argparse `metavar`); the value is stored under `name`. */
  metavar?: string;
}

function posLabel(p: PositionalSpec): string {
  return p.metavar ?? p.name;
}

/** A value converter: `name` is what argparse prints in "invalid NAME value" (e.g. `int`). */
export interface ValueType<T = unknown> {
  name: string;
  convert: (text: string) => T;
}

/** argparse's `type=int`: Python's `int()` syntax (surrounding whitespace, a sign, `_` between digits). */
export const INT: ValueType<number> = {
  name: 'int',
  convert: (text: string) => {
    const t = text.trim();
    if (!/^[+-]?\d+(_\d+)*$/.test(t)) throw new Error('not an int');
    const n = Number(t.replace(/_/g, ''));
    if (!Number.isSafeInteger(n)) throw new Error('out of range');
    return n;
  },
};

export interface ParserSpec {
  prog: string;
  description?: string;
  /** Text after the options, printed as is (RawDescriptionHelpFormatter), e.g. bcc's "examples:" block. */
  epilog?: string;
  /** true: description printed as is (RawDescriptionHelpFormatter); false: re-wrapped (HelpFormatter). */
  raw?: boolean;
  options: readonly OptionSpec[];
  positionals?: readonly PositionalSpec[];
}

/** Parsed values by dest. Flags default to false, appends to null/array, values to their default or null. */
export type Parsed = Record<string, unknown>;

/* Typed options: the type of `parseArgs(SPEC, argv)` computed from a spec declared `as const satisfies
   ParserSpec`, with argparse's dest names (first long flag, `-` → `_`) and value types (a flag is a boolean; a
   value is its converter's result, or the string; null when absent and without a default; an append is an array
   or null; a remainder is a string array or null; a required positional is its value). A spec typed plainly as ParserSpec gives the loose Parsed. */
type Snake<S extends string> = S extends `${infer A}-${infer B}` ? `${A}_${Snake<B>}` : S;
type FirstLong<F> = F extends readonly [infer H extends string, ...infer R]
  ? H extends `--${infer N}`
    ? N
    : FirstLong<R>
  : never;
type StripDashes<S extends string> = S extends `-${infer R}` ? StripDashes<R> : S;
type DestName<O> = O extends { dest: infer D extends string }
  ? D
  : O extends { flags: infer F }
    ? [FirstLong<F>] extends [never]
      ? F extends readonly [infer H extends string, ...unknown[]]
        ? Snake<StripDashes<H>>
        : never
      : Snake<FirstLong<F>>
    : never;
type Converted<O> = O extends { type: ValueType<infer T> } ? T : string;
type Widen<T> = T extends string ? string : T extends number ? number : T extends boolean ? boolean : T;
type OrDefault<O, T> = O extends { default: infer D } ? T | Widen<D> : T | null;
type OptionValue<O> = O extends { kind: 'flag' }
  ? O extends { default: infer D }
    ? boolean | Widen<D>
    : boolean
  : O extends { kind: 'append' }
    ? Converted<O>[] | null
    : O extends { kind: 'remainder' }
      ? string[] | null
      : O extends { kind: 'optional' }
        ? OrDefault<O, Converted<O> | (O extends { const: infer C } ? Widen<C> : null)>
        : OrDefault<O, Converted<O>>;
type PositionalValue<P> = P extends { nargs: '+' }
  ? Converted<P>[]
  : P extends { required: true }
    ? Converted<P>
    : OrDefault<P, Converted<P>>;
type Simplify<T> = { [K in keyof T]: T[K] } & {};
/** The parsed options of spec `S` (see above). */
export type OptionsOf<S extends ParserSpec> = ParserSpec extends S
  ? Parsed
  : Simplify<
      { [O in S['options'][number] as DestName<O>]: OptionValue<O> } & {
        [P in NonNullable<S['positionals']>[number] as P['name']]: PositionalValue<P>;
      } & { help: boolean }
    >;

/** A usage error: print `usage` + `prog: error: message` to stderr and exit 2 (argparse's behaviour). */
export class ArgError extends Error {
  constructor(
    message: string,
    readonly usage: string,
    readonly prog: string,
  ) {
    super(message);
    this.name = 'ArgError';
  }

  /** The full text argparse prints to stderr. */
  text(): string {
    // print_usage() goes through format_help(), which leaves a single newline after the usage.
    return `${this.usage.trimEnd()}\n${this.prog}: error: ${this.message}\n`;
  }
}

/** `-h`/`--help` was given: print `help` to stdout, exit 0. */
export class HelpRequested extends Error {
  constructor(readonly help: string) {
    super('help requested');
    this.name = 'HelpRequested';
  }
}

const HELP_OPTION: OptionSpec = {
  flags: ['-h', '--help'],
  kind: 'flag',
  dest: 'help',
  help: 'show this help message and exit',
};

function destOf(o: OptionSpec): string {
  if (o.dest) return o.dest;
  const long = o.flags.find((f) => f.startsWith('--'));
  return (long ? long.slice(2) : o.flags[0]!.replace(/^-+/, '')).replace(/-/g, '_');
}

function metavarOf(o: OptionSpec): string {
  return o.metavar ?? destOf(o).toUpperCase();
}

/** The help width argparse uses: `shutil.get_terminal_size().columns - 2`. */
export function helpWidth(env: NodeJS.ProcessEnv = process.env): number {
  const cols = Number.parseInt(env.COLUMNS ?? '', 10);
  if (cols > 0) return cols - 2;
  const tty = process.stdout.isTTY ? process.stdout.columns : 0;
  return (tty && tty > 0 ? tty : 80) - 2;
}

/** argparse's `format_help()` for a parser built from `spec`. */
export function formatHelp(spec: ParserSpec, width = helpWidth()): string {
  const options = [HELP_OPTION, ...spec.options].filter((o) => o.help !== null);
  const positionals = spec.positionals ?? [];
  const maxHelpPosition = Math.min(24, Math.max(width - 20, 4));
  const invocation = (o: OptionSpec): string => {
    if (o.kind === 'flag') return o.flags.join(', ');
    const arg = o.kind === 'remainder' ? '...' : o.kind === 'optional' ? `[${metavarOf(o)}]` : metavarOf(o);
    return o.flags.map((f) => `${f} ${arg}`).join(', ');
  };
  // _action_max_length over every shown argument, at the section indent (2).
  let maxLen = 0;
  for (const p of positionals) maxLen = Math.max(maxLen, posLabel(p).length + 2);
  for (const o of options) maxLen = Math.max(maxLen, invocation(o).length + 2);
  const helpPosition = Math.min(maxLen + 2, maxHelpPosition);
  const helpWidthCols = Math.max(width - helpPosition, 11);
  const actionWidth = helpPosition - 2 - 2;
  const item = (header: string, help: string): string => {
    let s: string;
    let indentFirst: number;
    if (header.length <= actionWidth) {
      s = `  ${header.padEnd(actionWidth)}  `;
      indentFirst = 0;
    } else {
      s = `  ${header}\n`;
      indentFirst = helpPosition;
    }
    const lines = wrap(help.replace(/\s+/g, ' ').trim().replace(/%%/g, '%'), helpWidthCols);
    if (lines.length === 0) return s.endsWith('\n') ? s : `${s}\n`;
    s += `${' '.repeat(indentFirst)}${lines[0]}\n`;
    for (const l of lines.slice(1)) s += `${' '.repeat(helpPosition)}${l}\n`;
    return s;
  };
  let out = formatUsage(spec, width);
  if (spec.description) {
    out += spec.raw
      ? `${spec.description}\n\n`
      : `${wrap(spec.description.replace(/\s+/g, ' ').trim(), Math.max(width, 11)).join('\n')}\n\n`;
  }
  if (positionals.length) {
    out += '\npositional arguments:\n';
    for (const p of positionals) out += item(posLabel(p), p.help);
    out += '\n';
  }
  out += '\noptions:\n';
  for (const o of options) out += item(invocation(o), o.help!);
  out += '\n';
  if (spec.epilog) out += `${spec.epilog}\n\n`;
  // format_help: collapse runs of 3+ newlines, strip newlines at both ends, end with one.
  return `${out.replace(/\n\n\n+/g, '\n\n').replace(/^\n+|\n+$/g, '')}\n`;
}

/** argparse's usage text, `usage: prog [-h] ...\n\n`, wrapped as `_format_usage` wraps it. */
export function formatUsage(spec: ParserSpec, width = helpWidth()): string {
  const prefix = 'usage: ';
  const prog = spec.prog;
  const shown = [HELP_OPTION, ...spec.options].filter((o) => o.help !== null);
  const optParts: string[] = [];
  shown.forEach((o, k) => {
    const first = o.flags[0]!;
    const part =
      o.kind === 'flag'
        ? first
        : `${first} ${o.kind === 'remainder' ? '...' : o.kind === 'optional' ? `[${metavarOf(o)}]` : metavarOf(o)}`;
    // A mutually exclusive group is one usage part: `[-4 | -6]`.
    if (o.group !== undefined && k > 0 && shown[k - 1]!.group === o.group)
      optParts[optParts.length - 1] = `${optParts[optParts.length - 1]!.slice(0, -1)} | ${part}]`;
    else optParts.push(`[${part}]`);
  });
  const posParts = (spec.positionals ?? []).flatMap((p) =>
    p.nargs === '+' ? [posLabel(p), `[${posLabel(p)} ...]`] : [p.required ? posLabel(p) : `[${posLabel(p)}]`],
  );
  const usage = [prog, ...optParts, ...posParts].join(' ');
  const textWidth = width;
  if (prefix.length + usage.length <= textWidth) return `${prefix}${usage}\n\n`;
  const getLines = (parts: string[], indent: string, withPrefix: boolean): string[] => {
    const lines: string[] = [];
    let line: string[] = [];
    let lineLen = withPrefix ? prefix.length - 1 : indent.length - 1;
    for (const part of parts) {
      if (lineLen + 1 + part.length > textWidth && line.length) {
        lines.push(indent + line.join(' '));
        line = [];
        lineLen = indent.length - 1;
      }
      line.push(part);
      lineLen += part.length + 1;
    }
    if (line.length) lines.push(indent + line.join(' '));
    if (withPrefix) lines[0] = lines[0]!.slice(indent.length);
    return lines;
  };
  let lines: string[];
  if (prefix.length + prog.length <= 0.75 * textWidth) {
    const indent = ' '.repeat(prefix.length + prog.length + 1);
    if (optParts.length) {
      lines = getLines([prog, ...optParts], indent, true);
      lines.push(...getLines(posParts, indent, false));
    } else if (posParts.length) {
      lines = getLines([prog, ...posParts], indent, true);
    } else lines = [prog];
  } else {
    const indent = ' '.repeat(prefix.length);
    lines = getLines([...optParts, ...posParts], indent, false);
    if (lines.length > 1) lines = [...getLines(optParts, indent, false), ...getLines(posParts, indent, false)];
    lines = [prog, ...lines];
  }
  return `${prefix}${lines.join('\n')}\n\n`;
}

const NEGATIVE_NUMBER = /^-\d+$|^-\d*\.\d+$/;

/**
 * Parse `argv` against `spec` as argparse's `parse_args` does.
 * @throws HelpRequested for -h/--help; ArgError for a usage error (with argparse's message text)
 */
export function parseArgs<S extends ParserSpec>(spec: S, argv: string[]): OptionsOf<S> {
  const options = [HELP_OPTION, ...spec.options];
  const positionals = spec.positionals ?? [];
  // the usage line only when there is an error to print: its width comes from process.stdout, whose creation
  // loads Node's stream modules (~40 ms of start-up that a tool writing through its own sink never needs)
  const fail = (msg: string): never => {
    throw new ArgError(msg, formatUsage(spec), spec.prog);
  };
  const result: Parsed = {};
  for (const o of options) {
    const d = destOf(o);
    result[d] = o.kind === 'flag' ? (o.default ?? false) : (o.default ?? null);
  }
  for (const p of positionals) result[p.name] = p.default ?? null;
  const byFlag = new Map<string, OptionSpec>();
  for (const o of options) for (const f of o.flags) byFlag.set(f, o);
  const numericOptions = options.some((o) => o.flags.some((f) => NEGATIVE_NUMBER.test(f)));
  const looksLikeOption = (t: string): boolean =>
    t.length > 1 && t.startsWith('-') && !(NEGATIVE_NUMBER.test(t) && !numericOptions);
  const optName = (o: OptionSpec): string => o.flags.join('/');
  const groupSeen = new Map<string, OptionSpec>();
  /** argparse's mutually exclusive check: another option of `o`'s group was given already. */
  const checkGroup = (o: OptionSpec): void => {
    if (o.group === undefined) return;
    const prev = groupSeen.get(o.group);
    if (prev && prev !== o) fail(`argument ${optName(o)}: not allowed with argument ${optName(prev)}`);
    groupSeen.set(o.group, o);
  };
  const convert = (t: ValueType | undefined, text: string, what: string): unknown => {
    if (!t) return text;
    try {
      return t.convert(text);
    } catch (e) {
      const detail = (e as Error).message;
      return fail(
        detail.startsWith('argparse:')
          ? `${what}: ${detail.slice(9).trim()}`
          : `${what}: invalid ${t.name} value: '${text}'`,
      );
    }
  };
  const store = (o: OptionSpec, value: string): void => {
    const v = convert(o.type, value, `argument ${optName(o)}`);
    const d = destOf(o);
    if (o.kind === 'append') result[d] = [...((result[d] as unknown[] | null) ?? []), v];
    else result[d] = v;
  };
  const findLong = (name: string): OptionSpec => {
    const exact = byFlag.get(name);
    if (exact) return exact;
    const matches = [...byFlag.keys()].filter((f) => f.startsWith('--') && f.startsWith(name));
    if (matches.length === 1) return byFlag.get(matches[0]!)!;
    if (matches.length > 1) {
      fail(`ambiguous option: ${name} could match ${matches.join(', ')}`);
    }
    return fail(`unrecognized arguments: ${name}`);
  };
  const extras: string[] = [];
  const posValues: string[] = [];
  /** Where the first run of positional arguments ended (an option followed it), for nargs='+'. */
  let firstRunEnd: number | null = null;
  let i = 0;
  let help = false;
  while (i < argv.length) {
    const tok = argv[i]!;
    i++;
    if (tok === '--') {
      posValues.push(...argv.slice(i));
      break;
    }
    if (!looksLikeOption(tok)) {
      posValues.push(tok);
      continue;
    }
    if (posValues.length && firstRunEnd === null) firstRunEnd = posValues.length;
    if (tok.startsWith('--')) {
      const eq = tok.indexOf('=');
      const name = eq > 0 ? tok.slice(0, eq) : tok;
      let o: OptionSpec;
      try {
        o = findLong(name);
      } catch (e) {
        if (e instanceof ArgError && e.message.startsWith('unrecognized')) {
          extras.push(tok);
          continue;
        }
        throw e;
      }
      if (o === HELP_OPTION) {
        help = true;
        break;
      }
      checkGroup(o);
      if (o.kind === 'flag') {
        if (eq > 0) fail(`argument ${optName(o)}: ignored explicit argument '${tok.slice(eq + 1)}'`);
        result[destOf(o)] = true;
      } else if (o.kind === 'remainder') {
        const rest = eq > 0 ? [tok.slice(eq + 1), ...argv.slice(i)] : argv.slice(i);
        result[destOf(o)] = rest;
        i = argv.length;
      } else if (eq > 0) store(o, tok.slice(eq + 1));
      else if (o.kind === 'optional') {
        if (i < argv.length && !looksLikeOption(argv[i]!)) store(o, argv[i++]!);
        else result[destOf(o)] = o.const ?? null;
      } else {
        if (i >= argv.length || looksLikeOption(argv[i]!)) fail(`argument ${optName(o)}: expected one argument`);
        store(o, argv[i]!);
        i++;
      }
      continue;
    }
    // A cluster of short options: -mT, -p181, -p 181.
    let j = 1;
    while (j < tok.length) {
      const o = byFlag.get(`-${tok[j]}`);
      if (!o) {
        extras.push(j === 1 ? tok : `-${tok.slice(j)}`);
        break;
      }
      j++;
      if (o === HELP_OPTION) {
        help = true;
        break;
      }
      checkGroup(o);
      if (o.kind === 'flag') {
        result[destOf(o)] = true;
        continue;
      }
      const attached = tok.slice(j).replace(/^=/, '');
      if (o.kind === 'remainder') {
        result[destOf(o)] = attached ? [attached, ...argv.slice(i)] : argv.slice(i);
        i = argv.length;
      } else if (attached) store(o, attached);
      else if (o.kind === 'optional') {
        if (i < argv.length && !looksLikeOption(argv[i]!)) store(o, argv[i++]!);
        else result[destOf(o)] = o.const ?? null;
      } else {
        if (i >= argv.length || looksLikeOption(argv[i]!)) fail(`argument ${optName(o)}: expected one argument`);
        store(o, argv[i]!);
        i++;
      }
      break;
    }
    if (help) break;
  }
  if (help) throw new HelpRequested(formatHelp(spec));
  for (const [k, v] of posValues.entries()) {
    const p = positionals[k];
    if (!p) {
      extras.push(...posValues.slice(k));
      break;
    }
    if (p.nargs === '+') {
      const end = Math.max(firstRunEnd ?? posValues.length, k + 1);
      result[p.name] = posValues.slice(k, end).map((x) => convert(p.type, x, `argument ${posLabel(p)}`));
      extras.push(...posValues.slice(end));
      break;
    }
    result[p.name] = convert(p.type, v, `argument ${p.name}`);
  }
  const missing = positionals.slice(posValues.length).filter((p) => p.required || p.nargs === '+');
  if (missing.length) fail(`the following arguments are required: ${missing.map(posLabel).join(', ')}`);
  if (extras.length) fail(`unrecognized arguments: ${extras.join(' ')}`);
  return result as OptionsOf<S>;
}
