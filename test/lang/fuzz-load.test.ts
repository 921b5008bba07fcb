/**
 * The loaded fuzz sample (issue 19, campaign item 2): programs from the compile fuzzer's generator
 * (test/lang/fuzzgen.ts) compiled for this host and loaded into the kernel, nothing attached
 * (test/helpers/fuzz-load.ts). Each must load, or fail with a positioned compile error or a verifier rejection that
 * points at a statement; nothing else. `npm test` loads 80 programs with a fixed seed; the campaign's 5,000 run with
 * `node bench/reliability/fuzz-load.mjs --runs 5000 --seed N` (figures in docs/reliability.md).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { loadOne } from '../helpers/fuzz-load.js';
import { fuzzProgram } from './fuzzgen.js';

const skip = process.getuid?.() !== 0 ? 'loading BPF programs needs root' : undefined;
const CLEAN = new Set(['loaded', 'compile error', 'verifier rejection', 'host error']);

test('80 generated programs loaded: each loads or is refused with a positioned message', { skip }, () => {
  const programs = fc.sample(fuzzProgram, { seed: 0x19f1, numRuns: 80 });
  const counts: Record<string, number> = {};
  for (const text of programs) {
    const r = loadOne(text);
    counts[r.outcome] = (counts[r.outcome] ?? 0) + 1;
    assert.ok(CLEAN.has(r.outcome), `${r.outcome}: ${r.detail}\nfor:\n${text}`);
  }
  // the sample reaches the kernel: some programs load
  assert.ok((counts.loaded ?? 0) >= 3, JSON.stringify(counts));
});

// Programs the loaded sample found, each refused before its fix.
test('programs the loaded sample found now load', { skip }, () => {
  // seed 2, #1161: a for-each callback whose only use follows `return` was still loaded as a subprogram, without a
  // reference from the main one ("number of funcs in func_info doesn't match number of subprogs", no position)
  const text = 'tracepoint:syscalls:sys_exit_read { @m[1] = 1; return; while (1) { for ($kv : @m) { } } clear(@m); }';
  assert.deepEqual(loadOne(text), { outcome: 'loaded' });
});
