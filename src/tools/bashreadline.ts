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
import type { OptionsOf, ParserSpec } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { pyFormat } from './framework/pyformat.js';
import { type DecodedOf, records } from './framework/record.js';
import { defineTool, runProgram, toolMain } from './framework/runner.js';
import { clockTime } from './framework/system.js';

/** bcc's `const` of `-s` given without a path. */
export const DEFAULT_SHARED = '/lib/libreadline.so';
/** What bcc traces without `-s`. */
export const DEFAULT_BINARY = '/bin/bash';
/** bcc's `struct str_t { ...; char str[80]; }`: bytes of the line that are copied. */
export const LINE_BYTES = 80;

export const SPEC = {
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
} as const satisfies ParserSpec;

/** The program's record: one per line read. */
export const RECORDS = records({ line: { pid: 'u32', command: 'str' } });
export type LineRecord = DecodedOf<typeof RECORDS.decls>;

/** One line entered in a shell (runTool's row, `--json`'s object). */
export interface BashLineRow {
  /** Wall-clock time when the line was printed, HH:MM:SS. */
  time: string;
  /** The shell's PID. */
  pid: number;
  /** The line, at most {@link LINE_BYTES} bytes of it. */
  command: string;
}

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
    const hit = elf.findSymbol('readline_internal_teardown', { table: '.dynsym' }) !== undefined;
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
  p += `  ${RECORDS.emit('line', { pid: 'pid', command: `str(retval, ${LINE_BYTES + 1})` })}\n}\n`;
  return p;
}

/** bcc's header line. */
export function header(): string {
  return `${pyFormat('%-9s %-7s %s', 'TIME', 'PID', 'COMMAND')}\n`;
}

/** The row of one record. */
export function toRow(r: LineRecord, time: string = clockTime()): BashLineRow {
  return { time, pid: r.pid, command: r.command };
}

/** bcc's line for one row. */
export function formatRow(row: BashLineRow): string {
  return `${pyFormat('%-9s %-7d %s', row.time, row.pid, row.command)}\n`;
}

async function run(a: OptionsOf<typeof SPEC>, writer: ToolWriter): Promise<number> {
  const given = a.shared ?? DEFAULT_BINARY;
  const binary = resolveBinary(given);
  if (!binary) throw new BpfscopeError(`bashreadline: ${given}: no such file`);
  const program = buildProgram(binary, readlineSymbol(binary));
  return runProgram({
    tool: 'bashreadline',
    program,
    writer,
    onStarted: () => writer.write(header()),
    records: RECORDS,
    onRecord: (r: LineRecord) => writer.emit(toRow(r), formatRow),
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'rows', run });

/** `bpfscope bashreadline [-s [SHARED]]`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
