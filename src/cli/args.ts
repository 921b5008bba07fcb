/**
 * bpftrace's command line (`man/adoc/bpftrace.adoc`, `src/main.cpp` parse_args): `-e PROGRAM` or a script FILE,
 * positional parameters after it, `-l/--list [SEARCH|FILE]` (with `-v` showing arguments), `-p/--pid PID`,
 * `-c/--cmd CMD`, `-o/--output FILE`, `-f text|json`, `-B MODE`, `-q/--quiet`, `-v/--verbose`, `-d/--debug STAGE`,
 * `-k/--warnings`, `-I DIR`, `--include FILE`, `--no-feature F`, `--info`, `--dry-run`, `--probe-filter REGEX`,
 * `--mode bench`/`--bench`, `--unsafe`, `--no-warnings`, `-h/--help`, `-V/--version`. Parsed with Node's
 * `util.parseArgs`; a flag it does not know prints the usage to stderr (bpftrace's getopt default case).
 */
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { BpfscopeError } from '../errors.js';
import { parseIntLiteral } from '../lang/lexer.js';

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
  /** `-l FILE` / `-l -e PROGRAM`: list the probes of that program instead of searching (bpftrace's listing mode). */
  listProgram: boolean;
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
  /** `-k/--warnings`: run-time warnings where a map read finds no element (bpftrace's warning level 2). */
  helperWarnings: boolean;
  /** --info: print the system, build and kernel feature report. */
  info: boolean;
  /** --dry-run: load and attach every probe, then end at once: no BEGIN, no events, no map printing. */
  dryRun: boolean;
  /** --probe-filter REGEX: only probes whose name the regex finds (BEGIN/END always kept). */
  probeFilter?: RegExp;
  /** `--mode bench` / `--bench`: time the `bench:` probes; `--mode test` / `--test`: run the `test:` probes. */
  mode?: 'bench' | 'test' | 'codegen';
  /** `--no-feature A,B`: kernel features not to use (bpftrace's names: kprobe_multi, uprobe_multi, kprobe_session). */
  noFeatures: string[];
  /** `--include FILE` (repeatable): a header included before the program, for its integer `#define`s. */
  includeFiles: string[];
  /** `-I DIR` (repeatable): where headers are searched first. */
  includeDirs: string[];
  /** `-B MODE`: stdout buffering; `none` writes every event's output at once (see run.ts). */
  buffering: 'line' | 'full' | 'none';
  /** `--debuginfo DIR[:DIR]` (repeatable): directories searched first for uprobe binaries' separate debug files. */
  debugInfoDirs: string[];
  /** `--traceable-functions FILE`: the traceable kernel functions, instead of tracefs available_filter_functions. */
  traceableFunctionsFile?: string;
}

/** Bad command line: printed as `ERROR: message` (unless empty) followed by the usage text (on stderr), exit 1. */
export class UsageError extends BpfscopeError {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export const VERSION = 'bpfscope v0.1.0';

/** Values of `--no-feature` (bpftrace's; kernel/features.ts OPTIONAL_FEATURES maps them). */
const NO_FEATURE_NAMES = ['kprobe_multi', 'kprobe_session', 'uprobe_multi'];

export const DEBUG_STAGES = ['ast', 'ir', 'insns', 'verifier'] as const;

/**
 * bpftrace's `-d` stage names with a bpfscope counterpart: its source and LLVM IR stages show our AST and IR, its
 * disassembly our BPF instructions. (`types` and `libbpf` have none.)
 */
const BPFTRACE_STAGES: Record<string, (typeof DEBUG_STAGES)[number]> = {
  parse: 'ast',
  codegen: 'ir',
  'codegen-opt': 'ir',
  dis: 'insns',
};

export const USAGE = `USAGE:
    bpfscope [options] filename [args...]
    bpfscope [options] - [args...]
    bpfscope [options] -e 'program' [args...]

    use -- after filename/-e 'program' for named program options

OPTIONS:
    -e PROGRAM     program to execute
    -l, --list [SEARCH|FILENAME]
                   list attach points matching SEARCH (all when omitted), or the probes of a program
    -v, --verbose  verbose: show probe arguments with -l; verifier statistics when running
    -h, --help     show this help message
    -V, --version  print the version
    --info         print information about the system and its kernel BPF support

    -p, --pid PID  enable USDT/uprobe probes on PID; stop when it exits
    -c, --cmd CMD  run CMD and trace it (available as cpid); stop when it exits

    -o, --output FILE
                   write program output to FILE
    -f FORMAT      output format: text (default) or json (one JSON object per line)
    -B MODE        output buffering: line (default: written after each batch of events), full, none
    -q, --quiet    keep messages quiet
    -k, --warnings emit a warning when a map lookup finds no element
    --no-warnings  disable all warning messages

    -I DIR         add the directory to the header search path
    --include FILE include FILE before the program (its integer #define constants become usable)

    --unsafe       allow unsafe functions (signal)
    --debuginfo DIR[:DIR]
                   search these directories first for the separate debug files of uprobe binaries
    --traceable-functions FILE
                   load the list of traceable kernel functions from FILE (format of tracefs
                   available_filter_functions) instead of tracefs
    --usdt-file-activation
                   activate USDT semaphores in every process running the file (always so: the kernel's
                   uprobe reference counter does it; accepted for bpftrace's command lines)
    --no-feature FEATURE[,FEATURE]
                   do not use these detected features: kprobe_multi, uprobe_multi, kprobe_session

DEVELOPER OPTIONS:
    --mode bench   time every bench:NAME probe with BPF_PROG_TEST_RUN and print the results
    --bench        same as --mode bench
    --mode test    run every test:NAME probe once: passes unless it exits non-zero or calls errorf()
    --test         same as --mode test
    --mode codegen compile to BPF instructions and stop: nothing is loaded or attached (-v: the programs' sizes)
    --probe-filter REGEX
                   only attach and run probes whose name matches REGEX (BEGIN/END always run)

TROUBLESHOOTING OPTIONS:
    --dry-run      load and attach every probe, then end without running the program
    -d, --debug STAGE
                   debug output: all, ast, ir, insns, verifier (comma separated; bpftrace's
                   parse, codegen, codegen-opt and dis show ast, ir, ir and insns)

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

/** Parse argv (without node and script). @throws UsageError for bad flags, BpfscopeError for bad values. */
export function parseCli(argv: string[]): CliOptions {
  // no arguments at all: just the usage (bpftrace's argc == 1 case)
  if (argv.length === 0) throw new UsageError('');
  // `-d` takes a stage in current bpftrace; accept a bare `-d` (0.17 style) as `-d all`.
  const args = [...argv];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--') break;
    if (args[i] === '-d' && (i + 1 >= args.length || args[i + 1]!.startsWith('-'))) args.splice(i + 1, 0, 'all');
    if (args[i] === '-dd') args.splice(i, 1, '-d', 'all');
  }
  // after `--`: `--name[=value]` words are named program options, the rest positional parameters. Before `--`
  // they are flags like any other, so an unknown `--aa=20` there is a usage error (bpftrace's getopt).
  const dashes = args.indexOf('--');
  const tail = dashes < 0 ? [] : args.splice(dashes).slice(1);
  const named = new Map<string, string | true>();
  const tailPositional: string[] = [];
  for (const w of tail) {
    const m = /^--([^=]+)(?:=(.*))?$/s.exec(w);
    if (m) named.set(m[1]!, m[2] ?? true);
    else tailPositional.push(w);
  }
  // getopt's rule: an option that takes a value takes the next word even when it starts with '-' (a program such as
  // `-e '-1 + ...'`, a file `-o -out`); node's parseArgs calls that ambiguous, so the two words are joined first
  for (let i = 0; i + 1 < args.length; i++) {
    const a = args[i]!;
    if (!args[i + 1]!.startsWith('-')) continue;
    if (/^-[epcofdIB]$/.test(a)) args.splice(i, 2, `${a}${args[i + 1]}`);
    else if (/^--(pid|cmd|output|debug|probe-filter|mode|no-feature|include)$/.test(a))
      args.splice(i, 2, `${a}=${args[i + 1]}`);
  }
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(args);
  } catch (e) {
    // node's wording ("Unknown option '-i'. To specify a positional argument ...") up to its first sentence
    const msg = (e as Error).message.replace(/^TypeError \[\w+\]: /, '').replace(/\. To specify a positional.*$/s, '');
    throw new UsageError(msg);
  }
  const v = parsed.values;
  const pos = [...parsed.positionals, ...tailPositional];
  const opts: CliOptions = {
    positional: [],
    named,
    list: !!v.list,
    listPattern: null,
    listProgram: false,
    format: 'text',
    quiet: !!v.quiet,
    verbose: !!v.verbose,
    debug: new Set(),
    help: !!v.help,
    version: !!v.version,
    unsafe: !!v.unsafe,
    noWarnings: !!v['no-warnings'],
    helperWarnings: (v.warnings?.length ?? 0) > 0,
    info: !!v.info,
    noFeatures: [],
    includeFiles: v.include ?? [],
    includeDirs: v.I ?? [],
    buffering: 'line',
    dryRun: !!v['dry-run'],
    debugInfoDirs: (v.debuginfo ?? []).flatMap((d) => d.split(':')).filter((d) => d !== ''),
  };
  if ((v.warnings?.length ?? 0) > 1)
    throw new UsageError(
      '-kk has been deprecated. Use a single -k for runtime warnings for errors in map lookups and probe reads.',
    );
  if (opts.helperWarnings && opts.noWarnings) throw new UsageError('-k, --warnings conflicts with --no-warnings');
  if (v.e !== undefined) opts.program = v.e;
  if (v['traceable-functions'] !== undefined) opts.traceableFunctionsFile = v['traceable-functions'];
  if (v.cmd !== undefined) opts.command = v.cmd;
  if (v.output !== undefined) opts.outputFile = v.output;
  if (v.pid !== undefined) opts.pid = parsePid(v.pid);
  if (v.cmd !== undefined && v.pid !== undefined) throw new UsageError('Cannot use both -c and -p.');
  if (v.mode !== undefined) {
    const modes = ['codegen', 'compiler-bench', 'bench', 'test', 'format'];
    if (!modes.includes(v.mode))
      throw new UsageError("--mode can only be 'codegen', 'compiler-bench', 'bench', 'test' or 'format'.");
    if (v.mode !== 'bench' && v.mode !== 'test' && v.mode !== 'codegen')
      throw new BpfscopeError(`--mode ${v.mode} is not supported by bpfscope yet`);
    opts.mode = v.mode as 'bench' | 'test' | 'codegen';
  }
  if (v.test) {
    if (opts.mode) throw new UsageError('--test conflicts with existing --mode');
    opts.mode = 'test';
  }
  if (v.bench) {
    if (opts.mode) throw new UsageError('--bench conflicts with existing --mode');
    opts.mode = 'bench';
  }
  for (const list of v['no-feature'] ?? []) {
    for (const f of list.split(',')) {
      if (!NO_FEATURE_NAMES.includes(f))
        throw new UsageError("--no-feature can only have values 'kprobe_multi,kprobe_session,uprobe_multi'.");
      opts.noFeatures.push(f);
    }
  }
  if (v.B !== undefined) {
    if (v.B !== 'line' && v.B !== 'full' && v.B !== 'none')
      throw new UsageError("-B must be either 'line', 'full', or 'none'.");
    opts.buffering = v.B;
  }
  if (v['probe-filter'] !== undefined) {
    try {
      opts.probeFilter = new RegExp(v['probe-filter']);
    } catch (e) {
      const why = (e as Error).message.replace(/^Invalid regular expression: /, '');
      throw new BpfscopeError(`Invalid --probe-filter regex '${v['probe-filter']}': ${why}`);
    }
  }
  if (v.f !== undefined) {
    if (v.f !== 'text' && v.f !== 'json')
      throw new BpfscopeError(`Invalid output format "${v.f}"`, { hint: 'Valid formats: text, json' });
    opts.format = v.f;
  }
  for (const d of v.debug ?? []) {
    for (const stage of d.split(',')) {
      if (stage === 'all') DEBUG_STAGES.forEach((s) => opts.debug.add(s));
      else if ((DEBUG_STAGES as readonly string[]).includes(stage)) opts.debug.add(stage);
      else if (BPFTRACE_STAGES[stage]) opts.debug.add(BPFTRACE_STAGES[stage]);
      else throw new BpfscopeError(`-d: unknown stage '${stage}'`, { hint: `stages: all, ${DEBUG_STAGES.join(', ')}` });
    }
  }
  if (opts.help || opts.version || opts.info) return opts;
  if (opts.list) {
    if (opts.program !== undefined) {
      // `-l -e PROGRAM`: the probes of the program
      opts.listProgram = true;
    } else {
      if (pos.length > 1) throw new UsageError('-l takes at most one SEARCH pattern or FILENAME');
      const arg = pos.shift() ?? null;
      // bpftrace: an existing file is a program whose probes are listed; anything else is a search pattern
      if (arg !== null && arg !== '' && existsSync(arg)) {
        opts.scriptFile = arg;
        opts.listProgram = true;
      } else opts.listPattern = arg;
    }
    return opts;
  }
  if (opts.program === undefined) {
    const file = pos.shift();
    if (file === undefined) throw new UsageError("filename or -e 'program' required.");
    opts.scriptFile = file;
  }
  opts.positional = pos;
  return opts;
}

/**
 * `-p PID` as bpftrace parses it (`parse_pid`: `util::to_uint`, so `0x..`, `_` separators and its messages such as
 * `invalid integer: a1111`), then checked against the kernel's pid_max.
 */
function parsePid(text: string): number {
  const r = parseIntLiteral(text);
  if ('error' in r) throw new BpfscopeError(`Failed to parse pid: ${r.error}`);
  // bpftrace's check and wording; the limit is the kernel's pid_max (default 4194304 on 64-bit)
  if (r.value < 1n || r.value > BigInt(pidMax())) throw new BpfscopeError(`Pid out of range: ${text}`);
  return Number(r.value);
}

function parse(args: string[]) {
  return parseArgs({
    args,
    allowPositionals: true,
    strict: true,
    options: {
      e: { type: 'string', short: 'e' },
      list: { type: 'boolean', short: 'l' },
      verbose: { type: 'boolean', short: 'v' },
      pid: { type: 'string', short: 'p' },
      cmd: { type: 'string', short: 'c' },
      output: { type: 'string', short: 'o' },
      f: { type: 'string', short: 'f' },
      quiet: { type: 'boolean', short: 'q' },
      debug: { type: 'string', short: 'd', multiple: true },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'V' },
      info: { type: 'boolean' },
      'dry-run': { type: 'boolean' },
      'probe-filter': { type: 'string' },
      mode: { type: 'string' },
      'no-feature': { type: 'string', multiple: true },
      include: { type: 'string', multiple: true },
      I: { type: 'string', short: 'I', multiple: true },
      B: { type: 'string', short: 'B' },
      bench: { type: 'boolean' },
      test: { type: 'boolean' },
      unsafe: { type: 'boolean' },
      'usdt-file-activation': { type: 'boolean' },
      debuginfo: { type: 'string', multiple: true },
      'traceable-functions': { type: 'string' },
      'no-warnings': { type: 'boolean' },
      warnings: { type: 'boolean', short: 'k', multiple: true },
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
