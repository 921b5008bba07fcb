/**
 * ext4slower (src/tools/ext4slower.ts): bcc's -h text and usage errors (test/tools/fixtures/bcc-help-fs-cap-llc.json),
 * header, rows and CSV, the kprobe program, and on a kernel without kprobes the one-sentence failure with exit 1.
 * The kprobe run on an ext4 file system is in test/matrix/fs-tools.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { features } from '../../src/kernel/features.js';
import { buildProgram, type Ext4Record, formatRow, header, SPEC, toRow } from '../../src/tools/ext4slower.js';
import { assertBccHelp } from './argparse-fixture.js';
import { liveSkipReason, runBpfscope } from './helpers.js';

describe('ext4slower options and output (bcc tools/ext4slower.py)', () => {
  it('-h and usage errors equal argparse', () => {
    assertBccHelp(SPEC, 'ext4slower', 'bcc-help-fs-cap-llc');
  });

  it('header and rows: "%-8s %-14.14s %-6s %1s %-7s %-8d %7.2f %s", CSV with -j', () => {
    assert.equal(
      header(10, false),
      'Tracing ext4 operations slower than 10 ms\nTIME     COMM           PID    T BYTES   OFF_KB   LAT(ms) FILENAME\n',
    );
    assert.equal(header(0, false).split('\n')[0], 'Tracing ext4 operations');
    assert.equal(header(1, true), 'ENDTIME_us,TASK,PID,TYPE,BYTES,OFFSET_b,LATENCY_us,FILE\n');
    const f: Ext4Record = {
      kind: 'op',
      tsUs: 5000000,
      type: 1,
      size: 8192,
      offset: 1049600,
      deltaUs: 12345,
      pid: 181,
      comm: 'a_very_long_command',
      file: 'data.bin',
    };
    assert.equal(
      formatRow(toRow(f, '10:00:00'), false),
      '10:00:00 a_very_long_co 181    W 8192    1025       12.35 data.bin\n',
    );
    assert.equal(formatRow(toRow(f), true), '5000000,a_very_long_command,181,W,8192,1049600,12345,data.bin\n');
    const s = toRow({ ...f, tsUs: 1, type: 3, size: 0, offset: 0, deltaUs: 10, pid: 1, comm: 'c', file: 'f' }, 'T');
    assert.match(formatRow(s, false), / S 0 {7}0 {11}0\.01 f\n$/);
  });

  it('program: entry kprobes keep (time, file, offset) per thread; return probes print over the threshold', () => {
    const p = buildProgram({ readFunc: 'ext4_file_read_iter', ext4Ops: 0xffffffffc0384a40n, minMs: 10, pid: 185 });
    assert.match(
      p,
      /^kprobe:ext4_file_read_iter \/pid == 185\/ \{\n {2}\$fp = \(\(struct kiocb \*\)arg0\)->ki_filp;\n {2}if \(\(uint64\)\$fp->f_op != 0xffffffffc0384a40\) \{ return; \}$/m,
    );
    assert.match(p, /^kprobe:ext4_file_open \/pid == 185\/ \{\n {2}\$fp = \(struct file \*\)arg1;$/m);
    assert.equal((p.match(/^kretprobe:/gm) ?? []).length, 4);
    assert.match(p, /if \(\$delta_us > 10000\) \{/);
    assert.match(buildProgram({ readFunc: 'x', ext4Ops: 1n, minMs: 0 }), /if \(1\) \{/);
  });
});

describe('ext4slower on the live kernel', () => {
  const skip = liveSkipReason() ?? (features().kprobe ? 'this kernel has kprobes (see test/matrix/)' : undefined);

  it('without kprobes: one sentence naming what is missing, exit status 1', { skip }, async () => {
    const r = await runBpfscope(['ext4slower']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(
      r.stderr,
      'ERROR: ext4slower: timing ext4_file_read_iter() and the other ext4 file operations needs kprobes, and this kernel has none (it was built without CONFIG_KPROBES)\n',
    );
  });
});
