/**
 * Folded stacks to pprof (src/flame/export/pprof.ts) and speedscope (speedscope.ts), and `bpfscope flamegraph
 * --format`: pprof output decoded by the pprof-format package and by `protoc --decode=perftools.profiles.Profile`
 * with the profile.proto of Debian's golang-github-google-pprof-dev (stacks rebuilt from protoc's text here, not
 * by our decoder); speedscope output validated by ajv against the schema the speedscope package ships.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { Profile } from 'pprof-format';
import { pprofToFolded, stacksToPprof } from '../../src/flame/export/pprof.js';
import { stacksToSpeedscope } from '../../src/flame/export/speedscope.js';
import { ExportError, readFoldedStacks } from '../../src/flame/export/stacks.js';
import { fixture, readLines, referenceData, repoRoot } from './helpers.js';

const PROTO_DIR = '/usr/share/gocode/src/github.com/google/pprof/proto';
const PROTOC = '/usr/bin/protoc';
const haveProtoc = existsSync(PROTOC) && existsSync(join(PROTO_DIR, 'profile.proto'));

// Two stacks share "main"; one stack appears twice (merged).
const FOLDED = ['app;main;work;leaf 3', 'app;main;idle 2', 'app;main;work;leaf 4', 'not a folded line'];

/** protoc's text form of a profile. */
function protocDecode(bytes: Uint8Array): string {
  const r = spawnSync(PROTOC, ['--decode=perftools.profiles.Profile', '-I', PROTO_DIR, 'profile.proto'], {
    input: bytes,
  });
  assert.equal(r.status, 0, r.stderr.toString());
  return r.stdout.toString();
}

/** Folded lines ("root;...;leaf value0") rebuilt from protoc's text output: samples, locations, functions, strings. */
function foldedFromProtocText(text: string): string[] {
  const strings = [...text.matchAll(/^string_table: "((?:[^"\\]|\\.)*)"$/gm)].map((m) => m[1]!);
  const fn = new Map<string, string>();
  for (const m of text.matchAll(/^function \{\n {2}id: (\d+)\n {2}name: (\d+)\n/gm)) fn.set(m[1]!, strings[+m[2]!]!);
  const loc = new Map<string, string>();
  for (const m of text.matchAll(
    /^location \{\n {2}id: (\d+)\n {2}mapping_id: 1\n {2}line \{\n {4}function_id: (\d+)\n/gm,
  ))
    loc.set(m[1]!, fn.get(m[2]!)!);
  const out: string[] = [];
  for (const m of text.matchAll(/^sample \{\n((?: {2}\w+: \d+\n)*)\}/gm)) {
    const ids = [...m[1]!.matchAll(/location_id: (\d+)/g)].map((x) => loc.get(x[1]!)!);
    const values = [...m[1]!.matchAll(/value: (\d+)/g)].map((x) => x[1]!);
    out.push(`${ids.reverse().join(';')} ${values.join(' ')}`);
  }
  return out.sort();
}

describe('pprof export', () => {
  const folded = readFoldedStacks(FOLDED);
  it('reads folded lines: merged stacks, invalid lines counted', () => {
    assert.deepEqual(folded, {
      stacks: [
        { frames: ['app', 'main', 'work', 'leaf'], count: 7 },
        { frames: ['app', 'main', 'idle'], count: 2 },
      ],
      total: 9,
      invalidLines: 1,
    });
    assert.throws(() => readFoldedStacks(['a;b 1 2']), ExportError);
  });
  it('cpu: samples/count + cpu/nanoseconds, period, functions/locations/one mapping (pprof-format decode)', () => {
    const p = Profile.decode(stacksToPprof(folded, { kind: 'cpu', periodNs: 10_000_000 }));
    const s = p.stringTable.strings;
    assert.deepEqual(
      p.sampleType.map((t) => `${s[Number(t.type)]}/${s[Number(t.unit)]}`),
      ['samples/count', 'cpu/nanoseconds'],
    );
    assert.equal(`${s[Number(p.periodType!.type)]}/${s[Number(p.periodType!.unit)]}`, 'cpu/nanoseconds');
    assert.equal(Number(p.period), 10_000_000);
    assert.equal(s[Number(p.defaultSampleType)], 'cpu');
    assert.deepEqual(
      p.function.map((f) => [Number(f.id), s[Number(f.name)], s[Number(f.systemName)]]),
      [
        [1, 'leaf', 'leaf'],
        [2, 'work', 'work'],
        [3, 'main', 'main'],
        [4, 'app', 'app'],
        [5, 'idle', 'idle'],
      ],
    );
    assert.deepEqual(
      p.location.map((l) => [Number(l.id), Number(l.mappingId), l.line.map((x) => Number(x.functionId))]),
      [
        [1, 1, [1]],
        [2, 1, [2]],
        [3, 1, [3]],
        [4, 1, [4]],
        [5, 1, [5]],
      ],
    );
    assert.equal(p.mapping.length, 1);
    assert.equal(Number(p.mapping[0]!.id), 1);
    assert.equal(p.mapping[0]!.hasFunctions, true);
    assert.deepEqual(
      p.sample.map((x) => [x.locationId.map(Number), x.value.map(Number)]),
      [
        [
          [1, 2, 3, 4],
          [7, 70_000_000],
        ],
        [
          [5, 3, 4],
          [2, 20_000_000],
        ],
      ],
    );
  });
  it('offcpu: offcpu/nanoseconds from microsecond counts', () => {
    const p = Profile.decode(stacksToPprof(folded, { kind: 'offcpu' }));
    const s = p.stringTable.strings;
    assert.deepEqual(
      p.sampleType.map((t) => `${s[Number(t.type)]}/${s[Number(t.unit)]}`),
      ['offcpu/nanoseconds'],
    );
    assert.deepEqual(
      p.sample.map((x) => x.value.map(Number)),
      [[7000], [2000]],
    );
  });
  it('errors: a cpu profile without a period, counts that are not whole nanoseconds', () => {
    assert.throws(() => stacksToPprof(folded, { kind: 'cpu' }), /needs its sampling period/);
    const frac = readFoldedStacks(['a;b 1.5']);
    assert.throws(() => stacksToPprof(frac, { kind: 'cpu', periodNs: 1000 }), /not a whole number of samples/);
    assert.deepEqual(
      Profile.decode(stacksToPprof(frac, { kind: 'offcpu' })).sample.map((x) => Number(x.value[0])),
      [1500],
    );
  });
  it(
    'decodes with protoc and the proto file of golang-github-google-pprof-dev',
    { skip: !haveProtoc && 'protoc or profile.proto missing' },
    () => {
      const text = protocDecode(stacksToPprof(folded, { kind: 'cpu', periodNs: 10_000_000 }));
      assert.match(text, /^period_type \{\n {2}type: \d+\n {2}unit: \d+\n\}\nperiod: 10000000\n/m);
      assert.deepEqual(foldedFromProtocText(text), ['app;main;idle 2 20000000', 'app;main;work;leaf 7 70000000']);
    },
  );
  it(
    'round-trips flamegraph.pl reference stacks (protoc, and pprofToFolded)',
    { skip: (!referenceData() || !haveProtoc) && 'reference data or protoc missing' },
    () => {
      const lines = readLines(join(referenceData()!, 'expected', 'perf-vertx-stacks-01-collapsed-all.txt'));
      const bytes = stacksToPprof(readFoldedStacks(lines), { kind: 'cpu', periodNs: 1 });
      // Every stack appears once in the collapsed file; cpu value = count * period 1.
      const want = lines.map((l) => l.replace(/ (\d+)$/, ' $1 $1')).sort();
      assert.ok(want.length > 150);
      assert.deepEqual(foldedFromProtocText(protocDecode(bytes)), want);
      assert.deepEqual(pprofToFolded(bytes).sort(), lines.slice().sort());
    },
  );
});

describe('speedscope export', () => {
  const schemaPath = createRequire(import.meta.url).resolve('speedscope/dist/release/file-format-schema.json');
  const validate = new Ajv({ strict: false }).compile(JSON.parse(readFileSync(schemaPath, 'utf8')));
  it('a sampled profile: shared frames, samples root first, weights', () => {
    const doc = stacksToSpeedscope(readFoldedStacks(FOLDED), { name: 'p', unit: 'none', exporter: 'bpfscope' });
    assert.deepEqual(doc, {
      $schema: 'https://www.speedscope.app/file-format-schema.json',
      shared: { frames: [{ name: 'app' }, { name: 'main' }, { name: 'work' }, { name: 'leaf' }, { name: 'idle' }] },
      profiles: [
        {
          type: 'sampled',
          name: 'p',
          unit: 'none',
          startValue: 0,
          endValue: 9,
          samples: [
            [0, 1, 2, 3],
            [0, 1, 4],
          ],
          weights: [7, 2],
        },
      ],
      name: 'p',
      activeProfileIndex: 0,
      exporter: 'bpfscope',
    });
    assert.ok(validate(doc), JSON.stringify(validate.errors));
  });
  it('the schema check can fail (a wrong unit)', () => {
    const doc = stacksToSpeedscope(readFoldedStacks(FOLDED), { name: 'p', unit: 'none', exporter: 'x' });
    (doc.profiles as { unit: string }[])[0]!.unit = 'samples';
    assert.equal(validate(doc), false);
  });
  it('the small fixture and an off-CPU chain file validate', () => {
    for (const [file, unit] of [
      [fixture('small.folded'), 'none'],
      [fixture('chain.folded'), 'microseconds'],
    ] as const) {
      const doc = stacksToSpeedscope(readFoldedStacks(readLines(file)), { name: file, unit, exporter: 'bpfscope' });
      assert.ok(validate(doc), JSON.stringify(validate.errors));
    }
  });
});

describe('bpfscope flamegraph --format', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'bpfscope-export-'));
  after(() => rmSync(tmp, { recursive: true, force: true }));
  function bpfscope(args: string[], input = ''): { code: number | null; stdout: Buffer; stderr: string } {
    const compiled = fileURLToPath(import.meta.url).includes('/dist/');
    const root = repoRoot();
    const argv = compiled
      ? [join(root, 'dist', 'bundle', 'bpfscope.cjs'), 'flamegraph', ...args]
      : ['--import', import.meta.resolve('tsx'), join(root, 'src', 'cli', 'main.ts'), 'flamegraph', ...args];
    const r = spawnSync(process.execPath, argv, { input, maxBuffer: 1 << 26 });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr.toString() };
  }
  it('pprof -o FILE with --hz; offcpu to stdout with --unit ms', () => {
    const out = join(tmp, 'p.pb');
    const r = bpfscope(['--format', 'pprof', '--hz', '100', '-o', out], FOLDED.join('\n'));
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, 'flamegraph: Ignored 1 lines with invalid format\n');
    const p = Profile.decode(readFileSync(out));
    assert.deepEqual(
      p.sample.map((x) => x.value.map(Number)),
      [
        [7, 70_000_000],
        [2, 20_000_000],
      ],
    );
    const r2 = bpfscope(['--format=pprof', '--kind=offcpu', '--unit=ms'], 'a;b 3\n');
    assert.equal(r2.code, 0, r2.stderr);
    assert.deepEqual(
      Profile.decode(r2.stdout).sample.map((x) => x.value.map(Number)),
      [[3_000_000]],
    );
  });
  it('speedscope to stdout, and svg -o FILE', () => {
    const r = bpfscope(['--format', 'speedscope', '--kind', 'offcpu'], 'a;b 3\na;c 1\n');
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout.toString());
    assert.equal(doc.profiles[0].unit, 'microseconds');
    assert.deepEqual(doc.profiles[0].weights, [3, 1]);
    const svg = join(tmp, 'g.svg');
    assert.equal(bpfscope(['-o', svg], 'a;b 3\n').code, 0);
    assert.match(readFileSync(svg, 'utf8'), /<title>b \(3 samples, 100.00%\)<\/title>/);
  });
  it('errors are one sentence, exit status 1', () => {
    const fails = (args: string[], input: string, stderr: string) => {
      const r = bpfscope(args, input);
      assert.deepEqual({ code: r.code, out: r.stdout.length, stderr: r.stderr }, { code: 1, out: 0, stderr });
    };
    fails(
      ['--format', 'pprof'],
      'a;b 3\n',
      'ERROR: flamegraph: a CPU profile needs its sampling period: give the frequency (--hz) or the period (--period)\n',
    );
    fails(
      ['--format', 'pprof', '--hz', '99'],
      'a;b 3 4\n',
      'ERROR: flamegraph: line 1 has two counts (differential input), which only the SVG format can show\n',
    );
    fails(['--format', 'pprof', '--hz', '99'], '', 'ERROR: flamegraph: no stack counts found in the input\n');
    fails(
      ['--format', 'json'],
      '',
      'ERROR: flamegraph: unknown --format "json"\nHINT: choices are: svg, pprof, speedscope\n',
    );
  });
});
