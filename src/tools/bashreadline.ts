/**
 * bashreadline: print the command lines entered in every running bash shell. Follows bcc's
 * `tools/bashreadline.py` (flags, help, `%-9s %-7s %s` header and rows with the local time): a uretprobe on the
 * function that returns the line read, in /bin/bash (or the library given with `-s`), reporting shells whose comm is
 * `bash` and the first 80 bytes of the line.
 *
 * The traced function is bcc's choice: `readline_internal_teardown` when the file's `.dynsym` has it (bash's
 * built-in readline exports it; its return value is the line, after history expansion and undo), else `readline`.
 */
import { BpfscopeError } from '../errors.js';
import { resolveBinary } from '../probes/uprobe.js';
import { ElfFile } from '../symbols/elf.js';
import type { Parsed, ParserSpec } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { runProgram, toolMain } from './framework/runner.js';
import { clockTime } from './framework/system.js';

/** bcc's `const` of `-s` given without a path. */
export const DEFAULT_SHARED = '/lib/libreadline.so';
/** What bcc traces without `-s`. */
export const DEFAULT_BINARY = '/bin/bash';
/** bcc's `struct str_t { ...; char str[80]; }`: bytes of the line that are copied. */
export const LINE_BYTES = 80;

export const SPEC: ParserSpec = {
  prog: 'bashreadline',
  description: 'Print entered bash commands from all running shells',
  raw: true,
  options: [
    {
      flags: ['-s', '--shared'],
      kind: 'optional',
      const: DEFAULT_SHARED,
      help: 'specify the location of libreadline.so library. Default is /lib/libreadline.so',
    },
    { flags: ['--ebpf'], kind: 'flag', help: null },
  ],
};

/**
 * bcc's `get_sym()`: `readline_internal_teardown` if `path`'s `.dynsym` defines it, else `readline`.
 * @throws BpfscopeError when the file cannot be read as ELF
 */
export function readlineSymbol(path: string): string {
  let elf: ElfFile;
  try {
    elf = ElfFile.open(path);
  } catch (e) {
    throw new BpfscopeError(`bashreadline: ${(e as Error).message}`, { cause: e });
  }
  try {
    const hit = elf
      .symbols()
      .find('readline_internal_teardown')
      .some((s) => s.table === '.dynsym');
    return hit ? 'readline_internal_teardown' : 'readline';
  } finally {
    elf.close();
  }
}

/**
 * The bpftrace program: on return of `binary:symbol` with a non-NULL result in a task named `bash`, the process ID
 * and the line (at most {@link LINE_BYTES} bytes) as one event.
 */
export function buildProgram(binary: string, symbol: string): string {
  let p = configBlock();
  p += `uretprobe:${binary}:${symbol} /retval != 0 && comm == "bash"/ {\n`;
  p += `  printf("%d\\x1f%s\\n", pid, str(retval, ${LINE_BYTES + 1}));\n}\n`;
  return p;
}

/** bcc's header line. */
export function header(): string {
  return `${pyFormat('%-9s %-7s %s', 'TIME', 'PID', 'COMMAND')}\n`;
}

/** One output line for an event's fields `[pid, line]`. */
export function formatRow(f: string[], time: string = clockTime()): string {
  const [pid, line = ''] = f;
  return `${pyFormat('%-9s %-7d %s', time, Number(pid), line)}\n`;
}

async function run(a: Parsed, writer: ToolWriter): Promise<number> {
  const given = (a.shared as string | null) ?? DEFAULT_BINARY;
  const binary = resolveBinary(given);
  if (!binary) throw new BpfscopeError(`bashreadline: ${given}: no such file`);
  const program = buildProgram(binary, readlineSymbol(binary));
  return runProgram({
    tool: 'bashreadline',
    program,
    writer,
    fieldCount: 2,
    onStarted: () => writer.write(header()),
    onEvent: (f) => writer.write(formatRow(f)),
  });
}

/** `bpfscope bashreadline [-s [SHARED]]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(SPEC, argv, run);
}
