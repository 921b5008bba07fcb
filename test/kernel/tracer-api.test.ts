/** The Tracer API (runtime/tracer.ts) used in-process, as the tools use it. */
import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createOutput } from '../../src/runtime/output/index.js';
import { OutputSink } from '../../src/runtime/output/sink.js';
import { KernelError } from '../../src/errors.js';
import { Tracer } from '../../src/runtime/tracer.js';
import { fdHeldIds, formatIds, idCount } from '../helpers/bpf-objects.js';

describe('Tracer', () => {
  it('wait() may be called more than once: every call resolves when the run stops', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bpfs-tracer-'));
    const fd = openSync(join(dir, 'out'), 'w');
    try {
      const output = createOutput('text', new OutputSink(fd));
      const tracer = await Tracer.start({
        source: { name: 'stdin', text: 'interval:ms:100 { @n = count(); exit(); }' },
        output,
        quiet: true,
        handleSignals: false,
      });
      try {
        await Promise.all([tracer.wait(), tracer.wait()]);
        await tracer.wait();
        tracer.finish();
      } finally {
        tracer.close();
      }
      output.flush();
      assert.equal(readFileSync(join(dir, 'out'), 'utf8'), '\n\n@n: 1\n');
    } finally {
      closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a map the kernel refuses while the others are created in the background: its error, no fd left', async () => {
    // The stack map (2^31 entries: E2BIG) and @c/@h are created on worker threads while the program is linked
    // (Session.loadAsync); the start fails with the stack map's error after every creation has settled.
    assert.equal(idCount(fdHeldIds(process.pid)), 0);
    const output = createOutput('text', new OutputSink(1));
    await assert.rejects(
      Tracer.start({
        source: {
          name: 'stdin',
          text: 'tracepoint:syscalls:sys_enter_getppid { @c[kstack] = count(); @h = hist(1); }',
        },
        output,
        quiet: true,
        handleSignals: false,
        stackMapEntries: 2 ** 31,
      }),
      (e: unknown) =>
        e instanceof KernelError && e.message === "bpf(BPF_MAP_CREATE) 'stack_k127': Argument list too long (E2BIG)",
    );
    assert.equal(idCount(fdHeldIds(process.pid)), 0, `fds left: ${formatIds(fdHeldIds(process.pid))}`);
  });
});
