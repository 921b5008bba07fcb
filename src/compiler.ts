/**
 * The compiler pipeline, front to back: parse → expand attach points (probe providers) → semantic analysis (types,
 * map typing) → map planning → code generation (one IR program per expanded probe). Register allocation and
 * emission happen at load time (`runtime/loader.ts`), when map fds are known.
 *
 * @throws CompileError for errors in the user's program (with positions), BpfscopeError for environment problems.
 */

import { FrameOverflow } from './codegen/frame.js';
import { type GenTables, ProbeGen } from './codegen/gen.js';
import { type IrFunction, isLabel } from './codegen/ir.js';
import { planMaps } from './codegen/maps.js';
import type { CompiledProgram, ProgramPlan } from './codegen/plan.js';
import type { Program } from './lang/ast.js';
import { type CTypes, parseCDefinitions } from './lang/cdefs.js';
import { HintOnlyError } from './errors.js';
import { CompileError, type Diagnostic, type SourceFile } from './lang/diagnostics.js';
import { integerMacros } from './lang/cmacros.js';
import { I64, U64 } from './lang/types.js';
import { parse } from './lang/parser.js';
import { type RuntimeConfig, resolveConfig } from './lang/passes/config.js';
import { checkMapDecls } from './lang/passes/mapdecl.js';
import { foldLiterals } from './lang/passes/fold.js';
import { expandMacros } from './lang/passes/macros.js';
import { substitutePositionals } from './lang/passes/positional.js';
import { resolveStdlibWrappers } from './lang/passes/stdlib.js';
import { hoistBlockAggregations } from './lang/passes/aggblock.js';
import { unreachableWarnings } from './lang/passes/reachability.js';
import { scopeVariables } from './lang/passes/varscope.js';
import { Analyzer, type ProbeUnit } from './lang/passes/semantic.js';
import { expandAttachPoint } from './probes/registry.js';
import type { Target } from './lang/target.js';
import { hostTarget } from './target.js';
import { rewriteSyscallEvents, SYSCALL_REWRITE_MIN } from './probes/syscalls.js';
import type { TracepointProbe } from './probes/tracepoint.js';
import { nodesOfKind } from './lang/astwalk.js';
import type { BuiltinExpr, Probe } from './lang/ast.js';

/**
 * The options of a program run that compilation reads, declared once: `compile()` takes them in
 * {@link CompileOptions}, the runtime's `Tracer` (runtime/tracer.ts TracerOptions) takes them from its caller and
 * passes them on with {@link programOptions}.
 */
export interface ProgramOptions {
  /** Positional parameters `$1..$N`. */
  positional?: string[];
  /** Named program options (`-- --aa=5`) for getopt(); any the program does not read is an error. */
  named?: Map<string, string | true>;
  /** --unsafe: allow signal() and similar. */
  unsafe?: boolean;
  /** `-k`: warn at run time where a map read finds no element. */
  helperWarnings?: boolean;
  /** `--include FILE`: headers whose integer `#define`s the program may use (see lang/cmacros.ts). */
  includeFiles?: readonly string[];
  /** `-I DIR`: where headers are searched first. */
  includeDirs?: readonly string[];
  /**
   * `-p PID`: probes (except BEGIN/END) only fire for this process (the Tracer also stops when it exits).
   */
  pid?: number;
  /**
   * Config values as the `BPFTRACE_*` environment variables give them (`{ BPFTRACE_MAX_STRLEN: '128' }`), over
   * the process environment; the program's config block still wins.
   */
  configEnv?: Readonly<Record<string, string>>;
}

/** The {@link ProgramOptions} set in `o` (and nothing else of it), empty lists left out. */
export function programOptions(o: ProgramOptions): ProgramOptions {
  return {
    ...(o.positional ? { positional: o.positional } : {}),
    ...(o.named ? { named: o.named } : {}),
    ...(o.unsafe ? { unsafe: true } : {}),
    ...(o.helperWarnings ? { helperWarnings: true } : {}),
    ...(o.includeFiles?.length ? { includeFiles: o.includeFiles } : {}),
    ...(o.includeDirs?.length ? { includeDirs: o.includeDirs } : {}),
    ...(o.pid !== undefined ? { pid: o.pid } : {}),
    ...(o.configEnv ? { configEnv: o.configEnv } : {}),
  };
}

export interface CompileOptions extends ProgramOptions {
  /** `-c`: the child's pid, for `cpid`. */
  cpid?: number;
  /** CLOCK_MONOTONIC ns at session start, for `elapsed` (defaults to now). */
  startNs?: bigint;
  /** Ring buffer size in bytes (power of two >= page size); overrides `perf_rb_pages`. */
  ringbufSize?: number;
  /**
   * Host facts the program is compiled against (CPUs, PID namespace, kernel symbols, cgroup ids, uaddr; see
   * lang/target.ts). Default: this host ({@link hostTarget}).
   */
  target?: Target;
}

export interface CompileResult {
  ast: Program;
  compiled: CompiledProgram;
  units: ProbeUnit[];
  warnings: Diagnostic[];
}

/** Expansion errors of an attach point that exists in the syntax but matches nothing in this kernel or binary. */
const MISSING_PROBE = /^No matches for |not found/;

export const RINGBUF_MAP = 'ringbuf';
/** IR name of the ring buffer's wake-control map (codegen's ringbufFlags, runtime/ringbuf.ts). */
export const WAKE_MAP = 'ringbuf_wake';
export const LOST_MAP = 'lost_events';
export const EXIT_MAP = 'exit_flag';

/** Compile a program's text. */
export function compile(source: SourceFile, opts: CompileOptions = {}): CompileResult {
  const ast = parse(source);
  let config: RuntimeConfig;
  let cTypes: CTypes;
  const warnings: Diagnostic[] = [];
  try {
    const r = resolveConfig(ast, opts.configEnv ? { ...process.env, ...opts.configEnv } : process.env);
    config = r.config;
    warnings.push(...r.warnings);
    substitutePositionals(ast, opts.positional ?? []);
    expandMacros(ast);
    resolveStdlibWrappers(ast);
    hoistBlockAggregations(ast);
    foldLiterals(ast);
    scopeVariables(ast);
    for (const w of unreachableWarnings(ast)) warnings.push(w);
    cTypes = parseCDefinitions(ast.cDefinitions, source.text);
    // integer #define constants of the program and its headers read like enumerators (lang/cmacros.ts)
    for (const [name, value] of integerMacros(source.text, {
      ...(opts.includeFiles ? { includeFiles: opts.includeFiles } : {}),
      ...(opts.includeDirs ? { includeDirs: opts.includeDirs } : {}),
    })) {
      if (!cTypes.enumerators.has(name)) cTypes.enumerators.set(name, { value, type: value < 0n ? I64 : U64 });
    }
  } catch (e) {
    if (e instanceof CompileError) throw new CompileError(e.diagnostics, source);
    throw e;
  }
  if (ast.probes.length === 0) {
    throw new CompileError([{ severity: 'error', message: 'No probes found in the program' }], source);
  }
  const units: ProbeUnit[] = [];
  const errors: Diagnostic[] = [];
  ast.probes.forEach((probe, probeIndex) => {
    // a body that reads `probe` keeps a multi-attach link: `probe` is read by attach cookie (ExpandedProbe.probeNames)
    // where bpftrace expands to one program per match
    for (const ap of probe.attachPoints) {
      try {
        let matches = expandAttachPoint(ap, {
          ...(opts.pid !== undefined ? { pid: opts.pid } : {}),
          ...(opts.unsafe ? { unsafe: true } : {}),
        });
        // syscall tracepoint wildcards become one raw_syscalls program where the body does not read `args`
        if (matches.length >= SYSCALL_REWRITE_MIN && !readsRecord(probe)) {
          const first = matches[0] as Partial<TracepointProbe>;
          if (first.fs) matches = rewriteSyscallEvents(ap, matches, first.fs);
        }
        for (const expanded of matches) units.push({ probe, expanded, probeIndex });
      } catch (e) {
        if (!(e instanceof CompileError)) throw e;
        // config missing_probes = warn / ignore: an attach point that matches nothing is skipped (bpftrace)
        if (config.missingProbes !== 'error' && e.diagnostics.every((d) => MISSING_PROBE.test(d.message))) {
          if (config.missingProbes === 'warn') {
            for (const d of e.diagnostics)
              warnings.push({ ...d, severity: 'warning', message: `${d.message} Skipping.` });
          }
          continue;
        }
        for (const d of e.diagnostics) errors.push(d);
      }
    }
  });
  if (errors.length) throw new CompileError(errors, source);
  // bpftrace's prerun() check, with its message (src/bpftrace.cpp), before anything is generated or loaded
  const attachCount = units.filter((u) => !u.expanded.special).length;
  if (attachCount > config.maxProbes) {
    throw new CompileError(
      [
        {
          severity: 'error',
          message:
            `Can't attach to ${attachCount} probes because it exceeds the current limit of ${config.maxProbes} ` +
            'probes.',
          hint:
            'You can increase the limit through the BPFTRACE_MAX_PROBES environment variable (or config = ' +
            '{ max_probes = N }), but BE CAREFUL since a high number of probes attached can cause your system to crash.',
        },
      ],
      source,
    );
  }
  let probeNameSize = 8;
  for (const u of units) {
    for (const n of [u.expanded.name, ...(u.expanded.probeNames ?? [])])
      probeNameSize = Math.max(probeNameSize, Buffer.byteLength(n) + 1);
  }
  const positional = opts.positional ?? [];
  const target = opts.target ?? hostTarget();
  const analyzer = new Analyzer(units, {
    target,
    positional,
    named: opts.named ?? new Map(),
    cpid: opts.cpid,
    probeNameSize,
    unsafe: opts.unsafe ?? false,
    maxStrlen: config.maxStrlen,
    cTypes,
  });
  try {
    analyzer.analyze();
  } catch (e) {
    if (e instanceof CompileError) throw new CompileError(e.diagnostics, source);
    throw e;
  }
  for (const w of analyzer.warnings) warnings.push(w);
  const unexpected = [...(opts.named ?? new Map()).keys()].filter((n) => !analyzer.getopts.has(n));
  if (unexpected.length) throw unexpectedOptions(unexpected, analyzer.getopts);
  const decls = checkMapDecls(ast.mapDecls, analyzer.maps);
  if (decls.diagnostics.some((d) => d.severity === 'error')) throw new CompileError(decls.diagnostics, source);
  warnings.push(...decls.diagnostics);
  const maps = planMaps(analyzer.maps.values(), config.maxMapKeys, decls.declared);
  const tables: GenTables = {
    maps: new Map(maps.map((m) => [m.name, m])),
    resources: {
      printfs: [],
      printValues: [],
      timeFormats: [],
      joinSeparators: [],
      ringbufName: RINGBUF_MAP,
      wakeName: WAKE_MAP,
      lostName: LOST_MAP,
      exitName: EXIT_MAP,
      frameMaps: [],
    },
    stackMaps: new Map(),
    funcTables: new Map(),
    positional,
    cpid: opts.cpid,
    ...(opts.pid !== undefined ? { filterPid: opts.pid } : {}),
    ...(opts.helperWarnings ? { helperWarnings: true } : {}),
    probeNameSize,
    startNs: opts.startNs ?? process.hrtime.bigint(),
    ...(config.dummyTsMap !== undefined ? { dummyTsMap: config.dummyTsMap } : {}),
    target,
  };
  const programs: ProgramPlan[] = units.map((u, i) => {
    analyzer.typeUnit(u, true);
    const kernelName = programName(u, i);
    let gen = new ProbeGen(tables, u, analyzer, kernelName);
    let fn: IrFunction;
    try {
      fn = gen.generate();
    } catch (e) {
      // too much for the 512-byte BPF stack (long strings): again with the frame in a frame map
      if (!(e instanceof FrameOverflow)) throw e;
      gen = new ProbeGen(tables, u, analyzer, kernelName, undefined, true);
      fn = gen.generate();
    }
    checkMapCount(u, [fn, ...gen.subprogs.map((s) => s.fn)], source);
    return { fn, expanded: u.expanded, kernelName, ...(gen.subprogs.length ? { subprogs: gen.subprogs } : {}) };
  });
  return {
    ast,
    units,
    warnings,
    compiled: {
      ...tables.resources,
      maps,
      programs,
      stackMaps: [...tables.stackMaps.values()],
      funcTables: [...tables.funcTables.values()],
      ringbufSize: opts.ringbufSize ?? config.ringbufSize,
      printMapsOnExit: config.printMapsOnExit,
      maxCatBytes: config.maxCatBytes,
    },
  };
}

/**
 * The kernel's limit on the distinct maps one BPF program (with its subprograms) may use: MAX_USED_MAPS in
 * include/linux/bpf_verifier.h, reported by the verifier as "The total number of maps per program has reached the
 * limit of 64".
 */
export const MAX_USED_MAPS = 64;

/**
 * Rejects a probe whose generated code uses more than {@link MAX_USED_MAPS} maps (the program's own and bpfscope's
 * ring buffer and control maps), pointing at the first use of the map over the limit. Checked on the IR right after
 * generation, so that nothing is allocated, created in the kernel or handed to the verifier for a program that
 * cannot load (bpftrace leaves this to the verifier).
 */
function checkMapCount(u: ProbeUnit, fns: readonly IrFunction[], source: SourceFile): void {
  const seen = new Set<string>();
  let over: Diagnostic['pos'];
  for (const f of fns) {
    for (const it of f.items) {
      if (isLabel(it) || it.mapRef === undefined || seen.has(it.mapRef)) continue;
      seen.add(it.mapRef);
      if (seen.size === MAX_USED_MAPS + 1) over = it.pos ?? u.probe.pos;
    }
  }
  if (seen.size <= MAX_USED_MAPS) return;
  throw new CompileError(
    [
      {
        severity: 'error',
        message: `The probe ${u.expanded.name} uses ${seen.size} maps, more than the ${MAX_USED_MAPS} the kernel allows in one BPF program (bpfscope's ring buffer and control maps count too)`,
        ...(over ? { pos: over } : {}),
        hint: 'use fewer maps per probe: one map with a key (@m[1], @m[2], ...) instead of many maps, or split the work across probes',
      },
    ],
    source,
  );
}

/** Kernel program name: provider initial + sanitised probe name, at most 15 characters. */
/** The probe's predicate or body reads the event record (`args`, `ctx`), which differs between tracepoints. */
function readsRecord(probe: Probe): boolean {
  const uses = nodesOfKind<BuiltinExpr>([probe.predicate, probe.body], 'BuiltinExpr');
  return uses.some((b) => b.name === 'args' || b.name === 'ctx');
}

function programName(u: ProbeUnit, i: number): string {
  const base = u.expanded.name.split(':').pop() ?? u.expanded.provider;
  let clean = base.replace(/[^A-Za-z0-9_]/g, '_');
  // also the BTF name of the program's function (for loops run as callbacks), which must be a C identifier
  if (!/^[A-Za-z_]/.test(clean)) clean = `${u.expanded.provider[0] ?? 'p'}${clean}`;
  return `${clean.slice(0, 11)}_${i}`.slice(0, 15);
}

/**
 * The error for named program options the program does not read (bpftrace's UnknownParamError, `globalvars.h`).
 * `-- --help` is not an error but a request: only the hint is printed, `HINT: expected program options:` followed
 * by one `--name[: description]` line per option, sorted.
 */
function unexpectedOptions(unexpected: string[], known: Map<string, string>): CompileError | HintOnlyError {
  const names = [...known.keys()].sort();
  const others = unexpected.filter((n) => n !== 'help');
  const none = 'no custom program options defined.';
  if (others.length === 0) {
    const lines = names.map((n) => `--${n}${known.get(n) ? `: ${known.get(n)}` : ''}`);
    return new HintOnlyError(names.length ? ['expected program options:', ...lines].join('\n') : none);
  }
  return new CompileError([
    {
      severity: 'error',
      message: `unexpected program command line options: ${others.map((n) => `--${n}`).join(', ')}`,
      hint: names.length ? `expected program options: ${names.map((n) => `--${n}`).join(', ')}` : none,
    },
  ]);
}
