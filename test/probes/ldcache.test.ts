/**
 * /etc/ld.so.cache read directly (src/probes/ldcache.ts) against `ldconfig -p`, its reference printer, on this
 * machine; and the cases where the reader must decline (missing file, another format).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { readLdCache } from '../../src/probes/ldcache.js';

function ldconfigP(): Map<string, string> | undefined {
  let out: string;
  try {
    out = execFileSync('ldconfig', ['-p'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return undefined;
  }
  const ref = new Map<string, string>();
  for (const line of out.split('\n')) {
    const m = /^\s+(\S+) \(([^)]*)\) => (\S+)$/.exec(line);
    if (!m || !m[2]!.includes('x86-64')) continue;
    if (!ref.has(m[1]!)) ref.set(m[1]!, m[3]!);
  }
  return ref;
}

describe('readLdCache', () => {
  const ref = process.arch === 'x64' ? ldconfigP() : undefined;
  it(
    'maps every x86-64 soname to the path ldconfig -p prints',
    { skip: ref ? undefined : 'no ldconfig (or not x86-64)' },
    () => {
      const c = readLdCache();
      assert.ok(c);
      assert.equal(c.size, ref!.size);
      for (const [k, v] of ref!) assert.equal(c.get(k), v, k);
      assert.match(c.get('libc.so.6') ?? '', /\/libc\.so\.6$/);
    },
  );

  it('declines a missing file and another format', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bpfs-ldcache-'));
    try {
      assert.equal(readLdCache(join(dir, 'none')), undefined);
      const old = join(dir, 'old');
      writeFileSync(old, Buffer.concat([Buffer.from('ld.so-1.7.0'), Buffer.alloc(64)]));
      assert.equal(readLdCache(old), undefined);
      const short = join(dir, 'short');
      writeFileSync(short, Buffer.concat([Buffer.from('glibc-ld.so.cache1.1'), Buffer.from([255, 255, 0, 0])]));
      assert.equal(readLdCache(short), undefined);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
