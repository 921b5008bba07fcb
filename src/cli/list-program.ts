/**
 * `bpfscope -l FILE` / `bpfscope -l -e PROGRAM`: the probes a program would attach, one per line, as current
 * bpftrace lists them (`main.cpp` listing with a program, `probe_matcher.cpp` get_probes_for_listing(ast)):
 * wildcards expanded, BEGIN/END left out, and the counting/timed providers shown without their rate or count
 * (`interval:ms:`, `software:cpu-clock:`), since bpftrace prints what matched rather than the attach point.
 */
import { CompileError, type Diagnostic, type SourceFile } from '../lang/diagnostics.js';
import { parse } from '../lang/parser.js';
import { expandAttachPoint } from '../probes/registry.js';

const RATE_PROVIDERS = new Set(['interval', 'profile', 'software', 'hardware']);

/** Lines to print. @throws CompileError for a program that does not parse or names probes that do not exist */
export function listProgramProbes(source: SourceFile): string[] {
  const ast = parse(source);
  const out: string[] = [];
  const errors: Diagnostic[] = [];
  for (const probe of ast.probes) {
    for (const ap of probe.attachPoints) {
      try {
        for (const p of expandAttachPoint(ap, { full: true })) {
          if (p.provider === 'begin' || p.provider === 'end') continue;
          out.push(RATE_PROVIDERS.has(p.provider) ? p.name.replace(/^([^:]+:[^:]+:).*$/, '$1') : p.name);
        }
      } catch (e) {
        if (e instanceof CompileError) errors.push(...e.diagnostics);
        else throw e;
      }
    }
  }
  if (errors.length) throw new CompileError(errors, source);
  return out;
}
