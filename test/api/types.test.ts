/**
 * The public API's types reject misuse: test/types/misuse.ts holds misuses, each under a `@ts-expect-error`
 * line, and correct uses; `tsc --noEmit` on it must succeed (an expected error that does not occur is reported by
 * tsc as an unused directive, so a type that got looser fails this test).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../helpers/cli.js';

describe('API types', () => {
  it('tsc --noEmit on test/types/misuse.ts: every misuse is an error, every correct use compiles', () => {
    const root = repoRoot();
    const file = join(root, 'test', 'types', 'misuse.ts');
    const expected = readFileSync(file, 'utf8').match(/\/\/ @ts-expect-error/g)?.length ?? 0;
    assert.equal(expected, 16, 'the number of misuses checked');
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const r = spawnSync(process.execPath, [tsc, '--noEmit', '-p', join(root, 'test', 'types')], { encoding: 'utf8' });
    assert.equal(r.status, 0, `tsc reported:\n${r.stdout}${r.stderr}`);
  });
});
