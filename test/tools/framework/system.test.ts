import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { endianness, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pageSizeKb, tracepointExists } from '../../../src/tools/framework/system.js';

describe('tools/framework/system', () => {
  it('pageSizeKb() is the page size getconf reports, in kB', () => {
    const bytes = Number(execFileSync('getconf', ['PAGESIZE'], { encoding: 'utf8' }).trim());
    assert.ok(bytes >= 4096, `getconf PAGESIZE said ${bytes}`);
    assert.equal(pageSizeKb(), bytes / 1024);
  });

  it('pageSizeKb() reads AT_PAGESZ (type 6) from an auxiliary vector, 4 without one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bpfscope-auxv-'));
    try {
      // AT_PHENT (4) = 56, AT_PAGESZ (6) = 16384, AT_NULL: native-endian 64-bit pairs
      const auxv = Buffer.alloc(48);
      const write = endianness() === 'LE' ? auxv.writeBigUInt64LE.bind(auxv) : auxv.writeBigUInt64BE.bind(auxv);
      [4n, 56n, 6n, 16384n, 0n, 0n].forEach((v, i) => write(v, i * 8));
      writeFileSync(join(dir, 'auxv'), auxv);
      assert.equal(pageSizeKb(join(dir, 'auxv')), 16);
      writeFileSync(join(dir, 'short'), auxv.subarray(0, 16));
      assert.equal(pageSizeKb(join(dir, 'short')), 4);
      assert.equal(pageSizeKb(join(dir, 'missing')), 4);
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  it('tracepointExists() finds real tracepoints and no others (this kernel: sched_switch, no ftrace internals)', () => {
    assert.equal(tracepointExists('sched', 'sched_switch'), true);
    assert.equal(tracepointExists('syscalls', 'sys_enter_openat'), true);
    assert.equal(tracepointExists('sched', 'no_such_event'), false);
    assert.equal(tracepointExists('no_such_category', 'sched_switch'), false);
    // events/ftrace/function exists in tracefs but is not a tracepoint (not in available_events)
    assert.equal(tracepointExists('ftrace', 'function'), false);
    // not path components: never looked up
    assert.equal(tracepointExists('..', 'events'), false);
    assert.equal(tracepointExists('sched', '../sched'), false);
    assert.equal(tracepointExists('sched', 'enable'), false);
  });
});
