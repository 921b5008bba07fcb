/**
 * The layering rule (`.dependency-cruiser.cjs`, docs/architecture.md "Layers") holds for src/, and the checker
 * does fail on what it forbids: an upward import, an import cycle, host facts read below the Target, codegen
 * importing the analyser. Each fixture
 * under test/arch/fixtures/ is a small `src/` tree with exactly one violation.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

/** The repository: the nearest directory up from this file (in test/ or dist/test/) with the rule file. */
function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, '.dependency-cruiser.cjs'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('.dependency-cruiser.cjs not found above the test');
    dir = up;
  }
  return dir;
}

const root = repoRoot();
const cli = join(root, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
const config = join(root, '.dependency-cruiser.cjs');

/**
 * Runs dependency-cruiser on `src` in `cwd` as `npm run depcheck` does (its `err` report: one `error RULE: FROM →
 * TO` line per violation, exit status = the number of errors). Returns the status, the report and its
 * violations as `RULE FROM TO` (a cycle's TO is the next module of the cycle).
 */
function cruise(cwd: string): { status: number | null; report: string; violations: string[] } {
  const r = spawnSync(process.execPath, [cli, 'src', '--config', config, '--output-type', 'err'], {
    cwd,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const report = r.stdout + r.stderr;
  const violations = [...report.matchAll(/^\s*error (\S+): (\S+) →\s*(\S+)/gm)].map((m) => `${m[1]} ${m[2]} ${m[3]}`);
  return { status: r.status, report, violations };
}

function fixture(name: string): string {
  return join(root, 'test', 'arch', 'fixtures', name);
}

describe('layering (dependency-cruiser)', () => {
  it('src/ has no upward import, no cycle and reads no host fact below the Target', () => {
    const r = cruise(root);
    assert.deepEqual(r.violations, [], r.report);
    assert.match(r.report, /no dependency violations found/);
    assert.equal(r.status, 0, r.report);
  });

  it('fails on an upward import (lang -> runtime)', () => {
    const r = cruise(fixture('upward'));
    assert.deepEqual(r.violations, ['layer-lang src/lang/check.ts src/runtime/render.ts'], r.report);
    assert.match(r.report, /1 dependency violations \(1 errors, 0 warnings\)/);
    assert.equal(r.status, 1, r.report);
  });

  it('fails on an import cycle, type-only imports included', () => {
    const r = cruise(fixture('cycle'));
    // one violation for the cycle, reported from whichever of its two modules the checker reached first
    assert.equal(r.violations.length, 1, r.report);
    assert.ok(
      ['no-circular src/lang/a.ts src/lang/b.ts', 'no-circular src/lang/b.ts src/lang/a.ts'].includes(r.violations[0]!),
      r.report,
    );
    assert.equal(r.status, 1, r.report);
  });

  it('fails when codegen reads the host (kernel/cpus) instead of its Target', () => {
    const r = cruise(fixture('host'));
    assert.deepEqual(r.violations, ['host-facts-through-target src/codegen/gen.ts src/kernel/cpus.ts'], r.report);
    assert.equal(r.status, 1, r.report);
  });

  it('fails when codegen imports the analyser (lang/passes/semantic*) although lang/ is below it', () => {
    const r = cruise(fixture('analyser'));
    assert.deepEqual(
      r.violations,
      ['codegen-not-analyser src/codegen/gen.ts src/lang/passes/semantic-expr.ts'],
      r.report,
    );
    assert.match(r.report, /1 dependency violations \(1 errors, 0 warnings\)/);
    assert.equal(r.status, 1, r.report);
  });
});
