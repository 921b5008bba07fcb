/**
 * vfsstat (src/tools/vfsstat.ts): bcc's -h text (test/tools/fixtures/bcc-help-fs-cap-llc.json), header and rows,
 * the fentry and kprobe programs, and on a kernel without kprobes and fentry (the development VM) the one-sentence
 * failure with exit status 1. The counting itself runs in Debian 6.1 under qemu: test/matrix/fs-tools.test.ts.
 */
import assert from 'node:assert/strict';
import { runTool } from '../../src/index.js';
import { describe, it } from 'node:test';
import { features } from '../../src/kernel/features.js';
import { buildProgram, formatRow, header, SPEC } from '../../src/tools/vfsstat.js';
import { assertBccHelp } from './argparse-fixture.js';
import { liveSkipReason, runBpfscope } from './helpers.js';

describe('vfsstat options and output (bcc tools/vfsstat.py)', () => {
  it('-h and usage errors equal argparse', () => {
    assertBccHelp(SPEC, 'vfsstat', 'bcc-help-fs-cap-llc');
  });

  it('header "%-8s  " + " %8s" per stat, rows "%-8s: " + " %8d" of count / interval', () => {
    assert.equal(header(), 'TIME         READ/s  WRITE/s  FSYNC/s   OPEN/s CREATE/s UNLINK/s  MKDIR/s  RMDIR/s\n');
    assert.equal(
      formatRow({ READ: 1234n, WRITE: 5n, OPEN: 99999n }, 2, '18:35:32'),
      '18:35:32:       617        2        0    49999        0        0        0        0\n',
    );
  });

  it('programs: one count() map per function, fentry or kprobe, -p on the process ID', () => {
    assert.equal(
      buildProgram({ kind: 'kprobe', pid: 185, funcs: ['vfs_read', 'vfs_rmdir'] }),
      'config = { max_map_keys = 10240 }\n' +
        'kprobe:vfs_read /pid == 185/ { @read = count(); }\n' +
        'kprobe:vfs_rmdir /pid == 185/ { @rmdir = count(); }\n',
    );
    const f = buildProgram({ kind: 'fentry' });
    assert.equal(f.split('\n').filter((l) => l.startsWith('fentry:vfs_')).length, 8);
    assert.match(f, /^fentry:vfs_fsync_range \{ @fsync = count\(\); \}$/m);
  });
});

describe('vfsstat on the live kernel', () => {
  const skip =
    liveSkipReason() ??
    (features().kprobe || features().fentry ? 'this kernel has kprobes or fentry (see test/matrix/)' : undefined);

  it('without kprobes and fentry: one sentence naming what is missing, exit status 1', { skip }, async () => {
    const r = await runBpfscope(['vfsstat', '1', '1']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(
      r.stderr,
      'ERROR: vfsstat: counting calls of vfs_read() and the other VFS functions needs kprobes or fentry, and this kernel has neither (it was built without CONFIG_KPROBES and refuses BPF trampoline programs)\n',
    );
  });

  it('runTool and --json refuse with the same sentence', { skip }, async () => {
    const r = await runBpfscope(['vfsstat', '1', '1']);
    const sentence = r.stderr.replace(/^ERROR: /, '').trimEnd();
    await assert.rejects(runTool('vfsstat', ['1', '1']), (e: unknown) => (e as Error).message === sentence);
    const j = await runBpfscope(['vfsstat', '--json', '1', '1']);
    assert.equal(j.code, 1);
    assert.equal(j.stdout, '');
    assert.equal(j.stderr, r.stderr);
  });
});
