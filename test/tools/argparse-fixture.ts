/**
 * Tests of a tool's parser against a fixture made with CPython's argparse on the bcc tool's own parser
 * (`test/tools/fixtures/<name>.json`: `help["<tool>@80"]`, `help["<tool>@60"]` and `errors[]` with the
 * stderr of bad command lines at 80 columns).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { ArgError, formatHelp, type ParserSpec, parseArgs } from '../../src/tools/framework/argparse.js';
import { repoRoot } from '../helpers/cli.js';

interface Fixture {
  help: Record<string, string>;
  errors: { tool: string; argv: string[]; stderr: string }[];
}

/** Define the `it` cases: `-h` at 80 and 60 columns, and each usage error of `spec.prog` in the fixture. */
export function argparseFixtureTests(spec: ParserSpec, fixtureName: string): void {
  const fixture = JSON.parse(
    readFileSync(join(repoRoot(), 'test', 'tools', 'fixtures', `${fixtureName}.json`), 'utf8'),
  ) as Fixture;
  it('-h at 80 and 60 columns equals argparse', () => {
    assert.equal(formatHelp(spec, 78), fixture.help[`${spec.prog}@80`]);
    assert.equal(formatHelp(spec, 58), fixture.help[`${spec.prog}@60`]);
  });
  for (const c of fixture.errors.filter((e) => e.tool === spec.prog)) {
    it(`usage error equals argparse: ${c.argv.join(' ')}`, () => {
      const prev = process.env.COLUMNS;
      process.env.COLUMNS = '80';
      try {
        assert.throws(
          () => parseArgs(spec, c.argv),
          (e: unknown) => e instanceof ArgError && e.text() === c.stderr,
        );
      } finally {
        if (prev === undefined) delete process.env.COLUMNS;
        else process.env.COLUMNS = prev;
      }
    });
  }
}
