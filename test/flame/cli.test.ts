import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { fixture, repoRoot, svgFrames } from './helpers.js';

/** Runs `bpfscope ARGS` (the built bundle when this test is compiled, else the sources through tsx). */
function bpfscope(
  args: string[],
  input?: string | Buffer,
  cwd?: string,
): { code: number | null; stdout: Buffer; stderr: string } {
  const compiled = fileURLToPath(import.meta.url).includes('/dist/');
  const root = repoRoot();
  const argv = compiled
    ? [join(root, 'dist', 'bundle', 'bpfscope.cjs'), ...args]
    : ['--import', import.meta.resolve('tsx'), join(root, 'src', 'cli', 'main.ts'), ...args];
  const r = spawnSync(process.execPath, argv, { input, cwd: cwd ?? root, maxBuffer: 1 << 26 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr.toString() };
}

const tmp = mkdtempSync(join(tmpdir(), 'bpfscope-flame-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const PERF =
  'java 100/101 [000] 1.0: 5 cycles:\n\tffff0001 leaf+0x10 (/usr/lib/libx.so)\n\t7f00 Lcom/Foo;.bar(I)V (/tmp/perf-100.map)\n\n';

describe('flame graph commands', () => {
  it('flamegraph sorts by code point when the input has characters beyond U+FFFF (as flamegraph.pl)', () => {
    // UTF-16 order would put U+1F600 (surrogates 0xD83D...) before U+FF21; code point order puts it after.
    const r = bpfscope(['flamegraph'], Buffer.from('a;\u{1F600} 1\na;\uFF21 1\n'));
    assert.equal(r.code, 0);
    const svg = r.stdout.toString();
    assert.match(svg, /<title>\uFF21 \(1 samples, 50.00%\)<\/title><rect x="10.0" y="37" width="590.0"/);
    assert.match(svg, /<title>\u{1F600} \(1 samples, 50.00%\)<\/title><rect x="600.0" y="37" width="590.0"/u);
  });

  it('stackcollapse-perf reads stdin and files, with options', () => {
    assert.deepEqual(bpfscope(['stackcollapse-perf'], PERF), {
      code: 0,
      stdout: Buffer.from('java;com/Foo:.bar;leaf 5\n'),
      stderr: '',
    });
    const f = join(tmp, 'in.perf');
    writeFileSync(f, PERF);
    const r = bpfscope(['stackcollapse-perf', '--tid', '--jit', f, f]);
    assert.equal(r.stdout.toString(), 'java-100/101;com/Foo:.bar_[j];leaf 10\n');
  });
  it('stackcollapse-perf | flamegraph makes an SVG', () => {
    const folded = bpfscope(['stackcollapse-perf', '--all'], PERF).stdout;
    const r = bpfscope(['flamegraph', '--colors', 'java', '--title', 'T'], folded);
    assert.equal(r.code, 0);
    const frames = svgFrames(r.stdout.toString());
    assert.deepEqual(
      frames.map((f) => f.split('|')[0]),
      [
        'all (5 samples, 100%)',
        'com/Foo:.bar (5 samples, 100.00%)',
        'java (5 samples, 100.00%)',
        'leaf (5 samples, 100.00%)',
      ],
    );
    assert.match(r.stderr, /flamegraph: Stack count is low \(5\)/);
  });
  it('flamegraph --cp writes palette.map in the current directory', () => {
    const r = bpfscope(['flamegraph', '--cp', fixture('small.folded')], undefined, tmp);
    assert.equal(r.code, 0);
    const map = readFileSync(join(tmp, 'palette.map'), 'utf8');
    assert.match(map, /^main->rgb\(\d+,\d+,\d+\)$/m);
  });
  it('stackcollapse-bpftrace and difffolded', () => {
    assert.equal(
      bpfscope(['stackcollapse-bpftrace'], '@[\n    f+1\n    g+2\n, sh]: 4\n').stdout.toString(),
      'sh;g+2;f+1 4\n',
    );
    const a = join(tmp, 'a.folded');
    const b = join(tmp, 'b.folded');
    writeFileSync(a, 'x;y 4\n');
    writeFileSync(b, 'x;y 6\nx;z 1\n');
    assert.equal(bpfscope(['difffolded', a, b]).stdout.toString(), 'x;y 4 6\nx;z 0 1\n');
  });
  it('reports bad input as one error line and a non-zero exit', () => {
    const cases: [string[], string | undefined, RegExp, number][] = [
      [['flamegraph', '--width', 'wide'], '', /^ERROR: flamegraph: value "wide" invalid for option --width/, 1],
      [['flamegraph', '--colors', 'pink'], '', /^ERROR: flamegraph: unknown palette "pink"/, 1],
      [['flamegraph'], 'no counts\n', /ERROR: flamegraph: no stack counts found in the input/, 2],
      [['stackcollapse-perf', '--nope'], '', /^ERROR: stackcollapse-perf: Unknown option '--nope'/, 1],
      [
        ['stackcollapse-perf', join(tmp, 'missing')],
        undefined,
        /^ERROR: cannot open .*missing: no such file or directory/,
        1,
      ],
      [['difffolded', 'one'], undefined, /^ERROR: difffolded: expected two folded files, got 1/, 1],
    ];
    for (const [args, input, re, code] of cases) {
      const r = bpfscope(args, input);
      assert.equal(r.code, code, args.join(' '));
      assert.match(r.stderr, re, args.join(' '));
      assert.ok(!r.stderr.includes('    at '), 'no stack trace');
    }
  });
  it('stops quietly when the reader goes away (| head)', async () => {
    const big = join(tmp, 'big.folded');
    writeFileSync(big, Array.from({ length: 40000 }, (_, i) => `a;b${i % 997};c${i} ${1 + (i % 5)}\n`).join(''));
    const compiled = fileURLToPath(import.meta.url).includes('/dist/');
    const root = repoRoot();
    const argv = compiled
      ? [join(root, 'dist', 'bundle', 'bpfscope.cjs'), 'flamegraph', big]
      : ['--import', import.meta.resolve('tsx'), join(root, 'src', 'cli', 'main.ts'), 'flamegraph', big];
    const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.stdout.once('data', () => child.stdout.destroy());
    const code = await new Promise((resolve) => child.on('close', resolve));
    assert.equal(code, 0);
    assert.equal(stderr, '');
  });
  it('prints usage for -h and --help', () => {
    for (const cmd of ['stackcollapse-perf', 'stackcollapse-bpftrace', 'flamegraph', 'difffolded']) {
      const r = bpfscope([cmd, '--help']);
      assert.equal(r.code, 0);
      assert.match(r.stdout.toString(), new RegExp(`^USAGE: bpfscope ${cmd}`));
    }
  });
});

describe('the flame commands bundle (dist/bundle/flame.cjs)', () => {
  it('runs exactly the flame commands, each the same entry as in COMMANDS', async () => {
    const { FLAME_COMMAND_NAMES, FLAME_COMMANDS } = await import('../../src/cli/flame-commands.js');
    const { COMMANDS } = await import('../../src/cli/commands.js');
    assert.deepEqual([...FLAME_COMMAND_NAMES].sort(), [
      'difffolded',
      'flamegraph',
      'heatmap',
      'stackcollapse-bpftrace',
      'stackcollapse-perf',
    ]);
    assert.deepEqual(Object.keys(FLAME_COMMANDS).sort(), [...FLAME_COMMAND_NAMES].sort());
    for (const name of FLAME_COMMAND_NAMES) assert.equal(COMMANDS[name], FLAME_COMMANDS[name], name);
  });
  it('is what the launcher runs for them but heatmap, which runs heatmap.cjs: code caches named after each', (t) => {
    if (!fileURLToPath(import.meta.url).includes('/dist/')) return t.skip('needs the built bundle');
    const bundle = join(repoRoot(), 'dist', 'bundle');
    const cases: [string[], string, string][] = [
      [['heatmap', '-'], 'TIME LAT\n1 100\n2 200\n3 300\n', 'heatmap.cjs'],
      [['flamegraph', '-'], 'a;b 1\n', 'flame.cjs'],
    ];
    for (const [args, input, file] of cases) {
      const size = statSync(join(bundle, file)).size;
      const r = bpfscope(args, input);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout.toString(), /^<\?xml /);
      const caches = readdirSync(join(bundle, 'cache')).filter((f) => f.startsWith(`${args[0]}-`));
      assert.ok(
        caches.some((f) => f.startsWith(`${args[0]}-${size}-`)),
        `a ${args[0]} cache of the ${size}-byte ${file} in ${caches.join(', ')}`,
      );
    }
  });
});
