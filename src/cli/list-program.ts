/**
 * `bpfscope -l FILE` / `bpfscope -l -e PROGRAM`: the probes a program would attach, one per line, as current
 * bpftrace lists them (`main.cpp` listing with a program, `probe_matcher.cpp` get_probes_for_listing(ast)):
 * wildcards expanded, BEGIN/END left out, and the counting/timed providers shown without their rate or count
 * (`interval:ms:`, `software:cpu:`), since bpftrace prints what matched rather than the attach point, and
 * rawtracepoints with their BTF (`rawtracepoint:vmlinux:sched_switch`).
 */
import { CompileError, type Diagnostic, type SourceFile } from '../lang/diagnostics.js';
import { parse } from '../lang/parser.js';
import { listProbes } from '../probes/list.js';
import { expandAttachPoint } from '../probes/registry.js';

const RATE_PROVIDERS = new Set(['interval', 'profile', 'software', 'hardware']);

/**
 * Lines to print; with `verbose` (`-lv`), each probe's arguments under it, as `-lv PROBE` prints them.
 * @throws CompileError for a program that does not parse or names probes that do not exist
 */
export function listProgramProbes(source: SourceFile, verbose = false, pid?: number): string[] {
  const ast = parse(source);
  const out: string[] = [];
  const errors: Diagnostic[] = [];
  for (const probe of ast.probes) {
    for (const ap of probe.attachPoints) {
      try {
        for (const p of expandAttachPoint(ap, { full: true, ...(pid !== undefined ? { pid } : {}) })) {
          if (p.provider === 'begin' || p.provider === 'end') continue;
          if (RATE_PROVIDERS.has(p.provider)) out.push(p.name.replace(/^([^:]+:[^:]+:).*$/, '$1'));
          // listed with the BTF it comes from, as `-l rawtracepoint:*` prints it
          else if (p.provider === 'rawtracepoint' && p.name.split(':').length === 2)
            out.push(p.name.replace(/^rawtracepoint:/, 'rawtracepoint:vmlinux:'));
          else out.push(p.name);
        }
      } catch (e) {
        if (e instanceof CompileError) errors.push(...e.diagnostics);
        else throw e;
      }
    }
  }
  if (errors.length) throw new CompileError(errors, source);
  if (!verbose) return out;
  return out.flatMap((name) => {
    const lines = listProbes(name, true);
    return lines[0] === name ? lines : [name];
  });
}
