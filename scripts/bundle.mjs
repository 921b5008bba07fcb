#!/usr/bin/env node
// Bundles the CLI with esbuild into dist/bundle/ (run by `npm run build` after tsc; dist/src, tsc's output, stays
// for the tests and the library entry):
// - cli.cjs: src/cli/main.ts and everything it imports in one CommonJS file. One file instead of ~85 ES modules
//   removes most of the ES module loader's per-module work (open/read/fstat/compile), which was the largest block
//   of start-up time; CommonJS because it can be compiled with a V8 code cache (vm.Script), which Node 20 offers for
//   no ES module. Modules the CLI imports lazily stay lazy inside the file (esbuild wraps them in init functions).
// - bpfscope.cjs: src/cli/launch.ts, package.json's "bin": runs cli.cjs through the code cache (see launch.ts).
// koffi (native) and gecko-profiler-demangle (found with require.resolve) stay external, loaded from node_modules at
// run time. `import.meta.url` (createRequire in kernel/ffi.ts, symbols/demangle.ts, builtins.ts) becomes the
// bundle file's URL. cli.cjs.map maps the minified cli.cjs back to src/ (for stack traces under BPFSCOPE_DEBUG=1).
import { chmodSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

const root = new URL('..', import.meta.url).pathname;
const outdir = join(root, 'dist', 'bundle');

const common = {
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  external: ['koffi', 'gecko-profiler-demangle'],
  define: { 'import.meta.url': '__bpfscopeFileUrl' },
  banner: { js: "const __bpfscopeFileUrl = require('node:url').pathToFileURL(__filename).href;" },
  logLevel: 'warning',
};

rmSync(outdir, { recursive: true, force: true });
await build({
  ...common,
  entryPoints: [join(root, 'src', 'cli', 'main.ts')],
  outfile: join(outdir, 'cli.cjs'),
  // Whitespace and syntax only (names stay): 1.0 -> 0.7 MB of source held in memory, ~3 MB less peak RSS.
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: 'linked',
});
await build({
  ...common,
  entryPoints: [join(root, 'src', 'cli', 'launch.ts')],
  outfile: join(outdir, 'bpfscope.cjs'),
  banner: { js: `#!/usr/bin/env node\n${common.banner.js}` },
});
chmodSync(join(outdir, 'bpfscope.cjs'), 0o755);
