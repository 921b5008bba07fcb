/**
 * filetop (src/tools/filetop.ts): bcc's -h text and usage errors (test/tools/fixtures/bcc-help-fs-cap-llc.json),
 * the kprobe and tracepoint programs, the screen format, and a live run (the system call tracepoints here; the
 * vfs_read/vfs_write kprobes run in test/matrix/fs-tools.test.ts) that sees the workload's reads of /dev/zero,
 * writes to /dev/null and preads of a regular file with their exact counts and bytes.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { buildProgram, type FileRow, formatScreen, SPEC } from '../../src/tools/filetop.js';
import { workloadPath } from '../helpers/workload.js';
import { assertBccHelp } from './argparse-fixture.js';
import { runTool } from '../../src/index.js';
import { liveSkipReason, removeScratch, scratchDir, startBpfscope } from './helpers.js';
import { jsonLines, startJson } from './jsonrun.js';

const row = (o: Partial<FileRow>): FileRow => ({
  tid: 1,
  comm: 'c',
  nameLen: 1,
  name: 'f',
  type: 'R',
  reads: 0n,
  writes: 0n,
  rbytes: 0n,
  wbytes: 0n,
  ...o,
});

describe('filetop options and output (bcc tools/filetop.py)', () => {
  it('-h and usage errors equal argparse', () => {
    assertBccHelp(SPEC, 'filetop', 'bcc-help-fs-cap-llc');
  });

  it('programs: vfs_read/vfs_write kprobes, or the syscall tracepoints with the fd looked up', () => {
    const k = buildProgram({ probe: 'kprobe', tgid: 181, dirInode: 42, reads: false });
    assert.doesNotMatch(k, /vfs_read/);
    assert.match(k, /^kprobe:vfs_write \/pid == 181\/ \{\n {2}\$f = \(struct file \*\)arg0;$/m);
    assert.match(k, /if \(\$de->d_name\.len == 0 \|\| \$mode != 32768\) \{ return; \}/);
    assert.match(k, /if \(\$de->d_parent->d_inode->i_ino != 42\) \{ return; \}/);
    assert.match(k, /@wbytes\[tid, comm, .*\] = sum\(arg2\);/);
    const t = buildProgram({ probe: 'tracepoint', allFiles: true });
    assert.match(t, /^tracepoint:syscalls:sys_enter_read,\ntracepoint:syscalls:sys_enter_pread64 \{$/m);
    assert.match(t, /\*\(uint64 \*\)\(\(uint64\)curtask->files->fdt->fd \+ args\.fd \* 8\)/);
    assert.match(t, /if \(\$de->d_name\.len == 0\) \{ return; \}/);
  });

  it('screen: loadavg line, header, rows sorted by -s, Kb truncated, long names cut to 29 + "..."', () => {
    const rows = [
      row({ tid: 5, reads: 3n, rbytes: 3000n, name: 'small' }),
      row({ tid: 7, writes: 1n, wbytes: 10240n, type: 'O', name: 'null' }),
      row({ tid: 9, reads: 1n, nameLen: 40, name: 'abcdefghijklmnopqrstuvwxyz012345' }),
    ];
    assert.equal(
      formatScreen(rows, { sort: 'all', maxrows: 2, noclear: true }, '10:00:00', '0.10 0.20 0.30 1/100 42'),
      '\n10:00:00 loadavg: 0.10 0.20 0.30 1/100 42\n\n' +
        'TID     COMM             READS  WRITES R_Kb    W_Kb    T FILE\n' +
        '7       c                0      1      0       10      O null\n' +
        '5       c                3      0      2       0       R small\n',
    );
    const byReads = formatScreen(rows, { sort: 'reads', maxrows: 20, noclear: false }, 'T', 'L');
    assert.ok(byReads.startsWith('\x1b[H\x1b[2J\x1b[3JT        loadavg: L\n\n'));
    assert.match(byReads, /^5 .*\n9 .* abcdefghijklmnopqrstuvwxyz012\.\.\.\n7 /m);
  });
});

describe('filetop on the live kernel', () => {
  const skip = liveSkipReason();

  it("counts the workload's reads, writes and preads per file (-a)", { skip }, async () => {
    const dir = scratchDir();
    try {
      const file = join(dir, 'filetop-data');
      writeFileSync(file, Buffer.alloc(16384, 1));
      const run = startBpfscope(['filetop', '-a', '-C', '-r', '100000', '60']);
      assert.ok(await run.waitFor(/Hit Ctrl-C to end\n/, 20_000), run.stderr());
      const w = spawnSync(
        workloadPath(),
        ['comm', 'bpfs_ft', 'read', '7', '4096', 'write', '3', '8192', 'odirect-read', file, '2', '4096'],
        { encoding: 'utf8' },
      );
      assert.equal(w.status, 0, w.stderr);
      run.child.kill('SIGINT');
      const r = await run.done;
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /Detaching...\n$/);
      const mine = r.stdout.split('\n').filter((l) => l.startsWith(`${w.pid} `) && l.includes(' bpfs_ft '));
      // (the dynamic loader's reads of libc.so.6 come before the comm step)
      const expect = (reads: number, writes: number, rkb: number, wkb: number, t: string, name: string): string =>
        `${String(w.pid).padEnd(7)} bpfs_ft          ${String(reads).padEnd(6)} ${String(writes).padEnd(6)} ${String(rkb).padEnd(7)} ${String(wkb).padEnd(7)} ${t} ${name}`;
      assert.deepEqual(mine.sort(), [
        expect(0, 3, 0, 24, 'O', 'null'),
        expect(2, 0, 8, 0, 'R', 'filetop-data'),
        expect(7, 0, 28, 0, 'O', 'zero'),
      ]);
    } finally {
      removeScratch(dir);
    }
  });

  /** The text test's rows as data: the workload's reads, writes and bytes per file. */
  async function workloadRows(
    start: () => Promise<
      () => Promise<
        {
          rows: {
            tid: number;
            comm: string;
            name: string;
            type: string;
            reads: unknown;
            writes: unknown;
            rbytes: unknown;
            wbytes: unknown;
          }[];
        }[]
      >
    >,
  ): Promise<void> {
    const dir = scratchDir();
    try {
      const file = join(dir, 'filetop-data');
      writeFileSync(file, Buffer.alloc(16384, 1));
      const end = await start();
      const w = spawnSync(
        workloadPath(),
        ['comm', 'bpfs_ft', 'read', '7', '4096', 'write', '3', '8192', 'odirect-read', file, '2', '4096'],
        { encoding: 'utf8' },
      );
      assert.equal(w.status, 0, w.stderr);
      const ticks = await end();
      const mine = ticks
        .flatMap((t) => t.rows)
        .filter((r) => r.tid === w.pid && r.comm === 'bpfs_ft')
        .map((r) => [r.name, r.type, Number(r.reads), Number(r.writes), Number(r.rbytes), Number(r.wbytes)])
        .sort();
      assert.deepEqual(mine, [
        ['filetop-data', 'R', 2, 0, 8192, 0],
        ['null', 'O', 0, 3, 0, 24576],
        ['zero', 'O', 7, 0, 28672, 0],
      ]);
    } finally {
      removeScratch(dir);
    }
  }

  it('--json -a: the same counts in the final interval object', { skip }, async () => {
    await workloadRows(async () => {
      const run = await startJson(['filetop', '--json', '-a', '-C', '-r', '100000', '60'], 4);
      return async () => {
        run.child.kill('SIGINT');
        const r = await run.done;
        assert.equal(r.code, 0, r.stderr);
        return jsonLines(r.stdout);
      };
    });
  });

  it('runTool -a: the same counts as data', { skip }, async () => {
    await workloadRows(async () => {
      const run = await runTool('filetop', ['-a', '-C', '-r', '100000', '60']);
      return async () => {
        assert.equal(await run.close(), 0);
        const ticks = [];
        for await (const t of run.intervals()) ticks.push(t);
        return ticks;
      };
    });
  });
});
