/** Shared helpers for the probe provider tests: fixture paths and attach point construction. */
import { fileURLToPath } from 'node:url';
import { Tracefs } from '../../src/kernel/tracefs.js';
import type { AttachPoint } from '../../src/lang/ast.js';

/**
 * Absolute path of a file under `test/probes/fixtures/` (fixtures are not copied to `dist/`, so a compiled test
 * under `dist/test/probes/` maps back to the source tree).
 */
export function fixturePath(...parts: string[]): string {
  const dir = fileURLToPath(new URL('.', import.meta.url)).replace(/\/dist\/test\/probes\/$/, '/test/probes/');
  return [dir.replace(/\/$/, ''), 'fixtures', ...parts].join('/');
}

/** A Tracefs over the fixture tree copied from the development machine (Linux 6.18). */
export function fixtureTracefs(): Tracefs {
  return new Tracefs(fixturePath('tracefs'));
}

/**
 * An AttachPoint as the parser would produce it for `raw` (unquoted): provider before the first ':', the rest split
 * on ':'; the span covers `raw` at the start of line 1.
 */
export function attachPoint(raw: string): AttachPoint {
  const [provider, ...parts] = raw.split(':');
  return { kind: 'AttachPoint', pos: { line: 1, col: 1, offset: 0, end: raw.length }, raw, provider: provider!, parts };
}
