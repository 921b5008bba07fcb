/**
 * The README's first command (issue 19, "Found, to fix" 3): it must start tracing without npx (which installs the
 * project directory into its cache and rebuilds it silently) and without sudo (absent on some machines).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../helpers/cli.js';

describe('README', () => {
  it("the first command runs package.json's bin directly, and its program attaches (--dry-run)", () => {
    const readme = readFileSync(join(repoRoot(), 'README.md'), 'utf8');
    const block = /```sh\n([^\n]*)\n([^\n]*)\n```/.exec(readme);
    assert.ok(block, 'no sh block with two lines');
    assert.equal(block[2], 'npm test');
    const bin = (JSON.parse(readFileSync(join(repoRoot(), 'package.json'), 'utf8')) as { bin: { bpfscope: string } })
      .bin.bpfscope;
    const prefix = `npm ci && ./${bin} -e `;
    assert.ok(block[1]!.startsWith(prefix), block[1]);
    const program = /^'(.*)'$/.exec(block[1]!.slice(prefix.length));
    assert.ok(program, block[1]);
    const r = spawnSync(join(repoRoot(), bin), ['--dry-run', '-e', program[1]!], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.equal(r.stdout, '');
  });
});
