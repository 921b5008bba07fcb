/**
 * Command-line plumbing shared by the flame graph commands: option parsing with Node's `util.parseArgs` turned
 * into one-line BpfscopeErrors, number validation with Getopt::Long's rules, and stderr warnings.
 */
import { parseArgs } from 'node:util';
import { BpfscopeError } from '../../errors.js';

/** parseArgs' option table. */
export type OptionSpec = Record<
  string,
  { type: 'string' | 'boolean'; short?: string; multiple?: boolean; default?: string | boolean }
>;

export interface ParsedArgs {
  values: Record<string, string | boolean | string[] | boolean[] | undefined>;
  positionals: string[];
}

/**
 * Parses `argv` against `spec` (long options as `--name value` or `--name=value`). Unknown options and missing
 * values become a BpfscopeError naming the command and pointing at `--help`.
 */
export function parseCommandArgs(command: string, argv: string[], spec: OptionSpec): ParsedArgs {
  try {
    const { values, positionals } = parseArgs({ args: argv, options: spec, allowPositionals: true, strict: true });
    return { values: values as ParsedArgs['values'], positionals };
  } catch (err) {
    const msg = (err as Error).message.replace(/\. To specify a positional argument.*$/s, '');
    throw new BpfscopeError(`${command}: ${msg}`, { hint: `run "bpfscope ${command} --help" for usage` });
  }
}

/** Getopt::Long's `=i`: an optionally signed decimal integer. */
export function intOption(command: string, name: string, value: string | undefined, dflt: number): number {
  if (value === undefined) return dflt;
  if (!/^[-+]?\d+$/.test(value)) {
    throw new BpfscopeError(`${command}: value "${value}" invalid for option --${name} (number expected)`);
  }
  return Number(value);
}

/** Getopt::Long's `=f`: a decimal number, optionally signed, with optional fraction and exponent. */
export function floatOption(command: string, name: string, value: string | undefined, dflt: number): number {
  if (value === undefined) return dflt;
  if (!/^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/.test(value)) {
    throw new BpfscopeError(`${command}: value "${value}" invalid for option --${name} (real number expected)`);
  }
  return Number(value);
}

/** Writes one warning line to stderr, prefixed with the command name. */
export function warnTo(command: string): (msg: string) => void {
  return (msg) => {
    process.stderr.write(`${command}: ${msg}\n`);
  };
}

let stdoutClosed = false;
let stdoutWatched = false;

/**
 * Writes bytes to stdout and resolves when they are handed to the OS. A reader that went away (EPIPE, e.g.
 * `| head`) is not an error: the rest of the output is dropped. Other write errors become a BpfscopeError.
 */
export function writeOut(data: Uint8Array | string): Promise<void> {
  if (!stdoutWatched) {
    stdoutWatched = true;
    // EPIPE can also arrive as an 'error' event after the write callback: never let it become an uncaught error.
    process.stdout.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') stdoutClosed = true;
    });
  }
  if (stdoutClosed) return Promise.resolve();
  return new Promise((resolve, reject) => {
    process.stdout.write(data, (err) => {
      if (!err) resolve();
      else if ((err as NodeJS.ErrnoException).code === 'EPIPE') {
        stdoutClosed = true;
        resolve();
      } else reject(new BpfscopeError(`cannot write output: ${err.message}`));
    });
  });
}
