/**
 * threadsnoop: list new threads as they are created, one line per pthread_create() call. Follows bcc's
 * `tools/threadsnoop.py` (help, the `TIME(ms) PID COMM FUNC` header, `%-10d %-7d %-16s %s` rows with milliseconds
 * since the first event, the start routine named in the calling process or printed as hex) with the same uprobe
 * on `pthread_create`, in libpthread when it defines the function (glibc before 2.34), else in libc.
 *
 * The start routine is named (and C++ names demangled) when the event is printed, from the process's mappings, as
 * bcc does: a process that has already exited by then shows the address.
 */
import type { ParserSpec } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { matchTargets, parseProbeSpec, toAttachPoint } from './framework/probespec.js';
import { pyFormat } from './framework/pyformat.js';
import { type DecodedOf, records } from './framework/record.js';
import { defineTool, runProgram, toolMain, unsupported } from './framework/runner.js';

export const SPEC = {
  prog: 'threadsnoop',
  description: '\nList new thread creation.\n',
  raw: true,
  epilog: `examples:
    ./threadsnoop        # list new thread creation
`,
  // bcc's threadsnoop has no options; --ebpf (hidden) prints the generated program, as in the other tools.
  options: [{ flags: ['--ebpf'], kind: 'flag', help: null }],
} as const satisfies ParserSpec;

/** The program's record: one per pthread_create() call (time in ns, the start routine's address and name). */
export const RECORDS = records({
  thread: { tsNs: 'u64', pid: 'u32', start: 'u64', func: 'str', comm: 'str' },
});
export type ThreadRecord = DecodedOf<typeof RECORDS.decls>;

/** One new thread (runTool's row, `--json`'s object). */
export interface ThreadRow {
  /** Milliseconds since the first thread seen (bcc's TIME(ms), truncated). */
  elapsedMs: number;
  /** The creating process and its name. */
  pid: number;
  comm: string;
  /** The start routine: its name, or its address in hex (Python's `hex()`) when it could not be named. */
  func: string;
  /** The start routine's address. */
  start: bigint;
}

/**
 * bcc's library choice: the `pthread_create` of libpthread, else of libc, as a bpftrace attach point
 * (`uprobe:/lib/.../libc.so.6:pthread_create`), or undefined when neither library defines it.
 */
export function pthreadCreateProbe(libraries: readonly string[] = ['pthread', 'c']): string | undefined {
  for (const lib of libraries) {
    try {
      const spec = parseProbeSpec(`${lib}:pthread_create`);
      const names = matchTargets(spec);
      if (names.length) return toAttachPoint(spec, names[0]);
    } catch {
      /* library not found: try the next one */
    }
  }
  return undefined;
}

/** The bpftrace program: the third argument of pthread_create() is the start routine. */
export function buildProgram(attachPoint: string): string {
  let p = configBlock();
  p += `${attachPoint} {\n`;
  p += `  ${RECORDS.emit('thread', { tsNs: 'nsecs', pid: 'pid', start: 'arg2', func: 'usym(arg2)', comm: 'comm' })}\n}\n`;
  return p;
}

/** bcc's header line. */
export function header(): string {
  return `${pyFormat('%-10s %-7s %-16s %s', 'TIME(ms)', 'PID', 'COMM', 'FUNC')}\n`;
}

/**
 * The row of one record; `state.startNs` is bcc's `start_ts` (the first event's time). An address `usym` could not
 * name becomes Python's `hex()` of it.
 */
export function toRow(r: ThreadRecord, state: { startNs: bigint | null }): ThreadRow {
  if (state.startNs === null) state.startNs = r.tsNs;
  const hex = `0x${r.start.toString(16)}`;
  const f = r.func;
  const func = f === '' || f === '[unknown]' || f.toLowerCase() === hex ? hex : f;
  return { elapsedMs: Number((r.tsNs - state.startNs) / 1000000n), pid: r.pid, comm: r.comm, func, start: r.start };
}

/** bcc's line for one row (with `\n`). */
export function formatRow(row: ThreadRow): string {
  return `${pyFormat('%-10d %-7d %-16s %s', row.elapsedMs, row.pid, row.comm, row.func)}\n`;
}

async function run(_a: unknown, writer: ToolWriter): Promise<number> {
  const attachPoint = pthreadCreateProbe();
  if (attachPoint === undefined) {
    throw unsupported('threadsnoop: neither libpthread nor libc defines pthread_create on this system');
  }
  const program = buildProgram(attachPoint);
  // bcc's BPF.sym() demangles C++ names; so does usym() (the demangler loads on the first mangled name).
  const state = { startNs: null as bigint | null };
  return runProgram({
    tool: 'threadsnoop',
    program,
    writer,
    onStarted: () => writer.write(header()),
    records: RECORDS,
    onRecord: (r: ThreadRecord) => writer.emit(toRow(r, state), formatRow),
  });
}

export const TOOL = defineTool({ spec: SPEC, results: 'rows', run });

/** `bpfscope threadsnoop`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(TOOL, argv);
}
