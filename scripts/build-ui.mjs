#!/usr/bin/env node
// Builds the web UI's client (ui/) into dist/ui/ (run by `npm run build`): esbuild bundles ui/src/main.tsx (Preact,
// ECharts, d3-flame-graph and their CSS) into app.js + app.css, index.html is copied, and speedscope's release
// build (the `speedscope` package, a devDependency) is copied into dist/ui/speedscope/ with its licence, so the
// published package serves "open in speedscope" locally and needs none of these packages at run time.
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { build } from 'esbuild';

const root = new URL('..', import.meta.url).pathname;
const outdir = join(root, 'dist', 'ui');
rmSync(outdir, { recursive: true, force: true });
mkdirSync(outdir, { recursive: true });
await build({
  entryPoints: { app: join(root, 'ui', 'src', 'main.tsx') },
  outdir,
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: 'chrome110',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  // names kept: d3-flame-graph tells its tree nodes apart by constructor.name ("Node")
  minify: true,
  keepNames: true,
  legalComments: 'linked',
  logLevel: 'warning',
});
cpSync(join(root, 'ui', 'index.html'), join(outdir, 'index.html'));
const require = createRequire(import.meta.url);
const speedscope = dirname(require.resolve('speedscope/package.json'));
cpSync(join(speedscope, 'dist', 'release'), join(outdir, 'speedscope'), { recursive: true });
cpSync(join(speedscope, 'LICENSE'), join(outdir, 'speedscope', 'LICENSE'));
