/**
 * `ustack(build_id)` (bpftrace tests/runtime/call "ustack_stack_mode_build_id", regression "stack modes and size";
 * revision e1b7c393): frames read by the kernel as `struct bpf_stack_build_id` and printed unsymbolized, one
 * `BUILDID 0xFILEOFFSET` line each. The fixture is linked with a fixed build id, and the expected file offset of the
 * probed function comes from `nm` (its address) less the non-PIE text segment's base, not from bpfscope.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { bpfscopeEntry, bpfscopeSkipReason, repoRoot } from '../helpers/cli.js';

const BUILD_ID = '0123456789abcdef0123456789abcdef01234567';
let dir = '';

function bpfscope(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [bpfscopeEntry(), ...args], {
    cwd: dir,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('ustack(build_id)', { skip: bpfscopeSkipReason() }, () => {
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'bpfscope-buildid-'));
    execFileSync('cc', [
      '-O0',
      '-fno-omit-frame-pointer',
      '-no-pie',
      `-Wl,--build-id=0x${BUILD_ID}`,
      '-o',
      join(dir, 'exits'),
      join(repoRoot(), 'test/fixtures/exits-early.c'),
    ]);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('prints each frame as the build id and the file offset, the probed function first', () => {
    const nm = execFileSync('nm', [join(dir, 'exits')], { encoding: 'utf8' });
    const addr = BigInt('0x' + /^([0-9a-f]+) T bpfs_leaf$/m.exec(nm)![1]!);
    // a non-PIE x86-64/arm64 executable maps file offset 0 at 0x400000
    const offset = (addr - 0x400000n).toString(16);
    const r = bpfscope(['-e', 'uprobe:./exits:bpfs_leaf { print(ustack(build_id, 3)); }', '-c', './exits']);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split('\n');
    assert.equal(lines[0], '');
    assert.equal(lines[1], `${BUILD_ID} 0x${offset}`);
    // bpfs_mid and main, in the same file; no indentation, no symbols
    assert.match(lines[2]!, new RegExp(`^${BUILD_ID} 0x[0-9a-f]+$`));
    assert.match(lines[3]!, new RegExp(`^${BUILD_ID} 0x[0-9a-f]+$`));
  });

  it('compiles ustack(build_id) in tuples beside other stack modes (regression "stack modes and size")', () => {
    const prog =
      'BEGIN { $a = (1, ustack); $b = (1, ustack(build_id)); $c = (1, ustack(build_id, 30)); ' +
      '$d = (1, kstack); $e = (1, kstack(raw)); $f = (1, kstack(raw, 30)); exit(); }';
    const r = bpfscope(['-e', prog]);
    assert.equal(r.code, 0, r.stderr);
  });
});
