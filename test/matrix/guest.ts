/**
 * What the kernel-matrix tests share: whether the Debian 6.1 guest (or the 6.12 one) can be booted here
 * (`../shared/tools/kernel-matrix/`, installed by `.ci/run`), the command line of this tree's CLI inside it, and
 * running one shell script in it. A guest script prints its results as sections (`=== NAME`, the output,
 * `=== done NAME`) and `=== end` last.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { repoRoot } from '../helpers/cli.js';

/** The checkout (shared into the guest at the same path). */
export const ROOT = repoRoot();
/** kernel-matrix's `run-guest.sh SCRIPT WORKDIR`: boots the guest, runs SCRIPT as root, prints its console. */
export const RUN_GUEST = resolve(ROOT, '..', 'shared', 'tools', 'kernel-matrix', 'run-guest.sh');
/** True when the test runs from dist/ (built), false under tsx. */
export const FROM_DIST = fileURLToPath(import.meta.url).includes('/dist/test/');
const BUILT_CLI = join(ROOT, 'dist', 'src', 'cli', 'main.js');

/** What a matrix test needs besides the guest tooling. */
export interface GuestNeeds {
  /**
   * `'built'`: dist/src/cli/main.js, always (the script runs the built CLI); `'this-tree'`: it only when the test
   * runs from dist/ (see {@link cliCommand}); unset: no CLI check.
   */
  cli?: 'built' | 'this-tree';
  /** Host commands the test needs, each with the package that has it (e.g. `{ 'mkfs.ext4': 'e2fsprogs' }`). */
  commands?: Record<string, string>;
  /** A guest kernel series other than the default 6.1 (`'6.12'`): its unpacked copy (see {@link GUEST_KERNEL}). */
  kernel?: string;
}

/**
 * The second guest kernel's preparation script (`fetch` downloads and unpacks Debian's 6.12 kernel, `stage` puts it
 * into a work directory; `.ci/run` fetches it). Booted instead of 6.1 with `runGuestScript(..., { kernel: '6.12' })`.
 */
export const GUEST_KERNEL = join(ROOT, 'test', 'matrix', 'guest-kernel.sh');
const KERNEL_CACHE = process.env.BPFSCOPE_KERNEL_CACHE ?? '/var/cache/bpfscope/kernels';

/** Why the guest tests cannot run here (one sentence), or undefined. */
export function guestSkipReason(needs: GuestNeeds = {}): string | undefined {
  if (!existsSync(RUN_GUEST)) return `no ${RUN_GUEST}`;
  if (needs.kernel !== undefined) {
    const cached = existsSync(KERNEL_CACHE) ? readdirSync(KERNEL_CACHE) : [];
    if (!cached.some((d) => d.startsWith(`${needs.kernel}.`))) {
      return `no ${needs.kernel} guest kernel (test/matrix/guest-kernel.sh fetch ${needs.kernel})`;
    }
  }
  if (spawnSync('which', ['qemu-system-x86_64']).status !== 0) {
    return 'qemu-system-x86 is not installed (kernel-matrix/setup.sh)';
  }
  if (!existsSync('/lib/modules') || !readdirSync('/lib/modules').some((d) => d.endsWith('amd64'))) {
    return 'no Debian amd64 kernel under /lib/modules (kernel-matrix/setup.sh)';
  }
  if ((needs.cli === 'built' || (needs.cli === 'this-tree' && FROM_DIST)) && !existsSync(BUILT_CLI)) {
    return 'dist/src/cli/main.js not built';
  }
  for (const [cmd, pkg] of Object.entries(needs.commands ?? {})) {
    if (spawnSync('which', [cmd]).status !== 0) return `${cmd} is not installed (${pkg})`;
  }
  return undefined;
}

/**
 * The shell command that runs this tree's CLI in the guest: `dist/src/cli/main.js` when the test runs from dist/,
 * else `src/cli/main.ts` through tsx's loader.
 */
export function cliCommand(): string {
  return FROM_DIST
    ? `node ${ROOT}/dist/src/cli/main.js`
    : `node --import ${ROOT}/node_modules/tsx/dist/loader.mjs ${ROOT}/src/cli/main.ts`;
}

/**
 * Guest script lines to run first: take cpu1 offline and print kernel messages at full level. With two vCPUs,
 * qemu's multi-threaded TCG (run-guest.sh: `-accel tcg,thread=multi -smp 2`) livelocked the guest: when a tracer
 * enables a tracepoint, text_poke_bp() writes an int3 over the static branch and then the jump, and a vCPU that
 * keeps running its stale translation of that text traps on an int3 no longer in memory; the kernel then finds no
 * breakpoint there, backs up and returns, and the vCPU traps again, forever (our reading of the traces: both vCPUs in
 * `soft lockup` at syscall_trace_enter's static branch, the NMI backtrace in asm_exc_int3). Seen in 3 of 3 runs of
 * test/matrix/diff.test.ts's tracepoint cases, after 15-30 cases; never with one vCPU (the vCPU that writes the text
 * is the one that runs it). Any guest test that attaches many probes while another vCPU runs is exposed.
 */
export const GUEST_ONE_VCPU: readonly string[] = [
  'echo 7 > /proc/sys/kernel/printk; echo 1 > /proc/sys/kernel/softlockup_all_cpu_backtrace',
  'echo 0 > /sys/devices/system/cpu/cpu1/online; echo "online cpus: $(cat /sys/devices/system/cpu/online)"',
];

/** `s` quoted for a POSIX shell (single quotes). */
export function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * Write `lines` (after {@link GUEST_ONE_VCPU}) as `WORK/run.sh` and run it in the guest with `work` as its work
 * directory, booting Debian's 6.1 kernel, or `opts.kernel`'s (staged by {@link GUEST_KERNEL}); the guest gets
 * `timeoutS` seconds (run-guest.sh's TIMEOUT) and the host waits 100 s more. When the checkout is under /tmp it is
 * shared as SHARE. BPFSCOPE_MATRIX_LOG=FILE appends the console to FILE.
 * @returns the guest's console (stdout and stderr, carriage returns removed)
 * @throws AssertionError when the console lacks `=== end` (the guest did not finish), with its last 3000 chars
 */
export function runGuestScript(
  lines: readonly string[],
  work: string,
  timeoutS = 600,
  opts: { kernel?: string } = {},
): string {
  const script = join(work, 'run.sh');
  // every guest test runs on one vCPU: with two, qemu's TCG can livelock on a tracepoint's patched text (above)
  writeFileSync(script, `${[...GUEST_ONE_VCPU, ...lines].join('\n')}\n`);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TIMEOUT: String(timeoutS),
    ...(ROOT.startsWith('/tmp/') ? { SHARE: ROOT } : {}),
  };
  if (opts.kernel !== undefined) {
    const staged = spawnSync('sh', [GUEST_KERNEL, 'stage', opts.kernel, work], { encoding: 'utf8' });
    assert.equal(staged.status, 0, `guest-kernel.sh stage ${opts.kernel}: ${staged.stderr}`);
    env.KVER = staged.stdout.trim();
  }
  const r = spawnSync('sh', [RUN_GUEST, script, work], { encoding: 'utf8', env, timeout: (timeoutS + 100) * 1000 });
  const out = (r.stdout + r.stderr).replace(/\r/g, '');
  if (process.env.BPFSCOPE_MATRIX_LOG) appendFileSync(process.env.BPFSCOPE_MATRIX_LOG, out);
  assert.match(out, /=== end/, `the guest did not finish:\n${out.slice(-3000)}`);
  return out;
}

/** The text between `=== NAME` and `=== done NAME` in a guest console, or '' when absent. */
export function guestSection(out: string, name: string): string {
  return new RegExp(`=== ${name}\\n([\\s\\S]*?)=== done ${name}`).exec(out)?.[1] ?? '';
}
