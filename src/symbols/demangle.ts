/**
 * C++ (Itanium ABI, `_Z...`) and Rust (legacy `_ZN...17h<hash>E` and v0 `_R...`) demangling through the npm package
 * `gecko-profiler-demangle` (the Firefox profiler's demangler: Rust's `cpp_demangle` and `rustc-demangle` crates built
 * to WebAssembly; no native code, nothing compiled at install). bpftrace demangles C++ user symbols by default (its
 * `cpp_demangle` config); Rust names come out without the legacy hash, as `rustc-demangle`'s alternate form prints.
 *
 * The package is optional: {@link loadDemangler} looks for it once (asynchronously: the wasm-bindgen glue is an ES
 * module); until it is loaded, or when it is not installed, {@link demangle} returns names unchanged.
 *
 * The package's `index.js` imports the `.wasm` file as an ES module, which Node 20 does not support without a flag;
 * we load its glue (`index_bg.js`) and instantiate `index_bg.wasm` ourselves, as its generated `index.js` would.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

/** The npm package used for demangling. */
export const DEMANGLE_PACKAGE = 'gecko-profiler-demangle';

let impl: ((name: string) => string) | undefined;
let loading: Promise<boolean> | undefined;
let failure: string | undefined;

/** Whether `name` looks mangled: Itanium C++ (`_Z`) or Rust v0 (`_R`). Rust legacy names use `_ZN`. */
export function isMangled(name: string): boolean {
  return name.length > 2 && name.charCodeAt(0) === 95 && (name.charCodeAt(1) === 90 || name.charCodeAt(1) === 82);
}

interface Glue {
  __wbg_set_wasm(exports: Record<string, unknown>): void;
  demangle_any(name: string): string;
}

/** The slice of the WebAssembly JS API used here (TypeScript's ES2022 lib has no WebAssembly types). */
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: Record<string, unknown>) => { exports: Record<string, unknown> };
}

/**
 * Load the demangler package (once; later calls return the same promise). Resolves to `true` when demangling is
 * available, `false` when the package is missing or failed to load ({@link demanglerStatus} says why). Never throws.
 */
export function loadDemangler(): Promise<boolean> {
  loading ??= (async () => {
    try {
      const require = createRequire(import.meta.url);
      const gluePath = require.resolve(`${DEMANGLE_PACKAGE}/index_bg.js`);
      const wasmPath = require.resolve(`${DEMANGLE_PACKAGE}/index_bg.wasm`);
      const glue = (await import(pathToFileURL(gluePath).href)) as Glue;
      const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
      const module = new wasm.Module(readFileSync(wasmPath));
      const instance = new wasm.Instance(module, { './index_bg.js': glue });
      glue.__wbg_set_wasm(instance.exports);
      const start = instance.exports.__wbindgen_start;
      if (typeof start === 'function') (start as () => void)();
      // Self-check with a known name before trusting it.
      if (glue.demangle_any('_Z3addii') !== 'add(int, int)') throw new Error('self-check failed');
      impl = (n) => glue.demangle_any(n);
      return true;
    } catch (e) {
      failure = `${DEMANGLE_PACKAGE} not available: ${(e as Error).message.split('\n')[0]}`;
      return false;
    }
  })();
  return loading;
}

/** Whether demangling is available, and why not when it is not. */
export function demanglerStatus(): { loaded: boolean; reason?: string } {
  if (impl) return { loaded: true };
  return { loaded: false, reason: failure ?? (loading ? 'still loading' : 'loadDemangler() not called') };
}

/**
 * The demangled form of `name` (`_ZN3foo3barEv` -> `foo::bar()`, `_RNvCs1234_7mycrate3foo` -> `mycrate::foo`), or
 * `name` itself when it is not mangled, cannot be demangled, or the demangler is not loaded.
 */
export function demangle(name: string): string {
  if (!impl || !isMangled(name)) return name;
  let out: string;
  try {
    out = impl(name);
  } catch {
    return name;
  }
  // The package's fallback chain can strip a leading underscore from names it does not understand.
  if (out.length === 0 || out === name.slice(1)) return name;
  return out;
}
