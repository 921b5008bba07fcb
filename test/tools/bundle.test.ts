/**
 * The tools' CLI bundle, dist/bundle/tools.cjs (src/cli/tools-main.ts, built by scripts/bundle.mjs): it runs
 * exactly the catalog's tools, each with the same entry as COMMANDS; the launcher runs it for a tool's name; it
 * holds none of the exporter, agent, web UI, flame commands or their packages.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { COMMANDS } from '../../src/cli/commands.js';
import { TOOL_COMMANDS } from '../../src/cli/tool-commands.js';
import { TOOLS } from '../../src/tools/catalog.js';
import { repoRoot } from '../helpers/cli.js';
import { runBpfscope } from './helpers.js';

const fromDist = fileURLToPath(import.meta.url).includes('/dist/');
const bundle = join(repoRoot(), 'dist', 'bundle');

describe('the tools bundle (dist/bundle/tools.cjs)', () => {
  it('runs exactly the catalog tools, each the same entry as in COMMANDS', () => {
    assert.deepEqual(
      Object.keys(TOOL_COMMANDS).sort(),
      TOOLS.map((t) => t.name),
    );
    assert.equal(Object.keys(TOOL_COMMANDS).length, 45);
    for (const name of Object.keys(TOOL_COMMANDS)) assert.equal(COMMANDS[name], TOOL_COMMANDS[name], name);
  });

  it('is what the launcher runs for a tool: its code cache is named after tools.cjs', async (t) => {
    if (!fromDist) return t.skip('needs the built bundle');
    const size = statSync(join(bundle, 'tools.cjs')).size;
    const r = await runBpfscope(['softirqs', '--ebpf', '-C']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      'config = { max_map_keys = 10240 }\ntracepoint:irq:softirq_entry {\n  @dist[args.vec] = count();\n}\n',
    );
    const caches = readdirSync(join(bundle, 'cache')).filter((f) => f.startsWith('softirqs-'));
    assert.ok(
      caches.some((f) => f.startsWith(`softirqs-${size}-`)),
      `a softirqs cache of the ${size}-byte tools.cjs in ${caches.join(', ')}`,
    );
  });

  it('a usage error and a failing tool report as from cli.cjs (stderr, exit status)', async () => {
    const bad = await runBpfscope(['runqlat', '--nope']);
    assert.equal(bad.code, 2);
    assert.equal(bad.stdout, '');
    assert.match(bad.stderr, /^usage: runqlat .*\nrunqlat: error: unrecognized arguments: --nope\n$/s);
    const missing = await runBpfscope(['funclatency', '/nonexistent/libnothing.so:f']);
    assert.equal(missing.code, 1);
    // As bcc's funclatency, which prints this error with print(), not to stderr.
    assert.equal(missing.stdout, "Error: can't resolve library /nonexistent/libnothing.so\n");
    assert.equal(missing.stderr, '');
  });

  it('holds no code of the exporter, agent, web UI, flame commands, ps, nor their packages', (t) => {
    if (!fromDist) return t.skip('needs the built bundle');
    const text = readFileSync(join(bundle, 'tools.cjs'), 'utf8');
    // esbuild names each module it wraps after its path: "src/tools/execsnoop.ts"(){...}
    assert.match(text, /"src\/tools\/execsnoop\.ts"/);
    assert.match(text, /"src\/compiler\.ts"/);
    for (const absent of [
      'src/fleet/',
      'src/ui/',
      'src/flame/commands/',
      'src/inspect/',
      'node_modules/yaml/',
      'node_modules/ajv/',
      'node_modules/ws/',
      'node_modules/prom-client/',
      'node_modules/hono/',
      'node_modules/@opentelemetry/',
    ])
      assert.ok(!text.includes(absent), absent);
  });
});
