/**
 * Types of the wasm-bindgen glue of the npm package `gecko-profiler-demangle` (its `index_bg.js`, an ES module with
 * no declaration file of its own): the two functions demangle.ts calls.
 */
declare module 'gecko-profiler-demangle/index_bg.js' {
  /** Hands the instantiated `index_bg.wasm` exports to the glue. */
  export function __wbg_set_wasm(exports: Record<string, unknown>): void;
  /** The demangled form of a C++ or Rust symbol name. */
  export function demangle_any(name: string): string;
}
