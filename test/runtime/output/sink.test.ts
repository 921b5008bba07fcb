import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { BpfscopeError } from '../../../src/errors.js';
import { OutputSink } from '../../../src/runtime/output/sink.js';

const dir = mkdtempSync(join(tmpdir(), 'bpfscope-sink-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('OutputSink on a file (-o FILE)', () => {
  it('buffers until flush, then writes everything in order', () => {
    const path = join(dir, 'a.txt');
    const sink = OutputSink.openFile(path);
    sink.write('hello ');
    sink.write('wörld\n');
    assert.equal(readFileSync(path, 'utf8'), '', 'nothing written before flush');
    sink.flush();
    assert.equal(readFileSync(path, 'utf8'), 'hello wörld\n');
    sink.close();
  });

  it('flushes by itself when the buffer fills; strings larger than the buffer keep their order', () => {
    const path = join(dir, 'b.txt');
    const sink = OutputSink.openFile(path, { bufferSize: 1024 });
    let want = '';
    for (let i = 0; i < 500; i++) {
      const s = `${i}:${'é'.repeat(i % 7)}${'y'.repeat(i % 300)}\n`;
      sink.write(s);
      want += s;
    }
    assert.ok(readFileSync(path).length > 0, 'the full buffer was written before flush');
    const big = 'B'.repeat(5000);
    sink.write(big);
    want += big;
    sink.write('end\n');
    want += 'end\n';
    sink.close();
    assert.equal(readFileSync(path, 'utf8'), want);
  });

  it('truncates an existing file, and reports an unopenable path as a BpfscopeError', () => {
    const path = join(dir, 'c.txt');
    const s1 = OutputSink.openFile(path);
    s1.write('long old content\n');
    s1.close();
    const s2 = OutputSink.openFile(path);
    s2.write('new\n');
    s2.close();
    assert.equal(readFileSync(path, 'utf8'), 'new\n');
    assert.throws(() => OutputSink.openFile(join(dir, 'missing-dir', 'x')), BpfscopeError);
  });

  it('bufferSize 0 writes immediately', () => {
    const path = join(dir, 'd.txt');
    const sink = OutputSink.openFile(path, { bufferSize: 0 });
    sink.write('now');
    assert.equal(readFileSync(path, 'utf8'), 'now');
    sink.close();
  });
});

/** Run sink-child in a shell pipeline; returns its stderr, its exit code and the pipeline's stdout. */
function pipeline(mode: string, reader: string): { stderr: string; rc: number; stdout: Buffer } {
  const here = fileURLToPath(new URL('.', import.meta.url));
  const child = existsSync(join(here, 'sink-child.ts')) ? join(here, 'sink-child.ts') : join(here, 'sink-child.js');
  const q = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
  const node = [process.execPath, ...process.execArgv, child, mode].map(q).join(' ');
  const errFile = join(dir, `${mode}.err`);
  const rcFile = join(dir, `${mode}.rc`);
  const cmd = `{ ${node} 2>${q(errFile)}; echo $? >${q(rcFile)}; } | ${reader}`;
  const r = spawnSync('sh', ['-c', cmd], { maxBuffer: 64 * 1024 * 1024 });
  assert.equal(r.status, 0, r.stderr.toString());
  return { stderr: readFileSync(errFile, 'utf8'), rc: Number(readFileSync(rcFile, 'utf8')), stdout: r.stdout };
}

describe('OutputSink on pipes', () => {
  it('stops quietly on EPIPE when the reader exits (| head -c 100)', () => {
    const r = pipeline('epipe', 'head -c 100');
    assert.equal(r.stdout.length, 100);
    assert.equal(r.rc, 0);
    assert.equal(r.stderr, 'broken=true callbacks=1\n');
  });

  it('retries EAGAIN on a non-blocking pipe with a slow reader: every byte arrives in order', () => {
    const r = pipeline('bulk', 'sh -c "sleep 0.3; cat"');
    assert.equal(r.rc, 0);
    const m = /^nonblocking=(\w+) total=(\d+)\n$/.exec(r.stderr);
    assert.ok(m, r.stderr);
    assert.equal(m[1], 'true', 'the pipe was non-blocking, so EAGAIN had to be handled');
    assert.equal(r.stdout.length, Number(m[2]));
    let want = '';
    for (let i = 0; i < 2000; i++) want += String.fromCharCode(97 + (i % 26)).repeat(1 + ((i * 7919) % 3000));
    want += 'Z'.repeat(1 << 20);
    const digest = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
    assert.equal(digest(r.stdout), digest(want));
  });
});
