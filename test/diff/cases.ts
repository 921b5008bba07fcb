/**
 * Differential test cases, read from files: `test/diff/cases/NAME.bt` is one case (a program bpftrace 0.17, the
 * oracle, and bpfscope both run), `NAME.out` the oracle's recorded stdout (written by `npm run diff:regen`), and
 * `NAME.expect` bpfscope's expected stdout where current bpftrace (v0.26, our target) differs from 0.17 (written by
 * hand, with a `@reason` naming the bpftrace source it comes from; docs/compat.md lists these under "Differential
 * test exceptions"). docs/testing.md describes the format; in short, a `.bt` file starts with directive lines
 *
 *     // @flags -f json -q          flags before -e
 *     // @cmd STEPS...              -c with the test workload (test/fixtures/workload.c) and these steps
 *     // @params A B                positional parameters after the program
 *     // @target STEPS...           a `-p PID` target: the workload blocked on stdin with these steps ({@link TARGET_PID})
 *     // @script FILE               pass the program as a script file $TMPDIR/bpfscope-test-scripts/FILE, not with -e
 *     // @oracle-prog PROGRAM       the oracle's program when 0.17 needs another one (a tracepoint for a rawtracepoint)
 *     // @timeout MS                run timeout (default 15000)
 *     // @attached N                our `Attached N probes` when the oracle gives no count
 *     // @no-oracle REASON          0.17 cannot run it (needs NAME.expect)
 *     // @reason TEXT               why NAME.expect (or @expect-from-oracle) differs from 0.17
 *     // @expect-from-oracle KIND   the expectation is 0.17's output transformed: stack-frames-indent-8 | json-end
 *     // @todo TEXT                 a known bpfscope bug: reported TODO while it fails, failing once it passes
 *     // @oracle-varies REASON      NAME.out depends on the machine or the date: not compared with the live oracle
 *     // @guest                     kernel-sensitive: run by default in the Debian 6.1 guest (test/matrix/diff.test.ts)
 *     // @guest-skip REASON         cannot run in the guest
 *     // @guest-only REASON         runs only in the guest (implies @guest): skipped here with REASON (fentry/fexit and
 *                                   kprobes get EPERM on the development host); its NAME.out is the guest oracle's
 *
 * (a repeated `@reason`/`@todo`/`@no-oracle`/`@guest-skip`/`@guest-only`/`@oracle-varies` line continues the text
 * after a space),
 * then an empty line, then the program exactly as passed with `-e` (the file's last newline is not part of it) or as
 * the script file's content. Placeholders in programs, steps, parameters and outputs: `{{WORKLOAD}}` (the compiled
 * workload's path), `{{COMM:X}}` (a comm unique to this test process, for cases that filter on comm alone: another
 * run of the suite may run at the same time), `{{OFFSET:SYMBOL}}` (a workload function's offset in hex, from `nm`).
 *
 * Determinism: programs filter on the workload with `pid == cpid` (plus a `comm` the workload sets, to skip what
 * the dynamic loader and the pre-exec child do), or on a `{{COMM:X}}`. Counts and read sizes are chosen so that map
 * entries never tie in the value sort, and workloads that print several lines pin themselves to CPU 0 (`cpu 0`
 * step) because bpftrace 0.17 reads one perf buffer per CPU.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../helpers/cli.js';
import { workloadCommand, workloadPath } from '../helpers/workload.js';

export interface DiffCase {
  /** Unique, kebab-case: the file name without `.bt`; also the node:test name. */
  name: string;
  /** bpfscope's arguments (bpftrace's flags: -e PROGRAM, -c CMD, -f json, -q, positional params...). */
  args: string[];
  /**
   * The oracle's arguments when bpftrace 0.17 needs another spelling of the same program: 0.17 only accepts
   * `args->field` in tracepoints, current bpftrace prefers `args.field` (and still accepts `->`). Default: `args`.
   */
  oracleArgs?: string[];
  /** bpfscope's expected stdout when current bpftrace differs from 0.17 (NAME.expect; requires `reason`). */
  expect?: string;
  /** Why 0.17's output is not the expectation, with the source of the current behaviour. */
  reason?: string;
  /** Set when bpftrace 0.17 cannot run the program at all: says why (requires `expect`). */
  noOracle?: string;
  /** Expected number in our stderr's `Attached N probes` line when it is not the oracle's count. */
  attached?: number;
  /** Run timeout, ms (default 15000). */
  timeoutMs?: number;
  /**
   * Current bpftrace's expected stdout computed from 0.17's (requires `reason`): for exceptions whose output
   * depends on the kernel or the workload build (stack frames), so a fixed `expect` would not fit every machine.
   */
  expectFromOracle?: (oracleStdout: string) => string;
  /**
   * A known bpfscope bug or missing feature that makes this case fail, named precisely. The oracle side is still
   * checked in oracle-only mode; the bpfscope side runs and is reported as TODO when it fails, and the case FAILS
   * once bpfscope passes it (then remove `todo`).
   */
  todo?: string;
  /**
   * Workload steps for a `-p PID` target: each tool run starts its own workload
   * (`bpfs_workload wait-stdin STEPS...`), replaces {@link TARGET_PID} in the arguments with its pid, waits for the
   * tool's attach message (plus a margin: 0.17 prints it before attaching), then lets the workload go by writing to
   * its stdin. Not with `-q` (no attach message to wait for).
   */
  target?: (string | number)[];
  /** Kernel-sensitive: run by default in the 6.1 guest (`@guest`). */
  guest?: boolean;
  /** Why the case cannot run in the 6.1 guest (`@guest-skip`). */
  guestSkip?: string;
  /**
   * Why the case runs only in the 6.1 guest (`@guest-only`: probe types this host refuses, e.g. fentry/fexit and
   * kprobes with EPERM); sets `guest`. Skipped with this reason elsewhere; its `recorded` output is the guest oracle's
   * (checked against the live oracle there).
   */
  guestOnly?: string;
  /** The oracle's recorded stdout (NAME.out, placeholders expanded); absent for `noOracle` cases or before regen. */
  recorded?: string;
  /** Why NAME.out is not compared with the live oracle (`@oracle-varies`). */
  oracleVaries?: string;
}

/** Placeholder for the `-p` target's pid in the arguments of a case with `target`. */
export const TARGET_PID = '%TARGET_PID%';

/** The directory of the case files. */
export function casesDir(): string {
  return join(repoRoot(), 'test', 'diff', 'cases');
}

/** Directives whose repeated lines continue one text. */
const TEXT_KEYS = new Set(['reason', 'todo', 'no-oracle', 'guest-skip', 'guest-only', 'oracle-varies']);
const ONCE_KEYS = new Set([
  'flags',
  'cmd',
  'params',
  'target',
  'script',
  'oracle-prog',
  'timeout',
  'attached',
  'expect-from-oracle',
  'guest',
]);

/** The named transforms of `@expect-from-oracle`. */
const FROM_ORACLE: Record<string, (oracleStdout: string) => string> = {
  /** 0.17's map-key stack frames are indented by 4 spaces, v0.26's (like every printed stack) by 8. */
  'stack-frames-indent-8': (o) => o.replace(/^ {4}(?=\S)/gm, ' '.repeat(8)),
  /** JSON: v0.26.1's JsonOutput::end prints nothing where 0.17 prints two empty lines. */
  'json-end': (o) => o.replace(/\n\n$/, ''),
};

/** One `.bt` file split into its directives and its program (placeholders not expanded). */
export interface CaseFile {
  name: string;
  directives: Map<string, string>;
  program: string;
}

/** Parses a case file's text; throws on an unknown or repeated directive, naming the file. */
export function parseCaseFile(name: string, text: string): CaseFile {
  const directives = new Map<string, string>();
  const lines = text.split('\n');
  let i = 0;
  for (; i < lines.length; i++) {
    const m = /^\/\/ @([a-z-]+)(?: (.*))?$/.exec(lines[i]!);
    if (!m) break;
    const [, key, value = ''] = m as unknown as [string, string, string | undefined];
    if (!TEXT_KEYS.has(key) && !ONCE_KEYS.has(key)) throw new Error(`${name}.bt: unknown directive @${key}`);
    const prev = directives.get(key);
    if (prev !== undefined && !TEXT_KEYS.has(key)) throw new Error(`${name}.bt: @${key} given twice`);
    directives.set(key, prev === undefined ? value : `${prev} ${value}`);
  }
  if (i > 0) {
    if (lines[i] !== '') throw new Error(`${name}.bt: an empty line must follow the directives`);
    i++;
  }
  let program = lines.slice(i).join('\n');
  if (!directives.has('script')) {
    if (!program.endsWith('\n')) throw new Error(`${name}.bt: must end with a newline`);
    program = program.slice(0, -1);
  }
  return { name, directives, program };
}

/** The comm `{{COMM:tag}}` stands for: unique to this test process, at most 11 of comm's 15 characters. */
export function uniqueComm(tag: string): string {
  return `bpfs_${(process.pid % 0x10000).toString(16)}${tag}`;
}

/**
 * Offset of a function symbol in an ELF file, in hex without `0x` (for `uprobe:PATH:0xADDR`), read with `nm`
 * (binutils, installed with cc). Throws if the symbol is missing.
 */
function symbolOffset(path: string, symbol: string): string {
  const out = execFileSync('nm', [path], { encoding: 'utf8' });
  const line = out.split('\n').find((l) => l.split(' ')[2] === symbol);
  if (!line) throw new Error(`symbolOffset: ${symbol} not found in ${path}`);
  return BigInt(`0x${line.split(' ')[0]}`).toString(16);
}

/** Expands the placeholders of a case file's text (see the file comment); throws on an unknown one. */
export function expandPlaceholders(text: string, where: string): string {
  return text.replace(/\{\{([A-Z]+)(?::([\w.-]+))?\}\}/g, (all, kind: string, arg?: string) => {
    if (kind === 'WORKLOAD' && arg === undefined) return workloadPath();
    if (kind === 'COMM' && arg !== undefined) return uniqueComm(arg);
    if (kind === 'OFFSET' && arg !== undefined) return symbolOffset(workloadPath(), arg);
    throw new Error(`${where}: unknown placeholder ${all}`);
  });
}

/**
 * The inverse for recording outputs: this run's workload path and unique comms (those `file` uses) put back as
 * their placeholders.
 */
export function placeholdersBack(file: CaseFile, text: string): string {
  let out = text.split(workloadPath()).join('{{WORKLOAD}}');
  const raw = [...file.directives.values(), file.program].join('\n');
  for (const m of raw.matchAll(/\{\{COMM:([\w.-]+)\}\}/g)) out = out.split(uniqueComm(m[1]!)).join(m[0]);
  return out;
}

/** Rewrites `args.field` (current bpftrace) to `args->field` (the only form bpftrace 0.17 accepts). */
function arrowArgs(prog: string): string {
  return prog.replace(/\bargs\./g, 'args->');
}

/** Writes a script file for a `@script` case and returns its path. */
function scriptFile(name: string, text: string): string {
  const dir = join(tmpdir(), 'bpfscope-test-scripts');
  mkdirSync(dir, { recursive: true });
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

const words = (s: string | undefined) => (s === undefined || s === '' ? [] : s.split(' '));

/** Builds a runnable case from its parsed file (expanding placeholders, compiling the workload when needed). */
export function caseFromFile(file: CaseFile, dir = casesDir()): DiffCase {
  const { name, directives: d } = file;
  const x = (s: string) => expandPlaceholders(s, `${name}.bt`);
  const flags = words(d.get('flags')).map(x);
  const cmd = d.has('cmd') ? ['-c', workloadCommand(...words(d.get('cmd')).map(x))] : [];
  const params = words(d.get('params')).map(x);
  const script = d.get('script');
  let args: string[];
  let oracleArgs: string[] | undefined;
  if (script !== undefined) {
    if (d.has('oracle-prog')) throw new Error(`${name}.bt: @oracle-prog with @script`);
    args = [...flags, ...cmd, scriptFile(script, x(file.program)), ...params];
  } else {
    const build = (p: string) => [...flags, '-e', p, ...cmd, ...params];
    const prog = x(file.program);
    args = build(prog);
    const oracleProg = arrowArgs(x(d.get('oracle-prog') ?? file.program));
    if (oracleProg !== prog) oracleArgs = build(oracleProg);
  }
  const dc: DiffCase = { name, args };
  if (oracleArgs) dc.oracleArgs = oracleArgs;
  const read = (ext: string) => {
    const p = join(dir, `${name}.${ext}`);
    return existsSync(p) ? x(readFileSync(p, 'utf8')) : undefined;
  };
  const expect = read('expect');
  if (expect !== undefined) dc.expect = expect;
  const from = d.get('expect-from-oracle');
  if (from !== undefined) {
    const f = FROM_ORACLE[from];
    if (!f) throw new Error(`${name}.bt: @expect-from-oracle ${from}: not one of ${Object.keys(FROM_ORACLE)}`);
    dc.expectFromOracle = f;
  }
  if (d.has('todo')) dc.todo = d.get('todo');
  if (d.has('target')) dc.target = words(d.get('target')).map(x);
  if (d.has('reason')) dc.reason = d.get('reason');
  if (d.has('no-oracle')) dc.noOracle = d.get('no-oracle');
  const num = (key: string) => {
    const v = d.get(key);
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(v)) throw new Error(`${name}.bt: @${key} ${v}: not a number`);
    return Number(v);
  };
  const attached = num('attached');
  if (attached !== undefined) dc.attached = attached;
  const timeoutMs = num('timeout');
  if (timeoutMs !== undefined) dc.timeoutMs = timeoutMs;
  if (d.has('guest')) dc.guest = true;
  if (d.has('guest-skip')) dc.guestSkip = d.get('guest-skip');
  if (d.has('guest-only')) {
    if (dc.guestSkip !== undefined) throw new Error(`${name}.bt: @guest-only with @guest-skip`);
    if (!d.get('guest-only')) throw new Error(`${name}.bt: @guest-only needs a reason`);
    dc.guestOnly = d.get('guest-only');
    dc.guest = true;
  }
  if (d.has('oracle-varies')) dc.oracleVaries = d.get('oracle-varies');
  const recorded = read('out');
  if (recorded !== undefined) dc.recorded = recorded;
  return dc;
}

/** The parsed case files of `dir`, by name; throws on a stray file (an output without its `.bt`). */
export function caseFiles(dir = casesDir()): CaseFile[] {
  const names = readdirSync(dir).sort();
  const bts = new Set(names.filter((n) => n.endsWith('.bt')).map((n) => n.slice(0, -3)));
  for (const n of names) {
    const m = /^(.*)\.(bt|out|expect)$/.exec(n);
    if (!m) throw new Error(`test/diff/cases/${n}: not NAME.bt, NAME.out or NAME.expect`);
    if (!bts.has(m[1]!)) throw new Error(`test/diff/cases/${n}: no ${m[1]}.bt`);
  }
  return [...bts].map((n) => parseCaseFile(n, readFileSync(join(dir, `${n}.bt`), 'utf8')));
}

/** The cases, built on call (they embed the compiled workload's path, compiling it if needed). */
export function diffCases(): DiffCase[] {
  return caseFiles().map((f) => caseFromFile(f));
}
