/**
 * threadsnoop: list new threads as they are created, one line per pthread_create() call. Follows bcc's
 * `tools/threadsnoop.py` (help, the `TIME(ms) PID COMM FUNC` header, `%-10d %-7d %-16s %s` rows with milliseconds
 * since the first event, the start routine named in the calling process or printed as hex) with the same uprobe
 * on `pthread_create`, in libpthread when it defines the function (glibc before 2.34), else in libc.
 *
 * The start routine is named (and C++ names demangled) when the event is printed, from the process's mappings, as
 * bcc does: a process that has already exited by then shows the address.
 */
import type { Parsed, ParserSpec } from './framework/argparse.js';
import type { ToolWriter } from './framework/output.js';
import { configBlock } from './framework/program.js';
import { matchTargets, parseProbeSpec, toAttachPoint } from './framework/probespec.js';
import { pyFormat } from './framework/pyformat.js';
import { runProgram, toolMain, unsupported } from './framework/runner.js';
import { loadDemangler } from '../symbols/demangle.js';

export const SPEC: ParserSpec = {
  prog: 'threadsnoop',
  description: '\nList new thread creation.\n',
  raw: true,
  epilog: `examples:
    ./threadsnoop        # list new thread creation
`,
  // bcc's threadsnoop has no options; --ebpf (hidden) prints the generated program, as in the other tools.
  options: [{ flags: ['--ebpf'], kind: 'flag', help: null }],
};

/** Event record fields, in order: time (ns), tgid, start routine address, its name, comm (last). */
export const FIELDS = ['ts_ns', 'pid', 'start', 'func', 'comm'] as const;

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
  p += '  printf("%llu\\x1f%d\\x1f%llu\\x1f%s\\x1f%s\\n", nsecs, pid, arg2, usym(arg2), comm);\n}\n';
  return p;
}

/** bcc's header line. */
export function header(): string {
  return `${pyFormat('%-10s %-7s %-16s %s', 'TIME(ms)', 'PID', 'COMM', 'FUNC')}\n`;
}

/**
 * One output line (with `\n`) for the event fields (see {@link FIELDS}); `state.startNs` is bcc's `start_ts`
 * (the first event's time). An address `usym` could not name prints as Python's `hex()`.
 */
export function formatRow(f: string[], state: { startNs: bigint | null }): string {
  const [tsText, pid, startText, func = '', comm = ''] = f;
  const ts = BigInt(tsText ?? '0');
  if (state.startNs === null) state.startNs = ts;
  const start = BigInt(startText ?? '0');
  const hex = `0x${start.toString(16)}`;
  const name = func === '' || func === '[unknown]' || func.toLowerCase() === hex ? hex : func;
  return `${pyFormat('%-10d %-7d %-16s %s', Number((ts - state.startNs) / 1000000n), Number(pid), comm, name)}\n`;
}

async function run(a: Parsed, writer: ToolWriter): Promise<number> {
  const attachPoint = pthreadCreateProbe();
  if (attachPoint === undefined) {
    throw unsupported('threadsnoop: neither libpthread nor libc defines pthread_create on this system');
  }
  const program = buildProgram(attachPoint);
  // bcc's BPF.sym() demangles C++ names; usym() does once the demangler is loaded.
  await loadDemangler();
  const state = { startNs: null as bigint | null };
  return runProgram({
    tool: 'threadsnoop',
    program,
    writer,
    fieldCount: FIELDS.length,
    onStarted: () => writer.write(header()),
    onEvent: (f) => writer.write(formatRow(f, state)),
  });
}

/** `bpfscope threadsnoop`; resolves with the exit status. */
export function main(argv: string[]): Promise<number> {
  return toolMain(SPEC, argv, run);
}
