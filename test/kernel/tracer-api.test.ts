/** The Tracer API (runtime/tracer.ts) used in-process, as the tools use it. */
import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createOutput } from '../../src/runtime/output/index.js';
import { OutputSink } from '../../src/runtime/output/sink.js';
import { Tracer } from '../../src/runtime/tracer.js';

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
});
