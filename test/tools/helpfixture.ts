/**
 * bcc's -h text and usage errors from a fixture of CPython argparse output (`test/tools/fixtures/*.json`, shape
 * `{ width80, width60, errors }`), asserted against a tool's parser spec.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ArgError, formatHelp, parseArgs, type ParserSpec } from '../../src/tools/framework/argparse.js';
import { repoRoot } from '../helpers/cli.js';

interface HelpFixture {
  width80: Record<string, string>;
  width60: Record<string, string>;
  errors: { tool: string; argv: string[]; status: number; stderr: string }[];
}

/** Assert `spec`'s help at 80 and 60 columns and its usage errors equal the fixture's for `tool`. */
export function assertBccHelp(spec: ParserSpec, tool: string, fixtureFile: string): void {
  const fixture = JSON.parse(
    readFileSync(join(repoRoot(), 'test', 'tools', 'fixtures', fixtureFile), 'utf8'),
  ) as HelpFixture;
  assert.ok(fixture.width80[tool], `no ${tool} in ${fixtureFile}`);
  assert.equal(formatHelp(spec, 78), fixture.width80[tool]);
  assert.equal(formatHelp(spec, 58), fixture.width60[tool]);
  const prev = process.env.COLUMNS;
  process.env.COLUMNS = '80';
  try {
    for (const c of fixture.errors.filter((e) => e.tool === tool)) {
      assert.throws(
        () => parseArgs(spec, c.argv),
        (e: unknown) => e instanceof ArgError && e.text() === c.stderr,
        `${tool} ${c.argv.join(' ')}`,
      );
    }
  } finally {
    if (prev === undefined) delete process.env.COLUMNS;
    else process.env.COLUMNS = prev;
  }
}
