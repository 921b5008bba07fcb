/**
 * A program compiled and linked in one process and loaded in another: the fleet agent compiles its fixed program
 * in a short-lived child process (fleet/agent/compile-child.ts), so that the long-lived agent never runs the
 * compiler (parser, semantic pass, code generation, register allocation, kernel BTF reading) and keeps none of its
 * heap (bench/results/agent-issue15.md section 12).
 *
 * `precompile` (runtime/precompile.ts, the compiling process; a module of its own so that the loading process
 * never reaches the compiler's code) compiles the source as {@link Tracer.start} would, links each program
 * with a placeholder in place of each map fd (the same `ld_imm64` immediates runtime/session.ts uses while its
 * maps are being created), and serializes that with node:v8's structured serialization. {@link revivePrecompiled}
 * (the loading process) reads it back; {@link Tracer.start} with `precompiled` then creates the maps, puts their
 * fds in place of the placeholders, loads and attaches as usual. No kernel object crosses the processes: nothing
 * can leak when either one dies.
 *
 * What is carried over: the CompiledProgram (map and printf plans, types, ring buffer layout) with each program's IR
 * left empty (it is only needed to link), the linked instructions, their source positions (verifier errors), the
 * compile warnings. Probes are class instances (their `attach` method): only the providers listed in
 * {@link REVIVABLE} — whose probes hold no file descriptor and no process-local state — can be carried over; any
 * other is refused with an error naming it.
 */

import { deserialize } from 'node:v8';
import type { CompiledProgram } from '../codegen/plan.js';
import { BpfscopeError } from '../errors.js';
import type { Diagnostic } from '../lang/diagnostics.js';
import { ProfileProbe } from '../probes/profile.js';
import { RawTracepointProbe } from '../probes/rawtracepoint.js';
import type { Linked } from './loader.js';

/** A program compiled and linked elsewhere, ready to load (see the module comment). */
export interface Precompiled {
  /** The compiled program; each program's `fn` (and subprograms') IR is empty. */
  compiled: CompiledProgram;
  warnings: Diagnostic[];
  /** Per program of `compiled.programs`, in order: linked with placeholder map fds (see `mapOf`). */
  linked: Linked[];
  /** The map (IR name) each placeholder immediate of `linked` stands for. */
  mapOf: ReadonlyMap<number, string>;
}

/** Placeholder map fds of `precompile` (runtime/precompile.ts): far above any real fd (RLIMIT_NOFILE), as runtime/session.ts's. */
export const PLACEHOLDER_BASE = 0x7e000000;

/** Probe classes that can be carried over, by provider: no fd, no process-local state, attach() by value. */
export const REVIVABLE: Record<string, object> = {
  profile: ProfileProbe.prototype,
  rawtracepoint: RawTracepointProbe.prototype,
};

/**
 * The {@link Precompiled} that `precompile` (runtime/precompile.ts) serialized into `bytes` (the loading process's side): probes get
 * their classes back; instruction bytes are encoded again when the map fds are put in (runtime/loader.ts
 * resolveMapFds). @throws BpfscopeError when `bytes` is not such a program
 */
export function revivePrecompiled(bytes: Uint8Array): Precompiled {
  let p: Precompiled;
  try {
    p = deserialize(bytes) as Precompiled;
  } catch (e) {
    throw new BpfscopeError(`the precompiled program cannot be read: ${(e as Error).message}`);
  }
  if (!p?.compiled?.programs || !Array.isArray(p.linked) || !(p.mapOf instanceof Map)) {
    throw new BpfscopeError('the precompiled program cannot be read: not a precompiled program');
  }
  for (const plan of p.compiled.programs) {
    const proto = REVIVABLE[plan.expanded.provider];
    if (!proto) throw new BpfscopeError(`a ${plan.expanded.provider} probe cannot be compiled in another process`);
    Object.setPrototypeOf(plan.expanded, proto);
  }
  return p;
}
