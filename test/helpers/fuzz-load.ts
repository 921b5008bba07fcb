/**
 * One program of the loaded fuzz sample (issue 19, campaign item 2; bench/reliability/fuzz-load.mjs and
 * test/lang/fuzz-load.test.ts): compile `text` for this host and load it into the kernel (maps created, every
 * program through BPF_PROG_LOAD; nothing attached, nothing runs), then close everything, and classify the outcome.
 * Clean outcomes: `loaded`; `compile error` (a CompileError, every diagnostic with a span inside the text);
 * `verifier rejection` (a ProgramRejected with the span of the statement the verifier stopped in); `host error` (a
 * BpfscopeError about the host, e.g. a missing library). Anything else is a finding: `unpositioned` (an error or
 * rejection without a source position), `kernel error` (another failed system call), `internal` (any other
 * exception, or a message that leaks an internal failure).
 */
import { compile } from '../../src/compiler.js';
import { BpfscopeError, KernelError } from '../../src/errors.js';
import { CompileError, formatDiagnostics } from '../../src/lang/diagnostics.js';
import { ProgramRejected } from '../../src/runtime/loader.js';
import { createOutput } from '../../src/runtime/output/index.js';
import { OutputSink } from '../../src/runtime/output/sink.js';
import { Session } from '../../src/runtime/session.js';
import { hostTarget } from '../../src/target.js';

/** Words of a leaked JavaScript value or an internal failure (as test/lang/fuzz-compile.test.ts). */
export const INTERNAL = /internal|Maximum call stack|\bundefined\b(?! behavior)|\bnull\b|\bNaN\b|\[object /;

export type LoadOutcome =
  'loaded' | 'compile error' | 'verifier rejection' | 'host error' | 'unpositioned' | 'kernel error' | 'internal';

export interface LoadResult {
  outcome: LoadOutcome;
  /** The message (first diagnostic, or the verifier log's last line for a rejection). */
  detail?: string;
}

/** Compile and load `text` (see the module comment); never throws. */
export function loadOne(text: string): LoadResult {
  const source = { name: 'fuzz.bt', text };
  let session: Session | undefined;
  try {
    const r = compile(source, { positional: [], target: hostTarget() });
    session = new Session(r.compiled, { output: createOutput('text', new OutputSink(1)), source });
    session.load();
    return { outcome: 'loaded' };
  } catch (e) {
    if (e instanceof CompileError) {
      const first = e.diagnostics[0]?.message ?? '';
      if (e.diagnostics.length === 0) return { outcome: 'unpositioned', detail: 'CompileError without diagnostics' };
      for (const d of e.diagnostics) {
        if (INTERNAL.test(d.message)) return { outcome: 'internal', detail: d.message };
        if (d.severity === 'error' && (!d.pos || d.pos.offset < 0 || d.pos.end > text.length)) {
          return { outcome: 'unpositioned', detail: d.message };
        }
      }
      formatDiagnostics(e.diagnostics, source);
      return { outcome: 'compile error', detail: first };
    }
    if (e instanceof ProgramRejected) {
      const last = e.verifierTail[e.verifierTail.length - 1] ?? '';
      if (!e.pos || e.pos.offset < 0 || e.pos.end > text.length) {
        return { outcome: 'unpositioned', detail: `${e.message}: ${last}` };
      }
      return { outcome: 'verifier rejection', detail: last.replace(/\d+/g, 'N') };
    }
    const err = e as Error;
    if (err instanceof KernelError) return { outcome: 'kernel error', detail: err.message };
    if (err instanceof BpfscopeError && !INTERNAL.test(err.message))
      return { outcome: 'host error', detail: err.message };
    return { outcome: 'internal', detail: `${err?.name}: ${err?.message}\n${err?.stack ?? ''}` };
  } finally {
    session?.close();
  }
}
