/**
 * cachestat (src/tools/cachestat.ts): bcc's -h text (test/tools/fixtures/bcc-help-fs-cap-llc.json), header, rows
 * and hit/miss arithmetic, the program, and on a kernel without kprobes the one-sentence failure with exit 1. The
 * kprobe run is in test/matrix/fs-tools.test.ts.
 */
import assert from 'node:assert/strict';
import { runTool } from '../../src/index.js';
import { describe, it } from 'node:test';
import { features } from '../../src/kernel/features.js';
import { buildProgram, cacheStats, formatRow, header, readMeminfo, SPEC } from '../../src/tools/cachestat.js';
import { assertBccHelp } from './argparse-fixture.js';
import { liveSkipReason, runBpfscope } from './helpers.js';

describe('cachestat options and output (bcc tools/cachestat.py)', () => {
  it('-h and usage errors equal argparse', () => {
    assertBccHelp(SPEC, 'cachestat', 'bcc-help-fs-cap-llc');
  });

  it("bcc's arithmetic: total = accessed - buffer dirtied, misses = added - dirtied, clamped", () => {
    assert.deepEqual(cacheStats({ mpa: 1000n, mbd: 100n, apcl: 300n, apd: 50n }), {
      hits: 650n,
      misses: 250n,
      dirties: 100n,
      ratio: 650 / 900,
    });
    // More pages added than accessed (read-ahead): all accesses are misses.
    assert.deepEqual(cacheStats({ mpa: 10n, mbd: 0n, apcl: 40n, apd: 0n }), {
      hits: 0n,
      misses: 10n,
      dirties: 0n,
      ratio: 0,
    });
    assert.deepEqual(cacheStats({ mpa: 0n, mbd: 5n, apcl: 0n, apd: 9n }), {
      hits: 0n,
      misses: 0n,
      dirties: 5n,
      ratio: 0,
    });
  });

  it('header and rows: "%8d %8d %8d %7.2f%% %12.0f %10.0f", -T adds "%-8s "', () => {
    assert.equal(header(false), '    HITS   MISSES  DIRTIES HITRATIO   BUFFERS_MB  CACHED_MB\n');
    assert.equal(header(true), 'TIME         HITS   MISSES  DIRTIES HITRATIO   BUFFERS_MB  CACHED_MB\n');
    const mem = readMeminfo('MemTotal: 1 kB\nBuffers:           52224 kB\nCached:          1536000 kB\n');
    assert.deepEqual(mem, { buffersKb: 52224, cachedKb: 1536000 });
    assert.equal(
      formatRow({ hits: 650n, misses: 250n, dirties: 100n, ratio: 650 / 900 }, mem, true, '10:00:00'),
      '10:00:00      650      250      100   72.22%           51       1500\n',
    );
  });

  it('program: one count() per event', () => {
    assert.equal(
      buildProgram({
        apcl: 'kprobe:filemap_add_folio',
        mpa: 'kprobe:folio_mark_accessed',
        mbd: 'kprobe:mark_buffer_dirty',
        apd: 'tracepoint:writeback:writeback_dirty_folio',
      }),
      'config = { max_map_keys = 10240 }\nkprobe:filemap_add_folio { @apcl = count(); }\n' +
        'kprobe:folio_mark_accessed { @mpa = count(); }\nkprobe:mark_buffer_dirty { @mbd = count(); }\n' +
        'tracepoint:writeback:writeback_dirty_folio { @apd = count(); }\n',
    );
  });
});

describe('cachestat on the live kernel', () => {
  const skip = liveSkipReason() ?? (features().kprobe ? 'this kernel has kprobes (see test/matrix/)' : undefined);

  it('without kprobes: one sentence naming what is missing, exit status 1', { skip }, async () => {
    const r = await runBpfscope(['cachestat', '1', '1']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(
      r.stderr,
      'ERROR: cachestat: counting page cache accesses (folio_mark_accessed(), which has no tracepoint) needs kprobes, and this kernel has none (it was built without CONFIG_KPROBES)\n',
    );
  });

  it('runTool and --json refuse with the same sentence', { skip }, async () => {
    const r = await runBpfscope(['cachestat', '1', '1']);
    const sentence = r.stderr.replace(/^ERROR: /, '').trimEnd();
    await assert.rejects(runTool('cachestat', ['1', '1']), (e: unknown) => (e as Error).message === sentence);
    const j = await runBpfscope(['cachestat', '--json', '1', '1']);
    assert.equal(j.code, 1);
    assert.equal(j.stdout, '');
    assert.equal(j.stderr, r.stderr);
  });
});
