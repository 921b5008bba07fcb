/**
 * Compiling a C test fixture on first use: `cc FLAGS -o BIN SOURCE` into `os.tmpdir()/bpfscope-<name>-<sha256 of
 * the source and flags, 12 hex>/<name>`, so a changed source gets a new binary and an unchanged one is reused across
 * test files and runs. The compiler writes a temporary file that is renamed into place, so concurrent test
 * processes never run a half-written binary. The binary's file name is its comm.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compile } from '../../src/compiler.js';
import { CompileError } from '../../src/lang/diagnostics.js';
import type { Target } from '../../src/lang/target.js';

const compiled = new Map<string, string>();

/** Why C fixtures cannot be built here (no `cc`), or undefined. */
export function ccSkipReason(): string | undefined {
  try {
    execFileSync('cc', ['--version'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return 'no C compiler (cc)';
  }
}

/**
 * Absolute path of `source` compiled as `name` with `flags` (e.g. `['-O1']`).
 * @throws Error with the compiler's stderr when cc fails
 */
export function compileFixture(source: string, name: string, flags: readonly string[] = ['-O1']): string {
  const key = `${source}\0${name}\0${flags.join(' ')}`;
  const known = compiled.get(key);
  if (known && existsSync(known)) return known;
  const hash = createHash('sha256')
    .update(readFileSync(source))
    .update(`\0${flags.join(' ')}`)
    .digest('hex')
    .slice(0, 12);
  const dir = join(tmpdir(), `bpfscope-${name}-${hash}`);
  const bin = join(dir, name);
  if (!existsSync(bin)) {
    mkdirSync(dir, { recursive: true });
    const tmp = `${bin}.${process.pid}.tmp`;
    try {
      execFileSync('cc', [...flags, '-Wall', '-o', tmp, source], { stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      const stderr = (e as { stderr?: Buffer }).stderr?.toString() ?? '';
      throw new Error(`compiling ${source} failed: ${(e as Error).message}\n${stderr}`, { cause: e });
    }
    renameSync(tmp, bin);
  }
  compiled.set(key, bin);
  return bin;
}

/**
 * The diagnostics of a program that must not compile against `target`, as `LINE:COL: message` (or the message alone
 * when it has no position). Fails the test when it compiles or throws anything but a CompileError.
 */
export function compileErrors(text: string, target: Target): string[] {
  try {
    compile({ name: 'stdin', text }, { target });
  } catch (e) {
    assert.ok(e instanceof CompileError, `expected CompileError, got ${e}`);
    return e.diagnostics.map((d) => `${d.pos ? `${d.pos.line}:${d.pos.col}: ` : ''}${d.message}`);
  }
  assert.fail('expected a compile error');
}

/**
 * A Target for compiling without this host's facts: one CPU (0), no PID namespace, no kernel symbols or cgroup ids,
 * and every uaddr() a failure. For tests that check types, errors or output independent of the machine.
 */
export const ONE_CPU_TARGET: Target = {
  onlineCpus: () => [0],
  possibleCpus: () => [0],
  pidNamespace: () => null,
  kernelSymbolAddress: () => undefined,
  cgroupId: () => undefined,
  resolveUaddr: () => 'not in this fake',
};
