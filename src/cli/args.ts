/**
 * bpftrace's command line (`man/adoc/bpftrace.adoc`, `bpftrace --help`): `-e PROGRAM` or a script FILE, positional
 * parameters after it, `-l [SEARCH]` (with `-v` showing arguments), `-p PID`, `-c CMD`, `-o FILE`, `-f text|json`,
 * `-q`, `-v`, `-d STAGE`, `-h`, `-V/--version`. Parsed with Node's `util.parseArgs`.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { BpfscopeError } from '../errors.js';

export interface CliOptions {
  program?: string;
  scriptFile?: string;
  positional: string[];
  /**
   * Named program options after `--` (`-- --aa=5 --dd`): name → value (`true` for a bare `--dd`), read by
   * getopt() (bpftrace's "named command line params"). Other words after `--` are positional parameters.
   */
  named: Map<string, string | true>;
  list: boolean;
  listPattern: string | null;
  pid?: number;
  command?: string;
  outputFile?: string;
  format: 'text' | 'json';
  quiet: boolean;
  verbose: boolean;
  debug: Set<string>;
  help: boolean;
  version: boolean;
  /** --unsafe: allow signal() and other functions with side effects on the system. */
  unsafe: boolean;
  /** --no-warnings: no compile warnings and no warnf() output (bpftrace's flag). */
  noWarnings: boolean;
}

export const DEBUG_STAGES = ['ast', 'ir', 'insns', 'verifier'] as const;

export const USAGE = `USAGE:
    bpfscope [options] filename [args...]
    bpfscope [options] - [args...]
    bpfscope [options] -e 'program' [args...]

OPTIONS:
    -e PROGRAM     program to execute
    -l [SEARCH]    list attach points matching SEARCH (all when omitted)
    -v             verbose: show probe arguments with -l; verifier statistics when running
    -p PID         enable USDT/uprobe probes on PID; stop when it exits
    -c CMD         run CMD and trace it (available as cpid); stop when it exits
    -o FILE        write program output to FILE
    -f FORMAT      output format: text (default) or json (one JSON object per line)
    -q             keep messages quiet
    -d STAGE       debug output: all, ast, ir, insns, verifier (comma separated)
    --unsafe       allow unsafe functions (signal)
    --no-warnings  disable all warning messages
    -h, --help     show this help message
    -V, --version  print the version

EXAMPLES:
bpfscope -l '*sleep*'
    list attach points containing "sleep"
bpfscope -e 'tracepoint:syscalls:sys_enter_openat { printf("%s %s\\n", comm, str(args.filename)); }'
    trace the files processes open
bpfscope -e 'tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }'
    count system calls by process name
bpfscope -c 'ls /' -e 'tracepoint:syscalls:sys_enter_* /pid == cpid/ { @[probe] = count(); }'
    count the system calls a command makes
`;

/** Parse argv (without node and script). @throws BpfscopeError with a usage hint for bad flags. */
export function parseCli(argv: string[]): CliOptions {
  // `-d` takes a stage in current bpftrace; accept a bare `-d` (0.17 style) as `-d all`.
  const args = [...argv];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--') break;
    if (args[i] === '-d' && (i + 1 >= args.length || args[i + 1]!.startsWith('-'))) args.splice(i + 1, 0, 'all');
    if (args[i] === '-dd') args.splice(i, 1, '-d', 'all');
  }
  // after `--`: `--name[=value]` words are named program options, the rest positional parameters
  const dashes = args.indexOf('--');
  const tail = dashes < 0 ? [] : args.splice(dashes).slice(1);
  const named = new Map<string, string | true>();
  const tailPositional: string[] = [];
  for (const w of tail) {
    const m = /^--([^=]+)(?:=(.*))?$/s.exec(w);
    if (m) named.set(m[1]!, m[2] ?? true);
    else tailPositional.push(w);
  }
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(args);
  } catch (e) {
    throw new BpfscopeError((e as Error).message.replace(/^TypeError \[\w+\]: /, ''), {
      hint: 'see bpfscope --help',
    });
  }
  const v = parsed.values;
  const pos = [...parsed.positionals, ...tailPositional];
  const opts: CliOptions = {
    positional: [],
    named,
    list: !!v.l,
    listPattern: null,
    format: 'text',
    quiet: !!v.q,
    verbose: !!v.v,
    debug: new Set(),
    help: !!v.help,
    version: !!v.version,
    unsafe: !!v.unsafe,
    noWarnings: !!v['no-warnings'],
  };
  if (v.e !== undefined) opts.program = v.e;
  if (v.c !== undefined) opts.command = v.c;
  if (v.o !== undefined) opts.outputFile = v.o;
  if (v.p !== undefined) {
    if (!/^\d+$/.test(v.p)) throw new BpfscopeError(`-p: '${v.p}' is not a process id`);
    opts.pid = Number(v.p);
    // bpftrace's check and wording; the limit is the kernel's pid_max (default 4194304 on 64-bit)
    if (opts.pid < 1 || opts.pid > pidMax()) throw new BpfscopeError(`Pid out of range: ${v.p}`);
  }
  if (v.f !== undefined) {
    if (v.f !== 'text' && v.f !== 'json')
      throw new BpfscopeError(`Invalid output format "${v.f}"`, { hint: 'Valid formats: text, json' });
    opts.format = v.f;
  }
  for (const d of v.d ?? []) {
    for (const stage of d.split(',')) {
      if (stage === 'all') DEBUG_STAGES.forEach((s) => opts.debug.add(s));
      else if ((DEBUG_STAGES as readonly string[]).includes(stage)) opts.debug.add(stage);
      else throw new BpfscopeError(`-d: unknown stage '${stage}'`, { hint: `stages: all, ${DEBUG_STAGES.join(', ')}` });
    }
  }
  if (opts.list) {
    opts.listPattern = pos.shift() ?? null;
    return opts;
  }
  if (opts.program === undefined && !opts.help && !opts.version) {
    const file = pos.shift();
    if (file === undefined)
      throw new BpfscopeError('No program given', { hint: 'usage: bpfscope -e PROGRAM, or bpfscope FILE; see --help' });
    opts.scriptFile = file;
  }
  opts.positional = pos;
  return opts;
}

function parse(args: string[]) {
  return parseArgs({
    args,
    allowPositionals: true,
    strict: true,
    options: {
      e: { type: 'string', short: 'e' },
      l: { type: 'boolean', short: 'l' },
      v: { type: 'boolean', short: 'v' },
      p: { type: 'string', short: 'p' },
      c: { type: 'string', short: 'c' },
      o: { type: 'string', short: 'o' },
      f: { type: 'string', short: 'f' },
      q: { type: 'boolean', short: 'q' },
      d: { type: 'string', short: 'd', multiple: true },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'V' },
      unsafe: { type: 'boolean' },
      'no-warnings': { type: 'boolean' },
    },
  });
}

/** The kernel's largest process id (`/proc/sys/kernel/pid_max`; 4194304, the 64-bit maximum, if unreadable). */
function pidMax(): number {
  try {
    return Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8').trim()) || 4194304;
  } catch {
    return 4194304;
  }
}
