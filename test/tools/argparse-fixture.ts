/**
 * Tests of a tool's parser against a fixture made with CPython's argparse on the bcc tool's own parser
 * (`test/tools/fixtures/<name>.json`). Two fixture shapes exist and both are read here:
 * - `{ help: { "<tool>@80": text, "<tool>@60": text }, errors }`;
 * - `{ width80: { <tool>: text }, width60: { <tool>: text }, errors, parsed? }`.
 * `errors[]` holds the stderr of bad command lines at 80 columns; `parsed[]` the namespace argparse returned for
 * good ones.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { ArgError, formatHelp, type ParserSpec, parseArgs } from '../../src/tools/framework/argparse.js';
import { repoRoot } from '../helpers/cli.js';

/** One bad command line of a tool and argparse's stderr for it at 80 columns. */
export interface UsageErrorCase {
  tool: string;
  argv: string[];
  stderr: string;
}

/** One good command line of a tool and the values argparse parsed from it. */
export interface ParsedCase {
  tool: string;
  argv: string[];
  args: Record<string, unknown>;
}

/** A fixture in either shape, with the help text looked up by tool and width. */
export interface ArgparseFixture {
  /** argparse's `-h` text of `tool` at 80 or 60 columns; undefined when the fixture lacks it. */
  help(tool: string, columns: 80 | 60): string | undefined;
  errors: UsageErrorCase[];
  parsed: ParsedCase[];
}

interface RawFixture {
  help?: Record<string, string>;
  width80?: Record<string, string>;
  width60?: Record<string, string>;
  errors?: UsageErrorCase[];
  parsed?: ParsedCase[];
}

/** Read `test/tools/fixtures/<fixtureName>.json` (the name without `.json`). Throws if it is missing or not JSON. */
export function loadArgparseFixture(fixtureName: string): ArgparseFixture {
  const raw = JSON.parse(
    readFileSync(join(repoRoot(), 'test', 'tools', 'fixtures', `${fixtureName}.json`), 'utf8'),
  ) as RawFixture;
  return {
    help: (tool, columns) => raw.help?.[`${tool}@${columns}`] ?? (columns === 80 ? raw.width80 : raw.width60)?.[tool],
    errors: raw.errors ?? [],
    parsed: raw.parsed ?? [],
  };
}

/** Assert that parsing `c.argv` with `spec` throws the ArgError whose text is `c.stderr`, with COLUMNS=80. */
export function assertUsageError(spec: ParserSpec, c: UsageErrorCase): void {
  const prev = process.env.COLUMNS;
  process.env.COLUMNS = '80';
  try {
    assert.throws(
      () => parseArgs(spec, c.argv),
      (e: unknown) => e instanceof ArgError && e.text() === c.stderr,
      `${c.tool} ${c.argv.join(' ')}`,
    );
  } finally {
    if (prev === undefined) delete process.env.COLUMNS;
    else process.env.COLUMNS = prev;
  }
}

/** Assert `spec`'s help at 80 and 60 columns (argparse wraps at width - 2) equals the fixture's for `tool`. */
export function assertHelp(spec: ParserSpec, fixture: ArgparseFixture, tool: string = spec.prog): void {
  const at80 = fixture.help(tool, 80);
  assert.ok(at80, `no -h text of ${tool} in the fixture`);
  assert.equal(formatHelp(spec, 78), at80);
  assert.equal(formatHelp(spec, 58), fixture.help(tool, 60));
}

/**
 * Define the `it` cases: `-h` at 80 and 60 columns, and each usage error of `spec.prog` in the fixture. With
 * `errorCount`, one more case asserts the fixture holds exactly that many usage errors of the tool.
 */
export function argparseFixtureTests(spec: ParserSpec, fixtureName: string, errorCount?: number): void {
  const fixture = loadArgparseFixture(fixtureName);
  it('-h at 80 and 60 columns equals argparse', () => assertHelp(spec, fixture));
  const errors = fixture.errors.filter((e) => e.tool === spec.prog);
  if (errorCount !== undefined) {
    it(`the fixture has ${errorCount} usage errors of ${spec.prog}`, () => assert.equal(errors.length, errorCount));
  }
  for (const c of errors) {
    it(`usage error equals argparse: ${c.argv.join(' ')}`, () => assertUsageError(spec, c));
  }
}

/**
 * Assert `spec`'s help at 80 and 60 columns and all its usage errors equal the fixture's for `tool`, in one case.
 * Returns how many usage errors were checked.
 */
export function assertBccHelp(spec: ParserSpec, tool: string, fixtureName: string): number {
  const fixture = loadArgparseFixture(fixtureName);
  assertHelp(spec, fixture, tool);
  const errors = fixture.errors.filter((e) => e.tool === tool);
  for (const c of errors) assertUsageError(spec, c);
  return errors.length;
}
