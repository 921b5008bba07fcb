/**
 * The cache of linked programs (src/runtime/link-cache.ts): a program linked through the cache, on a miss and on a
 * hit, is exactly what the uncached `link` makes of it (the instructions, bytes, source positions, functions and the
 * order in which the map resolver is asked), for every golden program of test/codegen/golden (whose uncached
 * output test/codegen/golden.test.ts pins to recorded listings); a hit does not run the linker; entries that are
 * not this user's, are writable by others, or hold another key are not used.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { compile } from '../../src/compiler.js';
import type { Target } from '../../src/lang/target.js';
import { cachedLink, defaultLinkCache, type LinkCache } from '../../src/runtime/link-cache.js';
import { link } from '../../src/runtime/loader.js';
import { repoRoot } from '../helpers/cli.js';

const GOLDEN = join(repoRoot(), 'test', 'codegen', 'golden');

/** A fixed fake machine, as in golden.test.ts. */
const TARGET: Target = {
  onlineCpus: () => [0, 1, 2, 3],
  possibleCpus: () => [0, 1, 2, 3],
  pidNamespace: () => null,
  kernelSymbolAddress: () => undefined,
  cgroupId: () => undefined,
  resolveUaddr: (_probe, symbol) => `no uaddr for ${symbol} on this target`,
};

const tmp = mkdtempSync(join(tmpdir(), 'bpfscope-link-cache-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

function plans(text: string, positional: string[], unsafe = false) {
  return compile({ name: 'stdin', text }, { target: TARGET, positional, ...(unsafe ? { unsafe } : {}) }).compiled
    .programs;
}

/** A map resolver that numbers maps from 1000 in the order it is asked, and records that order. */
function resolver(): { fd: (name: string) => number; asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    fd: (name) => {
      if (!asked.includes(name)) asked.push(name);
      return 1000 + asked.indexOf(name);
    },
  };
}

describe('link cache', () => {
  it('is off outside the CLI bundle', () => {
    assert.equal(defaultLinkCache(), null);
  });

  const tracefs = existsSync('/sys/kernel/tracing/events/syscalls');
  const names = readdirSync(GOLDEN)
    .filter((n) => n.endsWith('.bt'))
    .sort();
  it('has the golden programs to check', () => assert.ok(names.length >= 20, `${names.length}`));
  for (const name of names) {
    it(`links ${name} on a miss and on a hit exactly as without a cache`, (t) => {
      const text = readFileSync(join(GOLDEN, name), 'utf8');
      if (text.includes('{{WORKLOAD}}')) return t.skip('probes the test workload (golden.test.ts covers it)');
      if (/\btracepoint:/.test(text) && !tracefs) return t.skip('tracefs is not mounted');
      const pos = /^\/\/ @positional (.*)$/m.exec(text);
      const positional = pos ? pos[1]!.split(' ') : [];
      const cache: LinkCache = { dir: join(tmp, name), version: 'v1' };
      const unsafe = /^\/\/ @unsafe$/m.test(text);
      const ref = plans(text, positional, unsafe);
      const miss = plans(text, positional, unsafe);
      const hit = plans(text, positional, unsafe);
      assert.ok(ref.length > 0);
      for (let i = 0; i < ref.length; i++) {
        const r0 = resolver();
        const want = link(ref[i]!, r0.fd, null);
        const r1 = resolver();
        const got1 = link(miss[i]!, r1.fd, cache);
        const files = readdirSync(cache.dir).length;
        const r2 = resolver();
        const got2 = link(hit[i]!, r2.fd, cache);
        assert.equal(readdirSync(cache.dir).length, files, 'a hit writes nothing');
        for (const [got, r] of [
          [got1, r1],
          [got2, r2],
        ] as const) {
          assert.ok(got.bytes.equals(want.bytes), `${ref[i]!.expanded.name}: other instructions`);
          assert.deepEqual(got.insns, want.insns);
          assert.deepEqual(got.positions, want.positions);
          assert.deepEqual(got.funcs, want.funcs);
          assert.deepEqual(r.asked, r0.asked, 'maps asked for in another order');
        }
      }
    });
  }

  it('uses an entry only when it is this user’s, not writable by others, and of this key', () => {
    const cache: LinkCache = { dir: join(tmp, 'trust'), version: 'v1' };
    const text = 'BEGIN { @a[1] = count(); printf("%d %s\\n", 7, "x"); exit(); }';
    let runs = 0;
    const once = () => {
      const p = plans(text, [])[0]!;
      return cachedLink(cache, [{ fn: p.fn, params: 1 }], resolver().fd, (fd) => {
        runs++;
        return link(p, fd, null);
      });
    };
    const first = once();
    assert.equal(runs, 1);
    const second = once();
    assert.equal(runs, 1, 'the second link was not served from the cache');
    assert.ok(second.bytes.equals(first.bytes));
    const [file] = readdirSync(cache.dir);
    const path = join(cache.dir, file!);
    assert.equal(readdirSync(cache.dir).length, 1);

    chmodSync(path, 0o666);
    once();
    assert.equal(runs, 2, 'an entry writable by others was used');
    once();
    assert.equal(runs, 2, 'the rewritten entry was not used');

    // the same entry with another key: the version in the stored key's text (its first occurrence) changed
    const stored = readFileSync(path, 'utf8');
    assert.ok(stored.startsWith('{"version":"v1"'), 'the entry does not begin with its key');
    writeFileSync(path, stored.replace('"v1"', '"v0"'), { mode: 0o600 });
    once();
    assert.equal(runs, 3, 'an entry of another key was used');

    chmodSync(cache.dir, 0o777);
    once();
    once();
    assert.equal(runs, 5, 'a directory writable by others was used');
    chmodSync(cache.dir, 0o700);

    const other: LinkCache = { dir: cache.dir, version: 'v2' };
    const p = plans(text, [])[0]!;
    cachedLink(other, [{ fn: p.fn, params: 1 }], resolver().fd, (fd) => {
      runs++;
      return link(p, fd, null);
    });
    assert.equal(runs, 6, 'an entry of another build was used');
  });
});
