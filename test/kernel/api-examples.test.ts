/**
 * The runnable examples of docs/api.md (examples/api/*.ts, compiled to dist/examples/api/) run as root against the
 * live kernel, each with its expected output. Every example file must be listed here.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../helpers/cli.js';

const EXPECTED: Record<string, string> = {
  // and cat's own output (the host name, on the same stdout: the command's stdout is ours), before or after the
  // first line, as the two processes run (filtered out below)
  'events.ts': 'cat (pid bigint) opened /etc/hostname\nopens by cat: at least 1: true\n',
  'maps.ts':
    "dd wrote 4096 bytes 10 times\n[4096, 8192): 10\n{ kind: 'avg', count: 10n, total: 40960n, average: 4096n }\n",
  'abort.ts': 'run ended: stopped\nsaw 3 ticks\n',
  'errors.ts': 'CompileError at 1:14: syntax: expected expression\n',
};

describe('docs/api.md examples', () => {
  const dir = join(repoRoot(), 'examples', 'api');
  it('every example has an expected output here', () => {
    assert.deepEqual(
      readdirSync(dir)
        .filter((f) => f.endsWith('.ts'))
        .sort(),
      Object.keys(EXPECTED).sort(),
    );
  });
  for (const [file, expected] of Object.entries(EXPECTED)) {
    it(file, () => {
      const js = join(repoRoot(), 'dist', 'examples', 'api', file.replace(/\.ts$/, '.js'));
      const r = spawnSync(process.execPath, [js], { encoding: 'utf8', timeout: 60_000 });
      assert.equal(r.stderr, '');
      assert.equal(r.status, 0);
      const host = readFileSync('/etc/hostname', 'utf8').trim();
      const out =
        file === 'events.ts'
          ? r.stdout
              .split('\n')
              .filter((l) => l !== host)
              .join('\n')
          : r.stdout;
      assert.equal(out, expected);
    });
  }
});
