/**
 * `uprobe:"ARCHIVE.zip!/MEMBER":FUNCTION` (bpftrace tests/runtime/probe "uprobe_zip_archive", revision e1b7c393): a
 * binary stored uncompressed in a ZIP archive is probed in the archive, at the member's data offset plus the
 * function's file offset in the member. The expected offset is computed here from Python's zipfile (the member's
 * local header) and `nm` (the function's address less the non-PIE base 0x400000), not from bpfscope.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AttachPoint } from '../../src/lang/ast.js';
import { UprobeProbe, UprobeProvider } from '../../src/probes/uprobe.js';
import { bpfscopeEntry, bpfscopeSkipReason, repoRoot } from '../helpers/cli.js';

let dir = '';

const PY = `
import sys, zipfile, struct
with zipfile.ZipFile(sys.argv[1], 'w') as z:
    z.write(sys.argv[2], 'bin/exits', compress_type=zipfile.ZIP_STORED)
    z.write(sys.argv[2], 'bin/packed', compress_type=zipfile.ZIP_DEFLATED)
with zipfile.ZipFile(sys.argv[1]) as z, open(sys.argv[1], 'rb') as f:
    i = z.getinfo('bin/exits')
    f.seek(i.header_offset)
    h = f.read(30)
    n, e = struct.unpack('<HH', h[26:30])
    print(i.header_offset + 30 + n + e)
`;

function ap(target: string, fn: string): AttachPoint {
  const raw = `uprobe:${target}:${fn}`;
  return {
    kind: 'AttachPoint',
    pos: { line: 1, col: 1, offset: 0, end: raw.length },
    raw,
    provider: 'uprobe',
    parts: [target, fn],
  };
}

describe('uprobes in a ZIP archive member', { skip: bpfscopeSkipReason() }, () => {
  let dataOffset = 0;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'bpfscope-zip-'));
    execFileSync('cc', ['-O0', '-no-pie', '-o', join(dir, 'exits'), join(repoRoot(), 'test/fixtures/exits-early.c')]);
    dataOffset = Number(
      execFileSync('python3', ['-c', PY, join(dir, 'a.zip'), join(dir, 'exits')], { encoding: 'utf8' }).trim(),
    );
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('puts the probe at the member’s data offset plus the function’s offset, in the archive file', () => {
    const nm = execFileSync('nm', [join(dir, 'exits')], { encoding: 'utf8' });
    const addr = Number('0x' + /^([0-9a-f]+) T bpfs_leaf$/m.exec(nm)![1]!);
    const target = `${dir}/a.zip!/bin/exits`;
    const probes = new UprobeProvider('uprobe').expand(ap(target, 'bpfs_leaf'));
    assert.equal(probes.length, 1);
    const p = probes[0] as UprobeProbe;
    assert.ok(p instanceof UprobeProbe);
    assert.equal(p.path, join(dir, 'a.zip'));
    assert.equal(p.fileOffset, dataOffset + (addr - 0x400000));
    assert.equal(p.name, `uprobe:${target}:bpfs_leaf`);
  });

  it('refuses a compressed member and a missing one', () => {
    const provider = new UprobeProvider('uprobe');
    assert.throws(
      () => provider.expand(ap(`${dir}/a.zip!/bin/packed`, 'main')),
      (e: Error) => e.message.endsWith(`a.zip: member 'bin/packed' is compressed (only stored members can be probed)`),
    );
    assert.throws(
      () => provider.expand(ap(`${dir}/a.zip!/bin/none`, 'main')),
      (e: Error) => e.message.endsWith(`a.zip: no member 'bin/none' in the archive`),
    );
  });

  it('attaches from the command line (the runtime test’s program)', () => {
    const r = spawnSync(
      process.execPath,
      [bpfscopeEntry(), '-e', 'uprobe:"./a.zip!/bin/exits":main {} BEGIN { exit() }'],
      { cwd: dir, encoding: 'utf8', timeout: 30_000 },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /^Attached 2 probes$/m);
  });
});
