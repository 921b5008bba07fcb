/**
 * The benchmark environment: where things are, the machine description, the peers (installed with apt when
 * missing), the C helpers (built with `cc -O2`) and how each tracer is launched and recognised as attached.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, symlinkSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { cpus, hostname, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BENCH_DIR = dirname(dirname(fileURLToPath(import.meta.url)));
export const ROOT = dirname(BENCH_DIR);
export const BUILD_DIR = join(BENCH_DIR, '.build');
export const RESULTS_DIR = join(BENCH_DIR, 'results');
/**
 * bpfscope's CLI as users run it (the bundle's launcher, package.json bin): dist/ until snapshotDist() points it at
 * the private copy (a live binding for importers).
 */
export let CLI = join(ROOT, 'dist', 'bundle', 'bpfscope.cjs');

/** The traced workload binary: its name is its comm, `bpfs_bench` (bench/c/workload.c). */
export const WORKLOAD = join(BUILD_DIR, 'bpfs_bench');
/** The pipe reader of the streaming benchmark (bench/c/sink.c). */
export const SINK = join(BUILD_DIR, 'bpfs_sink');

function sh(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

/** One line per fact about the machine and the software under test. */
export function machineInfo() {
  const os = readFileSync('/etc/os-release', 'utf8');
  const pretty = /PRETTY_NAME="([^"]+)"/.exec(os)?.[1] ?? 'Linux';
  const bcc = sh('dpkg-query', ['-W', '-f=$' + '{Version}', 'bpfcc-tools']);
  return {
    host: hostname(),
    kernel: sh('uname', ['-r']),
    os: pretty,
    cpu: `${cpus()[0]?.model ?? '?'} x ${cpus().length}`,
    memGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    bpftrace: sh('bpftrace', ['--version']),
    bcc: bcc ? `bpfcc-tools ${bcc}` : null,
    bpfscopeCommit: sh('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD']),
    bpfscopeDirty: (sh('git', ['-C', ROOT, 'status', '--porcelain', '--', 'src']) ?? '') !== '',
  };
}

/** Load and foreign BPF programs right now: the numbers that explain noisy results on a shared machine. */
export function loadSnapshot() {
  let progs = null;
  try {
    progs = JSON.parse(execFileSync('bpftool', ['prog', 'show', '-j'], { encoding: 'utf8' })).length;
  } catch {
    /* bpftool missing */
  }
  return { loadavg1: Math.round(loadavg()[0] * 100) / 100, bpfProgsLoaded: progs };
}

/** Install bpftrace / bpfcc-tools with apt-get when missing (Debian package names). */
export function ensurePeers({ bcc = false } = {}) {
  const missing = [];
  if (!sh('bpftrace', ['--version'])) missing.push('bpftrace');
  if (bcc && !existsSync('/usr/sbin/execsnoop-bpfcc')) missing.push('bpfcc-tools');
  if (!sh('bpftool', ['version'])) missing.push('bpftool');
  if (!missing.length) return;
  process.stderr.write(`bench: installing ${missing.join(' ')} with apt-get\n`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  execFileSync('apt-get', ['install', '-y', '-qq', ...missing], { stdio: 'inherit', env });
}

/**
 * bcc compiles its tools' C with clang against kernel headers at every start. When the running kernel has none
 * (no /lib/modules/$(uname -r)/build, no CONFIG_IKHEADERS — the case of this VM's 6.18 kernel), use Debian's
 * `linux-headers-*` for the distribution kernel (installed with apt-get when missing), merged from its split
 * `-common` and arch directories into bench/.build/kheaders, through bcc's BCC_KERNEL_SOURCE. Struct layouts of
 * another kernel version only matter to tools that read kernel structs; the startup cost (clang) is bcc's own.
 * @returns { env, note } env additions for the bcc tools and a sentence for the report (null note: nothing done)
 */
export function bccHeaders() {
  const release = sh('uname', ['-r']);
  if (existsSync(`/lib/modules/${release}/build`) || existsSync('/sys/kernel/kheaders.tar.xz')) {
    return { env: {}, note: null };
  }
  const find = () => {
    const dirs = existsSync('/usr/src') ? readdirSync('/usr/src') : [];
    const common = dirs
      .filter((d) => /^linux-headers-.*-common$/.test(d))
      .sort()
      .at(-1);
    const arch = common ? dirs.find((d) => d === common.replace(/-common$/, '-amd64')) : undefined;
    return common && arch ? { common, arch } : null;
  };
  let found = find();
  if (!found) {
    process.stderr.write('bench: installing linux-headers-amd64 with apt-get for the bcc tools\n');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    execFileSync('apt-get', ['install', '-y', '-qq', 'linux-headers-amd64'], { stdio: 'inherit', env });
    found = find();
  }
  if (!found) return { env: {}, note: 'no kernel headers found for bcc: its tools cannot compile here' };
  const dir = join(BUILD_DIR, 'kheaders');
  const stamp = join(dir, '.from');
  if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== found.arch) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    execFileSync('cp', ['-as', `/usr/src/${found.common}/.`, `${dir}/`]);
    execFileSync('cp', ['-asf', `/usr/src/${found.arch}/.`, `${dir}/`]);
    execFileSync('sh', ['-c', `printf %s "${found.arch}" > "${stamp}"`]);
  }
  return {
    env: { BCC_KERNEL_SOURCE: dir },
    note:
      `Linux ${release} ships no headers, so bcc compiles against Debian's ${found.arch.replace('linux-headers-', '')} ` +
      'headers (BCC_KERNEL_SOURCE); only startup is measured here',
  };
}

/** Build the C helpers when their source is newer than the binary. @throws when cc fails */
export function buildHelpers() {
  mkdirSync(BUILD_DIR, { recursive: true });
  for (const [src, bin] of [
    ['workload.c', WORKLOAD],
    ['sink.c', SINK],
  ]) {
    const s = join(BENCH_DIR, 'c', src);
    if (existsSync(bin) && statSync(bin).mtimeMs > statSync(s).mtimeMs) continue;
    execFileSync('cc', ['-O2', '-Wall', '-o', bin, s], { stdio: 'inherit' });
  }
}

/**
 * Measure a private copy of dist/ ($TMPDIR/bpfscope-bench/dist, beside a node_modules symlink to the checkout's, and
 * outside the tree so lint and tsc never see it): other engineers rebuild dist/ while a run goes on, and a tool
 * started while tsc rewrites its modules fails to load. Sets CLI to the copy.
 * @throws when the copy does not list its tools (copied in the middle of a rebuild)
 */
export function snapshotDist() {
  const base = join(tmpdir(), 'bpfscope-bench');
  const dst = join(base, 'dist');
  rmSync(base, { recursive: true, force: true });
  mkdirSync(base, { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(base, 'node_modules'));
  cpSync(join(ROOT, 'dist'), dst, { recursive: true });
  const cli = join(dst, 'bundle', 'bpfscope.cjs');
  const r = spawnSync(process.execPath, [cli, 'tools'], { encoding: 'utf8', timeout: 15000 });
  if (r.status !== 0) throw new Error(`the copy of dist/ does not run (rebuilt meanwhile?): ${r.stderr.trim()}`);
  CLI = cli;
}

/** bpfscope must be built (`npm run build`); the bench measures dist/, not the TypeScript sources. */
export function checkBuilt() {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first`);
}

/**
 * The two tracers of the bpftrace-language benchmarks. `readyRe` recognises the line printed when probes are being
 * attached: bpfscope prints `Attached N probes` on stderr; bpftrace 0.17 prints `Attaching N probes...` on stdout.
 * Both print it before attaching, so `liveFds(n)` says how many `anon_inode:[perf_event]` fds the process holds once
 * n tracepoints are attached: one per tracepoint for bpfscope (attached through a BPF link right after opening);
 * bpftrace 0.17 also has one perf buffer fd per CPU.
 */
export const TRACERS = {
  bpfscope: {
    name: 'bpfscope',
    // the bin itself, as users run it (its /bin/sh preamble starts node: src/cli/launch.ts)
    argv: (program, extra = []) => ({ cmd: CLI, args: [...extra, '-e', program] }),
    readyRe: /^Attached \d+ probes?$/,
    readyOn: 'stderr',
    liveFds: (n) => n,
  },
  bpftrace: {
    name: 'bpftrace',
    argv: (program, extra = []) => ({ cmd: 'bpftrace', args: [...extra, '-e', program] }),
    readyRe: /^Attaching \d+ probes?\.\.\.$/,
    readyOn: 'stdout',
    liveFds: (n) => n + cpus().length,
  },
};

/** "Lost N events" lines (both tools use these words) summed over a text. */
export function lostIn(text) {
  let n = 0;
  for (const m of text.matchAll(/Lost (\d+) events/g)) n += Number(m[1]);
  return n;
}
