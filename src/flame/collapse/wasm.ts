/**
 * The collapsers' WebAssembly modules (frame-scan.c, stack-lines.c, compiled by scripts/collapse-wasm.mjs into
 * base64 constants) and the slice of the WebAssembly JS API they use (TypeScript's ES2022 lib has no WebAssembly
 * types).
 */

/** A WebAssembly.Memory (the part used here). */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

interface WasmApi {
  Memory: new (d: { initial: number }) => WasmMemory;
  Table: new (d: { initial: number; element: string }) => object;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
}

const api = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/** Bytes of a WebAssembly page. */
export const PAGE = 65536;

/** A new memory of `pages` pages (reserved: only the pages written become memory). */
export function newMemory(pages: number): WasmMemory {
  return new api.Memory({ initial: pages });
}

const modules = new Map<string, object>();

/**
 * The exports of the module whose bytes are `base64` (compiled once per process), instantiated on `memory`. The
 * modules are clang object files: they import their memory (`env.__linear_memory`) and a function table.
 */
export function instantiate(base64: string, memory: WasmMemory): Record<string, unknown> {
  let module = modules.get(base64);
  if (!module) modules.set(base64, (module = new api.Module(Buffer.from(base64, 'base64'))));
  const table = new api.Table({ initial: 0, element: 'anyfunc' });
  return new api.Instance(module, { env: { __linear_memory: memory, __indirect_function_table: table } }).exports;
}
