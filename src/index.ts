/**
 * bpfscope's public API, for embedding the compiler and runtime (the tools are users of it):
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
export { BpfscopeError, KernelError } from './errors.js';
export { CompileError, type Diagnostic, formatDiagnostic, type SourceFile } from './lang/diagnostics.js';
export { parse } from './lang/parser.js';
export type { SType } from './lang/types.js';
export { listProbes } from './probes/list.js';
export { createOutput, type Output } from './runtime/output/index.js';
export type { AggValue, MapDump, MapEntry, Value } from './runtime/output/model.js';
export { OutputSink } from './runtime/output/sink.js';
export { Tracer, type TracerOptions } from './runtime/tracer.js';
export { apiTools, runTool, type RunToolOptions, type ToolResults, type ToolRun } from './tools/api.js';
