/**
 * bpftrace runtime tests probe:uprobe_flat_binary and call:ustack_elf_symtable, with the project's own fixtures:
 * - a uprobe at an address of a file that is not ELF (bare code mapped executable by test/fixtures/flat-loader.c)
 *   is put at that file offset with `--unsafe`, and refused without it;
 * - with `BPFTRACE_CACHE_USER_SYMBOLS=PER_PROGRAM`, the user stack of a process that exited before the stack was
 *   printed resolves in the probe's non-PIE binary (test/fixtures/exits-early.c); without it the frames stay
 *   addresses, since the process's maps are gone.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { arch, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { bpfscopeEntry, bpfscopeSkipReason, repoRoot } from '../helpers/cli.js';

const skip = bpfscopeSkipReason() ?? (arch() === 'x64' ? undefined : 'the flat binary is x86-64 code');
let dir = '';

function bpfscope(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [bpfscopeEntry(), ...args], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('uprobes on a flat binary, stacks of an exited process', { skip }, () => {
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'bpfscope-flat-'));
    execFileSync('cc', ['-O1', '-o', join(dir, 'loader'), join(repoRoot(), 'test/fixtures/flat-loader.c')]);
    // x86-64: mov $7, %eax; ret
    writeFileSync(join(dir, 'flat.bin'), Buffer.from([0xb8, 0x07, 0x00, 0x00, 0x00, 0xc3]));
    execFileSync('cc', [
      '-O0',
      '-fno-omit-frame-pointer',
      '-no-pie',
      '-o',
      join(dir, 'exits'),
      join(repoRoot(), 'test/fixtures/exits-early.c'),
    ]);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('--unsafe puts an address probe of a non-ELF file at that file offset', () => {
    const prog = 'uretprobe:./flat.bin:0x0 { printf("ret %d\\n", retval); }';
    const r = bpfscope(['--unsafe', '-e', prog, '-c', './loader ./flat.bin']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^ret 7$/m);
    assert.match(r.stdout, /^7$/m);
  });

  it('without --unsafe a non-ELF file is an error at the probe', () => {
    const r = bpfscope(['-e', 'uprobe:./flat.bin:0x0 { }', '-c', './loader ./flat.bin']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^stdin:1:1-22: ERROR: \.\/flat\.bin: .*flat\.bin: not an ELF file \(too short\)$/m);
  });

  it('PER_PROGRAM: the stack of an exited process is named from the probe’s binary', () => {
    const prog = 'uprobe:./exits:bpfs_leaf { @[ustack] = count(); }';
    const r = bpfscope(['-e', prog, '-c', './exits'], { BPFTRACE_CACHE_USER_SYMBOLS: 'PER_PROGRAM' });
    assert.equal(r.code, 0, r.stderr);
    // the map is printed after the child was reaped; the last frame is libc's (not a file the probe names)
    assert.match(r.stdout, /^@\[\n {8}bpfs_leaf\+0\n {8}bpfs_mid\+9\n {8}main\+9\n {8}0x[0-9a-f]+\n\]: 1$/m);
  });

  it('by default (per process) the exited process’s frames stay addresses', () => {
    const r = bpfscope(['-e', 'uprobe:./exits:bpfs_leaf { @[ustack] = count(); }', '-c', './exits']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^@\[\n( {8}0x[0-9a-f]+\n){4}\]: 1$/m);
  });
});
