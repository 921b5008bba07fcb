/**
 * The installed `bpfscope` command (package.json "bin": dist/bundle/bpfscope.cjs, built from this file by
 * scripts/bundle.mjs). It runs the one-file CLI bundle next to it, dist/bundle/cli.cjs (src/cli/main.ts and all it
 * imports; for the flame graph and heat map subcommands of flame-commands.ts the much smaller flame.cjs, from
 * flame-main.ts, and for `heatmap` alone heatmap.cjs, from heatmap-main.ts; for the bcc tools tools.cjs, from
 * tools-main.ts, cli.cjs without the exporter, agent, web UI and flame code), through a V8 code cache, so a run does not parse and compile the CLI's ~1 MB of JavaScript again:
 * measured here, `bpfscope -e 'BEGIN { exit(); }'` takes ~70 ms of CPU with the cache and ~110 ms without it.
 *
 * The cache is `dist/bundle/cache/<mode>-<bundle size>-<mtime>-<node version>-<arch>.bin`, one per mode (`run`
 * for programs, `list` for -l, `other` for --help/--version, else the subcommand: each caches the functions its
 * first run compiled, so `bpfscope tools` does not stand in for the compiler's code). It is written at exit by a
 * successful run (exit code 0) that found none or whose cache V8 rejected (another V8 or other V8 flags). The size
 * and mtime of the bundle file are in the name because V8 itself only checks the source's length. The cache lives
 * next to the code on purpose: whoever can write there can already replace the code, whereas a shared directory
 * such as /tmp would let another user hand root compiled code. A read-only install (or a user who cannot write
 * there) runs without a cache; nothing is ever printed about it.
 *
 * Security. bpfscope runs as root, so nothing that another local user can reach or that arrives through the
 * environment may open Node's inspector or load code into it (bpftrace's users send SIGUSR1 to print the maps; to a
 * plain Node process that signal opens the inspector on 127.0.0.1:9229, where any local user can evaluate
 * JavaScript as root). Node 20 has no flag against it (`--disable-sigusr1` came with Node 22.14), and NODE_OPTIONS
 * (`--require`, `--import`, `--inspect`, `--loader`...) is applied by node before any of our JavaScript runs, so
 * the bundle's first lines (scripts/bundle.mjs PRELUDE) do it before node starts and at node's first statement:
 * - the file is also a /bin/sh script (`#!/bin/sh`; node reads that line as a comment): run as the command, sh
 *   unsets every NODE_*, UV_* and OPENSSL_* variable (Node's own list, in its docs' "Environment variables", holds
 *   code loading such as NODE_OPTIONS, NODE_PATH, NODE_REPL_EXTERNAL_MODULE, OPENSSL_CONF's engines and providers,
 *   and file writes as NODE_V8_COVERAGE, NODE_REDIRECT_WARNINGS; the whole families go, including names of later
 *   Node versions) and execs `node` (found in PATH, as `#!/usr/bin/env node` did) on this same file. This is done
 *   for every user: who runs bpfscope is nearly always root or holds BPF capabilities, and one rule is easier to
 *   trust. One fork more than before (~1 ms); it removes NODE_EXTRA_CA_CERTS too, which costs node ~50 ms where set.
 *   A developer who wants Node's options runs `node [options] dist/bundle/cli.cjs` by hand.
 * - sh passes `--inspect-port=192.0.2.1:9229`: an address of TEST-NET-1 (RFC 5737), never local, so an inspector
 *   started by a SIGUSR1 in the few milliseconds before our first statement cannot listen ("Starting inspector on
 *   192.0.2.1:9229 failed: address not available" on stderr is all it does).
 * - the first statement is `process.on('SIGUSR1', () => {})`: libuv then owns the signal for the life of the
 *   process and Node's inspector never sees it. The CLI's run adds its own listener (runtime/session.ts: print the
 *   maps, or run the program's `self:signal:SIGUSR1` probes); everything else (tools, flame graphs) ignores it.
 * - `node bpfscope.cjs` by hand skips the sh part: as root with NODE_OPTIONS set, {@link refuseNodeOptions} stops
 *   the run with one sentence (what NODE_OPTIONS asked for has already happened by then; an inspector it opened is
 *   closed first).
 * `npx bpfscope` / `npm exec` run the linked bin through sh like any command; NODE_OPTIONS then still applies to
 * npm's own node process, which is npm's and not ours.
 */
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import { COMPILE_CHILD_ARG } from '../fleet/agent/child-arg.js';
import { TOOLS } from '../tools/catalog.js';
import { FLAME_COMMAND_NAMES } from './flame-commands.js';

type CliFunction = (
  exports: object,
  require: NodeJS.Require,
  module: { exports: object },
  filename: string,
  dirname: string,
) => void;

/**
 * As root, refuse to run when NODE_OPTIONS is set: only `node bpfscope.cjs` by hand gets here with it (the bin's sh
 * prelude removes it). An inspector that NODE_OPTIONS opened is closed before the process exits with status 1.
 */
function refuseNodeOptions(): void {
  const options = process.env.NODE_OPTIONS;
  if (!options || process.geteuid?.() !== 0) return;
  if (/--inspect|--debug/.test(options)) createRequire(import.meta.url)('node:inspector').close();
  process.stderr.write(
    `ERROR: refusing to run as root with NODE_OPTIONS set (${JSON.stringify(options)}): run the bpfscope command, which starts node without it\n`,
  );
  process.exit(1);
}
refuseNodeOptions();

const dir = dirname(fileURLToPath(import.meta.url));
const file = join(dir, bundleFor(process.argv[2] ?? '', process.argv[3]));

/**
 * The bundle that runs `bpfscope NAME ...`: the flame graph and heat map subcommands and the bcc tools have bundles
 * of their own without the code they never run (flame-commands.ts and tool-commands.ts say why), everything else
 * (programs, -l, ps, exporter, ui, tools, --help) runs from cli.cjs. `agent` runs from agent.cjs, which has no
 * compiler; its compile child (`agent --internal-compile-child`, fleet/agent/compile-child.ts) from
 * agent-compile.cjs, the same entry with the compiler.
 */
function bundleFor(name: string, next: string | undefined): string {
  // the heat map alone: heatmap-main.ts says why
  if (name === 'heatmap') return 'heatmap.cjs';
  if (FLAME_COMMAND_NAMES.includes(name)) return 'flame.cjs';
  // the agent runs for days: its own bundle (agent-main.ts says why)
  if (name === 'agent') return next === COMPILE_CHILD_ARG ? 'agent-compile.cjs' : 'agent.cjs';
  if (TOOLS.some((t) => t.name === name)) return 'tools.cjs';
  return 'cli.cjs';
}
// The shebang line becomes an empty line, so line numbers in stack traces stay those of cli.cjs.
const source = readFileSync(file, 'utf8').replace(/^#!.*/, '');
const cacheFile = join(
  dir,
  'cache',
  `${mode(process.argv.slice(2))}-${fingerprint()}-${process.version}-${process.arch}.bin`,
);

/** Which kind of run `args` ask for (the cache key): a subcommand's name, `list`, `run` or `other`. */
function mode(args: string[]): string {
  const first = args[0] ?? '';
  if (/^[a-z][a-z0-9-]*$/.test(first)) return first;
  if (args.includes('-l')) return 'list';
  return args.some((a) => a === '-e' || !a.startsWith('-')) ? 'run' : 'other';
}

/** The bundle file's size and modification time, so a rebuilt or edited bundle never meets an old cache. */
function fingerprint(): string {
  const st = statSync(file);
  return `${st.size}-${Math.trunc(st.mtimeMs)}`;
}

let cachedData: Buffer | undefined;
try {
  cachedData = readFileSync(cacheFile);
} catch {
  // no cache yet
}

// The CLI's one dynamic import() of a file (the demangler's wasm glue) goes to Node's own ES module loader. Node 20
// calls that experimental and warns once; the warning is about our launcher, not the user's program, so drop it.
const emitWarning = process.emitWarning.bind(process);
process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
  if (String(warning).includes('USE_MAIN_CONTEXT_DEFAULT_LOADER')) return;
  (emitWarning as (w: string | Error, ...r: unknown[]) => void)(warning, ...rest);
}) as typeof process.emitWarning;

const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
  filename: file,
  ...(cachedData ? { cachedData } : {}),
  importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
});

if (!cachedData || script.cachedDataRejected) {
  process.once('exit', (code) => {
    if (code !== 0) return;
    try {
      mkdirSync(dirname(cacheFile), { recursive: true });
      const tmp = `${cacheFile}.${process.pid}`;
      writeFileSync(tmp, script.createCachedData());
      renameSync(tmp, cacheFile);
    } catch {
      // read-only install or not our directory: the next run compiles again
    }
  });
}

const cli = script.runInThisContext() as CliFunction;
cli({}, createRequire(file), { exports: {} }, file, dir);
