/**
 * Child process for sink.test.ts: writes through an OutputSink on fd 1 in a shell pipeline and reports on stderr.
 * Modes: `epipe` (the reader exits early), `bulk` (a slow reader on a non-blocking pipe).
 */
import { readFileSync } from 'node:fs';
import { OutputSink } from '../../../src/runtime/output/sink.js';

const mode = process.argv[2];
if (mode === 'epipe') {
  let callbacks = 0;
  const sink = new OutputSink(1, { onBrokenPipe: () => callbacks++ });
  const line = `${'x'.repeat(99)}\n`;
  for (let i = 0; i < 100000; i++) {
    sink.write(line);
    if (i % 1000 === 0) sink.flush();
  }
  sink.flush();
  process.stderr.write(`broken=${sink.broken} callbacks=${callbacks}\n`);
} else if (mode === 'bulk') {
  // Touching process.stdout makes Node put a pipe on fd 1 into non-blocking mode.
  void process.stdout;
  const flags = /flags:\s+(\d+)/.exec(readFileSync('/proc/self/fdinfo/1', 'utf8'))![1]!;
  const nonblocking = (Number.parseInt(flags, 8) & 0o4000) !== 0;
  const sink = new OutputSink(1);
  let total = 0;
  for (let i = 0; i < 2000; i++) {
    const s = String.fromCharCode(97 + (i % 26)).repeat(1 + ((i * 7919) % 3000));
    sink.write(s);
    total += s.length;
  }
  const big = 'Z'.repeat(1 << 20);
  sink.write(big);
  total += big.length;
  sink.flush();
  process.stderr.write(`nonblocking=${nonblocking} total=${total}\n`);
}
