/**
 * The installed `bpfscope` command (package.json "bin": dist/bundle/bpfscope.cjs, built from this file by
 * scripts/bundle.mjs). It runs the one-file CLI bundle next to it, dist/bundle/cli.cjs (src/cli/main.ts and all it
 * imports), through a V8 code cache, so a run does not parse and compile the CLI's ~1 MB of JavaScript again:
 * measured here, `bpfscope -e 'BEGIN { exit(); }'` takes ~70 ms of CPU with the cache and ~110 ms without it.
 *
 * The cache is `dist/bundle/cache/<mode>-<cli.cjs size>-<mtime>-<node version>-<arch>.bin`, one per mode (`run`
 * for programs, `list` for -l, `other` for --help/--version, else the subcommand: each caches the functions its
 * first run compiled, so `bpfscope tools` does not stand in for the compiler's code). It is written at exit by a
 * successful run (exit code 0) that found none or whose cache V8 rejected (another V8 or other V8 flags). The size
 * and mtime of cli.cjs are in the name because V8 itself only checks the source's length. The cache lives next to
 * the code on purpose: whoever can write there can already replace the code, whereas a shared directory such as
 * /tmp would let another user hand root compiled code. A read-only install (or a user who cannot write there) runs
 * without a cache; nothing is ever printed about it.
 */
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

type CliFunction = (
  exports: object,
  require: NodeJS.Require,
  module: { exports: object },
  filename: string,
  dirname: string,
) => void;

const dir = dirname(fileURLToPath(import.meta.url));
const file = join(dir, 'cli.cjs');
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

/** cli.cjs's size and modification time, so a rebuilt or edited bundle never meets an old cache. */
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
