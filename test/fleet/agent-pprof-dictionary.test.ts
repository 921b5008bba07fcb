/**
 * The agent's pprof dictionary kept across periods (issue 15): a second profile reuses the first one's strings,
 * functions, locations and mappings, holds only the locations (and their functions and mappings) its own samples
 * use, asks build-ids once per frame, and the dictionary starts again past its bound without mixing two in a profile.
 */
import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import { describe as suite, test } from 'node:test';
import { Profile } from 'pprof-format';
import { type AgentSample, PprofDictionary, buildAgentProfile } from '../../src/fleet/agent/pprof.js';
import type { Frame } from '../../src/symbols/resolver.js';
import { sampleFrames } from './receivers.js';

const k = (name: string): Frame => ({ addr: 1n, name, offset: 0, kernel: true, source: 'kallsyms' });
const u = (name: string, module: string): Frame => ({
  addr: 2n,
  name,
  offset: 0,
  module,
  kernel: false,
  source: 'elf',
});

/** Each sample as "frame@file ... = count", and the profile's table sizes. */
function decode(gz: Uint8Array) {
  const p = Profile.decode(gunzipSync(gz));
  const str = p.stringTable.strings;
  const file = new Map(p.mapping.map((m) => [Number(m.id), `${str[Number(m.filename)]}#${str[Number(m.buildId)]}`]));
  const samples = p.sample.map((s) => {
    const names = sampleFrames(p, s).map((f, i) => {
      const loc = p.location.find((l) => Number(l.id) === Number(s.locationId[i]))!;
      return `${f.name}@${file.get(Number(loc.mappingId))}`;
    });
    return `${names.join(' ')} = ${Number(s.value[0])}`;
  });
  return { samples, locations: p.location.length, functions: p.function.length, mappings: p.mapping.length };
}

suite('agent pprof dictionary', () => {
  const kernel = [k('do_sys')];
  const a = [u('main', '/bin/a'), u('start', '/bin/a')];
  const b = [u('work', '/lib/b.so')];
  const labels = { comm: 'a', pid: '10' };
  const opts = { periodNs: 1000, timeNanos: 1, durationNanos: 2 };

  test('a second period reuses entries, holds only what its samples use, asks build-ids once per frame', async () => {
    const dictionary = new PprofDictionary();
    const asked: string[] = [];
    const buildIdOf = (file: string) => (asked.push(file), `id-${file}`);
    const first: AgentSample[] = [
      { kernel, user: a, labels, count: 2 },
      { kernel: [], user: b, labels, count: 1 },
    ];
    const p1 = decode(await buildAgentProfile(first, { ...opts, buildIdOf, dictionary }));
    assert.deepEqual(p1.samples, [
      'do_sys@[kernel.kallsyms]# main@/bin/a#id-/bin/a start@/bin/a#id-/bin/a = 2',
      'work@/lib/b.so#id-/lib/b.so = 1',
    ]);
    assert.deepEqual([p1.locations, p1.functions, p1.mappings], [4, 4, 3]);
    // second period: only stack b (the same frame objects) and a new frame in /bin/a
    const second: AgentSample[] = [
      { kernel: [], user: b, labels, count: 5 },
      { kernel: [], user: [u('other', '/bin/a')], labels, count: 3 },
    ];
    const p2 = decode(await buildAgentProfile(second, { ...opts, buildIdOf, dictionary }));
    assert.deepEqual(p2.samples, ['work@/lib/b.so#id-/lib/b.so = 5', 'other@/bin/a#id-/bin/a = 3']);
    assert.deepEqual([p2.locations, p2.functions, p2.mappings], [2, 2, 2]);
    assert.deepEqual(asked, ['/bin/a', '/lib/b.so', '/bin/a']);
    assert.equal(dictionary.locations.length, 5);
    assert.equal(dictionary.resets, 0);
  });

  test('past its bound the dictionary starts again before the next profile', async () => {
    const dictionary = new PprofDictionary(16384, 3);
    const s1: AgentSample[] = [{ kernel, user: a, labels, count: 1 }];
    const s2: AgentSample[] = [{ kernel: [], user: b, labels, count: 4 }];
    await buildAgentProfile(s1, { ...opts, dictionary });
    assert.equal(dictionary.locations.length, 3);
    await buildAgentProfile(s2, { ...opts, dictionary });
    assert.equal(dictionary.resets, 0);
    assert.equal(dictionary.locations.length, 4);
    const p3 = decode(await buildAgentProfile(s1, { ...opts, dictionary }));
    assert.equal(dictionary.resets, 1);
    assert.deepEqual(p3.samples, ['do_sys@[kernel.kallsyms]# main@/bin/a# start@/bin/a# = 1']);
    assert.deepEqual([p3.locations, p3.functions, p3.mappings], [3, 3, 2]);
    assert.equal(dictionary.locations.length, 3);
  });
});
