/**
 * The compiler pipeline, front to back: parse → expand attach points (probe providers) → semantic analysis (types,
 * map typing) → map planning → code generation (one IR program per expanded probe). Register allocation and
 * emission happen at load time (`runtime/loader.ts`), when map fds are known.
 *
 * @throws CompileError for errors in the user's program (with positions), BpfscopeError for environment problems.
 */

import { FrameOverflow } from './codegen/frame.js';
import { type GenTables, ProbeGen } from './codegen/gen.js';
import { type FramePlan, planFrame } from './codegen/resources.js';
import { assignResourceIds, type ResourceIds } from './codegen/resource-ids.js';
import { type IrFunction, isLabel } from './codegen/ir.js';
import { planMaps } from './codegen/maps.js';
import type { CompiledProgram, ProgramPlan } from './codegen/plan.js';
import type { Program } from './lang/ast.js';
import { type CTypes, parseCDefinitions } from './lang/cdefs.js';
import { BpfscopeError, HintOnlyError } from './errors.js';
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
import { need, type Pass, PassManager } from './lang/passes/manager.js';
import { Analyzer, type ProbeUnit } from './lang/passes/semantic.js';
import type { TypeTable } from './lang/type-table.js';
import { NO_VALID_ATTACH_POINTS, NO_VALID_ATTACH_POINTS_WARNING } from './probes/errors.js';
import { expandAttachPoint } from './probes/registry.js';
import { iterCompanionErrors } from './probes/iter.js';
import { hasWildcard } from './probes/glob.js';
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
   * the process environment; as in bpftrace, the environment wins over the program's config block.
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
  /** The types of each unit's expressions (the `semantic` pass's; `-d ast` prints them). */
  types: ReadonlyMap<ProbeUnit, TypeTable>;
  warnings: Diagnostic[];
}

/** Expansion errors of an attach point that exists in the syntax but matches nothing in this kernel or binary. */
const MISSING_PROBE = /^No matches for |not found|^Probe has no valid attach points\.| is not traceable \(/;

export const RINGBUF_MAP = 'ringbuf';
/** IR name of the ring buffer's wake-control map (codegen's ringbufFlags, runtime/ringbuf.ts). */
export const WAKE_MAP = 'ringbuf_wake';
export const LOST_MAP = 'lost_events';
export const EXIT_MAP = 'exit_flag';

/**
 * What the passes of {@link compile} read and produce (see {@link COMPILE_PASSES}): the inputs, then one field per
 * product, `undefined` until the pass that produces it has run.
 */
export interface CompileContext {
  /** The program's text (input). */
  source: SourceFile;
  /** The options (input). */
  opts: CompileOptions;
  /** Warnings, appended by the passes that find some (input: empty). */
  warnings: Diagnostic[];
  /** The syntax tree (`parse`), rewritten in place by the AST passes after it. */
  ast?: Program;
  /** The program's config block over the `BPFTRACE_*` variables (`config`). */
  config?: RuntimeConfig;
  /** C definitions of the program and the integer macros of its headers (`c_definitions`). */
  cTypes?: CTypes;
  /** One unit per attach point match (`attach_points`). */
  units?: ProbeUnit[];
  /** Bytes of the longest probe name plus its NUL, at least 8 (`attach_points`). */
  probeNameSize?: number;
  /** Host facts the program is compiled against (`attach_points`: the option or this host). */
  target?: Target;
  /** The analyser: map types, getopt() options, compile-time constants (`semantic`). */
  analyzer?: Analyzer;
  /** One type table per unit: its expressions' and variables' types (`semantic`; lang/type-table.ts). */
  types?: ReadonlyMap<ProbeUnit, TypeTable>;
  /** The kernel maps to create (`map_decls`). */
  maps?: ReturnType<typeof planMaps>;
  /** Per unit (same order as `units`): the bound of its frame and whether it lives in a frame map (`resources`). */
  frames?: FramePlan[];
  /**
   * The ids of the calls that send records (printf/system/errorf/warnf/cat formats, time formats, join separators,
   * printed values) by node per unit, and the stack maps (`resources`; codegen/resource-ids.ts).
   */
  resourceIds?: ResourceIds;
  /** The resource pass's tables plus what code generation added: run-time warnings, frame maps, function tables (`codegen`). */
  tables?: GenTables;
  /** One IR program per unit (`codegen`). */
  programs?: ProgramPlan[];
}

type CompilePass = Pass<CompileContext>;

/** `parse`: the program's text to a syntax tree (lang/parser.ts). */
const parsePass: CompilePass = {
  name: 'parse',
  reads: ['source'],
  produces: ['ast'],
  run: (c) => {
    c.ast = parse(c.source);
  },
};

/** `config`: the config block over the environment (lang/passes/config.ts). */
const configPass: CompilePass = {
  name: 'config',
  reads: ['ast', 'opts', 'warnings'],
  produces: ['config'],
  run: (c) => {
    const env = c.opts.configEnv ? { ...process.env, ...c.opts.configEnv } : process.env;
    const r = resolveConfig(need(c, 'ast'), env);
    c.config = r.config;
    c.warnings.push(...r.warnings);
  },
};

/** A pass that rewrites the AST in place. */
function astPass(name: string, run: (ast: Program, c: CompileContext) => void): CompilePass {
  return { name, reads: ['ast'], produces: [], run: (c) => run(need(c, 'ast'), c) };
}

/** `c_definitions`: the program's C definitions and the integer `#define`s of it and its headers (lang/cmacros.ts). */
const cDefinitionsPass: CompilePass = {
  name: 'c_definitions',
  reads: ['ast', 'source', 'opts'],
  produces: ['cTypes'],
  run: (c) => {
    const { opts, source } = c;
    const cTypes = parseCDefinitions(need(c, 'ast').cDefinitions, source.text);
    // integer #define constants of the program and its headers read like enumerators (lang/cmacros.ts)
    for (const [name, value] of integerMacros(source.text, {
      ...(opts.includeFiles ? { includeFiles: opts.includeFiles } : {}),
      ...(opts.includeDirs ? { includeDirs: opts.includeDirs } : {}),
    })) {
      if (!cTypes.enumerators.has(name)) cTypes.enumerators.set(name, { value, type: value < 0n ? I64 : U64 });
    }
    c.cTypes = cTypes;
  },
};

/**
 * `attach_points`: each probe's attach points expanded against this kernel and its binaries (probes/registry.ts),
 * one unit per match; `missing_probes`, bpftrace's probe-count limit and the probe name size.
 */
const attachPointsPass: CompilePass = {
  name: 'attach_points',
  reads: ['ast', 'config', 'opts', 'source', 'warnings'],
  produces: ['units', 'probeNameSize', 'target'],
  run: (c) => {
    const ast = need(c, 'ast');
    const config = need(c, 'config');
    const { opts, source, warnings } = c;
    if (ast.probes.length === 0) {
      throw new CompileError([{ severity: 'error', message: 'No probes found in the program' }], source);
    }
    const units: ProbeUnit[] = [];
    const errors: Diagnostic[] = [];
    /** The programs bpftrace would generate for wildcards so far (its max_bpf_progs check, ap_probe_expansion.cpp). */
    let bpfProgs = 0;
    let overLimit = false;
    ast.probes.forEach((probe, probeIndex) => {
      // a body that reads `probe`: a kprobe wildcard gets one program per match, as bpftrace's full expansion
      const readsProbe = readsProbeName(probe);
      const before = units.length;
      let emptyWildcards = 0;
      let skippedPoints = 0;
      for (const ap of probe.attachPoints) {
        if (overLimit) break;
        try {
          let matches = expandAttachPoint(ap, {
            ...(readsProbe ? { readsProbe: true } : {}),
            ...(opts.pid !== undefined ? { pid: opts.pid } : {}),
            ...(opts.unsafe ? { unsafe: true } : {}),
            ...(config.cppDemangle ? { demangle: true } : {}),
            warn: (message) => {
              if (config.missingProbes !== 'ignore') warnings.push({ severity: 'warning', message, pos: ap.pos });
            },
          });
          // syscall tracepoint wildcards become one raw_syscalls program where the body does not read `args`
          if (matches.length >= SYSCALL_REWRITE_MIN && !readsRecord(probe)) {
            const first = matches[0] as Partial<TracepointProbe>;
            if (first.fs) matches = rewriteSyscallEvents(ap, matches, first.fs);
          }
          if (matches.length === 0) emptyWildcards++;
          if (hasWildcard(ap.raw)) {
            bpfProgs += matches.reduce((n, m) => n + (m.probeNames ? (readsProbe ? m.probeNames.length : 0) : 1), 0);
            if (bpfProgs > config.maxBpfProgs) {
              errors.push({
                severity: 'error',
                message:
                  `Your program is trying to generate more than ${bpfProgs} BPF programs, which exceeds the ` +
                  `current limit of ${config.maxBpfProgs}`,
                pos: ap.pos,
                hint: 'You can increase the limit through the BPFTRACE_MAX_BPF_PROGS environment variable.',
              });
              overLimit = true;
              break;
            }
          }
          for (const expanded of matches) units.push({ probe, expanded, probeIndex });
        } catch (e) {
          if (!(e instanceof CompileError)) throw e;
          // config missing_probes = warn / ignore: an attach point that matches nothing is skipped (bpftrace)
          if (config.missingProbes !== 'error' && e.diagnostics.every((d) => MISSING_PROBE.test(d.message))) {
            skippedPoints++;
            if (config.missingProbes === 'warn') {
              for (const d of e.diagnostics) {
                if (d.severity === 'warning') {
                  warnings.push(d);
                  continue;
                }
                const message =
                  d.message === NO_VALID_ATTACH_POINTS ? NO_VALID_ATTACH_POINTS_WARNING : `${d.message} Skipping.`;
                warnings.push({ ...d, severity: 'warning', message });
              }
            }
            continue;
          }
          for (const d of e.diagnostics) errors.push(d);
        }
      }
      // a wildcard that matches nothing (kprobe:nonsense*) is dropped, as bpftrace's expansion does, and an attach
      // point skipped under missing_probes = warn/ignore too; a probe left with no attach point at all is bpftrace's
      // probe_prune case: an error, or a warning with missing_probes = warn
      const gone = emptyWildcards + skippedPoints;
      if (gone > 0 && gone === probe.attachPoints.length && units.length === before) {
        const pos = probe.attachPoints[0]!.pos;
        if (config.missingProbes === 'error') errors.push({ severity: 'error', message: NO_VALID_ATTACH_POINTS, pos });
        else if (
          config.missingProbes === 'warn' &&
          !warnings.some((w) => w.message === NO_VALID_ATTACH_POINTS_WARNING && w.pos === pos)
        )
          warnings.push({ severity: 'warning', message: NO_VALID_ATTACH_POINTS_WARNING, pos });
      }
    });
    errors.push(...iterCompanionErrors(units.map((u) => u.expanded)));
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
    c.units = units;
    c.probeNameSize = probeNameSize;
    c.target = opts.target ?? hostTarget();
  },
};

/**
 * `semantic`: types of every expression, map and variable (lang/passes/semantic.ts), one type table per unit;
 * unknown program options.
 */
const semanticPass: CompilePass = {
  name: 'semantic',
  reads: ['units', 'opts', 'target', 'probeNameSize', 'config', 'cTypes', 'warnings'],
  produces: ['analyzer', 'types'],
  run: (c) => {
    const { opts } = c;
    const analyzer = new Analyzer(need(c, 'units'), {
      target: need(c, 'target'),
      positional: opts.positional ?? [],
      named: opts.named ?? new Map(),
      cpid: opts.cpid,
      probeNameSize: need(c, 'probeNameSize'),
      unsafe: opts.unsafe ?? false,
      maxStrlen: need(c, 'config').maxStrlen,
      stackMode: need(c, 'config').stackMode,
      cTypes: need(c, 'cTypes'),
    });
    analyzer.analyze();
    for (const w of analyzer.warnings) c.warnings.push(w);
    const unexpected = [...(opts.named ?? new Map()).keys()].filter((n) => !analyzer.getopts.has(n));
    if (unexpected.length) throw unexpectedOptions(unexpected, analyzer.getopts);
    c.analyzer = analyzer;
    c.types = new Map(need(c, 'units').map((u) => [u, analyzer.types(u)]));
  },
};

/** `map_decls`: the program's `let @m = hash(N)` declarations checked, and the kernel maps planned (codegen/maps.ts). */
const mapDeclsPass: CompilePass = {
  name: 'map_decls',
  reads: ['ast', 'analyzer', 'config', 'source', 'warnings'],
  produces: ['maps'],
  run: (c) => {
    const analyzer = need(c, 'analyzer');
    const decls = checkMapDecls(need(c, 'ast').mapDecls, analyzer.maps);
    if (decls.diagnostics.some((d) => d.severity === 'error')) throw new CompileError(decls.diagnostics, c.source);
    c.warnings.push(...decls.diagnostics);
    c.maps = planMaps(analyzer.maps.values(), need(c, 'config').maxMapKeys, decls.declared);
  },
};

/**
 * `resources`: decided before any code is generated, from the typed AST. Per unit, an upper bound of its frame and
 * with it whether the frame fits the BPF stack or lives in a frame map (codegen/resources.ts); for the program, the
 * id of each call that sends a record and the stack maps (codegen/resource-ids.ts).
 */
const resourcesPass: CompilePass = {
  name: 'resources',
  reads: ['maps', 'units', 'types', 'opts'],
  produces: ['frames', 'resourceIds'],
  run: (c) => {
    const types = need(c, 'types');
    const units = need(c, 'units');
    const maps = new Map(need(c, 'maps').map((m) => [m.name, m]));
    c.frames = units.map((u) => planFrame(u, types.get(u)!, maps, c.opts.helperWarnings ?? false));
    c.resourceIds = assignResourceIds(units, types, {
      maps,
      helperWarnings: c.opts.helperWarnings ?? false,
      positional: c.opts.positional ?? [],
      cpid: c.opts.cpid,
    });
  },
};

/** `codegen`: one IR program per unit (codegen/gen.ts), and the per-program map limit. */
const codegenPass: CompilePass = {
  name: 'codegen',
  reads: ['maps', 'units', 'types', 'config', 'opts', 'target', 'probeNameSize', 'source', 'frames', 'resourceIds'],
  produces: ['tables', 'programs'],
  run: (c) => {
    const { opts, source } = c;
    const types = need(c, 'types');
    const config = need(c, 'config');
    const ids = need(c, 'resourceIds');
    const tables: GenTables = {
      maps: new Map(need(c, 'maps').map((m) => [m.name, m])),
      resources: {
        // the calls' formats, then the run-time warnings (all assigned by the resource pass)
        printfs: ids.printfs,
        printValues: ids.printValues,
        timeFormats: ids.timeFormats,
        joinSeparators: ids.joinSeparators,
        ringbufName: RINGBUF_MAP,
        wakeName: WAKE_MAP,
        lostName: LOST_MAP,
        exitName: EXIT_MAP,
        frameMaps: [],
      },
      ids,
      funcTables: new Map(),
      positional: opts.positional ?? [],
      cpid: opts.cpid,
      ...(opts.pid !== undefined ? { filterPid: opts.pid } : {}),
      ...(opts.helperWarnings ? { helperWarnings: true } : {}),
      probeNameSize: need(c, 'probeNameSize'),
      startNs: opts.startNs ?? process.hrtime.bigint(),
      ...(config.dummyTsMap !== undefined ? { dummyTsMap: config.dummyTsMap } : {}),
      target: need(c, 'target'),
    };
    const frames = need(c, 'frames');
    c.programs = need(c, 'units').map((u, i) => {
      const kernelName = programName(u, i);
      const frame = frames[i]!;
      const gen = new ProbeGen(tables, u, types.get(u)!, kernelName, undefined, frame.inMap);
      let fn: IrFunction;
      try {
        fn = gen.generate();
      } catch (e) {
        // the resource pass's bound was too low: a bug, never a second generation (a loop callback's own frame,
        // which is not sized ahead, overflows with FrameOverflow's message for the user)
        if (e instanceof FrameOverflow && e.program === kernelName) {
          throw new BpfscopeError(
            `internal: the frame of probe ${u.expanded.name} outgrew the ${frame.bound} bytes the resource pass ` +
              `bounded it to (codegen/resources.ts); please report this program`,
          );
        }
        throw e;
      }
      checkMapCount(u, [fn, ...gen.subprogs.map((s) => s.fn)], source);
      const btfName = `${u.expanded.name.replace(/[^A-Za-z0-9_]/g, '_')}_${i + 1}`;
      return {
        fn,
        expanded: u.expanded,
        kernelName,
        ...(btfName.length <= 127 ? { btfName } : {}),
        ...(gen.subprogs.length ? { subprogs: gen.subprogs } : {}),
      };
    });
    c.tables = tables;
  },
};

/**
 * The compiler's passes, in order (names after bpftrace's where it has the same pass). The list is checked once,
 * here, by the {@link PassManager}: each pass reads only what the options or an earlier pass provide.
 */
export const COMPILE_PASSES = new PassManager<CompileContext>(
  [
    parsePass,
    configPass,
    astPass('positional_params', (ast, c) => substitutePositionals(ast, c.opts.positional ?? [])),
    astPass('macro_expansion', (ast) => expandMacros(ast)),
    { ...astPass('stdlib_wrappers', (ast, c) => resolveStdlibWrappers(ast, c.config)), reads: ['ast', 'config'] },
    astPass('block_aggregations', (ast) => hoistBlockAggregations(ast)),
    astPass('fold_literals', (ast) => foldLiterals(ast)),
    astPass('variable_scopes', (ast) => scopeVariables(ast)),
    {
      ...astPass('control_flow', (ast, c) => c.warnings.push(...unreachableWarnings(ast))),
      reads: ['ast', 'warnings'],
    },
    cDefinitionsPass,
    attachPointsPass,
    semanticPass,
    mapDeclsPass,
    resourcesPass,
    codegenPass,
  ],
  ['source', 'opts', 'warnings'],
);

/**
 * Compile a program's text: {@link COMPILE_PASSES} run in order.
 *
 * @throws CompileError for errors in the user's program, with `source` set (positions refer to it)
 */
export function compile(source: SourceFile, opts: CompileOptions = {}): CompileResult {
  const ctx: CompileContext = { source, opts, warnings: [] };
  try {
    COMPILE_PASSES.run(ctx);
  } catch (e) {
    if (e instanceof CompileError && !e.source) throw new CompileError(e.diagnostics, source);
    throw e;
  }
  const config = need(ctx, 'config');
  const tables = need(ctx, 'tables');
  return {
    ast: need(ctx, 'ast'),
    units: need(ctx, 'units'),
    types: need(ctx, 'types'),
    warnings: ctx.warnings,
    compiled: {
      ...tables.resources,
      maps: need(ctx, 'maps'),
      programs: need(ctx, 'programs'),
      stackMaps: [...tables.ids.stackMaps.values()],
      funcTables: [...tables.funcTables.values()],
      ringbufSize: opts.ringbufSize ?? config.ringbufSize,
      printMapsOnExit: config.printMapsOnExit,
      ...(config.showDebugInfo ? { showDebugInfo: true } : {}),
      ...(config.cppDemangle ? {} : { cppDemangle: false }),
      maxCatBytes: config.maxCatBytes,
      strTruncTrailer: config.strTruncTrailer,
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

/** Whether the probe's predicate or body uses any of the builtins `names`. */
function readsBuiltin(probe: Probe, ...names: string[]): boolean {
  return nodesOfKind<BuiltinExpr>([probe.predicate, probe.body], 'BuiltinExpr').some((b) => names.includes(b.name));
}

/** The probe reads the `probe` builtin (its attach point's name). */
function readsProbeName(probe: Probe): boolean {
  return readsBuiltin(probe, 'probe');
}

/** The probe reads the event record (`args`, `ctx`), which differs between tracepoints. */
function readsRecord(probe: Probe): boolean {
  return readsBuiltin(probe, 'args', 'ctx');
}

/** Kernel program name: provider initial + sanitised probe name, at most 15 characters. */
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
