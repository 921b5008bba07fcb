#!/usr/bin/env node
// Bundles the CLI (src/cli/main.ts and everything it imports) with esbuild into dist/bundle/: the entry
// bpfscope.mjs (package.json "bin") and a few shared chunks under chunks/, one per group of modules that the lazily
// imported parts (each tool, the flame graph commands, the program runner) share. Node then opens ~10 files for
// `bpfscope -e PROGRAM` instead of ~85 separate modules, which was the largest block of start-up time (the ESM
// loader's open/read/fstat/compile per module). koffi (native) is external and loaded from node_modules at run
// time, as is gecko-profiler-demangle (found with require.resolve). Source maps are written next to the files
// (`node --enable-source-maps dist/bundle/bpfscope.mjs` uses them); nothing reads them otherwise.
// Run by `npm run build` after tsc; dist/src (tsc's output) stays for the tests and the library entry.
import { chmodSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

const root = new URL('..', import.meta.url).pathname;
const outdir = join(root, 'dist', 'bundle');

rmSync(outdir, { recursive: true, force: true });
await build({
  entryPoints: { bpfscope: join(root, 'src', 'cli', 'main.ts') },
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  outdir,
  chunkNames: 'chunks/[name]-[hash]',
  outExtension: { '.js': '.mjs' },
  external: ['koffi', 'gecko-profiler-demangle'],
  sourcemap: 'linked',
  logLevel: 'warning',
});
chmodSync(join(outdir, 'bpfscope.mjs'), 0o755);
