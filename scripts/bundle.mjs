#!/usr/bin/env node
// Bundles the CLI with esbuild into dist/bundle/ (run by `npm run build` after tsc; dist/src, tsc's output, stays
// for the tests and the library entry):
// - cli.cjs: src/cli/main.ts and everything it imports in one CommonJS file. One file instead of ~85 ES modules
//   removes most of the ES module loader's per-module work (open/read/fstat/compile), which was the largest block
//   of start-up time; CommonJS because it can be compiled with a V8 code cache (vm.Script), which Node 20 offers for
//   no ES module. Modules the CLI imports lazily stay lazy inside the file (esbuild wraps them in init functions).
// - flame.cjs: src/cli/flame-main.ts, the flame graph and heat map subcommands only (src/cli/flame-commands.ts).
// - tools.cjs: src/cli/tools-main.ts, the bcc tools only (src/cli/tool-commands.ts): cli.cjs without the exporter,
//   agent, web UI, flame commands and their packages (yaml, ajv, ws, prom-client, hono...).
// - bpfscope.cjs: src/cli/launch.ts, package.json's "bin": runs cli.cjs (flame.cjs for those subcommands) through
//   the code cache (see launch.ts). Its
//   first two lines (PRELUDE) are a /bin/sh script that node reads as a comment: run as a command it starts node on
//   this same file without Node's environment variables, and the first JavaScript statement takes SIGUSR1 over from
//   Node's inspector (why: launch.ts, "Security").
// koffi (native) stays external, loaded from node_modules at run time. gecko-profiler-demangle's JavaScript glue is
// bundled (a lazy init function: a real import() would fail in a script run from the code cache, see
// symbols/demangle.ts); its .wasm file is read from node_modules (require.resolve). `import.meta.url` (createRequire in kernel/ffi.ts, symbols/demangle.ts, builtins.ts) becomes the
// bundle file's URL. cli.cjs.map maps the minified cli.cjs back to src/ (for stack traces under BPFSCOPE_DEBUG=1).
import { chmodSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

const root = new URL('..', import.meta.url).pathname;

/**
 * agent.cjs without the compiler: the agent reaches the compiler only through `import()` (src/runtime/tracer.ts
 * when a program is compiled in-process, src/fleet/agent/compile-child.ts in the child; test/arch/agent-bundle.test.ts
 * checks that no static import does), and in this bundle those two imports resolve to a module that throws. The
 * agent's program is compiled by agent-compile.cjs in a child; ~340 KB less source held and ~0.8 MB less RSS
 * (bench/results/agent-issue15.md section 14).
 */
const withoutCompiler = {
  name: 'without-compiler',
  setup(b) {
    b.onResolve({ filter: /\/(compiler|precompile)\.js$/ }, (a) =>
      a.kind === 'dynamic-import' ? { path: a.path, namespace: 'without-compiler' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'without-compiler' }, (a) => ({
      contents: `throw new Error('internal: agent.cjs has no compiler (${a.path}): its program is compiled by agent-compile.cjs');`,
      loader: 'js',
    }));
  },
};
const outdir = join(root, 'dist', 'bundle');

const common = {
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  external: ['koffi'],
  define: { 'import.meta.url': '__bpfscopeFileUrl' },
  banner: { js: "const __bpfscopeFileUrl = require('node:url').pathToFileURL(__filename).href;" },
  logLevel: 'warning',
};

rmSync(outdir, { recursive: true, force: true });
// One minified bundle per entry point the launcher chooses from (src/cli/launch.ts `bundleFor`); whitespace and
// syntax only (names stay): for cli.cjs 1.0 -> 0.7 MB of source held in memory, ~3 MB less peak RSS.
const ENTRIES = [
  // everything: programs, -l, ps, exporter, ui, tools, --help
  ['main.ts', 'cli.cjs'],
  // the flame graph and heat map subcommands alone (~1/20 of cli.cjs; see src/cli/flame-commands.ts): ~20 ms of CPU
  // and ~6 MB less per run, measured on `bpfscope heatmap` with a 3-line input
  ['flame-main.ts', 'flame.cjs'],
  // `heatmap` alone (~70 KB against flame.cjs's ~175): ~5 ms of CPU and ~100 page faults less a run
  // (bench/results/flame-issue14.md, section heat11)
  ['heatmap-main.ts', 'heatmap.cjs'],
  // the bcc tools alone: the same tool code without what no tool runs, so less source to read and less code cache
  // to load at each tool's start (bench/results/startup-issue13.md, Part 9)
  ['tools-main.ts', 'tools.cjs'],
  // `bpfscope agent` alone (loader, symbols and the agent; ~1/6 of cli.cjs): the agent runs for days, and every byte
  // of code parsed at start stays in its memory (docs/fleet-agent.md "Overhead"). Without the compiler: see below.
  ['agent-main.ts', 'agent.cjs', [withoutCompiler]],
  // the agent's compile child (`agent --internal-compile-child`, src/fleet/agent/compile-child.ts): the same entry
  // with the compiler, run for a moment at the agent's start
  ['agent-main.ts', 'agent-compile.cjs'],
  // the agent's demangling child (src/fleet/agent/demangle-child.ts): the demangler alone, run with node directly
  // when a period meets new C++/Rust names (~0.08 s of CPU a run against ~0.13 s through the launcher and agent.cjs)
  ['demangle-child-main.ts', 'demangle-child.cjs'],
];
for (const [entry, out, plugins = []] of ENTRIES) {
  await build({
    ...common,
    plugins,
    entryPoints: [join(root, 'src', 'cli', entry)],
    outfile: join(outdir, out),
    minifyWhitespace: true,
    minifySyntax: true,
    sourcemap: 'linked',
  });
}
// Line 2 is `':'` (a JavaScript string statement) followed by a `//` comment for node, and for /bin/sh the no-op `:`
// followed by: unset every exported variable named NODE_*, UV_* or OPENSSL_* (the words of `export -p`, each cut at
// `=`: a word from inside a value can only name a variable of those families too, and one that is not a valid name
// is skipped, so `unset` never fails), then exec node on this file (for `agent`, with the V8 flags below), with an inspector address that can never be
// bound (192.0.2.1 is TEST-NET-1, RFC 5737, never a local address) for a SIGUSR1 that arrives before line 3 runs.
// Node skips line 1 (a hashbang). Line 3 is the first statement node runs.
const PRELUDE = [
  '#!/bin/sh',
  `':' //; set -f; for v in $(export -p); do v=\${v%%=*}; ` +
    `case $v in *[!A-Za-z0-9_]*) ;; NODE_*|UV_*|OPENSSL_*) unset "$v" ;; esac; done; ` +
    // the agent (a long-running process) alone gets V8 flags for a smaller heap: young generation semi-spaces of
    // 1 MiB instead of up to 16, one V8 worker thread instead of one per CPU, and `gc()` for a full collection after
    // each period (src/fleet/agent/heaptrim.ts); no optimizing compiler (`--max-opt=1`: interpreter and baseline
    // code only; TurboFan's own code pages in node's binary were ~3 MiB of RSS, for a steady CPU that measured
    // about the same); and one malloc arena for all its threads (glibc's MALLOC_ARENA_MAX, a fixed value: 2-4 MB
    // less RSS with the trims of heaptrim.ts). docs/fleet-agent.md "Overhead" has the measurements.
    `case $1 in agent) MALLOC_ARENA_MAX=1 exec node --inspect-port=192.0.2.1:9229 --max-semi-space-size=1 --v8-pool-size=1 --expose-gc --max-opt=1 "$0" "$@";; esac; ` +
    `exec node --inspect-port=192.0.2.1:9229 "$0" "$@"`,
  // (a no-op listener: libuv then owns the signal, so Node's inspector never sees it; the CLI adds the real ones)
  "process.on('SIGUSR1', () => {});",
].join('\n');
await build({
  ...common,
  entryPoints: [join(root, 'src', 'cli', 'launch.ts')],
  outfile: join(outdir, 'bpfscope.cjs'),
  banner: { js: `${PRELUDE}\n${common.banner.js}` },
});
chmodSync(join(outdir, 'bpfscope.cjs'), 0o755);
// The worker thread of stackcollapse-perf's parallel reader (src/flame/collapse/perf-parallel.ts), found next to
// cli.cjs: a bundle of its own, so a worker loads ~30 KB instead of the whole CLI.
await build({
  ...common,
  entryPoints: [join(root, 'src', 'flame', 'collapse', 'perf-worker.ts')],
  outfile: join(outdir, 'perf-worker.cjs'),
  minifyWhitespace: true,
  minifySyntax: true,
});
