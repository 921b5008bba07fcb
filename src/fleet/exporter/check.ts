/**
 * What `--config.check` checks beyond config.ts, without loading anything into the kernel: the bpftrace program
 * compiles (bpfscope's compiler, as `bpfscope -d`), and every metric's map exists with keys and values the metric
 * can read. Also builds the program text the exporter runs: the cardinality guard's map declarations (`let @m =
 * percpulruhash(N);`) are inserted in front of the first probe, on its line, so diagnostics keep their line numbers.
 *
 * Mapping (docs/fleet.md "Programs and maps"): metric `name` reads map `@name` (or `map:`); the map's key elements
 * are the labels in order (a scalar map has none); a counter reads integer values (count(), sum(), plain integers),
 * a histogram a hist() (bucket_type exp2/exp2zero, or fixed) or lhist() (linear, or fixed) map.
 */
import { compile, type CompileResult } from '../../compiler.js';
import type { MapPlan } from '../../codegen/plan.js';
import { CompileError, type Diagnostic } from '../../lang/diagnostics.js';
import { parse } from '../../lang/parser.js';
import { isAggregation, sizeOf, type SType, typeName } from '../../lang/types.js';
import { ConfigError, type ExporterConfig, type MetricConfig } from './config.js';

/** The program the exporter runs for a config. */
export interface PreparedProgram {
  text: string;
  /** Name used in diagnostics and in the session registry (`bpfscope ps`). */
  sourceName: string;
  /** Compile warnings (as `file:line: warning: ...`). */
  warnings: string[];
  /** Per metric: the kernel map's plan (key and value types). */
  maps: ReadonlyMap<MetricConfig, MapPlan>;
}

/** `file:line: message` of a diagnostic, its line counted in the config's file. */
function located(cfg: ExporterConfig, d: Diagnostic): { line: number | undefined; text: string } {
  const line = d.pos ? d.pos.line + cfg.program.lineOffset : undefined;
  return { line, text: d.message };
}

function compileError(cfg: ExporterConfig, e: CompileError): ConfigError {
  const d = e.diagnostics.find((x) => x.severity === 'error') ?? e.diagnostics[0]!;
  const { line, text } = located(cfg, d);
  return new ConfigError(
    cfg.program.file,
    line,
    `the program does not compile: ${text}`,
    d.hint ? { hint: d.hint } : {},
  );
}

function elementSize(t: SType): number {
  return sizeOf(t);
}

/** Check `cfg`'s program against its metrics; returns the program to run. */
export function prepareProgram(
  cfg: ExporterConfig,
  opts: { unsafe?: boolean; strict?: boolean } = {},
): PreparedProgram {
  const source = { name: cfg.program.file, text: cfg.program.text };
  let ast;
  try {
    ast = parse(source);
  } catch (e) {
    if (e instanceof CompileError) throw compileError(cfg, e);
    throw e;
  }
  const declared = new Set(ast.mapDecls.map((d) => d.name));
  const guards = cfg.metrics.filter((m) => m.maxSeries !== undefined && m.kind === 'counter');
  for (const m of guards) {
    if (declared.has(m.map)) {
      throw new ConfigError(cfg.file, m.line, `max_series: map @${m.map} is already declared by the program`, {
        hint: 'remove max_series, or the declaration (the exporter declares the map as an LRU map of that size)',
      });
    }
  }
  let result: CompileResult;
  const first = ast.probes[0];
  const compileWith = (text: string): CompileResult => {
    try {
      return compile({ name: cfg.program.file, text }, opts.unsafe ? { unsafe: true } : {});
    } catch (e) {
      if (e instanceof CompileError) throw compileError(cfg, e);
      throw e;
    }
  };
  result = compileWith(cfg.program.text);
  let text = cfg.program.text;
  if (guards.length > 0 && first) {
    const decls = guards
      .map((m) => {
        const plan = result.compiled.maps.find((p) => p.name === m.map);
        const type = plan && isAggregation(plan.valueType) ? 'percpulruhash' : 'lruhash';
        return `let @${m.map} = ${type}(${m.maxSeries}); `;
      })
      .join('');
    const at = first.pos.offset;
    text = text.slice(0, at) + decls + text.slice(at);
    result = compileWith(text);
  }
  const warnings = result.warnings.map((d) => {
    const { line, text: msg } = located(cfg, d);
    return `${cfg.program.file}${line !== undefined ? `:${line}` : ''}: warning: ${msg}`;
  });
  if (opts.strict && warnings.length > 0) {
    const d = result.warnings[0]!;
    const { line, text: msg } = located(cfg, d);
    throw new ConfigError(cfg.program.file, line, `${msg} (--config.strict makes warnings errors)`);
  }
  const maps = new Map<MetricConfig, MapPlan>();
  const names = result.compiled.maps.map((p) => `@${p.name}`);
  for (const m of cfg.metrics) {
    const plan = result.compiled.maps.find((p) => p.name === m.map);
    if (!plan) {
      throw new ConfigError(
        cfg.file,
        m.line,
        `metric "${m.name}" reads map @${m.map}, which the program does not have`,
        {
          hint: names.length ? `its maps: ${names.join(', ')} (name the map with map: "@...")` : undefined,
        },
      );
    }
    checkMetric(cfg, m, plan);
    maps.set(m, plan);
  }
  return { text, sourceName: cfg.program.file, warnings, maps };
}

function checkMetric(cfg: ExporterConfig, m: MetricConfig, plan: MapPlan): void {
  const fail = (msg: string, line = m.line): never => {
    throw new ConfigError(cfg.file, line, msg);
  };
  const keys = plan.keyTypes;
  if (m.labels.length !== keys.length) {
    const ks = keys.length === 0 ? 'no keys' : `${keys.length} key(s): [${keys.map(typeName).join(', ')}]`;
    fail(`metric "${m.name}" has ${m.labels.length} label(s) but map @${m.map} has ${ks}`);
  }
  m.labels.forEach((l, i) => {
    const t = keys[i]!;
    if (l.size !== undefined && l.size !== elementSize(t)) {
      fail(
        `label "${l.name}" has size ${l.size} but key element ${i + 1} of @${m.map} (${typeName(t)}) has ${elementSize(t)} bytes`,
        l.line,
      );
    }
  });
  const v = plan.valueType;
  if (m.kind === 'counter') {
    if (!(v.kind === 'int' || v.kind === 'count' || v.kind === 'sum' || v.kind === 'min' || v.kind === 'max')) {
      fail(`counter "${m.name}" needs integer values (count(), sum(), an integer) but @${m.map} holds ${typeName(v)}`);
    }
    return;
  }
  const t = m.bucketType!;
  if (v.kind === 'hist') {
    if (t === 'linear') fail(`bucket_type linear reads an lhist() map, but @${m.map} is a hist()`);
    if (v.bits !== 0 && t !== 'fixed') {
      fail(`@${m.map} is hist(..., ${v.bits}): its buckets are not powers of two; use bucket_type fixed`);
    }
  } else if (v.kind === 'lhist') {
    if (t === 'exp2' || t === 'exp2zero') fail(`bucket_type ${t} reads a hist() map, but @${m.map} is an lhist()`);
    if (t === 'linear') {
      if (m.bucketMin !== undefined && m.bucketMin !== v.min) {
        fail(`bucket_min ${m.bucketMin} differs from the lhist() minimum ${v.min} of @${m.map}`);
      }
      if (m.bucketMax !== undefined && m.bucketMax !== v.max) {
        fail(`bucket_max ${m.bucketMax} differs from the lhist() maximum ${v.max} of @${m.map}`);
      }
    }
  } else {
    fail(`histogram "${m.name}" needs a hist() or lhist() map but @${m.map} holds ${typeName(v)}`);
  }
  if (t === 'fixed') {
    for (const k of m.bucketKeys!) {
      if (!onBoundary(k, v)) {
        fail(`bucket key ${k} is not the upper end of a bucket of @${m.map} (${typeName(v)}); see docs/fleet.md`);
      }
    }
  }
}

/** Whether integer `le` is the largest value of some bucket of `v` (hist bits 0: -1, 0, 2^k-1; lhist: min-1+i*step). */
function onBoundary(le: number, v: SType): boolean {
  if (!Number.isInteger(le)) return false;
  if (v.kind === 'hist') {
    if (v.bits !== 0) return false;
    return le === -1 || le === 0 || (le > 0 && Number.isInteger(Math.log2(le + 1)));
  }
  if (v.kind === 'lhist') {
    return le >= v.min - 1 && le <= v.max - 1 && (le - (v.min - 1)) % v.step === 0;
  }
  return false;
}
