/**
 * The fleet agent never loads the compiler (issue 15, bench/results/agent-issue15.md sections 12 and 14): its
 * program is compiled by a short-lived child (fleet/agent/compile-child.ts), and the modules the agent's entry
 * (src/cli/agent-main.ts, dist/bundle/agent.cjs) reaches through static imports must not include the compiler's: in
 * the bundle a module reached only through `import()` is wrapped in a function that runs when the import does, so
 * its code is neither run nor compiled, nor held in the launcher's code cache. The graph is esbuild's own (the
 * bundler that builds agent.cjs, scripts/bundle.mjs), read from its metafile: each import with its kind. The built
 * agent.cjs has no compiler module at all (scripts/bundle.mjs `withoutCompiler`), agent-compile.cjs, the compile
 * child's bundle, has it.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';
import { bpfscopeEntry, bpfscopeSkipReason } from '../helpers/cli.js';

function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'scripts', 'bundle.mjs'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('scripts/bundle.mjs not found above the test');
    dir = up;
  }
  return dir;
}

/** The modules reachable from `entry`, following static imports only, or every import with `dynamic`. */
function reachable(meta: Metafile, entry: string, dynamic: boolean): Set<string> {
  const seen = new Set<string>([entry]);
  const todo = [entry];
  while (todo.length > 0) {
    const file = todo.pop()!;
    for (const imp of meta.inputs[file]?.imports ?? []) {
      if (imp.external || (!dynamic && imp.kind === 'dynamic-import') || seen.has(imp.path)) continue;
      seen.add(imp.path);
      todo.push(imp.path);
    }
  }
  return seen;
}

/** Modules of the compiler (parser, semantic passes, code generation) that the agent must not run. */
const COMPILER = ['src/compiler.ts', 'src/lang/parser.ts', 'src/lang/passes/semantic.ts', 'src/codegen/gen.ts'];

describe("the agent's bundle", () => {
  it('reaches the compiler only through import(): the compile child, and Tracer runs that compile', async () => {
    const root = repoRoot();
    const entry = 'src/cli/agent-main.ts';
    const r = await build({
      absWorkingDir: root,
      entryPoints: [entry],
      bundle: true,
      write: false,
      metafile: true,
      format: 'cjs',
      platform: 'node',
      external: ['koffi'],
      define: { 'import.meta.url': '__bpfscopeFileUrl' },
      logLevel: 'silent',
    });
    const statically = reachable(r.metafile, entry, false);
    const all = reachable(r.metafile, entry, true);
    // the check can fail: the compile child's side does reach them (through import())
    for (const m of COMPILER) assert.ok(all.has(m), `${m} is not in the agent's bundle at all`);
    assert.ok(statically.has('src/runtime/tracer.ts') && statically.has('src/runtime/precompiled.ts'));
    assert.deepEqual(
      COMPILER.filter((m) => statically.has(m)),
      [],
      'a static import chain from the agent reaches the compiler',
    );
  });

  it('as built: agent.cjs holds no compiler module, agent-compile.cjs does', { skip: bpfscopeSkipReason() }, () => {
    const dir = dirname(bpfscopeEntry());
    // esbuild names each wrapped module by its path: `__esm({"src/compiler.ts"() {...}})`
    const modules = (file: string): string[] =>
      COMPILER.filter((m) => readFileSync(join(dir, file), 'utf8').includes(`"${m}"`));
    assert.deepEqual(modules('agent.cjs'), []);
    assert.deepEqual(modules('agent-compile.cjs'), COMPILER);
  });
});
