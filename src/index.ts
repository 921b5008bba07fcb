/**
 * bpfscope's public API. Most users want {@link trace} (typed events and maps, docs/api.md):
 *
 * ```ts
 * import { trace } from 'bpfscope';
 * await using t = await trace('tracepoint:syscalls:sys_enter_openat { printf("%d %s\\n", pid, str(args.filename)); }');
 * for await (const ev of t.events()) if (ev.kind === 'printf') console.log(ev.values);
 * ```
 *
 * The lower layer, for embedding the compiler and runtime with bpftrace's text or JSON output:
 *
 * ```ts
 * import { Tracer, createOutput, OutputSink } from 'bpfscope';
 * const t = await Tracer.start({
 *   source: { name: 'stdin', text: 'tracepoint:syscalls:sys_enter_openat { @[comm] = count(); }' },
 *   output: createOutput('text', new OutputSink(1)),
 * });
 * setTimeout(() => t.stop(), 1000);
 * await t.wait();
 * console.log(t.readMap('').entries);
 * t.finish();
 * t.close();
 * ```
 */
export { type CompileOptions, type CompileResult, compile } from './compiler.js';
export {
  type AttachPoint,
  type BpfLinkObject,
  type BpfMapObject,
  type BpfObjects,
  type BpfOwner,
  BpfPermissionError,
  type BpfProcess,
  type BpfProgram,
  type ListOptions,
  listBpfObjects,
  type ProcessRecord,
  type RunDelta,
  type SessionRecord,
} from './inspect/objects.js';
export * from './api/index.js';
export { BpfscopeError, KernelError, PermissionError } from './errors.js';
export { VerifierError } from './kernel/bpf.js';
export { ProgramRejected } from './runtime/loader.js';
export { CompileError, type Diagnostic, formatDiagnostic, type SourceFile } from './lang/diagnostics.js';
export { parse } from './lang/parser.js';
export type { SType } from './lang/types.js';
export { listProbes } from './probes/list.js';
export { createOutput, type Output } from './runtime/output/index.js';
export type { AggValue, MapDump, MapEntry, Value } from './runtime/output/model.js';
export { OutputSink } from './runtime/output/sink.js';
export { Tracer, type TracerOptions } from './runtime/tracer.js';
export { apiTools, runTool, type RunToolOptions, toolOptions, type ToolResults, type ToolRun } from './tools/api.js';
