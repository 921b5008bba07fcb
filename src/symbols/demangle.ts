/**
 * C++ (Itanium ABI, `_Z...`) and Rust (legacy `_ZN...17h<hash>E` and v0 `_R...`) demangling through the npm package
 * `gecko-profiler-demangle` (the Firefox profiler's demangler: Rust's `cpp_demangle` and `rustc-demangle` crates built
 * to WebAssembly; no native code, nothing compiled at install). bpftrace demangles C++ user symbols by default (its
 * `cpp_demangle` config); Rust names come out without the legacy hash, as `rustc-demangle`'s alternate form prints.
 *
 * The demangler is loaded on the first mangled name {@link demangle} sees (synchronously: compiling the 0.5 MB
 * module costs ~40-60 ms of CPU here, which a program that never meets a C++ name should not pay at start-up), or
 * ahead of time by {@link loadDemangler}. When it cannot be loaded, names stay as they are and
 * {@link demanglerStatus} says why.
 *
 * The package's `index.js` imports the `.wasm` file as an ES module, which Node 20 does not support without a flag;
 * we import its glue (`index_bg.js`, bundled into the CLI's bundles) and instantiate `index_bg.wasm` ourselves, as its
 * generated `index.js` would. The glue is imported statically, never with a run-time `import()`: on Node 20 a script
 * compiled from a V8 code cache in a later process (the CLI launcher's vm.Script) has no dynamic import callback
 * ("A dynamic import callback was not specified"), so such an import failed on every cached run and left C++ names
 * mangled without a word.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
// @ts-expect-error -- the glue has no declaration file; its two functions are typed by `Glue` below
import * as glueModule from 'gecko-profiler-demangle/index_bg.js';

/** The npm package used for demangling. */
export const DEMANGLE_PACKAGE = 'gecko-profiler-demangle';

/** The glue's functions demangle.ts calls (wasm-bindgen output of the package). */
interface Glue {
  /** Hands the instantiated `index_bg.wasm` exports to the glue. */
  __wbg_set_wasm(exports: Record<string, unknown>): void;
  /** The demangled form of a C++ or Rust symbol name. */
  demangle_any(name: string): string;
}
const glue = glueModule as Glue;

let impl: ((name: string) => string) | undefined;
let tried = false;
let failure: string | undefined;

/** Whether `name` looks mangled: Itanium C++ (`_Z`) or Rust v0 (`_R`). Rust legacy names use `_ZN`. */
export function isMangled(name: string): boolean {
  return name.length > 2 && name.charCodeAt(0) === 95 && (name.charCodeAt(1) === 90 || name.charCodeAt(1) === 82);
}

/** The slice of the WebAssembly JS API used here (TypeScript's ES2022 lib has no WebAssembly types). */
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: Record<string, unknown>) => { exports: Record<string, unknown> };
}

/** Load the demangler once (later calls return the first answer): whether demangling is available. Never throws. */
function ensureDemangler(): boolean {
  if (tried) return impl !== undefined;
  tried = true;
  try {
    const require = createRequire(import.meta.url);
    const wasmPath = require.resolve(`${DEMANGLE_PACKAGE}/index_bg.wasm`);
    const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
    const module = new wasm.Module(readFileSync(wasmPath));
    const instance = new wasm.Instance(module, { './index_bg.js': glue });
    glue.__wbg_set_wasm(instance.exports);
    const start = instance.exports.__wbindgen_start;
    if (typeof start === 'function') (start as () => void)();
    // Self-check with a known name before trusting it.
    if (glue.demangle_any('_Z3addii') !== 'add(int, int)') throw new Error('self-check failed');
    impl = (n) => glue.demangle_any(n);
  } catch (e) {
    failure = `${DEMANGLE_PACKAGE} not available: ${(e as Error).message.split('\n')[0]}`;
  }
  return impl !== undefined;
}

/**
 * Load the demangler now rather than on the first mangled name (once; later calls give the same answer). Resolves
 * to `true` when demangling is available, `false` when the package failed to load ({@link demanglerStatus} says
 * why). Never throws.
 */
export function loadDemangler(): Promise<boolean> {
  return Promise.resolve(ensureDemangler());
}

/** Whether demangling is available, and why not when it is not. */
export function demanglerStatus(): { loaded: boolean; reason?: string } {
  if (impl) return { loaded: true };
  return { loaded: false, reason: failure ?? 'not loaded yet (no mangled name seen)' };
}

/**
 * The demangled form of `name` (`_ZN3foo3barEv` -> `foo::bar()`, `_RNvCs1234_7mycrate3foo` -> `mycrate::foo`), or
 * `name` itself when it is not mangled, cannot be demangled, or the demangler cannot be loaded. The first mangled name
 * loads the demangler.
 */
export function demangle(name: string): string {
  if (!isMangled(name) || !ensureDemangler()) return name;
  let out: string;
  try {
    out = impl!(name);
  } catch {
    return name;
  }
  // The package's fallback chain can strip a leading underscore from names it does not understand.
  if (out.length === 0 || out === name.slice(1)) return name;
  return out;
}
