/**
 * The compile fuzzer (issue 19, campaign item 2): generated and mutated programs (test/lang/fuzzgen.ts) go through
 * `--mode codegen`'s path (runtime/codegen-only.ts: parse, analysis, code generation, register allocation,
 * emission; nothing loaded) and each must compile or fail with a clean error: a CompileError whose diagnostics are
 * well formed and none of which is an internal error, or a BpfscopeError naming a host fact. Any other exception
 * (TypeError, RangeError, "internal ...") fails the test with the program that caused it. Seeded: a failure
 * reproduces. `npm test` runs 2,000 programs; the campaign's 100,000 run with
 * `BPFSCOPE_FUZZ_RUNS=100000 node --test dist/test/lang/fuzz-compile.test.js` (figures in docs/reliability.md).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { BpfscopeError } from '../../src/errors.js';
import { CompileError, formatDiagnostics } from '../../src/lang/diagnostics.js';
import { codegenOnly } from '../../src/runtime/codegen-only.js';
import { fuzzProgram } from './fuzzgen.js';

const SEED = Number(process.env.BPFSCOPE_FUZZ_SEED ?? 0x19f022);
const RUNS = Number(process.env.BPFSCOPE_FUZZ_RUNS ?? 2000);
// words of a leaked JavaScript value or an internal failure ("undefined behavior" is a real warning's wording)
const INTERNAL = /internal|Maximum call stack|\bundefined\b(?! behavior)|\bnull\b|\bNaN\b|\[object /;

type Outcome = 'compiled' | 'compile error' | 'host error';

/** Compile one program; returns its outcome or throws an assertion naming the program. */
function check(text: string): Outcome {
  const source = { name: 'fuzz.bt', text };
  try {
    codegenOnly(source, { positional: [] });
    return 'compiled';
  } catch (e) {
    if (e instanceof CompileError) {
      assert.ok(e.diagnostics.length > 0, `CompileError without diagnostics for:\n${text}`);
      for (const d of e.diagnostics) {
        assert.ok(!INTERNAL.test(d.message), `internal error "${d.message}" for:\n${text}`);
        if (d.pos) assert.ok(d.pos.offset >= 0 && d.pos.end <= text.length, `span out of range for:\n${text}`);
      }
      formatDiagnostics(e.diagnostics, source);
      return 'compile error';
    }
    if (e instanceof BpfscopeError && !INTERNAL.test(e.message)) return 'host error';
    const err = e as Error;
    assert.fail(`${err?.name}: ${err?.message} for:\n${text}\n${err?.stack ?? ''}`);
  }
}

test(
  `compile fuzzer: ${RUNS} generated and mutated programs, no internal error`,
  { skip: process.getuid?.() !== 0 ? 'needs root (tracefs, BTF)' : undefined },
  () => {
    const counts: Record<Outcome, number> = { compiled: 0, 'compile error': 0, 'host error': 0 };
    let slowest = 0;
    let slowestText = '';
    const t0 = performance.now();
    fc.assert(
      fc.property(fuzzProgram, (text) => {
        const s = performance.now();
        counts[check(text)]++;
        const ms = performance.now() - s;
        if (ms > slowest) {
          slowest = ms;
          slowestText = text;
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
    const total = performance.now() - t0;
    // the figures the campaign records (docs/reliability.md)
    process.stderr.write(
      `fuzz: ${RUNS} programs in ${(total / 1000).toFixed(1)} s: ${counts.compiled} compiled, ` +
        `${counts['compile error']} compile errors, ${counts['host error']} host errors, 0 internal errors; ` +
        `slowest ${slowest.toFixed(0)} ms: ${JSON.stringify(slowestText.slice(0, 200))}\n`,
    );
    // the generator reaches the code generator, not just the parser
    assert.ok(counts.compiled > RUNS / 20, `only ${counts.compiled} of ${RUNS} programs compiled`);
  },
);

// Programs the fuzzer found, each an internal error before its fix, with the message now given.
const FOUND: [string, string][] = [
  // constant folding shifted a BigInt by 2^63 ("Maximum BigInt size exceeded")
  [
    'BEGIN { @a = 0x10 >> -9223372036854775808; }',
    'fuzz.bt:1:14-42: ERROR: unable to fold literals due to overflow or underflow',
  ],
  ['BEGIN { @a = 1 << 64; }', 'fuzz.bt:1:14-21: ERROR: unable to fold literals due to overflow or underflow'],
];

test(
  'programs the fuzzer found: a positioned error, not an internal one',
  { skip: process.getuid?.() !== 0 ? 'needs root (tracefs, BTF)' : undefined },
  () => {
    for (const [text, first] of FOUND) {
      assert.throws(
        () => codegenOnly({ name: 'fuzz.bt', text }, { positional: [] }),
        (e: unknown) => {
          assert.ok(e instanceof CompileError, String(e));
          assert.equal(formatDiagnostics(e.diagnostics, { name: 'fuzz.bt', text }).split('\n')[0], first);
          return true;
        },
      );
    }
  },
);
