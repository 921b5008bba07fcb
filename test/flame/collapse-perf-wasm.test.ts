import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { collapseText } from '../../src/flame/collapse/collapser.js';
import { FRAME_SCAN_WASM } from '../../src/flame/collapse/frame-scan-wasm.js';
import { PerfCollapser } from '../../src/flame/collapse/perf.js';
import { STACK_LINES_WASM } from '../../src/flame/collapse/stack-lines-wasm.js';
import { repoRoot } from './helpers.js';

const clang = spawnSync('clang', ['--print-targets'], { encoding: 'utf8' });
const hasClang = clang.status === 0 && clang.stdout.includes('wasm32');

describe('stackcollapse-perf frame-line scanner (WebAssembly)', () => {
  it(
    'saved module bytes are frame-scan.c compiled by scripts/collapse-wasm.mjs',
    { skip: !hasClang && 'no clang with wasm32' },
    async () => {
      const { compileFrameScan } = (await import(join(repoRoot(), 'scripts', 'collapse-wasm.mjs'))) as {
        compileFrameScan: () => Buffer;
      };
      assert.equal(compileFrameScan().toString('base64'), FRAME_SCAN_WASM);
    },
  );

  it(
    'saved folded-output module bytes are stack-lines.c compiled by scripts/collapse-wasm.mjs',
    { skip: !hasClang && 'no clang with wasm32' },
    async () => {
      const { compileStackLines } = (await import(join(repoRoot(), 'scripts', 'collapse-wasm.mjs'))) as {
        compileStackLines: () => Buffer;
      };
      assert.equal(compileStackLines().toString('base64'), STACK_LINES_WASM);
    },
  );

  it('takes a frame line longer than its input area, read in 1 MiB pieces', () => {
    const name = 'f'.repeat(3 << 20);
    const input = `proc 1/1 [000] 1.0: 7 cpu-clock:\n\t1 ${name}+0x1 (/bin/p)\n\t2 main (/bin/p)\n\nproc 1/1 [000] 2.0: 7 cpu-clock:\n\t3 main (/bin/p)\n\n`;
    const c = new PerfCollapser();
    const b = Buffer.from(input, 'latin1');
    for (let at = 0; at < b.length; at += 1 << 20) c.push(b.subarray(at, at + (1 << 20)));
    // Each piece is valid until the next is taken: copied as it comes.
    const pieces: Buffer[] = [];
    for (const piece of c.finish()) pieces.push(Buffer.from(piece));
    const out = Buffer.concat(pieces).toString('latin1');
    assert.ok(out === `proc;main 7\nproc;main;${name} 7\n`, out.slice(0, 200));
  });

  it('takes a stack deeper than its first stack buffer with thousands of distinct frame lines', () => {
    const depth = 5000;
    let input = 'proc 1/1 [000] 1.0: 1 cpu-clock:\n';
    for (let k = 0; k < depth; k++) input += `\tff${k.toString(16)} fn${k} (/bin/p)\n`;
    input += '\n';
    // The same stack again: every line now found through the predicted successors.
    const out = collapseText(new PerfCollapser(), input + input);
    const frames: string[] = [];
    for (let k = depth - 1; k >= 0; k--) frames.push(`fn${k}`);
    assert.ok(out === `proc;${frames.join(';')} 2\n`, out.slice(0, 200));
  });
});
